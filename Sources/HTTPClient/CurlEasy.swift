internal import CCurl
internal import Canonical
import Dispatch
import Synchronization

/// `curl_global_init` runs once, on first use, thread-safely (a `static let` initialiser).
enum CurlGlobal {
    static let ready: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// Set from a task's cancellation handler, read by the transfer's progress callback on the curl thread.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func cancel() { flag.store(true, ordering: .relaxed) }
    var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

/// What one `curl_easy_perform` produced, before it is judged (see ``CurlTransport``).
struct CurlOutcome: Sendable {
    /// `CURLcode` (0 = a complete response arrived).
    var curlCode: UInt32
    /// curl's error buffer text, or `curl_easy_strerror` when the buffer stayed empty.
    var message: String
    var status: Int
    var headers: [HTTPHeader]
    var body: [UInt8]
    /// The write callback aborted the transfer because the body grew past the limit.
    var exceededLimit: Bool
    /// The progress callback aborted the transfer because the task was cancelled.
    var cancelled: Bool

    static func setupFailure(_ curlCode: UInt32, _ message: String) -> Self {
        Self(
            curlCode: curlCode,
            message: message,
            status: 0,
            headers: [],
            body: [],
            exceededLimit: false,
            cancelled: false
        )
    }
}

/// Per-transfer state the C callbacks write into. It lives for one `perform` only and is handed to curl
/// unretained (`WRITEDATA`/`HEADERDATA`/`XFERINFODATA`); curl calls the callbacks on the performing thread only.
private final class TransferSink {
    let limit: Int
    let cancellation: CancellationFlag
    var body: [UInt8] = []
    var headers: [HTTPHeader] = []
    var exceededLimit = false
    var cancelled = false

    init(limit: Int, cancellation: CancellationFlag) { (self.limit, self.cancellation) = (limit, cancellation) }

    /// One raw header line from curl (status line, header, or the blank line ending a header block).
    func headerLine(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            headers.removeAll()  // a new response (after 1xx, or a retried request): keep the final one's only
            return
        }
        let trimmed = Self.trim(line[...])
        guard !trimmed.isEmpty else { return }
        if let first = line.first, first == 0x20 || first == 0x09 {
            // Obsolete line folding: a continuation of the previous header's value.
            if !headers.isEmpty { headers[headers.count - 1].value += " " + String(decoding: trimmed, as: UTF8.self) }
            return
        }
        guard let colon = trimmed.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = Self.trim(trimmed[..<colon])
        let value = Self.trim(trimmed[(colon + 1)...])
        headers.append(HTTPHeader(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    private static func trim(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
        var s = bytes
        while let f = s.first, isSpace(f) { s = s.dropFirst() }
        while let l = s.last, isSpace(l) { s = s.dropLast() }
        return s
    }
}

/// One reusable easy handle, its error buffer and the serial queue its transfers block on. The handle keeps its
/// connection cache (and TLS sessions) between transfers, which is why ``EasyHandlePool`` recycles it instead of
/// creating one per request.
///
/// libcurl allows a handle on any thread but never on two at once. The pool hands each handle to one transfer at a
/// time, and the `Mutex` makes that exclusivity checkable by the compiler (it is never contended).
///
/// Why a serial queue per handle and not one concurrent queue: libdispatch runs a concurrent queue's items on its
/// non-overcommit root queue, which on Linux keeps about one thread per core busy. Blocking transfers there queue
/// up behind each other (two hung endpoints would stall every other request on a 2-core machine). Serial queues
/// target the overcommit root queue, which gives each running transfer its own thread; ``TransferGate`` bounds how
/// many handles, and so threads, exist.
final class CurlEasy: Sendable {
    private struct Handle {
        let curl: UnsafeMutableRawPointer
        let errorBuffer: UnsafeMutablePointer<CChar>
    }

    private let handle: Mutex<Handle>
    /// Where this handle's blocking `curl_easy_perform` runs (off Swift's cooperative pool).
    let queue = DispatchQueue(label: "iap-gateway.curl-transfer")

    init?() {
        guard CurlGlobal.ready, let curl = curl_easy_init() else { return nil }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        handle = Mutex(Handle(curl: curl, errorBuffer: errorBuffer))
    }

    deinit {
        handle.withLock { h in
            curl_easy_cleanup(h.curl)
            h.errorBuffer.deallocate()
        }
    }

    func perform(_ request: HTTPRequest, caBundlePath: String?, cancellation: CancellationFlag) -> CurlOutcome {
        handle.withLock { h in
            Self.transfer(curl: h.curl, errorBuffer: h.errorBuffer, request, caBundlePath, cancellation)
        }
    }

    /// Records the first failing `curl_easy_setopt`.
    private struct Options {
        let curl: UnsafeMutableRawPointer
        var failure: CurlOutcome?

        mutating func check(_ code: CURLcode, _ option: CURLoption) {
            if code != CURLE_OK, failure == nil {
                failure = .setupFailure(code.rawValue, "curl_easy_setopt(\(option.rawValue)): \(CurlEasy.text(code))")
            }
        }
        mutating func long(_ option: CURLoption, _ value: Int) {
            check(gateway_curl_setopt_long(curl, option, value), option)
        }
        mutating func string(_ option: CURLoption, _ value: String?) {
            guard let value else { return check(gateway_curl_setopt_str(curl, option, nil), option) }
            check(value.withCString { gateway_curl_setopt_str(curl, option, $0) }, option)  // curl copies strings
        }
        mutating func pointer(_ option: CURLoption, _ value: UnsafeRawPointer?) {
            check(gateway_curl_setopt_ptr(curl, option, value), option)
        }
        mutating func offset(_ option: CURLoption, _ value: Int) {
            check(gateway_curl_setopt_off(curl, option, curl_off_t(value)), option)
        }
    }

    static func text(_ code: CURLcode) -> String {
        curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)"
    }

    private static func transfer(
        curl: UnsafeMutableRawPointer,
        errorBuffer: UnsafeMutablePointer<CChar>,
        _ request: HTTPRequest,
        _ caBundlePath: String?,
        _ cancellation: CancellationFlag
    ) -> CurlOutcome {
        curl_easy_reset(curl)
        errorBuffer[0] = 0

        let sendsBody =
            request.method == .post || request.method == .put || request.method == .patch
            || (request.method == .delete && !request.body.isEmpty)

        // Header lines. An empty value needs curl's "Name;" form ("Name:" would delete the header). curl's own
        // `Expect: 100-continue` (a stall against servers that ignore it) and its form-encoded default Content-Type
        // are switched off unless the caller set them. Every request says who sends it (`iap-gateway/<version>`,
        // ``GatewayVersion``) unless the caller set a User-Agent of its own.
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        var lines = request.headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" }
        let names = Set(request.headers.map { $0.name.lowercased() })
        if !names.contains("user-agent") { lines.append("User-Agent: \(GatewayVersion.userAgent)") }
        if !names.contains("expect") { lines.append("Expect:") }
        if sendsBody, !names.contains("content-type") { lines.append("Content-Type:") }
        for line in lines {
            guard let next = curl_slist_append(list, line) else {
                return .setupFailure(CURLE_OUT_OF_MEMORY.rawValue, "curl_slist_append failed")
            }
            list = next
        }

        let sink = TransferSink(limit: request.maxResponseBytes, cancellation: cancellation)
        let sinkPointer = Unmanaged.passUnretained(sink).toOpaque()

        var o = Options(curl: curl)
        o.string(CURLOPT_URL, request.url)
        o.string(CURLOPT_PROTOCOLS_STR, "http,https")
        o.string(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        o.long(CURLOPT_FOLLOWLOCATION, 0)
        o.long(CURLOPT_NOSIGNAL, 1)
        o.long(CURLOPT_TIMEOUT_MS, max(1, request.timeoutMillis))
        o.long(CURLOPT_CONNECTTIMEOUT_MS, max(1, request.connectTimeoutMillis))
        o.long(CURLOPT_SSL_VERIFYPEER, 1)
        o.long(CURLOPT_SSL_VERIFYHOST, 2)
        if let caBundlePath {
            o.string(CURLOPT_CAINFO, caBundlePath)
            o.string(CURLOPT_CAPATH, nil)  // only the given bundle, not the system folder as well
        }
        if request.maxResponseBytes > 0 {
            o.offset(CURLOPT_MAXFILESIZE_LARGE, request.maxResponseBytes)  // fails early on a large Content-Length
        }
        o.pointer(CURLOPT_ERRORBUFFER, errorBuffer)
        o.pointer(CURLOPT_HTTPHEADER, list)
        o.check(
            gateway_curl_setopt_write_cb(curl, CURLOPT_WRITEFUNCTION) { data, size, count, user in
                // curl passes size 1 and the WRITEDATA set below; nothing C hands over is trusted to trap on, though.
                guard let user else { return 0 }
                let sink = Unmanaged<TransferSink>.fromOpaque(user).takeUnretainedValue()
                let (n, overflow) = size.multipliedReportingOverflow(by: count)
                guard !overflow, n > 0, let data else { return 0 }
                // `limit` is the caller's and may be anything (0 and negative included: no body fits).
                let (total, tooMany) = sink.body.count.addingReportingOverflow(n)
                if tooMany || total > sink.limit {
                    sink.exceededLimit = true
                    return 0  // any value other than n aborts the transfer with CURLE_WRITE_ERROR
                }
                sink.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n))
                return n
            },
            CURLOPT_WRITEFUNCTION
        )
        o.pointer(CURLOPT_WRITEDATA, sinkPointer)
        o.check(
            gateway_curl_setopt_write_cb(curl, CURLOPT_HEADERFUNCTION) { data, size, count, user in
                guard let user else { return 0 }
                let sink = Unmanaged<TransferSink>.fromOpaque(user).takeUnretainedValue()
                let (n, overflow) = size.multipliedReportingOverflow(by: count)
                guard !overflow else { return 0 }  // anything but `n` aborts the transfer
                if n > 0, let data { sink.headerLine(UnsafeRawBufferPointer(start: data, count: n)) }
                return n
            },
            CURLOPT_HEADERFUNCTION
        )
        o.pointer(CURLOPT_HEADERDATA, sinkPointer)
        o.long(CURLOPT_NOPROGRESS, 0)
        o.check(
            gateway_curl_setopt_xferinfo_cb(curl, CURLOPT_XFERINFOFUNCTION) { user, _, _, _, _ in
                guard let user else { return 1 }
                let sink = Unmanaged<TransferSink>.fromOpaque(user).takeUnretainedValue()
                guard sink.cancellation.isCancelled else { return 0 }
                sink.cancelled = true
                return 1  // aborts with CURLE_ABORTED_BY_CALLBACK
            },
            CURLOPT_XFERINFOFUNCTION
        )
        o.pointer(CURLOPT_XFERINFODATA, sinkPointer)

        switch request.method {
        case .get: o.long(CURLOPT_HTTPGET, 1)  // a GET never sends a body
        case .post: o.long(CURLOPT_POST, 1)
        case .put, .patch:
            o.long(CURLOPT_POST, 1)
            o.string(CURLOPT_CUSTOMREQUEST, request.method.rawValue)
        case .delete:
            if sendsBody { o.long(CURLOPT_POST, 1) }
            o.string(CURLOPT_CUSTOMREQUEST, "DELETE")
        }

        // POSTFIELDS is not copied: the pointer must stay valid for the whole perform, so both happen inside
        // `withUnsafeBytes`. An empty body still needs a non-null pointer (null would make curl read stdin).
        let bodyBytes = request.body.isEmpty ? [0] : request.body
        let code: CURLcode = withExtendedLifetime(sink) {
            bodyBytes.withUnsafeBytes { raw in
                if sendsBody {
                    o.pointer(CURLOPT_POSTFIELDS, raw.baseAddress)
                    o.offset(CURLOPT_POSTFIELDSIZE_LARGE, request.body.count)
                }
                let code = o.failure == nil ? curl_easy_perform(curl) : CURLE_OK
                // Nothing may keep pointing into Swift memory once this scope ends.
                _ = gateway_curl_setopt_ptr(curl, CURLOPT_POSTFIELDS, nil)
                _ = gateway_curl_setopt_ptr(curl, CURLOPT_WRITEDATA, nil)
                _ = gateway_curl_setopt_ptr(curl, CURLOPT_HEADERDATA, nil)
                _ = gateway_curl_setopt_ptr(curl, CURLOPT_XFERINFODATA, nil)
                _ = gateway_curl_setopt_ptr(curl, CURLOPT_HTTPHEADER, nil)  // the list is freed by the defer above
                return code
            }
        }
        if let failure = o.failure {
            _ = gateway_curl_setopt_ptr(curl, CURLOPT_ERRORBUFFER, nil)
            return failure
        }

        var status = 0
        _ = gateway_curl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
        let message = errorBuffer[0] != 0 ? String(cString: errorBuffer) : text(code)
        _ = gateway_curl_setopt_ptr(curl, CURLOPT_ERRORBUFFER, nil)
        return CurlOutcome(
            curlCode: code.rawValue,
            message: message,
            status: status,
            headers: sink.headers,
            body: sink.body,
            exceededLimit: sink.exceededLimit,
            cancelled: sink.cancelled
        )
    }
}

/// Idle easy handles, most recently used last (so sequential requests reuse the warm handle and its connection).
/// No more handles exist than transfers may run at once (``TransferGate``); they are cleaned up when the pool goes
/// away, which is after the transport and every transfer still running have released it.
final class EasyHandlePool: Sendable {
    private let idle = Mutex<[CurlEasy]>([])

    /// An idle handle, or a new one; nil only when `curl_easy_init` fails.
    func checkOut() -> CurlEasy? {
        idle.withLock { $0.popLast() } ?? CurlEasy()
    }

    func checkIn(_ easy: CurlEasy) {
        idle.withLock { $0.append(easy) }
    }
}
