import Dispatch
import Foundation
import TestSupport
import Testing

@testable import Benchmarks

#if canImport(Glibc)
import Glibc
#endif

/// The built `iap-gateway serve` in a process of its own, against one client address that holds request bodies open
/// on many connections, while real Apple-signed notifications arrive from another address (docs/threat-model.md,
/// docs/reverse-proxy.md). Raw sockets from chosen loopback addresses; every wait is for a condition.
@Suite(.serialized) struct PublicListenerAbuseProcessTests {
    /// The real sandbox samples of `Fixtures/v2` that are fresh at ``demoTime`` (signed 2025-10-01 to 2025-10-06).
    static let samples = [
        "notif-did-renew-sandbox-2025.json",
        "notif-subscribed-resubscribe-sandbox-2025.json",
        "notif-did-change-renewal-status-auto-renew-disabled-sandbox-2025.json",
        "notif-did-change-renewal-pref-sandbox-2025.json",
        "notif-did-change-renewal-pref-upgrade-sandbox-2025.json",
    ]
    static let demoTime = "2025-10-07T00:00:00Z"

    /// The gateway in its own process, serving the samples' app on an ephemeral port, its store in a fresh folder.
    final class Gateway {
        let directory: String
        let receiver: LoopbackHTTPServer
        let child: ChildProcess
        let port: UInt16

        init() throws {
            directory = FileManager.default.temporaryDirectory.appending(
                path: "iapgw-abuse-\(UInt64.random(in: 0...UInt64.max))"
            ).path()
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
            let config = """
                {
                  "listen": "127.0.0.1:0",
                  "admin": { "listen": "127.0.0.1:0", "token_env": "ABUSE_TEST_ADMIN_TOKEN_UNSET" },
                  "store": { "sqlite": "gateway.db" },
                  "apps": [ { "bundle_id": "com.loki-project.loki-messenger", "app_apple_id": 1470168868,
                              "environments": ["sandbox"], "authority": "v2", "downstreams": ["main"] } ],
                  "downstreams": [ { "name": "main", "url": "\(receiver.url("/events"))", "environments": ["sandbox"],
                                     "shadow": false } ]
                }
                """
            try Data(config.utf8).write(to: URL(filePath: directory + "/config.json"))
            child = try ChildProcess(
                executable: MultiInstanceProcessTests.binary,
                arguments: [
                    "serve", "--config", directory + "/config.json",
                    "--demo-verify-time", PublicListenerAbuseProcessTests.demoTime,
                ],
                environment: ["PATH": "/usr/bin:/bin"]
            )
            guard let port = child.listeningPort(timeout: 30) else {
                child.terminate(signal: SIGKILL)
                throw FixtureError(description: "the gateway did not start: \(child.keptLines.suffix(5))")
            }
            self.port = port
        }

        /// Stops the gateway (SIGTERM) and the receiver, and removes the folder.
        func stop() {
            child.terminate()
            receiver.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        deinit { stop() }
    }

    static func post(_ body: [UInt8], declaring length: Int? = nil, close: Bool = true) -> [UInt8] {
        Array(
            ("POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(length ?? body.count)\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n").utf8
        ) + body
    }

    /// Bytes that arrived on the server's side of the TCP connections from `address` to local port `port` on
    /// 127.0.0.1 and that the server has not read yet: the receive queues in /proc/net/tcp.
    static func unreadBytes(port: UInt16, from address: String) -> Int {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return -1 }
        let octets = address.split(separator: ".").compactMap { UInt8($0) }
        // The kernel writes an IPv4 address as the hex of its 32-bit value in host order (x86: little-endian).
        let remote = octets.reversed().map { String(format: "%02X", $0) }.joined()
        let local = "0100007F:" + String(format: "%04X", port)
        var unread = 0
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[1] == local, fields[2].hasPrefix(remote + ":") else { continue }
            unread += Int(fields[4].split(separator: ":").last ?? "", radix: 16) ?? 0
        }
        return unread
    }

    @Test func oneAddressHoldingMegabyteBodiesOnOneHundredTwentyConnectionsLeavesRealNotificationsAnswered()
        async throws
    {
        let gateway = try Gateway()
        let port = gateway.port
        let bodies = try Self.samples.map { try Fixtures.bytes("v2/\($0)") }
        // 120 connections from 127.0.0.2 (within its 128), each declaring a 1 MiB body and sending all of it but the
        // last kilobyte, one after the other once the gateway has read the one before: 120 MiB of bodies that never
        // end, against a 64 MiB budget.
        let megabyte = 1 << 20
        let filler = [UInt8](repeating: UInt8(ascii: "a"), count: megabyte - 1_024)
        var hoarders: [RawHTTPClient] = []
        for index in 0..<120 {
            let hoarder = try RawHTTPClient(port: port, from: "127.0.0.2")
            hoarder.send(Self.post(filler, declaring: megabyte, close: false))
            hoarders.append(hoarder)
            await eventually("the gateway to read connection \(index)'s bytes") {
                Self.unreadBytes(port: port, from: "127.0.0.2") == 0
            }
        }
        // Then a byte now and then (the inactivity timeout never closes them).
        let trickle = Trickler(hoarders, line: "a", every: .milliseconds(200))
        defer { trickle.stop() }
        // They hold what their address may: one more real notification from it is refused (503) …
        let probe = try RawHTTPClient(port: port, from: "127.0.0.2")
        probe.send(Self.post(bodies[0]))
        let refused = await probe.readReply(timeout: .seconds(10))
        #expect(refused?.status == 503, "\(String(describing: refused))")

        // … and the real notifications from another address are all answered 200 (the first of each sample
        // journaled, its repeats acknowledged as duplicates).
        let clock = ContinuousClock()
        let start = clock.now
        var statuses: [Int] = []
        for _ in 0..<8 {
            for body in bodies {
                let client = try RawHTTPClient(port: port, from: "127.0.0.1")
                client.send(Self.post(body))
                statuses.append(await client.readReply(timeout: .seconds(10))?.status ?? 0)
            }
        }
        let elapsed = clock.now - start
        let answered = statuses.filter { $0 == 200 }.count
        #expect(
            answered == statuses.count,
            "\(answered) of \(statuses.count) real notifications got 200 in \(elapsed) under the abuse: \(statuses)"
        )
        trickle.stop()
        for hoarder in hoarders { hoarder.close() }
        gateway.stop()
    }
}
