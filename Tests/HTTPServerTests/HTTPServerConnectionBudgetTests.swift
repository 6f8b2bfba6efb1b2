import Dispatch
import Foundation
import HTTPServer
import Synchronization
import TestSupport
import Testing

/// The header deadline (``HTTPServer/Configuration/headerDeadlineSeconds``) and eviction at the connection limits
/// (``HTTPServer/Configuration/evictsWaitingConnections``): connections that never deliver a request do not stay, and
/// do not keep a client that sends its request out. Raw sockets against a real server on 127.0.0.1, port 0.
@Suite struct HTTPServerConnectionBudgetTests {
    typealias Policy = HTTPServerPolicyTests

    static func get(_ path: String, close: Bool = true) -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n"
    }

    /// Opens `client`s one at a time, each once the server has accepted the one before (so their order is the
    /// server's order too), leaving `text` on each.
    static func open(
        _ count: Int,
        to server: HTTPServer,
        from address: String = "127.0.0.1",
        sending text: String? = nil
    )
        async throws -> [RawHTTPClient]
    {
        var clients: [RawHTTPClient] = []
        for _ in 0..<count {
            let expected = server.openConnections + 1
            let client = try RawHTTPClient(port: server.port, from: address)
            if let text { client.send(text) }
            await eventually("the server to accept the connection") { server.openConnections >= expected }
            clients.append(client)
        }
        return clients
    }

    // MARK: Header deadline

    @Test func aConnectionWithoutACompleteHeadIsClosedAtTheHeaderDeadlineEvenWhileItTrickles() async throws {
        let server = try Policy.start(Policy.Seen(), configure: { $0.headerDeadlineSeconds = 1 }) { _ in
            ServerResponse(status: 200)
        }
        let clock = ContinuousClock()
        let start = clock.now
        let silent = try RawHTTPClient(port: server.port)
        let partial = try RawHTTPClient(port: server.port)
        partial.send("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        // A header line every 200 ms: the inactivity timeout never fires, and the request deadline (30 s) is far off.
        let trickling = try RawHTTPClient(port: server.port)
        trickling.send("GET /x HTTP/1.1\r\n")
        let trickle = Trickler([trickling], line: "X-Slow: 1\r\n", every: .milliseconds(200))
        defer { trickle.stop() }
        for (name, client) in [("silent", silent), ("partial", partial), ("trickling", trickling)] {
            let result = await client.readUntilClosed(timeout: .seconds(10))
            #expect(result.closed && result.bytes.isEmpty, "\(name): still open after 10 s (header deadline 1 s)")
        }
        #expect(clock.now - start >= .seconds(1), "closed before the header deadline")
        #expect(server.deadlineClosedConnections == 3)
    }

    @Test func theHeaderDeadlineLeavesABodyToTheRequestDeadlineAndClosesAnIdleKeepAliveConnection() async throws {
        let server = try Policy.start(Policy.Seen(), configure: { $0.headerDeadlineSeconds = 1 }) { request in
            ServerResponse(status: 200, body: request.body)
        }
        // The head at once, the body over about two seconds: past the header deadline, well within the request one.
        let client = try RawHTTPClient(port: server.port)
        client.send("POST /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\n\r\n")
        for byte in "abcd" {
            try await Task.sleep(for: .milliseconds(500))  // the client's pace, not a wait for the server
            client.send(String(byte))
        }
        let reply = await client.readReply(timeout: .seconds(10))
        #expect(reply?.status == 200 && reply?.body == Array("abcd".utf8), "\(String(describing: reply))")
        // The connection is kept alive, and now waits for its next head: it is closed at the header deadline too.
        let idle = await client.readUntilClosed(timeout: .seconds(10))
        #expect(idle.closed, "an idle keep-alive connection outlived the header deadline")
    }

    // MARK: Eviction

    @Test func atTheLimitANewConnectionClosesTheOneThatHasWaitedLongestWithoutARequest() async throws {
        let server = try Policy.start(
            Policy.Seen(),
            configure: { c in
                (c.connectionLimit, c.connectionsPerAddressLimit, c.evictsWaitingConnections) = (4, 4, true)
            }
        ) { request in .json(200, Array(request.path.utf8)) }
        var waiting = try await Self.open(4, to: server)
        for round in 0..<2 {
            if round > 0 {
                // Back to four waiting: the evicted one and the answered one have gone, a fresh one joins.
                await eventually("three connections open") { server.openConnections == 3 }
                waiting += try await Self.open(1, to: server)
            }
            let client = try RawHTTPClient(port: server.port)
            client.send(Self.get("/round-\(round)"))
            let reply = await client.readReply(timeout: .seconds(10))
            #expect(reply?.status == 200, "round \(round): \(String(describing: reply))")
            // The oldest waiting connection made room; the others stay.
            #expect(await waiting[round].readUntilClosed(timeout: .seconds(10)).closed, "round \(round)")
            for later in waiting[(round + 1)...] {
                #expect(!later.closedByPeer, "round \(round): a newer connection was closed")
            }
            #expect(server.evictedConnections == round + 1)
        }
    }

    @Test func aHeadlessConnectionGoesBeforeOneWhoseBodyIsArrivingAndThatOneBeforeTheNewcomer() async throws {
        let server = try Policy.start(
            Policy.Seen(),
            configure: { c in
                (c.connectionLimit, c.connectionsPerAddressLimit, c.evictsWaitingConnections) = (2, 0, true)
            }
        ) { request in .json(200, Array(request.path.utf8)) }
        let upload = "POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nab"
        // The older one has its head in and part of its body; the newer one has sent nothing.
        let olderUpload = try await Self.open(1, to: server, sending: upload)[0]
        await eventually("one request in flight") { server.inFlightRequests == 1 }  // its head is read
        let headless = try await Self.open(1, to: server)[0]
        let first = try RawHTTPClient(port: server.port)
        first.send(Self.get("/first"))
        #expect(await first.readReply(timeout: .seconds(10))?.status == 200)
        #expect(await headless.readUntilClosed(timeout: .seconds(10)).closed)
        #expect(!olderUpload.closedByPeer)
        // Two uploads and nothing without a head: the older upload makes room.
        await eventually("one connection open") { server.openConnections == 1 }
        let newerUpload = try await Self.open(1, to: server, sending: upload)[0]
        await eventually("two requests in flight") { server.inFlightRequests == 2 }
        let second = try RawHTTPClient(port: server.port)
        second.send(Self.get("/second"))
        #expect(await second.readReply(timeout: .seconds(10))?.status == 200)
        #expect(await olderUpload.readUntilClosed(timeout: .seconds(10)).closed)
        #expect(!newerUpload.closedByPeer)
        #expect(server.evictedConnections == 2)
    }

    @Test func whenEveryConnectionHasACompleteRequestTheNewOneIsClosed() async throws {
        let release = DispatchSemaphore(value: 0)
        let server = try Policy.start(
            Policy.Seen(),
            configure: { c in
                (c.connectionLimit, c.connectionsPerAddressLimit, c.evictsWaitingConnections) = (2, 2, true)
            }
        ) { _ in
            release.wait()
            return ServerResponse(status: 200)
        }
        defer { for _ in 0..<4 { release.signal() } }
        let busy = [try RawHTTPClient(port: server.port), try RawHTTPClient(port: server.port)]
        for client in busy { client.send(Self.get("/busy")) }
        await eventually("two requests in flight") { server.inFlightRequests == 2 }
        let refused = try RawHTTPClient(port: server.port)
        refused.send(Self.get("/refused"))
        let result = await refused.readUntilClosed(timeout: .seconds(10))
        #expect(result.closed && result.bytes.isEmpty, "a connection past the limit was served or left open")
        #expect(server.evictedConnections == 0)
        release.signal()
        release.signal()
        for client in busy { #expect(await client.readReply(timeout: .seconds(10))?.status == 200) }
    }

    @Test func theAddressLimitEvictsFromTheSameAddressOnly() async throws {
        let server = try Policy.start(
            Policy.Seen(),
            configure: { c in
                (c.connectionLimit, c.connectionsPerAddressLimit, c.evictsWaitingConnections) = (8, 2, true)
            }
        ) { request in .json(200, Array(request.remoteAddress.utf8)) }
        // The other address's connections are older, yet they are not the ones pushed out.
        let other = try await Self.open(2, to: server, from: "127.0.0.2")
        let same = try await Self.open(2, to: server, from: "127.0.0.1")
        let client = try RawHTTPClient(port: server.port, from: "127.0.0.1")
        client.send(Self.get("/x"))
        let reply = await client.readReply(timeout: .seconds(10))
        #expect(reply?.status == 200 && reply?.body == Array("127.0.0.1".utf8), "\(String(describing: reply))")
        #expect(await same[0].readUntilClosed(timeout: .seconds(10)).closed)
        #expect(!same[1].closedByPeer && !other[0].closedByPeer && !other[1].closedByPeer)
        #expect(server.evictedConnections == 1)
    }
}
