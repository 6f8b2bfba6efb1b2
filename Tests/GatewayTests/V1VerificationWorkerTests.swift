import Canonical
import Foundation
import Gateway
import HTTPClient
import ServiceKit
import Store
import StoreTestSupport
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// The V1 stage after the 200: verifyReceipt against a fake Apple on 127.0.0.1, events from its answer.
@Suite struct V1VerificationWorkerTests {
    static let now: Int64 = GatewayHarness.t + 3_600_000

    static func worker(_ h: GatewayHarness, apple: LoopbackHTTPServer) -> V1VerificationWorker {
        var policy = V1VerificationWorker.Tuning()
        policy.pollMillis = 20
        let client = VerifyReceiptClient(
            transport: CurlTransport(),
            configuration: .init(
                productionURL: apple.url("/verifyReceipt"),
                sandboxURL: apple.url("/sandbox/verifyReceipt"),
                maxAttempts: 2
            ),
            sleep: { _ in },
            jitter: { 0 }
        )
        let context = WorkerContext(
            store: h.store,
            metrics: h.metrics,
            log: Log(now: { now }, sink: { _ in }),
            now: { now },
            jitter: { 0 }
        )
        return V1VerificationWorker(
            context: context,
            router: h.router,
            client: client,
            apps: h.config.v1Apps(environment: ["APP_SECRET": GatewayHarness.v1Secret]).apps,
            tuning: policy
        )
    }

    static func run(_ worker: V1VerificationWorker, until done: @escaping @Sendable () throws -> Bool) async throws {
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }, done)
    }

    @Test func eventsAreBuiltFromApplesAnswerAndQueued() async throws {
        let answer = try Fixtures.bytes("v1-synthetic/did-renew.receipt.json")
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: answer) }
        let h = try GatewayHarness()
        defer { h.close() }
        let r = h.ingest.handle(try Fixtures.bytes("v1-synthetic/did-renew.json"))
        try await Self.run(Self.worker(h, apple: apple)) {
            try h.store.receiptJobs().filter { $0.state == .done }.count == 1
        }
        let json = try #require(try h.store.events().first?.json)
        let event = try JSONValueDecoder().decode(CanonicalEvent.self, from: json)
        #expect(event.id == r.id && event.verified && event.kind == .renewal && event.source == .v1)
        #expect(event.eventDateSource == .notification)
        // Authority is v2 for this bundle: the V1 event is shadow, queued for the shadow downstream only.
        #expect(try h.store.deliveries().filter { $0.eventID == event.id && $0.downstream == "shadow" }.count == 1)
        #expect(try h.store.deliveries().filter { $0.eventID == event.id && $0.downstream == "main" }.count == 0)
        // Apple got the receipt and the configured secret.
        #expect(
            String(decoding: apple.requests[0].body, as: UTF8.self).contains(
                "\"password\":\"\(GatewayHarness.v1Secret)\""
            )
        )
    }

    @Test func anInvalidReceiptEndsTheJobWithoutAnEvent() async throws {
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array(#"{"status":21003}"#.utf8)) }
        let h = try GatewayHarness()
        defer { h.close() }
        _ = h.ingest.handle(try Fixtures.bytes("v1-synthetic/did-renew.json"))
        try await Self.run(Self.worker(h, apple: apple)) {
            try h.store.receiptJobs().filter { $0.state == .failed }.count == 1
        }
        #expect(try h.store.events().count == 0)
        #expect(try h.store.receiptJobs().first?.lastError == "receipt_invalid")
    }

    @Test(arguments: [(#"{"status":21005}"#, "apple_unavailable"), (#"{"status":21004}"#, "receipt_config_error")])
    func appleTroubleAndConfigErrorsWaitAndRetryLater(_ answer: String, _ code: String) async throws {
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array(answer.utf8)) }
        let h = try GatewayHarness()
        defer { h.close() }
        _ = h.ingest.handle(try Fixtures.bytes("v1-synthetic/did-renew.json"))
        try await Self.run(Self.worker(h, apple: apple)) {
            try h.store.receiptJobs().filter { $0.attempts == 1 }.count == 1
        }
        let job = try #require(try h.store.receiptJobs().first)
        #expect(job.state == .pending && job.lastError == code)
        #expect(job.nextAttemptAt > Self.now)
        #expect(try h.store.events().count == 0)
    }
}
