import Foundation
import Gateway
import HTTPClient
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

/// The delivery log as the worker writes it against a real downstream on 127.0.0.1, and one event resent to one
/// downstream.
@Suite struct DeliveryLogTests {
    /// The injected clock: milliseconds since the test started, on top of the harness's time.
    static func clock() -> @Sendable () -> Int64 {
        let start = ContinuousClock.now
        return {
            let elapsed = ContinuousClock.now - start
            return GatewayHarness.t + 3_600_000 + elapsed.components.seconds * 1_000
                + elapsed.components.attoseconds / 1_000_000_000_000_000
        }
    }

    static func log(_ h: GatewayHarness, _ eventID: String, _ downstream: String) throws -> [LoggedAttempt] {
        try h.store.read { tx in try tx.deliveryLog(eventID: eventID) }?.first { $0.delivery.downstream == downstream }?
            .attempts ?? []
    }

    @Test func everyAttemptIsLoggedWithItsStatusOrErrorLatencyAndTheAnswersHead() async throws {
        // main answers 500 (a long body), 429 with Retry-After, slowly, by dropping the connection, then 200.
        let head = Array("<script>alert(\"x\")</script>".utf8) + Array(repeating: UInt8(ascii: "e"), count: 3_000)
        let count = Mutex(0)
        let receiver = try LoopbackHTTPServer { request in
            guard request.path == "/events" else { return .respond(status: 200) }
            let n = count.withLock {
                $0 += 1
                return $0
            }
            switch n {
            case 1: return .respond(status: 500, body: head)
            case 2:
                return .respond(status: 429, headers: [HTTPHeader("Retry-After", "0")], body: Array("slow down".utf8))
            case 3: return .respond(status: 503, delay: .milliseconds(300))
            // The connection closed mid-answer (a bare close on a kept-alive connection, curl sends again).
            case 4: return .sendRaw(Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial".utf8))
            default: return .respond(status: 200, body: Array("{\"ok\":true}".utf8))
            }
        }
        let h = try DeliveryWorkerTests.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let worker = DeliveryWorkerTests.worker(h, now: Self.clock())
        try await DeliveryWorkerTests.run(worker) {
            try h.store.deliveries().filter { $0.downstream == "main" && $0.state == .delivered }.count == 1
        }
        let eventID = try #require(try h.store.deliveries().first { $0.downstream == "main" }?.eventID)
        let attempts = try Self.log(h, eventID, "main")
        #expect(attempts.map(\.attempt) == [5, 4, 3, 2, 1], "every attempt, newest first")
        #expect(attempts.map(\.status) == [200, nil, 503, 429, 500])
        #expect(attempts.map(\.error) == [nil, attempts[1].error, "http_503", "http_429", "http_500"])
        #expect(attempts[1].error.map { !$0.isEmpty && !$0.hasPrefix("HTTP") } == true, "a transport error code")
        #expect(attempts[2].latencyMillis >= 300, "the slow answer took its time: \(attempts[2].latencyMillis) ms")
        #expect(attempts.allSatisfy { $0.latencyMillis >= 0 && !$0.replay })
        #expect(zip(attempts, attempts.dropFirst()).allSatisfy { $0.startedAt >= $1.startedAt })
        #expect(attempts[4].responseHead == Array(head.prefix(1_024)))
        #expect(
            attempts[3].responseHead == Array("slow down".utf8)
                && attempts[0].responseHead == Array("{\"ok\":true}".utf8)
        )

        // Nothing of the requests is stored: neither their signatures nor the secret they are made with.
        let sent = receiver.requests.filter { $0.path == "/events" }
        let signatures = sent.compactMap { $0.header("webhook-signature") }
        #expect(signatures.count == 5)
        var stored: [UInt8] = []
        for suffix in ["", "-wal"] {
            stored += (try? Array(Data(contentsOf: URL(filePath: h.config.sqlitePath + suffix)))) ?? []
        }
        #expect(!stored.isEmpty)
        for needle in signatures.flatMap({ $0.split(separator: " ").map { String($0.dropFirst(3)) } })
            + [String(DeliveryWorkerTests.webhookSecret.dropFirst(6))]
        {
            #expect(!Self.contains(stored, Array(needle.utf8)), "\(needle) stored")
        }
        // As the admin API and `deliveries` show it: the head is text, escaped.
        let json = try #require(try Operations(store: h.store, now: Self.clock()).deliveryLog(eventID: eventID))
        let text = String(decoding: json.canonicalBytes(), as: UTF8.self)
        #expect(!text.contains("<script>alert(\"x\")"))
        let shown = json.objectValue?["deliveries"]?.arrayValue?.first?.objectValue?["attempt_log"]?.arrayValue
        #expect(
            shown?.last?.objectValue?["response_head"]?.stringValue
                == String(decoding: head.prefix(1_024), as: UTF8.self)
        )
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { i in
            haystack[i..<(i + needle.count)].elementsEqual(needle)
        }
    }

    @Test func oneEventIsResentToOneDownstreamOnceWithTheSameWebhookIDAndLoggedAsAReplay() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try DeliveryWorkerTests.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        try await DeliveryWorkerTests.run(DeliveryWorkerTests.worker(h)) {
            try h.store.deliveries().filter { $0.downstream != "legacy" && $0.state == .delivered }.count == 2
        }
        let eventID = try #require(try h.store.deliveries().first { $0.downstream == "main" }?.eventID)
        let before = receiver.requests
        let operations = Operations(
            store: h.store,
            now: { GatewayHarness.t + 3_600_000 },
            downstreams: h.router.downstreamNames
        )
        #expect(throws: Operations.UnknownDownstream.self) {
            try operations.replay(eventID: eventID, downstream: "nowhere")
        }
        #expect(try operations.replay(eventID: eventID, downstream: "main") == 1)
        try await DeliveryWorkerTests.run(DeliveryWorkerTests.worker(h)) {
            try h.store.deliveries().filter { $0.downstream != "legacy" && $0.state == .delivered }.count == 2
        }
        let resent = receiver.requests.dropFirst(before.count)
        #expect(resent.map(\.path) == ["/events"], "once, to main alone")
        #expect(resent.first?.header("webhook-id") == eventID)
        #expect(before.first { $0.path == "/events" }?.header("webhook-id") == eventID)
        #expect(try Self.log(h, eventID, "main").map(\.replay) == [true, false])
        #expect(try Self.log(h, eventID, "shadow").map(\.replay) == [false])
    }
}
