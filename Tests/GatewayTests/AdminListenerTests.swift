import Foundation
import Gateway
import Glibc
import Synchronization
import TestSupport
import Testing

/// The admin listener against a client on the operator's own address (127.0.0.1, where the Prometheus scraper also
/// connects from) that opens connections and never finishes a request on them: however many it holds, and however
/// fast it reopens the ones the server closes, an authenticated request still gets its answer.
@Suite struct AdminListenerTests {
    typealias Service = GatewayServiceTests

    static let statusRequest =
        "GET /admin/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Service.adminToken)\r\n"
        + "Connection: close\r\n\r\n"

    /// What an attacker leaves on connection `index`: nothing at all, a request line, or a request line and part of
    /// its headers.
    static func partialRequest(_ index: Int) -> String? {
        switch index % 3 {
        case 0: nil
        case 1: "GET /admin/status HTTP/1.1\r\n"
        default: "GET /admin/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bear"
        }
    }

    @Test func anAuthenticatedRequestIsAnsweredWhileThreeHundredIdleConnectionsFromTheSameAddressAreOpen() async throws
    {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Service.start(receiver: receiver)
        let adminPort = try #require(g.adminPort)
        var held: [RawHTTPClient] = []
        for index in 0..<300 {
            let client = try RawHTTPClient(port: adminPort, from: "127.0.0.1")
            if let partial = Self.partialRequest(index) { client.send(partial) }
            held.append(client)
        }
        // The operator's request comes after all of them, from the same address, on a connection of its own.
        let clock = ContinuousClock()
        let start = clock.now
        let status = try RawHTTPClient(port: adminPort, from: "127.0.0.1")
        status.send(Self.statusRequest)
        let reply = await status.readReply(timeout: .seconds(5))
        #expect(reply?.status == 200, "\(String(describing: reply))")
        #expect(clock.now - start < .seconds(5))

        // Connections that never deliver their headers do not stay: every one of the 300 is closed within seconds
        // (the header deadline, or evicted to make room), not after the 30 s of the public listener's deadlines.
        await eventually(
            "every idle connection closed (\(held.filter { !$0.closedByPeer }.count) of 300 still open)",
            within: .seconds(15)
        ) {
            held.allSatisfy(\.closedByPeer)
        }
        #expect(clock.now - start < .seconds(15))
        held.removeAll()
        await g.service.shutdown()
    }

    @Test func anAuthenticatedRequestIsAnsweredWhileAnAttackerReopensEveryConnectionTheServerCloses() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Service.start(receiver: receiver)
        let adminPort = try #require(g.adminPort)
        let hoard = try ConnectionHoard(port: adminPort, count: 300, partial: Self.partialRequest)
        defer { hoard.stop() }
        await eventually("the server to close one of the 300 connections") { hoard.reopened > 0 }

        // The operator, from the same address: a few tries within a few seconds are allowed (a try may meet a full
        // backlog), the answer is not.
        var tries = 0
        await eventually(
            "the operator's answer (\(tries) tries, \(hoard.reopened) reconnections)",
            within: .seconds(10)
        ) {
            tries += 1
            guard let client = try? RawHTTPClient(port: adminPort, from: "127.0.0.1") else { return false }
            client.send(Self.statusRequest)
            return await client.readReply(timeout: .seconds(3))?.status == 200
        }
        hoard.stop()
        await g.service.shutdown()
    }
}

/// `count` connections to `port` from 127.0.0.1, each left with at most a partial request, and a thread that reopens
/// each one as soon as the server closes it — what an attacker does to keep a listener's slots full.
final class ConnectionHoard: Sendable {
    private let clients: Mutex<[RawHTTPClient]>
    private let stopped = Atomic<Bool>(false)
    private let reopenedCount = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    init(port: UInt16, count: Int, partial: @escaping @Sendable (Int) -> String?) throws {
        var opened: [RawHTTPClient] = []
        for index in 0..<count {
            let client = try RawHTTPClient(port: port, from: "127.0.0.1")
            if let text = partial(index) { client.send(text) }
            opened.append(client)
        }
        clients = Mutex(opened)
        Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                var current = clients.withLock { $0 }
                var fds = current.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
                guard poll(&fds, nfds_t(fds.count), 50) > 0 else { continue }
                for index in fds.indices where fds[index].revents != 0 && current[index].closedByPeer {
                    current[index].close()
                    guard let fresh = try? RawHTTPClient(port: port, from: "127.0.0.1") else { continue }
                    if let text = partial(index) { fresh.send(text) }
                    current[index] = fresh
                    reopenedCount.add(1, ordering: .relaxed)
                }
                clients.withLock { $0 = current }
            }
            finished.signal()
        }.start()
    }

    /// Connections reopened after the server closed them.
    var reopened: Int { reopenedCount.load(ordering: .relaxed) }

    /// Stops reopening and closes every connection. Idempotent.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
        clients.withLock { all in
            for client in all { client.close() }
            all.removeAll()
        }
    }
}
