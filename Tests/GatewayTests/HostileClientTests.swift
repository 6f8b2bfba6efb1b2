import Canonical
import Foundation
import Gateway
import HTTPClient
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

/// The assembled service against a hostile client or downstream (docs/threat-model.md): nothing they send can crash
/// it, fill its disk or its log, or read what only the operator should.
@Suite struct HostileClientTests {
    typealias Service = GatewayServiceTests

    /// Bytes on disk of the store: the database file and its write-ahead log.
    static func storeBytes(_ directory: String) -> Int64 {
        ["gateway.db", "gateway.db-wal"].reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? NSNumber)?
                .int64Value
            return total + (size ?? 0)
        }
    }

    @Test func aFloodOfUnauthenticatedMegabyteBodiesGrowsTheStoreByAtMostTheUntrustedLane() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let logs = Service.LogBox()
        let cap: Int64 = 4 * 1_048_576
        let g = try Service.start(receiver: receiver, logs: logs) { config, _ in
            config.limits.untrustedQuarantineBytes = cap
        }
        // A V1 body for a bundle nobody configured, just under the 1 MiB limit, its claimed `bid` all of it: no secret is
        // needed to send it. It used to land in the genuine lane, with the bid stored again in a column and logged whole.
        let body =
            Array(#"{"notification_type":"DID_RENEW","password":"x","bid":""#.utf8)
            + [UInt8](repeating: UInt8(ascii: "b"), count: 1_040_000) + Array(#""}"#.utf8)
        try g.service.sqliteStore.checkpointAndTruncate()
        let before = Self.storeBytes(g.directory)
        let logBytesBefore = logs.all.reduce(0) { $0 + $1.utf8.count }
        let url = g.url("/notifications")
        let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var seen: [Int] = []
                    for _ in stride(from: worker, to: 32, by: 4) {
                        seen.append(try await Service.post(url, body).status)
                    }
                    return seen
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        // Every one is answered 503 (Apple would retry once the bundle is configured), and stored untrusted.
        #expect(statuses.count == 32 && statuses.allSatisfy { $0 == 503 })
        let usage = try await g.service.store.read { tx in try tx.quarantineUsage() }
        #expect(usage[.genuine] == nil || usage[.genuine]?.rows == 0)
        #expect((usage[.untrusted]?.bytes ?? .max) <= cap)
        // The write-ahead log is working space that any traffic fills to its checkpoint size and that a reset truncates
        // (journal_size_limit); what stays is the database file, measured after a checkpoint.
        try g.service.sqliteStore.checkpointAndTruncate()
        let grown = Self.storeBytes(g.directory) - before
        #expect(grown <= cap, "the store grew by \(grown) bytes for a \(cap)-byte lane")
        let logged = logs.all.reduce(0) { $0 + $1.utf8.count } - logBytesBefore
        #expect(logged < 200 * 1_024, "200 refusals logged \(logged) bytes")
        await g.service.shutdown()
    }

    @Test func elevenHundredSlowConnectionsFromOneAddressLeaveRealNotificationsFromAnotherServed() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Service.start(receiver: receiver)
        // More requests that never end than the whole connection limit, from one address, each adding a header line
        // now and then (an inactivity timeout alone never closes them).
        var slow: [RawHTTPClient] = []
        for _ in 0..<1_100 {
            let client = try RawHTTPClient(port: g.port, from: "127.0.0.1")
            _ = client.send("POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
            slow.append(client)
        }
        let trickle = Trickler(slow, line: "X-Slow: 1\r\n", every: .milliseconds(200))
        defer { trickle.stop() }
        // From another address: the health check and a real, signed notification, journaled.
        let health = try RawHTTPClient(port: g.port, from: "127.0.0.2")
        _ = health.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(await health.readReply(timeout: .seconds(10))?.status == 200)
        let body = String(decoding: try Fixtures.bytes("v2-synthetic/notif-did-renew.json"), as: UTF8.self)
        let post = try RawHTTPClient(port: g.port, from: "127.0.0.2")
        _ = post.send(
            "POST /notifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        )
        let reply = await post.readReply(timeout: .seconds(10))
        #expect(reply?.status == 200, "\(String(describing: reply))")
        #expect(try g.service.store.journal().count == 1)
        trickle.stop()
        slow.removeAll()
        await g.service.shutdown()
    }

    @Test func metricsAreServedOnlyOnTheAdminListenerBehindTheToken() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Service.start(receiver: receiver)
        #expect(try await Service.get(g.url("/metrics")).status == 404)
        #expect(try await Service.get(g.adminURL("/metrics")).status == 401)
        let metrics = try await Service.get(g.adminURL("/metrics"), token: Service.adminToken)
        #expect(metrics.status == 200)
        // Only series that have a value are served: the workers' first gauges may come a moment after the start.
        await eventually("the gauges") {
            let again = try? await Service.get(g.adminURL("/metrics"), token: Service.adminToken)
            return again.map { String(decoding: $0.body, as: UTF8.self).hasPrefix("# HELP iapgw_") } ?? false
        }
        await g.service.shutdown()
    }

    @Test(arguments: [
        "since=100000000000000000", "since=106751991167301d", "since=2025-06-01&until=99999999999999999999d",
        "since=-5", "since=9223372036854775807s",
    ])
    func anOutOfRangeReplayTimeIsABadRequestNotACrash(_ query: String) async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Service.start(receiver: receiver)
        let replay = try await CurlTransport().send(
            HTTPRequest(
                method: .post,
                url: g.adminURL("/admin/replay?\(query)"),
                headers: [HTTPHeader("Authorization", "Bearer \(Service.adminToken)")]
            )
        )
        #expect(replay.status == 400 || replay.status == 200)
        #expect(try await Service.get(g.url("/healthz")).status == 200)  // still serving
        await g.service.shutdown()
    }

    @Test func aDownstreamsHugeRetryAfterIsClampedNotAnOverflow() async throws {
        let receiver = try LoopbackHTTPServer { _ in
            .respond(status: 503, headers: [HTTPHeader("Retry-After", "99999999999999999")])
        }
        let now = GatewayHarness.t + 3_600_000
        let g = try Service.start(receiver: receiver, now: now)
        #expect(
            try await Service.post(g.url("/notifications"), try Fixtures.bytes("v2-synthetic/notif-did-renew.json"))
                .status == 200
        )
        try await eventually("the first attempt") {
            try g.service.store.deliveries().first { $0.downstream == "main" }?.attempts == 1
        }
        // The next attempt waits for the policy's longest delay (six hours), not for the end of time, nor a trap.
        let next = try g.service.store.deliveries().first { $0.downstream == "main" }?.nextAttemptAt
        #expect(next == now + DeliveryTuning().retry.maxDelayMillis)
        #expect(try await Service.get(g.url("/healthz")).status == 200)
        await g.service.shutdown()
    }

    @Test func anUnpaddedWebhookSecretSignsLikeItsPaddedForm() async throws {
        // The official Standard Webhooks libraries accept a whsec_ secret without its base64 padding and derive the same
        // key; the gateway used to refuse to start with one.
        let padded = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  // 24 bytes: no padding needed
        // "test-webhook-secret-12345": 25 bytes, "==" dropped
        let unpaddedText = "whsec_dGVzdC13ZWJob29rLXNlY3JldC0xMjM0NQ"
        let unpadded = try #require(WebhookSigner.Secret(name: "S", text: unpaddedText))
        let repadded = try #require(WebhookSigner.Secret(name: "S", text: unpaddedText + "=="))
        #expect(WebhookSigner.Secret(name: "S", text: padded) != nil)
        let body = Array(#"{"a":1}"#.utf8)
        #expect(
            WebhookSigner(secrets: [unpadded]).signature(id: "i", timestamp: 1, body: body)
                == WebhookSigner(secrets: [repadded]).signature(id: "i", timestamp: 1, body: body)
        )
        // wrongly padded
        #expect(WebhookSigner.Secret(name: "S", text: "whsec_dGVzdC13ZWJob29rLXNlY3JldC0xMjM0NQ=") == nil)

        let received = Mutex<[String]>([])
        let receiver = try LoopbackHTTPServer { r in
            if let s = r.header("webhook-signature") { received.withLock { $0.append(s) } }
            return .respond(status: 200)
        }
        let g = try Service.start(receiver: receiver, webhookSecret: unpaddedText)
        #expect(
            try await Service.post(g.url("/notifications"), try Fixtures.bytes("v2-synthetic/notif-did-renew.json"))
                .status == 200
        )
        await eventually("a signed delivery") { !received.withLock { $0 }.isEmpty }
        await g.service.shutdown()
    }
}
