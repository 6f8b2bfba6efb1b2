internal import CMicroHTTPD
import Glibc
import Synchronization
internal import Threads

/// Everything libmicrohttpd's threads and the handler threads touch: only `let` fields of Sendable types. The owning
/// ``HTTPServer`` makes one per start, passes it to the C side unretained, and keeps it alive until
/// `MHD_stop_daemon` has joined libmicrohttpd's threads and the handler pool has stopped.
final class ServerContext: Sendable {
    let handler: RequestHandler
    let bodies: BodyLimits
    let log: ServerLog
    let pool: HandlerPool
    /// Open connections and the deadlines' watchdog.
    let connections: ConnectionTracker
    /// Added to every response that lacks a field of the same name (``HTTPServer/Configuration/defaultHeaders``).
    let defaultHeaders: [(name: String, value: String)]
    /// Plain HTTP (not TLS): the server may write an answer on a socket itself (``ChunkedBodyRefusal``).
    let plainText: Bool
    /// Per path, the answer to a body too large (``HTTPServer/Configuration/tooLargeAnswers``).
    let tooLargeAnswers: [String: ServerResponse]
    /// Request-body bytes held in memory now: across all requests (the sum of their ``RequestState/charged``), and by
    /// client address while there is a share per address (``BodyLimits/perAddressBytes``).
    private let held = Mutex(HeldBodies())
    /// Bodies refused because their address held its share of the budget (``Refusal/addressBusy``).
    private let addressRefusals = Atomic<Int>(0)
    /// Requests whose first access-handler call has happened and whose completion callback has not: exactly the
    /// live ``RequestState`` objects.
    private let activeRequests = Atomic<Int>(0)
    /// Set by `stopAccepting()`: later responses carry `Connection: close`.
    private let quiescing = Atomic<Bool>(false)
    /// Connections suspended while their handler runs on the pool, and whether new ones may still be suspended.
    /// `MHD_stop_daemon` must not run while one is suspended (libmicrohttpd panics), so `stop()` closes the gate and
    /// waits for the count to reach zero; one lock makes "check closed, then count" atomic.
    private let dispatch = Mutex<(suspended: Int, closed: Bool)>((0, false))

    init(
        handler: @escaping RequestHandler,
        bodies: BodyLimits,
        log: ServerLog,
        pool: HandlerPool,
        connections: ConnectionTracker,
        defaultHeaders: [(name: String, value: String)] = [],
        plainText: Bool = true,
        tooLargeAnswers: [String: ServerResponse] = [:]
    ) {
        self.handler = handler
        self.bodies = bodies
        self.log = log
        self.pool = pool
        self.connections = connections
        self.defaultHeaders = defaultHeaders
        self.plainText = plainText
        self.tooLargeAnswers = tooLargeAnswers
    }

    /// The answer to `refusal` of a request to `path`: a path's own answer to a body too large, else the server's.
    func response(to refusal: Refusal, path: String) -> ServerResponse {
        if case .tooLarge = refusal, let own = tooLargeAnswers[path] { return own }
        return refusal.response(bodies)
    }

    var inFlight: Int { activeRequests.load(ordering: .acquiring) }
    func requestStarted() { activeRequests.add(1, ordering: .relaxed) }
    func requestFinished() { activeRequests.subtract(1, ordering: .releasing) }

    var bufferedBodies: Int { held.withLock { $0.total } }

    /// Body bytes held now for requests from `address`.
    func bufferedBodies(from address: String) -> Int { held.withLock { $0.byAddress[address] ?? 0 } }

    var addressShareRefusals: Int { addressRefusals.load(ordering: .relaxed) }

    /// Takes `count` bytes of the body buffer budget for a request from `address`: nil when taken, otherwise why not
    /// (and nothing is taken). The address's share is looked at first: when it is full, the refusal is the address's
    /// doing, whatever room the budget has.
    func reserveBodyBytes(_ count: Int, from address: String) -> Refusal? {
        held.withLock { held in
            let share = bodies.perAddressBytes
            let mine = share > 0 ? held.byAddress[address, default: 0] : 0
            if share > 0, count > share - mine { return .addressBusy }
            guard count <= bodies.bufferBudgetBytes - held.total else { return .busy }
            held.total += count
            if share > 0 { held.byAddress[address] = mine + count }
            return nil
        }
    }

    /// Why `count` more bytes from `address` would not fit now, if they would not (a guess: nothing is taken).
    func bodyBudgetRefusal(for count: Int, from address: String) -> Refusal? {
        held.withLock { held in
            let share = bodies.perAddressBytes
            if share > 0, count > share - held.byAddress[address, default: 0] { return .addressBusy }
            return count <= bodies.bufferBudgetBytes - held.total ? nil : .busy
        }
    }

    func releaseBodyBytes(_ count: Int, from address: String) {
        guard count > 0 else { return }
        held.withLock { held in
            held.total -= count
            guard bodies.perAddressBytes > 0 else { return }
            let left = held.byAddress[address, default: 0] - count
            held.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Counts a body refused for its address's share.
    func countRefusal(_ refusal: Refusal) {
        if case .addressBusy = refusal { addressRefusals.add(1, ordering: .relaxed) }
    }

    var isQuiescing: Bool { quiescing.load(ordering: .relaxed) }
    func setQuiescing(_ value: Bool) { quiescing.store(value, ordering: .relaxed) }

    /// Counts one more suspended connection; false once ``closeDispatch()`` has run (then the handler runs inline).
    func beginDispatch() -> Bool {
        dispatch.withLock { d in
            guard !d.closed else { return false }
            d.suspended += 1
            return true
        }
    }
    /// The handler's response made final: a ``ServerResponse/later(_:)`` one waited for here (only while the server
    /// stops, when handlers run on libmicrohttpd's threads).
    func settled(_ response: ServerResponse) -> ServerResponse {
        guard let produce = response.deferred else { return response }
        return Self.refusingNested(Blocking.wait { await produce() })
    }

    /// A deferred response's result, which must not be deferred again.
    static func refusingNested(_ response: ServerResponse) -> ServerResponse {
        guard response.deferred != nil else { return response }
        return .serverError(500, code: "internal_error", message: "the handler's deferred response was deferred again")
    }

    /// After `MHD_resume_connection`.
    func endDispatch() { dispatch.withLock { $0.suspended -= 1 } }
    func closeDispatch() { dispatch.withLock { $0.closed = true } }
    var suspendedConnections: Int { dispatch.withLock { $0.suspended } }
}

/// The body bytes a server holds now (``ServerContext``), under one lock.
struct HeldBodies {
    var total = 0
    /// By client address; only kept while there is a share per address. An address holding nothing has no entry.
    var byAddress: [String: Int] = [:]
}

/// How request bodies are held, limited and refused (from ``HTTPServer/Configuration``).
struct BodyLimits: Sendable {
    /// The largest body accepted.
    var maxBodyBytes: Int
    /// Body bytes the server holds at once, across all requests.
    var bufferBudgetBytes: Int
    /// Body bytes the server holds at once for the requests of one client address; 0: no share per address.
    var perAddressBytes: Int = 0
    /// A refused body is read (and dropped) up to this size so that its client reads the answer.
    var drainLimitBytes: Int
}

/// Why a request is refused once its body is in.
enum Refusal {
    /// Its body is larger than ``BodyLimits/maxBodyBytes``: 413.
    case tooLarge
    /// Its body did not fit in the server's buffer budget: 503, to be retried.
    case busy
    /// Its body did not fit in its client address's share of the buffer budget: 503, to be retried.
    case addressBusy

    /// The answer, in the shape of every error the server gives itself.
    func response(_ bodies: BodyLimits) -> ServerResponse {
        switch self {
        case .tooLarge:
            return .serverError(
                413,
                code: "body_too_large",
                message: "request body exceeds \(bodies.maxBodyBytes) bytes"
            )
        case .busy:
            var response = ServerResponse.serverError(
                503,
                code: "server_busy",
                message: "too many request bodies are arriving at once; retry later"
            )
            response.headers.append((name: "Retry-After", value: "5"))
            return response
        case .addressBusy:
            var response = ServerResponse.serverError(
                503,
                code: "address_busy",
                message: "too many request bodies are arriving from this client address at once; retry later"
            )
            response.headers.append((name: "Retry-After", value: "5"))
            return response
        }
    }
}

/// Where a handler thread leaves its response for the libmicrohttpd thread that resumes the connection.
final class ResponseSlot: Sendable {
    private let value = Mutex<ServerResponse?>(nil)
    func fill(_ response: ServerResponse) { value.withLock { $0 = response } }
    func take() -> ServerResponse? {
        value.withLock { v in
            defer { v = nil }
            return v
        }
    }
}

/// A libmicrohttpd connection handle carried to a handler thread for one purpose: `MHD_resume_connection`, which
/// microhttpd.h calls "safe … at any time" (it locks internally and wakes the I/O thread). `@unchecked` is sound
/// because the handle stays valid for that call: suspended connections "will NOT time out" and are not closed or
/// freed until resumed, and `HTTPServer.stop()` waits for every resume before `MHD_stop_daemon` (which the header
/// forbids while any connection is suspended). Nothing else dereferences it.
struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// libmicrohttpd's own error messages (through `MHD_OPTION_EXTERNAL_LOGGER`, never raw stderr): counted, the last
/// few kept for ``HTTPServer/start()``'s error reasons, and forwarded to the configured sink if there is one.
final class ServerLog: Sendable {
    private struct State {
        var count = 0
        var recent: [String] = []
    }

    private static let keep = 16
    private let state = Mutex(State())
    private let sink: (@Sendable (String) -> Void)?

    init(sink: (@Sendable (String) -> Void)?) { self.sink = sink }

    func record(_ message: String) {
        state.withLock { s in
            s.count += 1
            s.recent.append(message)
            if s.recent.count > Self.keep { s.recent.removeFirst(s.recent.count - Self.keep) }
        }
        sink?(message)
    }

    var count: Int { state.withLock { $0.count } }

    /// The messages recorded after the count was `mark` (at most the last few).
    func messages(since mark: Int) -> [String] {
        state.withLock { s in Array(s.recent.suffix(min(max(0, s.count - mark), s.recent.count))) }
    }
}

/// One request's state between libmicrohttpd's calls for it. It travels in the connection's `con_cls` slot
/// (retained there, released by the completion callback) and is only touched by the thread serving that
/// connection, one call at a time.
final class RequestState {
    var headers: [(name: String, value: String)] = []
    /// The request's path (without its query).
    var path = ""
    /// The client's numeric address ("" when unknown) and port: its share of the body budget is charged to it.
    var address = ""
    var port: UInt16 = 0
    var body: [UInt8] = []
    /// Bytes of the server's body buffer budget this request holds (the capacity reserved for `body`). Kept until the
    /// completion callback, after the handler has let go of the body; released early when the body is refused.
    var charged = 0
    /// The `Content-Length`, when there is one within the limit: the body buffer never grows past it.
    var declaredLength: Int?
    /// Body bytes received so far, kept or dropped.
    var received = 0
    /// Set when the request will be refused once its body is in. The rest of the body is read and dropped meanwhile:
    /// a client that writes its whole body before reading (most do) would otherwise have its connection reset under
    /// it and never read the answer.
    var refusal: Refusal?
    /// Set while the handler runs on the pool (the connection is suspended meanwhile).
    var pending: ResponseSlot?
    /// A response is queued (an early refusal, or the handler's); anything MHD still passes is ignored.
    var answered = false
}

// MARK: - libmicrohttpd callbacks (plain functions with the C signatures; they convert to @convention(c))

/// `MHD_AccessHandlerCallback`. libmicrohttpd calls it once when the headers are complete, once per body piece, and
/// once more (no upload data) when the body is complete. Nothing here may trap on input.
func gatewayAccessHandler(
    cls: UnsafeMutableRawPointer?,
    connection: OpaquePointer?,
    url: UnsafePointer<CChar>?,
    method: UnsafePointer<CChar>?,
    version: UnsafePointer<CChar>?,
    uploadData: UnsafePointer<CChar>?,
    uploadDataSize: UnsafeMutablePointer<Int>?,
    conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadDataSize, let conCls else { return .NO }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()

    guard let raw = conCls.pointee else {
        // First call: headers only, no body byte read yet (`Expect: 100-continue` is answered after this returns).
        let state = RequestState()
        conCls.pointee = Unmanaged.passRetained(state).toOpaque()
        context.requestStarted()
        state.headers = fields(connection, .HEADER_KIND)
        state.address = clientAddress(connection, port: &state.port)
        state.path = url.map { String(cString: $0) } ?? ""
        let framing = framingProblem(state.headers)
        let chunked = framing == nil && state.headers.contains { $0.name.lowercased() == "transfer-encoding" }
        context.connections.requestArriving(connection, chunkedBody: chunked)
        if let (status, code, problem) = framing {
            // libmicrohttpd 0.9.75 frames by the first Content-Length, and waits for the close after an unknown
            // transfer coding; a proxy in front may frame such a request differently (request smuggling), so it is
            // refused before any body byte is read (RFC 9112 §6.1, §6.3).
            return answerEarly(.serverError(status, code: code, message: problem), state, connection, context)
        }
        let limits = context.bodies
        let waitsForContinue = expectsContinue(connection, version: version)
        if let declared = declaredContentLength(connection) {
            if declared > UInt64(limits.maxBodyBytes) {
                // Answered at once when the client waits for `100 Continue` (it has sent nothing to drain), or when
                // the body is more than is worth reading; otherwise the body is drained first (see RequestState).
                if waitsForContinue || declared > UInt64(limits.drainLimitBytes) {
                    return answerEarly(context.response(to: .tooLarge, path: state.path), state, connection, context)
                }
                state.refusal = .tooLarge
            } else {
                state.declaredLength = Int(declared)
                // A client waiting for `100 Continue` can be told to come back later before it sends anything. (Room
                // is not reserved here: a Content-Length is only a claim, and the buffer grows as bytes arrive.)
                if waitsForContinue, let refusal = context.bodyBudgetRefusal(for: Int(declared), from: state.address) {
                    context.countRefusal(refusal)
                    return answerEarly(refusal.response(limits), state, connection, context)
                }
            }
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()

    let size = uploadDataSize.pointee
    if state.answered {
        uploadDataSize.pointee = 0  // a body after an early answer: discarded
        return .YES
    }
    if size > 0 {
        uploadDataSize.pointee = 0
        state.received += size
        if state.refusal == nil {
            // A response may not be queued while upload data is pending (libmicrohttpd accepts one only right after
            // the headers or once the body is complete), so a body that grows too large, or past the budget, is
            // refused at its end; until then it is read and dropped.
            if state.received > context.bodies.maxBodyBytes {
                refuse(state, .tooLarge, context)
            } else if let refusal = makeRoom(for: size, in: state, context) {
                refuse(state, refusal, context)
            } else if let uploadData {
                state.body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: size))
                return .YES
            } else {
                refuse(state, .busy, context)
            }
        }
        guard state.received <= context.bodies.drainLimitBytes else {
            // More than is worth reading just to answer: the connection is closed without one.
            context.log.record("refused request body passed \(context.bodies.drainLimitBytes) bytes; connection closed")
            return .NO
        }
        return .YES
    }

    // Called again after the resume: the handler thread has left its response in the slot.
    if let slot = state.pending {
        state.pending = nil
        state.answered = true
        let response =
            slot.take() ?? .serverError(500, code: "internal_error", message: "the handler left no response")
        return queue(response, on: connection, context)
    }

    // Last call: the whole body is here.
    context.connections.requestAnswering(connection)
    if let refusal = state.refusal {
        // Drained: the client has sent everything, so it reads this answer. The connection closes after it (what
        // follows on it was never parsed as requests).
        state.answered = true
        return queue(context.response(to: refusal, path: state.path), on: connection, context, close: true)
    }
    let body = state.body
    state.body = []
    let arguments = fields(connection, .GET_ARGUMENT_KIND)
    let request = ServerRequest(
        method: method.map { String(cString: $0) } ?? "",
        path: state.path,
        query: firstValues(arguments),
        headers: state.headers,
        body: body,
        remoteAddress: state.address,
        remotePort: state.port,
        queryItems: arguments
    )
    state.headers = []
    guard context.beginDispatch() else {
        // The server is stopping: run the handler here (MHD_stop_daemon waits for this thread).
        state.answered = true
        return queue(context.settled(context.handler(request)), on: connection, context)
    }
    // The handler may block: run it on the handler pool with the connection suspended, so this I/O thread goes on
    // serving its other connections. On resume libmicrohttpd calls this function again (the branch above).
    let slot = ResponseSlot()
    state.pending = slot
    MHD_suspend_connection(connection)
    let suspended = SuspendedConnection(pointer: connection)
    let handler = context.handler
    context.pool.submit {
        let response = handler(request)
        guard let produce = response.deferred else {
            slot.fill(response)
            MHD_resume_connection(suspended.pointer)
            context.endDispatch()
            return
        }
        // The work goes on without this thread; the connection stays suspended until it is done.
        Task {
            slot.fill(ServerContext.refusingNested(await produce()))
            MHD_resume_connection(suspended.pointer)
            context.endDispatch()
        }
    }
    return .YES
}

/// `MHD_RequestCompletedCallback`: runs once per request whose access handler ran — after the response was sent,
/// and equally when the client went away mid-body, timed out, or the daemon stopped.
func gatewayRequestCompleted(
    cls: UnsafeMutableRawPointer?,
    connection: OpaquePointer?,
    conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    termination: MHD_RequestTerminationCode
) {
    guard let cls, let conCls, let raw = conCls.pointee else { return }
    conCls.pointee = nil
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    // The handler has returned (the response is sent, or the connection is gone), so the body is released now.
    context.releaseBodyBytes(state.charged, from: state.address)
    state.charged = 0
    context.requestFinished()
    if let connection { context.connections.requestCompleted(connection) }
}

/// `MHD_NotifyConnectionCallback`: a connection was accepted, or is about to be closed (its socket is still open).
func gatewayConnectionNotice(
    cls: UnsafeMutableRawPointer?,
    connection: OpaquePointer?,
    socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED: context.connections.opened(connection)
    case .CONNECTION_NOTIFY_CLOSED: context.connections.closed(connection)
    default: break
    }
}

/// `MHD_LogCallback`: formats the message in C (Swift never walks the `va_list`) and records it. A message saying
/// that libmicrohttpd is about to refuse a chunked body with a page of its own is acted on first
/// (``ChunkedBodyRefusal``).
func gatewayLog(cls: UnsafeMutableRawPointer?, format: UnsafePointer<CChar>?, args: CVaListPointer?) {
    guard let cls, let format, let args else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let message = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer -> String in
        guard let base = buffer.baseAddress else { return "" }
        let length = gateway_mhd_format_log(base, buffer.count, format, args)
        guard length >= 0 else { return "unformattable libmicrohttpd message" }
        let used = min(Int(length), buffer.count - 1)
        return String(decoding: UnsafeRawBufferPointer(start: base, count: used), as: UTF8.self)
    }
    if let refusal = ChunkedBodyRefusal(libmicrohttpdMessage: message) {
        let response = refusal.response(context.bodies)
        let answer = context.plainText ? rawResponse(response, defaults: context.defaultHeaders) : nil
        if context.connections.takeOverChunkedBody(answer: answer) {
            context.log.record("a chunked body refused (\(refusal.reason)): answered \(response.status) by the server")
            return
        }
    }
    context.log.record(String(trimmed(message)))
}

/// The refusals of a chunked body that libmicrohttpd 0.9.75 makes while decoding it, after the access handler has
/// seen the request's headers, each with an HTML page of its own that no option replaces: a chunk-size line (chunk
/// extensions included) longer than its read buffer (what is left of
/// ``HTTPServer/Configuration/headerMemoryLimitBytes`` after the headers: under 64 KB) gets "500 Internal Server
/// Error"; a malformed chunk-size line 400; a chunk size past 2^64 413. libmicrohttpd logs each (with its page)
/// just before it queues the page, on the thread that serves the connection: that is when the server answers
/// instead, in the JSON shape of its own errors (``ConnectionTracker/takeOverChunkedBody(answer:)``). The pages are
/// libmicrohttpd's fixed strings (its messages are not translated), each used for these refusals only. Refusals it
/// makes before the access handler runs (malformed HTTP, oversized headers) and in the trailer fields after a chunked
/// body share their pages with other cases, and stay its own (docs/reverse-proxy.md).
enum ChunkedBodyRefusal {
    case lineTooLong
    case malformed
    case chunkTooLarge

    init?(libmicrohttpdMessage message: String) {
        guard message.hasPrefix("Error processing request (HTTP response code is ") else { return nil }
        if message.contains("carefully read the GNU libmicrohttpd documentation about connection management") {
            self = .lineTooLong
        } else if message.contains("Your HTTP chunked encoding was syntactically incorrect.") {
            self = .malformed
        } else if message.contains("The chunk size used in your HTTP chunked encoded request is too large.") {
            self = .chunkTooLarge
        } else {
            return nil
        }
    }

    var reason: String {
        switch self {
        case .lineTooLong: "a chunk-size line longer than the read buffer"
        case .malformed: "malformed chunked encoding"
        case .chunkTooLarge: "a chunk size past 2^64"
        }
    }

    /// The answer, in the shape of every error the server gives itself.
    func response(_ bodies: BodyLimits) -> ServerResponse {
        switch self {
        case .lineTooLong:
            .serverError(400, code: "bad_request", message: "a chunk-size line or its chunk extensions are too long")
        case .malformed: .serverError(400, code: "bad_request", message: "malformed chunked encoding")
        case .chunkTooLarge: Refusal.tooLarge.response(bodies)
        }
    }
}

/// `response` as the bytes of an HTTP/1.1 response that closes its connection, with the `defaults` it has no field of
/// (for the few answers the server writes on a socket itself, ``ChunkedBodyRefusal``).
func rawResponse(_ response: ServerResponse, defaults: [(name: String, value: String)]) -> [UInt8] {
    let reason = MHD_get_reason_phrase_for(UInt32(response.status)).map { String(cString: $0) } ?? ""
    var head = "HTTP/1.1 \(response.status) \(reason)\r\n"
    var fields = response.headers.filter { $0.name.lowercased() != "content-length" }
    for field in defaults where response.header(field.name) == nil { fields.append(field) }
    for field in fields { head += "\(field.name): \(field.value)\r\n" }
    head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
    return Array(head.utf8) + response.body
}

/// `MHD_KeyValueIteratorN`: appends one field to the `[(name:, value:)]` that `cls` points at.
private func collectField(
    cls: UnsafeMutableRawPointer?,
    kind: MHD_ValueKind,
    key: UnsafePointer<CChar>?,
    keySize: Int,
    value: UnsafePointer<CChar>?,
    valueSize: Int
) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let list = cls.assumingMemoryBound(to: [(name: String, value: String)].self)
    list.pointee.append((name: text(key, keySize), value: value.map { text($0, valueSize) } ?? ""))
    return .YES
}

// MARK: - Helpers

/// Queues `response` right after the headers, before any body byte is read. libmicrohttpd then reads nothing more on
/// the connection and closes it after the response.
private func answerEarly(
    _ response: ServerResponse,
    _ state: RequestState,
    _ connection: OpaquePointer,
    _ context: ServerContext
) -> MHD_Result {
    state.answered = true
    context.connections.requestAnswering(connection)
    return queue(response, on: connection, context, close: true)
}

/// Switches `state` to drain mode: the body kept so far is dropped (and its budget returned), the rest is read and
/// dropped, and `refusal` answers at the end.
private func refuse(_ state: RequestState, _ refusal: Refusal, _ context: ServerContext) {
    context.countRefusal(refusal)
    state.refusal = refusal
    state.body = []
    context.releaseBodyBytes(state.charged, from: state.address)
    state.charged = 0
}

/// Grows the body buffer to hold `extra` more bytes, taking the growth from the server's buffer budget (and the
/// client address's share of it) first; the refusal when there is no room, nil otherwise. The capacity at most
/// doubles per step (from 4 KiB) and never passes the declared `Content-Length` or the body limit, so it stays within
/// about twice what has arrived: memory follows the bytes received, not the size a client announces.
private func makeRoom(for extra: Int, in state: RequestState, _ context: ServerContext) -> Refusal? {
    let needed = state.body.count + extra
    guard needed > state.charged else { return nil }
    let ceiling = max(state.declaredLength ?? context.bodies.maxBodyBytes, needed)
    let target = min(max(needed, 2 * state.charged, 4_096), ceiling)
    if let refusal = context.reserveBodyBytes(target - state.charged, from: state.address) { return refusal }
    // An exact reservation: the array allocates `target` (rounded up by malloc at most), and appends within it never
    // reallocate behind the budget's back.
    state.body.reserveCapacity(target)
    state.charged = target
    return nil
}

/// Whether the client waits for `100 Continue` before sending its body (libmicrohttpd sends one only to HTTP/1.1).
private func expectsContinue(_ connection: OpaquePointer, version: UnsafePointer<CChar>?) -> Bool {
    guard let version, String(cString: version) == "HTTP/1.1",
        let expect = MHD_lookup_connection_value(connection, .HEADER_KIND, "Expect")
    else { return false }
    return trimmed(String(cString: expect)).lowercased() == "100-continue"
}

private func text(_ pointer: UnsafePointer<CChar>, _ count: Int) -> String {
    String(decoding: UnsafeRawBufferPointer(start: pointer, count: max(0, count)), as: UTF8.self)
}

private func fields(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(name: String, value: String)] {
    var list: [(name: String, value: String)] = []
    withUnsafeMutablePointer(to: &list) { _ = MHD_get_connection_values_n(connection, kind, collectField, $0) }
    return list
}

private func firstValues(_ arguments: [(name: String, value: String)]) -> [String: String] {
    var query: [String: String] = [:]
    for field in arguments where query[field.name] == nil {
        query[field.name] = field.value
    }
    return query
}

/// The peer's numeric address ("" when libmicrohttpd cannot tell), and its port in `port`.
func clientAddress(_ connection: OpaquePointer, port: inout UInt16) -> String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        guard let base = buffer.baseAddress, gateway_mhd_client_address(connection, base, buffer.count, &port) == 0
        else { return "" }
        return String(cString: base)
    }
}

/// Why the body's framing is ambiguous or unsupported, if it is: several `Content-Length` fields, one together with
/// `Transfer-Encoding`, or a transfer coding other than plain `chunked`.
private func framingProblem(_ headers: [(name: String, value: String)]) -> (Int, String, String)? {
    var lengths = 0
    var codings: [String] = []
    for header in headers {
        switch header.name.lowercased() {
        case "content-length": lengths += 1
        case "transfer-encoding": codings.append(header.value)
        default: break
        }
    }
    if lengths > 1 { return (400, "bad_request", "more than one Content-Length header") }
    if lengths == 1 && !codings.isEmpty { return (400, "bad_request", "both Content-Length and Transfer-Encoding") }
    let onlyChunked = codings.count == 1 && trimmed(codings[0]).lowercased() == "chunked"
    if !codings.isEmpty && !onlyChunked {
        return (501, "unsupported_transfer_encoding", "only Transfer-Encoding: chunked is supported")
    }
    return nil
}

/// `text` without leading and trailing spaces, tabs and line breaks.
private func trimmed(_ text: String) -> Substring {
    func isSpace(_ c: Character) -> Bool { c == " " || c == "\t" || c.isNewline }
    var value = text[...]
    while let first = value.first, isSpace(first) { value = value.dropFirst() }
    while let last = value.last, isSpace(last) { value = value.dropLast() }
    return value
}

/// The request's `Content-Length`, if it has one made of digits (optional whitespace around); a value too large for
/// `UInt64` saturates. libmicrohttpd itself answers 400 to a malformed one before calling us.
private func declaredContentLength(_ connection: OpaquePointer) -> UInt64? {
    guard let raw = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length") else { return nil }
    var value: UInt64 = 0
    var digits = 0
    for byte in UnsafeRawBufferPointer(start: raw, count: strlen(raw)) where byte != 0x20 && byte != 0x09 {
        guard byte >= 0x30, byte <= 0x39 else { return nil }
        let (times10, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
        value = o1 || o2 ? .max : sum
        digits += 1
    }
    return digits > 0 ? value : nil
}

/// Hands `response` to libmicrohttpd (which copies the body). A response the handler got wrong becomes a 500. With
/// `close` (or while quiescing) it carries `Connection: close` and the connection closes after it.
private func queue(
    _ response: ServerResponse,
    on connection: OpaquePointer,
    _ context: ServerContext,
    close: Bool = false
) -> MHD_Result {
    let closing = close || context.isQuiescing
    var status = response.status
    var built = makeResponse(response, closing: closing, defaults: context.defaultHeaders)
    if case .failure(let problem) = built {
        context.log.record("handler response replaced by 500: \(problem)")
        let fallback = ServerResponse.serverError(500, code: "internal_error", message: "invalid handler response")
        status = fallback.status
        built = makeResponse(fallback, closing: closing, defaults: context.defaultHeaders)
    }
    guard case .success(let mhdResponse) = built else { return .NO }
    defer { MHD_destroy_response(mhdResponse) }
    return MHD_queue_response(connection, UInt32(status), mhdResponse)
}

private struct ResponseProblem: Error, CustomStringConvertible {
    var description: String
}

/// `response` as a libmicrohttpd response, with the `defaults` it has no field of, and `Connection: close` when closing.
private func makeResponse(
    _ response: ServerResponse,
    closing: Bool,
    defaults: [(name: String, value: String)]
) -> Result<OpaquePointer, ResponseProblem> {
    guard (200...999).contains(response.status) else {
        return .failure(ResponseProblem(description: "status \(response.status) is not a final HTTP status"))
    }
    if let problem = headerProblem(response.headers) { return .failure(ResponseProblem(description: problem)) }
    var response = response
    for field in defaults where response.header(field.name) == nil {
        response.headers.append(field)
    }
    let created: OpaquePointer? = response.body.withUnsafeBytes { bytes in
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
        }
        return MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: base), .RESPMEM_MUST_COPY)
    }
    guard let created else { return .failure(ResponseProblem(description: "MHD_create_response_from_buffer failed")) }
    for (index, header) in response.headers.enumerated() where header.name.lowercased() != "content-length" {
        guard MHD_add_response_header(created, header.name, header.value) == .YES else {
            MHD_destroy_response(created)
            return .failure(ResponseProblem(description: "libmicrohttpd refused header #\(index) (\(header.name))"))
        }
    }
    if closing { _ = MHD_add_response_header(created, "Connection", "close") }
    return .success(created)
}

/// Why these header fields cannot be sent (a control character, CR, LF or NUL; a bad name), if they cannot.
func headerProblem(_ headers: [(name: String, value: String)]) -> String? {
    for (index, header) in headers.enumerated() {
        let nameOK = !header.name.isEmpty && header.name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x3A }
        let valueOK = header.value.utf8.allSatisfy { ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 }
        guard nameOK, valueOK else { return "header #\(index) has a control character or bad name" }
    }
    return nil
}
