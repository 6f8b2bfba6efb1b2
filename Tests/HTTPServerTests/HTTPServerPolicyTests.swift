import Foundation
import Glibc
import HTTPServer
import Synchronization
import TestSupport
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
        var slow: [RawHTTPClient] = []
        for _ in 0..<1_100 {
            let client = try RawHTTPClient(port: server.port, from: "127.0.0.1")
            _ = client.send("POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
            slow.append(client)
        }
        let trickle = Trickler(slow, line: "X-Slow: 1\r\n", every: .milliseconds(200))
        defer { trickle.stop() }
        // They hold every slot one address may have …
        await eventually("\(perAddress) connections open") { server.openConnections >= perAddress }
        #expect(server.openConnections <= perAddress)

        // … and a client at another address is still served, a health check and a real notification.
        let health = try RawHTTPClient(port: server.port, from: "127.0.0.2")
        _ = health.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let healthReply = await health.readReply(timeout: .seconds(10))
        #expect(healthReply?.status == 200, "\(String(describing: healthReply))")

        let body = #"{"signedPayload":"x"}"#
        let post = try RawHTTPClient(port: server.port, from: "127.0.0.2")
        _ = post.send(
            "POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        )
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
        let idle = try RawHTTPClient(port: server.port)
        _ = idle.send("GET /first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await idle.readReply(timeout: .seconds(10))?.status == 200)

        // Each sends a byte or a header line every 250 ms: far inside the 30 s inactivity timeout, for ever.
        let headers = try RawHTTPClient(port: server.port)
        _ = headers.send("POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let body = try RawHTTPClient(port: server.port)
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
        await eventually("no request in flight") { server.inFlightRequests == 0 }
    }

    // MARK: Refusals the client reads

    /// Like Python's urllib: the head is written, then the whole body in blocks, and only then is anything read.
    @Test func anOversizeContentLengthBodyWrittenWholeBeforeReadingGetsAComplete413EveryTime() async throws {
        let seen = Seen()
        let server = try Self.start(seen) { _ in ServerResponse(status: 200) }  // the default 1 MiB limit
        let body = [UInt8](repeating: 0x61, count: 2 << 20)
        for attempt in 0..<20 {
            let client = try RawHTTPClient(port: server.port)
            let head =
                "POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.count)\r\n\r\n"
            client.send(head)
            // The body goes out once the server has the head (as when a client's body comes from a slower source):
            // a server that answers and closes at the head resets the connection under the writes that follow. Not
            // asserted: the wait only orders the writes.
            await eventually("the head read", within: .seconds(1), recordsIssue: false) { server.inFlightRequests > 0 }
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
        await eventually("no request in flight and no body buffered") {
            server.inFlightRequests == 0 && server.bufferedBodyBytes == 0
        }
    }

    @Test func aChunkedBodyThatGrowsOverTheLimitGetsAComplete413() async throws {
        let seen = Seen()
        let server = try Self.start(seen, configure: { $0.maxBodyBytes = 1_000 }) { _ in ServerResponse(status: 200) }
        let chunk = "320\r\n" + String(repeating: "c", count: 800) + "\r\n"
        for _ in 0..<5 {
            let client = try RawHTTPClient(port: server.port)
            let sent = client.send(
                "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + chunk
                    + "0\r\n\r\n"
            )
            #expect(sent)
            let reply = await client.readReply(timeout: .seconds(10))
            #expect(reply?.status == 413 && reply?.complete == true, "\(String(describing: reply))")
            #expect(reply.map { Self.errorCode($0.body) } == "body_too_large")
            #expect(await client.readUntilClosed(timeout: .seconds(10)).closed)
        }
        #expect(seen.count == 0)
        await eventually("no request in flight and no body buffered") {
            server.inFlightRequests == 0 && server.bufferedBodyBytes == 0
        }
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
        let waiting = try RawHTTPClient(port: server.port)
        _ = waiting.send(
            "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n"
        )
        let refused = await waiting.readReply(timeout: .seconds(10))
        #expect(refused?.status == 413 && refused?.complete == true, "\(String(describing: refused))")

        // A chunked body past the drain limit is not read to its end: the connection closes without an answer.
        let endless = try RawHTTPClient(port: server.port)
        let chunk = "400\r\n" + String(repeating: "e", count: 1_024) + "\r\n"
        _ = endless.send(
            "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(repeating: chunk, count: 16)
        )
        let cut = await endless.readUntilClosed(timeout: .seconds(10))
        #expect(cut.closed)
        #expect(!String(decoding: cut.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 2"))
        #expect(seen.count == 0)
        await eventually("no request in flight and no body buffered") {
            server.inFlightRequests == 0 && server.bufferedBodyBytes == 0
        }
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
        let clients = try (0..<20).map { _ in try RawHTTPClient(port: server.port) }
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
        await eventually("no body buffered and no request in flight") {
            server.bufferedBodyBytes == 0 && server.inFlightRequests == 0
        }
    }

    @Test func oneAddressHoldsAtMostItsShareOfTheBodyBudgetAndAnotherAddressIsStillServed() async throws {
        let (body, share) = (64 << 10, 256 << 10)
        let server = try Self.start(
            Seen(),
            configure: {
                $0.maxBodyBytes = body
                $0.bodyBufferBudgetBytes = 1 << 20
                $0.bodyBufferPerAddressBytes = share
            }
        ) { request in .json(200, Array("\(request.body.count)".utf8)) }
        // Ten uploads from 127.0.0.2 that stop a byte short, one after the other once the one before is taken in:
        // 640 KiB of bodies against its 256 KiB share (the budget would hold them all). The first four fill the
        // share, the others are refused.
        let head = "POST /n HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body)\r\n\r\n"
        var uploads: [RawHTTPClient] = []
        for index in 0..<10 {
            let upload = try RawHTTPClient(port: server.port, from: "127.0.0.2")
            upload.send(head + String(repeating: "u", count: body - 1))
            uploads.append(upload)
            await eventually("upload \(index) held or refused") {
                server.bufferedBodyBytes(from: "127.0.0.2") == min(index + 1, 4) * body
                    && server.addressShareRefusals == max(0, index + 1 - 4)
            }
        }
        #expect(server.bufferedBodyBytes(from: "127.0.0.2") == share && server.bufferedBodyBytes == share)
        // Another address still has room …
        let other = try RawHTTPClient(port: server.port, from: "127.0.0.1")
        other.send(head.replacingOccurrences(of: "\r\n\r\n", with: "\r\nConnection: close\r\n\r\n"))
        other.send(String(repeating: "o", count: body))
        let served = await other.readReply(timeout: .seconds(10))
        #expect(served?.status == 200 && served?.body == Array("\(body)".utf8), "\(String(describing: served))")
        // … and the refused ones, once they have sent their last byte, read why.
        for upload in uploads { upload.send("u") }
        var refused = 0
        for upload in uploads {
            guard let reply = await upload.readReply(timeout: .seconds(10)) else { continue }
            if reply.status == 503 {
                #expect(Self.errorCode(reply.body) == "address_busy" && reply.header("retry-after") == "5")
                refused += 1
            } else {
                #expect(reply.status == 200, "\(reply)")
            }
        }
        #expect(refused == 6)
        await eventually("no body buffered and no request in flight") {
            server.bufferedBodyBytes == 0 && server.bufferedBodyBytes(from: "127.0.0.2") == 0
                && server.inFlightRequests == 0
        }
    }

    // MARK: Configuration

    @Test func theLimitsAreValidatedAndComeFromTheConfigFile() throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 2
        configuration.bodyBufferBudgetBytes = configuration.maxBodyBytes - 1
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            try HTTPServer(configuration: configuration) { _ in ServerResponse(status: 200) }.start()
        }
        // An address's share must hold one body of the largest size (or be 0: no share).
        configuration = HTTPServer.Configuration()
        configuration.threads = 2
        configuration.bodyBufferPerAddressBytes = configuration.maxBodyBytes - 1
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            try HTTPServer(configuration: configuration) { _ in ServerResponse(status: 200) }.start()
        }
    }
}

// MARK: - Helpers

extension HTTPServerPolicyTests {
    /// A started server on 127.0.0.1:0 with two handler threads; the handler's requests go to `seen` first.
    static func start(
        _ seen: Seen,
        configure: (inout HTTPServer.Configuration) -> Void = { _ in },
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
}
