import Glibc
public import HTTPClient
import Synchronization
import Threads

/// A small scripted HTTP/1.1 server on raw POSIX sockets, for tests only.
///
/// It listens on `127.0.0.1` on a port the kernel picks, accepts on one thread and serves each connection on its own
/// thread: keep-alive (several requests per connection) and `Content-Length` request bodies; chunked request bodies
/// are refused. For every request it records the request, then asks `handler` what to do. A connection whose first
/// bytes are not an HTTP request line (a TLS ClientHello, for example) gets `400 Bad Request` and is closed, as a
/// real plain-HTTP server would.
///
/// ``stop()`` (also run at deinit) closes the listener before it returns (a connection attempt afterwards is
/// refused), shuts every open connection down and wakes every delay or hang; it never waits for a handler.
///
/// ```swift
/// let server = try LoopbackHTTPServer { request in .respond(status: 200, body: Array("ok".utf8)) }
/// let response = try await CurlTransport().send(HTTPRequest(method: .get, url: server.url("/ping")))
/// ```
public final class LoopbackHTTPServer: Sendable {
    public struct Request: Sendable, Hashable {
        public var method: String
        /// The request target as sent: path and query.
        public var path: String
        public var headers: [HTTPHeader]
        public var body: [UInt8]

        /// First header with `name`, compared case-insensitively.
        public func header(_ name: String) -> String? {
            let lower = name.lowercased()
            return headers.first { $0.name.lowercased() == lower }?.value
        }
    }

    public enum Action: Sendable {
        /// A complete response after `delay`. `Content-Length` is added unless `headers` has one.
        case respond(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], delay: Duration = .zero)
        /// Close the connection without a byte of response.
        case closeWithoutResponse
        /// Send these bytes as they are, then close.
        case sendRaw([UInt8])
        /// Say nothing for this long, then close.
        case hang(Duration)
    }

    /// The port the kernel chose.
    public let port: UInt16
    private let core: ServerCore

    public init(handler: @escaping @Sendable (Request) -> Action) throws {
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listenFD >= 0 else { throw LoopbackServerError("socket", errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(listenFD, sa, length) == 0 && listen(listenFD, 128) == 0 && getsockname(listenFD, sa, &length) == 0
            }
        }
        guard bound else {
            let error = LoopbackServerError("bind/listen", errno)
            close(listenFD)
            throw error
        }
        var stopPipe: [Int32] = [-1, -1]
        guard pipe(&stopPipe) == 0 else {
            let error = LoopbackServerError("pipe", errno)
            close(listenFD)
            throw error
        }
        // Not inherited by the gateway processes tests spawn (`pipe2` is not in the Glibc module): a child holding
        // the write end kept the pipe from reaching EOF, so `stop()` waited forever for the accept thread.
        for fd in stopPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        port = UInt16(bigEndian: address.sin_port)
        let core = ServerCore(handler: handler, stopRead: stopPipe[0], stopWrite: stopPipe[1])
        self.core = core
        guard let thread = OSThread.start(name: "test-accept", { core.acceptLoop(listenFD) }) else {
            close(listenFD)
            throw LoopbackServerError("pthread_create", EAGAIN)
        }
        core.state.withLock { $0.acceptThread = thread }
    }

    deinit { core.stop() }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String = "/") -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Every request received so far, in arrival order.
    public var requests: [Request] { core.state.withLock { $0.requests } }

    /// Connections accepted so far.
    public var connectionCount: Int { core.state.withLock { $0.acceptedCount } }

    /// Closes the listener (before returning) and every connection. Idempotent; never waits for a handler.
    public func stop() { core.stop() }
}

public struct LoopbackServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ call: String, _ code: Int32) { description = "\(call) failed: \(String(cString: strerror(code)))" }
}

/// What the server's threads share. Sendable by construction: immutable fields and a `Mutex`.
///
/// File descriptors: the accept thread owns the listener and closes it on its way out (`stop()` joins that thread,
/// so the port is closed when `stop()` returns). Each connection thread owns its socket; `stop()` only *shuts down*
/// sockets still registered in `connections`, and a thread unregisters its socket under the lock before closing it,
/// so `stop()` never touches a descriptor number the kernel may already have handed to someone else. Every wait
/// also polls the read end of `stopPipe`, which `stop()` makes readable by closing the write end.
private final class ServerCore: Sendable {
    struct State {
        var stopped = false
        var connections: Set<Int32> = []
        var acceptedCount = 0
        var requests: [LoopbackHTTPServer.Request] = []
        var acceptThread: OSThread?
    }

    let handler: @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Action
    let stopRead: Int32
    let stopWrite: Int32
    let state = Mutex(State())

    static let maxHeadBytes = 64 * 1024
    static let maxBodyBytes = 16 * 1024 * 1024

    init(
        handler: @escaping @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Action,
        stopRead: Int32,
        stopWrite: Int32
    ) {
        (self.handler, self.stopRead, self.stopWrite) = (handler, stopRead, stopWrite)
    }

    deinit {
        // Every thread holds a reference, so none is polling `stopRead` any more.
        close(stopRead)
        if !state.withLock({ $0.stopped }) { close(stopWrite) }
    }

    func stop() {
        let acceptThread: OSThread? = state.withLock { s in
            guard !s.stopped else { return nil }
            s.stopped = true
            // The read end now polls readable for every waiter: a byte nobody reads, then EOF — the byte wakes them
            // even when a spawned process inherited the write end before it was marked close-on-exec.
            var byte: UInt8 = 1
            _ = write(stopWrite, &byte, 1)
            close(stopWrite)
            for fd in s.connections { shutdown(fd, Int32(SHUT_RDWR)) }
            defer { s.acceptThread = nil }
            return s.acceptThread
        }
        if let acceptThread, !acceptThread.isCurrent {
            acceptThread.join()
        }
    }

    // MARK: Accepting

    func acceptLoop(_ listenFD: Int32) {
        defer { close(listenFD) }
        while true {
            var fds = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let fd = accept4(listenFD)
            if fd < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ECONNABORTED { continue }
                return
            }
            let registered = state.withLock { s in
                guard !s.stopped else { return false }
                s.connections.insert(fd)
                s.acceptedCount += 1
                return true
            }
            guard registered else {
                close(fd)
                return
            }
            if !OSThread.detach(name: "test-serve", { self.serve(fd) }) {
                closeConnection(fd)
            }
        }
    }

    /// `accept` with close-on-exec (`accept4` is not in the Glibc module).
    private func accept4(_ listenFD: Int32) -> Int32 {
        let fd = accept(listenFD, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
    }

    private func closeConnection(_ fd: Int32) {
        state.withLock { _ = $0.connections.remove(fd) }
        close(fd)
    }

    // MARK: Serving one connection

    private func serve(_ fd: Int32) {
        defer { closeConnection(fd) }
        var buffer: [UInt8] = []
        while true {
            let request: LoopbackHTTPServer.Request
            let keepAlive: Bool
            switch readRequest(fd, &buffer) {
            case .closed: return
            case .malformed:
                let refusal = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                _ = sendAll(fd, Array(refusal.utf8))
                return
            case .request(let r, let k): (request, keepAlive) = (r, k)
            }
            state.withLock { $0.requests.append(request) }
            ContractSamples.recordSent(headers: request.headers.map { ($0.name, $0.value) }, body: request.body)
            switch handler(request) {
            case .respond(let status, let headers, let body, let delay):
                if delay > .zero, !pause(delay) { return }
                guard sendAll(fd, Self.response(status, headers, body, keepAlive: keepAlive)), keepAlive else { return }
            case .closeWithoutResponse:
                return
            case .sendRaw(let bytes):
                _ = sendAll(fd, bytes)
                return
            case .hang(let duration):
                _ = pause(duration)
                return
            }
        }
    }

    private static func response(_ status: Int, _ headers: [HTTPHeader], _ body: [UInt8], keepAlive: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        if !headers.contains(where: { $0.name.lowercased() == "content-length" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        if !keepAlive { head += "Connection: close\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    private enum ReadResult {
        case request(LoopbackHTTPServer.Request, keepAlive: Bool)
        case closed
        case malformed
    }

    /// Reads one request from `buffer` plus the socket; bytes after it stay in `buffer` for the next one.
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> ReadResult {
        var searchFrom = 0
        while true {
            if let headEnd = Self.find([0x0D, 0x0A, 0x0D, 0x0A], in: buffer, from: searchFrom) {
                guard let (request, keepAlive, contentLength) = Self.parseHead(buffer[..<headEnd]) else {
                    return .malformed
                }
                let total = headEnd + 4 + contentLength
                while buffer.count < total {
                    guard receive(fd, &buffer) else { return .closed }
                }
                var complete = request
                complete.body = Array(buffer[(headEnd + 4)..<total])
                buffer.removeFirst(total)
                return .request(complete, keepAlive: keepAlive)
            }
            if !Self.couldBeRequestLine(buffer) || buffer.count > Self.maxHeadBytes { return .malformed }
            searchFrom = max(0, buffer.count - 3)
            guard receive(fd, &buffer) else { return .closed }
        }
    }

    /// Waits for bytes (or for `stop()`), appends them; false when the peer closed, on error, or when stopped.
    private func receive(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        while true {
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            if fds[1].revents != 0 { return false }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            buffer.append(contentsOf: chunk[..<n])
            return true
        }
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }
    }

    /// Sleeps for `duration` unless `stop()` comes first; true when the whole time passed.
    private func pause(_ duration: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + duration
        while true {
            let left = clock.now.duration(to: deadline)
            if left <= .zero { return true }
            let (seconds, attoseconds) = left.components
            let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            var fd = pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)
            if poll(&fd, 1, Int32(clamping: millis)) > 0 { return false }
        }
    }

    // MARK: Parsing

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        for i in start...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return i
        }
        return nil
    }

    /// A request line starts with an upper-case method and a space; anything else (a TLS record, garbage) is refused
    /// as soon as it arrives instead of waiting for a blank line that never comes.
    private static func couldBeRequestLine(_ bytes: [UInt8]) -> Bool {
        for (i, b) in bytes.prefix(17).enumerated() {
            if b == UInt8(ascii: " ") { return i > 0 }
            if b < UInt8(ascii: "A") || b > UInt8(ascii: "Z") { return false }
        }
        return bytes.count < 17
    }

    private static func parseHead(_ head: ArraySlice<UInt8>) -> (LoopbackHTTPServer.Request, Bool, Int)? {
        let lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
        }
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        var headers: [HTTPHeader] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingSpaces
            guard !name.isEmpty, !name.contains(" ") else { return nil }
            headers.append(HTTPHeader(name, line[line.index(after: colon)...].trimmingSpaces))
        }
        let request = LoopbackHTTPServer.Request(
            method: String(parts[0]),
            path: String(parts[1]),
            headers: headers,
            body: []
        )
        if request.header("transfer-encoding") != nil { return nil }  // chunked bodies: not supported
        var contentLength = 0
        if let value = request.header("content-length") {
            guard let n = Int(value), n >= 0, n <= maxBodyBytes else { return nil }
            contentLength = n
        }
        let connection = request.header("connection")?.lowercased() ?? ""
        let keepAlive = parts[2] == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        return (request, keepAlive, contentLength)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
