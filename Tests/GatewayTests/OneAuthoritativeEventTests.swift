import Canonical
import Foundation
import HTTPClient
import ServiceKit
import Store
import StoreTestSupport
import TestSupport
import Testing
import V1Adapter
import WireJSON

@testable import Gateway

/// Every journaled notification yields exactly one authoritative event, whatever Apple sends and whatever the
/// authority, and the old backend keeps receiving V1 bodies after Apple sends V2 (docs/architecture.md, "One
/// authoritative event per notification", "The V1 shape of a V2 notification").
@Suite struct OneAuthoritativeEventTests {
    static let bundle = "com.example.gateway"
    static let now: Int64 = GatewayHarness.t + 3_600_000

    /// The synthetic V1 renewal, sent for the sandbox like the synthetic V2 one.
    static func v1Sandbox() throws -> [UInt8] {
        Array(
            String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
                .replacingOccurrences(of: #""environment": "PROD""#, with: #""environment": "Sandbox""#)
                .replacingOccurrences(of: #""environment": "Production""#, with: #""environment": "Sandbox""#).utf8
        )
    }

    static func harness(_ receiver: LoopbackHTTPServer) throws -> GatewayHarness {
        let json = GatewayHarness.configJSON
            .replacingOccurrences(of: "http://127.0.0.1:1/events", with: receiver.url("/events"))
            .replacingOccurrences(of: "http://127.0.0.1:1/shadow", with: receiver.url("/shadow"))
            .replacingOccurrences(of: "http://127.0.0.1:1/apple/v1", with: receiver.url("/apple/v1"))
        return try GatewayHarness(configJSON: json)
    }

    static func authority(_ h: GatewayHarness, _ authority: Generation, environment: AppStoreEnvironment) throws {
        _ = try h.store.write { tx in
            try tx.recordCutover(
                CutoverRecord(
                    at: 0,
                    bundleID: Self.bundle,
                    environment: environment.rawValue,
                    from: "",
                    to: authority.rawValue,
                    who: "test",
                    reason: nil,
                    verdict: "ready",
                    forced: false
                ),
                to: authority
            )
        }
    }

    /// The gateway switched Apple for the app and environment: every notification stands alone from now on.
    static func switched(_ h: GatewayHarness, environment: AppStoreEnvironment) throws {
        var s = AppleSwitchState(bundleID: Self.bundle, environment: environment)
        (s.migrationID, s.appleVersion, s.step) = ("m", .v2, .done)
        let record = s
        _ = try h.store.write { tx in _ = try tx.replaceAppleSwitch(record, ifMigrationIs: nil) }
    }

    /// A V1-authoritative gateway whose Apple the gateway has switched to V2 for the sandbox, with its webhook and
    /// pass-through receiver and a verifyReceipt that is down (no receipt is stored anyway).
    static func switchedToV2UnderV1Authority() throws -> (
        receiver: LoopbackHTTPServer, apple: LoopbackHTTPServer, h: GatewayHarness
    ) {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let apple = try LoopbackHTTPServer { _ in .respond(status: 500) }
        let h = try Self.harness(receiver)
        try Self.authority(h, .v1, environment: .sandbox)
        try Self.switched(h, environment: .sandbox)
        return (receiver, apple, h)
    }

    static func delivery(_ h: GatewayHarness) -> DeliveryWorker {
        var policy = DeliveryTuning()
        policy.pollMillis = 20
        let context = WorkerContext(
            store: h.store,
            metrics: h.metrics,
            log: Log(now: { now }, sink: { _ in }),
            now: { now },
            jitter: { 0 }
        )
        let apps = h.config.v1Apps(environment: ["APP_SECRET": GatewayHarness.v1Secret]).apps
        return DeliveryWorker(
            context: context,
            router: h.router,
            transport: CurlTransport(),
            signers: [:],
            passthroughSecrets: apps.flatMap(\.sharedSecrets),
            redactor: SecretRedactor([]),
            v1Apps: apps,
            tuning: policy
        )
    }

    @Test func aV2NotificationUnderV1AuthorityGetsItsV1PathEventAndTheOldBackendItsV1Body() async throws {
        let (receiver, apple, h) = try Self.switchedToV2UnderV1Authority()
        defer { h.close() }
        let r = h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json"))
        #expect(r.status == 200)
        let id = try #require(r.id)
        // The V2 event is the V2 path's, not authoritative; a job makes the V1 path's event, and the old backend is fed.
        #expect(try h.store.events().filter { $0.authoritative }.isEmpty)
        #expect(try h.store.receiptJobs().count == 1)
        #expect(try h.store.deliveries().filter { $0.downstream == "legacy" }.count == 1)
        let worker = V1VerificationWorkerTests.worker(h, apple: apple)
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }) {
            try h.store.receiptJobs().allSatisfy { $0.state == .done }
        }
        let authoritative = try h.store.events().filter(\.authoritative)
        #expect(authoritative.count == 1, "exactly one authoritative event")
        let v1 = try #require(authoritative.first)
        #expect(v1.path == .v1 && v1.event.id == "v1-view:" + id && v1.event.source == .v1 && v1.event.verified)
        let v2 = try #require(try h.store.events().first { $0.path == .v2 }?.event)
        #expect(
            v1.event.kind == v2.kind && v1.event.entitlement == v2.entitlement && v1.event.expiresDate == v2.expiresDate
        )
        #expect(
            v1.event.transactionID == v2.transactionID && v1.event.originalTransactionID == v2.originalTransactionID
        )
        // Authoritative events go to the app's webhooks.
        #expect(try h.store.deliveries().filter { $0.eventID == v1.event.id && $0.downstream == "main" }.count == 1)

        // The old backend receives the V1 shape, the secret restored, marked as coming from V2.
        let deliveries = Self.delivery(h)
        try await GatewayHarness.runUntil(run: { await deliveries.run() }, stop: { deliveries.stop() }) {
            try h.store.deliveries().filter { $0.downstream == "legacy" && $0.state == .delivered }.count == 1
        }
        let legacy = try #require(receiver.requests.first { $0.path == "/apple/v1" })
        #expect(legacy.header("X-IAP-Gateway-Source") == "v2")
        let body = try #require(try JSONParser.parse(legacy.body).objectValue)
        #expect(body["notification_type"] == .string("DID_RENEW"))
        #expect(body["password"] == .string(GatewayHarness.v1Secret))
        #expect(body["bid"] == .string(Self.bundle))
        // It authenticates like any V1 body Apple sent.
        let read = try V1Adapter(apps: h.config.v1Apps(environment: ["APP_SECRET": GatewayHarness.v1Secret]).apps)
            .authenticate(body: legacy.body)
        #expect(read.secretName == "APP_SECRET")
    }

    @Test func pairedTrafficBeforeAnySwitchIsNotDoubled() throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        try Self.authority(h, .v1, environment: .sandbox)
        // The simulator's paired traffic: V1 arrives beside V2 for the same app and environment.
        #expect(h.ingest.handle(try Self.v1Sandbox()).status == 200)
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let v2Row = try #require(try h.store.journal().first { $0.version == .v2 })
        #expect(
            try h.store.receiptJobs().filter { $0.journalID == v2Row.id }.isEmpty,
            "the V1 notification is the V1 path"
        )
        #expect(
            try h.store.deliveries().filter { $0.journalID == v2Row.id }.isEmpty,
            "the old backend got the V1 body itself"
        )
    }

    @Test func aV1NotificationUnderV2AuthorityAfterTheSwitchGetsItsV2APIEventEvenWhileV2Arrives() throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        try Self.authority(h, .v2, environment: .sandbox)
        try Self.switched(h, environment: .sandbox)
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        #expect(h.ingest.handle(try Self.v1Sandbox()).status == 200)
        let standsAlone = try h.store.read { tx in
            try tx.standsAlone(.v1, bundleID: Self.bundle, environment: .sandbox, now: Self.now)
        }
        #expect(standsAlone, "Apple sends each notification in one version once the gateway switched it")
        // Before the switch, the V2 notification beside it would have made it the paired V1 of a V2 event.
        let other = try Self.harness(receiver)
        defer { other.close() }
        #expect(other.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        #expect(
            try !other.store.read { tx in
                try tx.standsAlone(.v1, bundleID: Self.bundle, environment: .sandbox, now: Self.now)
            }
        )
    }

    @Test func aTypeWithoutAV1CounterpartIsNotSentToTheOldBackendButStillAuthoritativeOnce() async throws {
        let (_, apple, h) = try Self.switchedToV2UnderV1Authority()
        defer { h.close() }
        let r = h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-expired-product-not-for-sale.json"))
        #expect(r.status == 200)
        #expect(try h.store.deliveries().filter { $0.downstream == "legacy" }.isEmpty)
        #expect(h.metrics.counter(Metric.v1ShapesUnsentTotal.name, ["type": "EXPIRED"]) == 1)
        let worker = V1VerificationWorkerTests.worker(h, apple: apple)
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }) {
            try h.store.receiptJobs().count == 1 && h.store.receiptJobs().allSatisfy { $0.state == .done }
        }
        // The change is real whatever the generation: the V2 event itself stands on the V1 path.
        let authoritative = try h.store.events().filter(\.authoritative)
        #expect(authoritative.map(\.event.id) == ["v1-view:" + (r.id ?? "")])
        #expect(authoritative.first?.path == .v1 && authoritative.first?.event.kind == .expiration)
    }
}
