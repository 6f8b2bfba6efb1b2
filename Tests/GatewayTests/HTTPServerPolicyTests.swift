import Foundation
import Gateway
import Glibc
import Synchronization
import Testing

/// What the server enforces against slow, greedy and oversized clients: connection limits per address, the total
/// request deadline, the body buffer budget, and refusals (413, 503) that a client writing its whole body first still
/// reads. Each test starts its own `HTTPServer` on 127.0.0.1, port 0, and talks to it over raw sockets; a few connect
/// from 127.0.0.2 (on Linux all of 127.0.0.0/8 is the loopback interface) to act as a second client address.
@Suite struct HTTPServerPolicyTests {
    // MARK: Connections

    @Test func slowConnectionsFromOneAddressLeaveAnotherAddressServed() async throws {
        let seen = Seen()
        let server = try Self.start(seen) { request in
            request.path == "/healthz"
                ? .json(200, Array(#"{"ok":true}"#.utf8)) : .json(202, Array("\(request.body.count)".utf8))
        }
        let perAddress = Int(HTTPServer.Configuration().connectionsPerAddressLimit)
        let total = Int(HTTPServer.Configuration().connectionLimit)
        #expect(perAddress < total)

        // More slow connections from 127.0.0.1 than the whole connection limit, each a request that never ends:
        // a header line now and then.
        var slow: [Client] = []
        for _ in 0..<1_100 {
            let client = try Client(port: server.port, from: "127.0.0.1")
            _ = client.send("POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
            slow.append(client)
        }
        let trickle = Trickler(slow, line: "X-Slow: 1\r\n", every: .milliseconds(200))
        defer { trickle.stop() }
        // They hold every slot one address may have …
        #expect(await eventually { server.openConnections >= perAddress })
        #expect(server.openConnections <= perAddress)

        // … and a client at another address is still served, a health check and a real notification.
        let health = try Client(port: server.port, from: "127.0.0.2")
        _ = health.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let healthReply = await health.readReply(timeout: .seconds(10))
        #expect(healthReply?.status == 200, "\(String(describing: healthReply))")

        let body = #"{"signedPayload":"x"}"#
        let post = try Client(port: server.port, from: "127.0.0.2")
        _ = post.send(
            "POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        let postReply = await post.readReply(timeout: .seconds(10))
        #expect(postReply?.status == 202 && postReply?.body == Array("\(body.utf8.count)".utf8))
        #expect(seen.paths.contains("/notifications") && seen.addresses.contains("127.0.0.2"))
        #expect(!seen.addresses.contains("127.0.0.1"), "a slow request reached the handler")
    }

    @Test func aRequestThatTricklesIsClosedAtTheDeadlineWhileAnIdleKeepAliveConnectionIsNot() async throws {
        let server = try Self.start(Seen(), configure: { $0.requestDeadlineSeconds = 2 }) { request in
            .json(200, Array("\(request.path)".utf8))
        }
        // A keep-alive connection that completed a request before the tricklers start, and then says nothing.
        let idle = try Client(port: server.port)
        _ = idle.send("GET /first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await idle.readReply(timeout: .seconds(10))?.status == 200)

        // Each sends a byte or a header line every 250 ms: far inside the 30 s inactivity timeout, for ever.
        let headers = try Client(port: server.port)
        _ = headers.send("POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let body = try Client(port: server.port)
        _ = body.send("POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
        let trickle = Trickler([headers, body], line: "X-Slow: 1\r\n", every: .milliseconds(250))
        let trickleBody = Trickler([body], line: "x", every: .milliseconds(250))
        defer {
            trickle.stop()
            trickleBody.stop()
        }
        let headersClosed = await headers.readUntilClosed(timeout: .seconds(20))
        let bodyClosed = await body.readUntilClosed(timeout: .seconds(20))
        #expect(headersClosed.closed, "a request trickling headers was still open after 20 s (deadline 2 s)")
        #expect(bodyClosed.closed, "a request trickling its body was still open after 20 s (deadline 2 s)")
        #expect(server.deadlineClosedConnections >= 2)

        // The idle connection has been idle longer than the deadline by now (its request ended before the tricklers
        // began), yet the deadline is for requests arriving: it is still open and serves its next request.
        _ = idle.send("GET /second HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let second = await idle.readReply(timeout: .seconds(10))
        #expect(second?.status == 200 && second?.body == Array("/second".utf8), "\(String(describing: second))")
        #expect(await eventually { server.inFlightRequests == 0 })
    }

    // MARK: Refusals the client reads

    /// Like Python's urllib: the head is written, then the whole body in blocks, and only then is anything read.
    @Test func anOversizeContentLengthBodyWrittenWholeBeforeReadingGetsAComplete413EveryTime() async throws {
        let seen = Seen()
        let server = try Self.start(seen) { _ in ServerResponse(status: 200) }  // the default 1 MiB limit
        let body = [UInt8](repeating: 0x61, count: 2 << 20)
        for attempt in 0..<20 {
            let client = try Client(port: server.port)
            let head = "POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\n\r\n"
            client.send(head)
            // The body goes out once the server has the head (as when a client's body comes from a slower source):
            // a server that answers and closes at the head resets the connection under the writes that follow. Not
            // asserted: the wait only orders the writes.
            _ = await eventually(timeout: .seconds(1)) { server.inFlightRequests > 0 }
            var sent = true
            for offset in stride(from: 0, to: body.count, by: 65_536) where sent {
                sent = client.send(Array(body[offset..<min(offset + 65_536, body.count)]))
            }
            #expect(sent, "attempt \(attempt): the server stopped reading before the body was written")
            let reply = await client.readReply(timeout: .seconds(10))
            #expect(reply?.status == 413 && reply?.complete == true, "attempt \(attempt): \(String(describing: reply))")
            #expect(reply?.header("connection")?.lowercased() == "close")
            #expect(reply.map { Self.errorCode($0.body) } == "body_too_large")
        }
        #expect(seen.count == 0)
        #expect(await eventually { server.inFlightRequests == 0 && server.bufferedBodyBytes == 0 })
    }

    @Test func aChunkedBodyThatGrowsOverTheLimitGetsAComplete413() async throws {
        let seen = Seen()
        let server = try Self.start(seen, configure: { $0.maxBodyBytes = 1_000 }) { _ in ServerResponse(status: 200) }
        let chunk = "320\r\n" + String(repeating: "c", count: 800) + "\r\n"
        for _ in 0..<5 {
            let client = try Client(port: server.port)
            let sent = client.send(
                "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + chunk
                    + "0\r\n\r\n")
            #expect(sent)
            let reply = await client.readReply(timeout: .seconds(10))
            #expect(reply?.status == 413 && reply?.complete == true, "\(String(describing: reply))")
            #expect(reply.map { Self.errorCode($0.body) } == "body_too_large")
            #expect(await client.readUntilClosed(timeout: .seconds(10)).closed)
        }
        #expect(seen.count == 0)
        #expect(await eventually { server.inFlightRequests == 0 && server.bufferedBodyBytes == 0 })
    }

    @Test func expectContinueIsRefusedAtOnceAndBodiesPastTheDrainLimitAreCutOff() async throws {
        let seen = Seen()
        let server = try Self.start(
            seen,
            configure: {
                $0.maxBodyBytes = 1_000
                $0.drainLimitBytes = 8_192
            }
        ) { _ in ServerResponse(status: 200) }

        // The client waits for 100 Continue and sends nothing: the 413 comes at once, without the body.
        let waiting = try Client(port: server.port)
        _ = waiting.send(
            "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        let refused = await waiting.readReply(timeout: .seconds(10))
        #expect(refused?.status == 413 && refused?.complete == true, "\(String(describing: refused))")

        // A chunked body past the drain limit is not read to its end: the connection closes without an answer.
        let endless = try Client(port: server.port)
        let chunk = "400\r\n" + String(repeating: "e", count: 1_024) + "\r\n"
        _ = endless.send(
            "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(repeating: chunk, count: 16))
        let cut = await endless.readUntilClosed(timeout: .seconds(10))
        #expect(cut.closed)
        #expect(!String(decoding: cut.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 2"))
        #expect(seen.count == 0)
        #expect(await eventually { server.inFlightRequests == 0 && server.bufferedBodyBytes == 0 })
    }

    // MARK: Memory

    @Test func tricklingChunkedUploadsStayWithinTheBodyBudgetAndTheRestGet503() async throws {
        let budget = 256 << 10
        let server = try Self.start(
            Seen(),
            configure: {
                $0.maxBodyBytes = 64 << 10
                $0.bodyBufferBudgetBytes = budget
            }
        ) { request in .json(200, Array("\(request.body.count)".utf8)) }

        // 20 uploads of 56 KiB each (within the body limit), 8 KiB at a time, side by side: 1.1 MiB in all against a
        // 256 KiB budget.
        let clients = try (0..<20).map { _ in try Client(port: server.port) }
        for client in clients {
            _ = client.send("POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        }
        let chunk = "2000\r\n" + String(repeating: "u", count: 8_192) + "\r\n"
        var peak = 0
        for _ in 0..<7 {
            for client in clients { _ = client.send(chunk) }
            for _ in 0..<20 {  // samples while the server takes the round in
                peak = max(peak, server.bufferedBodyBytes)
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        for client in clients { _ = client.send("0\r\n\r\n") }

        var accepted = 0
        var busy = 0
        for client in clients {
            let reply = await client.readReply(timeout: .seconds(10))
            peak = max(peak, server.bufferedBodyBytes)
            switch reply?.status {
            case 200?:
                #expect(reply?.body == Array("\(7 * 8_192)".utf8))
                accepted += 1
            case 503?:
                #expect(reply.map { Self.errorCode($0.body) } == "server_busy")
                #expect(reply?.header("retry-after") != nil && reply?.complete == true)
                busy += 1
            default:
                Issue.record("neither 200 nor 503: \(String(describing: reply))")
            }
        }
        #expect(peak <= budget, "buffered \(peak) bytes against a budget of \(budget)")
        #expect(busy > 0, "1.1 MiB of bodies were all buffered against a 256 KiB budget")
        #expect(accepted > 0)
        #expect(await eventually { server.bufferedBodyBytes == 0 && server.inFlightRequests == 0 })
    }

    // MARK: Configuration

    @Test func theLimitsAreValidatedAndComeFromTheConfigFile() throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 2
        configuration.bodyBufferBudgetBytes = configuration.maxBodyBytes - 1
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            try HTTPServer(configuration: configuration) { _ in ServerResponse(status: 200) }.start()
        }

        let text = """
            { "limits": { "connections": 2000, "connections_per_address": 500, "request_deadline_seconds": 20,
                          "body_buffer_bytes": 33554432 } }
            """
        let limits = try GatewayConfig.parse(Array(text.utf8), baseDirectory: "/tmp").limits
        #expect(limits.connections == 2_000 && limits.connectionsPerAddress == 500)
        #expect(limits.requestDeadlineSeconds == 20 && limits.bodyBufferBytes == 32 << 20)
        let defaults = GatewayConfig().limits
        let server = HTTPServer.Configuration()
        #expect(defaults.connections == Int(server.connectionLimit))
        #expect(defaults.connectionsPerAddress == Int(server.connectionsPerAddressLimit))
        #expect(defaults.requestDeadlineSeconds == Int(server.requestDeadlineSeconds))
        #expect(defaults.bodyBufferBytes == server.bodyBufferBudgetBytes)
        #expect(throws: ConfigError.self) {
            try GatewayConfig.parse(Array(#"{"limits":{"body_buffer_bytes":1000}}"#.utf8), baseDirectory: "/tmp")
        }
    }
}

// MARK: - Helpers

extension HTTPServerPolicyTests {
    /// A started server on 127.0.0.1:0 with two handler threads; the handler's requests go to `seen` first.
    static func start(
        _ seen: Seen, configure: (inout HTTPServer.Configuration) -> Void = { _ in },
        handler: @escaping RequestHandler
    ) throws -> HTTPServer {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 2
        configure(&configuration)
        let server = HTTPServer(configuration: configuration) { request in
            seen.record(request)
            return handler(request)
        }
        try server.start()
        return server
    }

    /// The `code` of a `{"error":{"code":…}}` body, or nil.
    static func errorCode(_ body: [UInt8]) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return nil }
        return error["code"] as? String
    }

    /// Every request the handler saw.
    final class Seen: Sendable {
        private let requests = Mutex<[(path: String, address: String)]>([])
        func record(_ request: ServerRequest) {
            requests.withLock { $0.append((request.path, request.remoteAddress)) }
        }
        var count: Int { requests.withLock { $0.count } }
        var paths: [String] { requests.withLock { $0.map(\.path) } }
        var addresses: Set<String> { requests.withLock { Set($0.map(\.address)) } }
    }

    /// One parsed HTTP/1.1 response.
    struct Reply: CustomStringConvertible {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        /// The whole body announced by `Content-Length` arrived.
        var complete: Bool

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        var description: String {
            "\(status) \(headers.map { "\($0.name): \($0.value)" }) \(String(decoding: body, as: UTF8.self)) complete=\(complete)"
        }

        /// The first response in `bytes`, once its head is complete.
        static func parse(_ bytes: [UInt8]) -> Reply? {
            let separator: [UInt8] = Array("\r\n\r\n".utf8)
            guard let end = (0..<max(0, bytes.count - 3)).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) })
            else { return nil }
            let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let statusWords = lines[0].split(separator: " ")
            guard statusWords.count >= 2, statusWords[0] == "HTTP/1.1", let status = Int(statusWords[1]) else { return nil }
            var headers: [(name: String, value: String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            let rest = Array(bytes[(end + 4)...])
            let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
            return Reply(status: status, headers: headers, body: Array(rest.prefix(length)), complete: rest.count >= length)
        }
    }

    /// A blocking TCP client socket to 127.0.0.1, bound to a chosen loopback source address (closed at deinit).
    final class Client: Sendable {
        let fd: Int32
        private let closed = Atomic<Bool>(false)

        init(port: UInt16, from source: String = "127.0.0.1") throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SocketError(operation: "socket", errno: errno) }
            // Sends give up after 10 s rather than hang a test on a server that stopped reading.
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, source, &local.sin_addr) == 1 else {
                Glibc.close(fd)
                throw SocketError(operation: "inet_pton", errno: EINVAL)
            }
            var remote = sockaddr_in()
            remote.sin_family = sa_family_t(AF_INET)
            remote.sin_port = port.bigEndian
            remote.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
            let length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
            }
            guard bound == 0 else {
                let error = SocketError(operation: "bind", errno: errno)
                Glibc.close(fd)
                throw error
            }
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
            }
            guard connected == 0 else {
                let error = SocketError(operation: "connect", errno: errno)
                Glibc.close(fd)
                throw error
            }
        }

        deinit { close() }

        /// Writes all of `bytes`; false if the connection failed first (MSG_NOSIGNAL: no SIGPIPE for the tests).
        @discardableResult func send(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }

        @discardableResult func send(_ text: String) -> Bool { send(Array(text.utf8)) }

        /// Everything received until the server closes (EOF or reset) or `timeout` passes.
        func readUntilClosed(timeout: Duration) async -> (bytes: [UInt8], closed: Bool) {
            let fd = fd
            return await offPool {
                var received: [UInt8] = []
                let closed = Client.receive(fd, timeout: timeout) { received.append(contentsOf: $0); return true }
                return (received, closed)
            }
        }

        /// The next response, read until it is complete, the server closes, or `timeout` passes; nil without a
        /// complete head.
        func readReply(timeout: Duration) async -> Reply? {
            let fd = fd
            return await offPool {
                var received: [UInt8] = []
                _ = Client.receive(fd, timeout: timeout) { piece in
                    received.append(contentsOf: piece)
                    return Reply.parse(received)?.complete != true
                }
                return Reply.parse(received)
            }
        }

        func close() {
            if !closed.exchange(true, ordering: .relaxed) { _ = Glibc.close(fd) }
        }

        /// Calls `chunk` for each piece received until it returns false; true when the peer closed.
        private static func receive(_ fd: Int32, timeout: Duration, _ chunk: ([UInt8]) -> Bool) -> Bool {
            var interval = timeval(tv_sec: 0, tv_usec: 100_000)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            let clock = ContinuousClock()
            let deadline = clock.now + timeout
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while clock.now < deadline {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    guard chunk(Array(buffer[..<n])) else { return false }
                } else if n == 0 || errno == ECONNRESET {
                    return true
                }
            }
            return false
        }
    }

    struct SocketError: Error {
        var operation: String
        var errno: Int32
    }

    /// Sends `line` on each client every `interval`, on a thread of its own, until stopped.
    final class Trickler: Sendable {
        private let stopped = Atomic<Bool>(false)
        private let finished = DispatchSemaphore(value: 0)

        init(_ clients: [Client], line: String, every interval: Duration) {
            let bytes = Array(line.utf8)
            let microseconds = UInt32(interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
            Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    for client in clients { client.send(bytes) }
                    usleep(microseconds)
                }
                finished.signal()
            }.start()
        }

        func stop() {
            guard !stopped.exchange(true, ordering: .relaxed) else { return }
            finished.wait()
        }
    }
}

/// Polls `condition` every 10 ms for up to `timeout` (generous: the whole package's tests share two cores).
private func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        guard clock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// Runs blocking work on its own thread, off Swift's cooperative pool.
private func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
