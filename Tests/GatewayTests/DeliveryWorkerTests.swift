import Canonical
import Foundation
import Gateway
import HTTPClient
import Policy
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// Delivery from the outbox to real downstreams on 127.0.0.1.
@Suite struct DeliveryWorkerTests {
    static let webhookSecret = "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="  // base64 of 32 ASCII bytes

    /// A harness whose downstream URLs point at `receiver`.
    static func harness(_ receiver: LoopbackHTTPServer, maxAttempts: Int = 12) throws -> GatewayHarness {
        let json = GatewayHarness.configJSON
            .replacingOccurrences(
                of: "http://127.0.0.1:1/events\"",
                with:
                    "\(receiver.url("/events"))\", \"secret_env\": [\"WEBHOOK_SECRET\"], \"include_raw\": true, \"max_attempts\": \(maxAttempts)"
            )
            .replacingOccurrences(of: "http://127.0.0.1:1/shadow", with: receiver.url("/shadow"))
            .replacingOccurrences(of: "http://127.0.0.1:1/apple/v1", with: receiver.url("/apple/v1"))
        return try GatewayHarness(configJSON: json, environment: ["WEBHOOK_SECRET": webhookSecret])
    }

    static func worker(
        _ h: GatewayHarness,
        now: @escaping @Sendable () -> Int64 = { GatewayHarness.t + 3_600_000 },
        timeoutMillis: Int? = nil
    ) -> DeliveryWorker {
        var policy = DeliveryTuning()
        policy.retry.baseDelay = .zero  // retry at once: the test's clock does not move
        policy.pollMillis = 20
        if let timeoutMillis { policy.timeoutMillis = timeoutMillis }
        let secrets = [WebhookSigner.Secret(name: "WEBHOOK_SECRET", text: webhookSecret)!]
        let context = WorkerContext(
            store: h.store,
            metrics: h.metrics,
            log: Log(now: now, sink: { _ in }),
            now: now,
            jitter: { 0 }
        )
        return DeliveryWorker(
            context: context,
            router: h.router,
            transport: CurlTransport(),
            signers: ["main": WebhookSigner(secrets: secrets)],
            passthroughSecrets: [SharedSecret(name: "APP_SECRET", value: GatewayHarness.v1Secret)],
            redactor: h.config.secretRedactor(
                environment: ["APP_SECRET": GatewayHarness.v1Secret, "WEBHOOK_SECRET": webhookSecret]
            ),
            tuning: policy
        )
    }

    /// Runs the worker until `done` holds, then stops it.
    static func run(_ worker: DeliveryWorker, until done: @escaping @Sendable () throws -> Bool) async throws {
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }, done)
    }

    @Test func webhookGetsASignedEnvelopeThatVerifies() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        try await Self.run(Self.worker(h)) { try h.store.deliveries().filter { $0.state == .delivered }.count == 2 }
        let main = try #require(receiver.requests.first { $0.path == "/events" })
        let id = try #require(main.header("webhook-id"))
        let timestamp = try #require(main.header("webhook-timestamp").flatMap { Int64($0) })
        let signature = try #require(main.header("webhook-signature"))
        let secret = WebhookSigner.Secret(name: "S", text: Self.webhookSecret)!
        #expect(
            WebhookSigner.verify(header: signature, id: id, timestamp: timestamp, body: main.body, secrets: [secret])
        )
        #expect(
            !WebhookSigner.verify(
                header: signature,
                id: id,
                timestamp: timestamp,
                body: main.body + [0x20],
                secrets: [secret]
            )
        )
        let envelope = try #require(JSONParser.parse(main.body).objectValue)
        #expect(envelope["type"]?.stringValue == "subscription.event")
        #expect(envelope["authoritative"] == .bool(true))
        #expect(envelope["event"]?.objectValue?["id"]?.stringValue == id)
        #expect(envelope["state"]?.objectValue?["path"]?.stringValue == "v2")
        #expect(envelope["raw"]?.objectValue?["signedPayload"] != nil)  // include_raw
        // The shadow downstream is unsigned (no secret configured) and got the same event.
        #expect(receiver.requests.contains { $0.path == "/shadow" && $0.header("webhook-id") == id })
    }

    @Test func aDownstreamThatIsDownGetsEverythingOnceItIsBack() async throws {
        let up = Mutex(false)
        let receiver = try LoopbackHTTPServer { _ in up.withLock { $0 } ? .respond(status: 200) : .respond(status: 503)
        }
        let h = try Self.harness(receiver)
        defer { h.close() }
        for name in ["notif-did-renew", "notif-subscribed-initial-buy", "notif-refund"] {
            #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/\(name).json")).status == 200)
        }
        let worker = Self.worker(h)
        let task = Task { await worker.run() }
        try await eventually("six deliveries retried") {
            try h.store.deliveries().filter { $0.attempts >= 2 }.count >= 6
        }
        #expect(try h.store.deliveries().filter { $0.state == .delivered }.count == 0)
        up.withLock { $0 = true }
        try await eventually("six deliveries delivered") {
            try h.store.deliveries().filter { $0.state == .delivered }.count >= 6
        }
        worker.stop()
        await task.value
        let delivered = Set(receiver.requests.filter { $0.path == "/events" }.compactMap { $0.header("webhook-id") })
        #expect(delivered.count == 3)
        #expect(h.metrics.counter("iapgw_delivery_failures_total", ["downstream": "main"]) >= 3)
    }

    @Test func exhaustedDeliveriesAreDeadLetteredAndReplayable() async throws {
        let up = Mutex(false)
        // Only main fails: the shadow downstream (its own, larger max_attempts) would otherwise die too, sooner or
        // later after main depending on how fast the retries run.
        let receiver = try LoopbackHTTPServer { request in
            request.path == "/shadow" || up.withLock { $0 } ? .respond(status: 200) : .respond(status: 500)
        }
        let h = try Self.harness(receiver, maxAttempts: 2)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        try await Self.run(Self.worker(h)) {
            try h.store.deliveries().filter { $0.downstream == "main" && $0.state == .dead }.count == 1
        }
        #expect(try h.store.deliveries().filter { $0.downstream == "main" }.map(\.attempts) == [2])
        let operations = Operations(store: h.store, now: { GatewayHarness.t + 3_600_000 })
        let dead = try operations.deadLetters()
        #expect(dead.arrayValue?.count == 1)
        up.withLock { $0 = true }
        #expect(try operations.replay(.deadLetters) == 1)
        try await Self.run(Self.worker(h)) {
            try h.store.deliveries().filter { $0.downstream == "main" && $0.state == .delivered }.count == 1
        }
        #expect(try h.store.deliveries().filter { $0.state == .dead }.count == 0)
    }

    @Test func passthroughReceivesTheBytesAppleSentWithTheSecretRestored() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        let body = try Fixtures.bytes("v1-synthetic/did-renew.json")
        #expect(h.ingest.handle(body).status == 200)
        try await Self.run(Self.worker(h)) {
            try h.store.deliveries().filter { $0.downstream == "legacy" && $0.state == .delivered }.count == 1
        }
        let legacy = try #require(receiver.requests.first { $0.path == "/apple/v1" })
        #expect(legacy.body == body)
        // A stable delivery id: the notification's key, the same on every attempt (a repeat after a crash included).
        let key = try #require(try h.store.journal().first?.key)
        #expect(key.hasPrefix("v1:") && legacy.header("webhook-id") == key)
    }

    @Test func gone410DeadLettersAtOnceAndRetryAfterIsHonoured() async throws {
        let receiver = try LoopbackHTTPServer { r in
            r.path == "/events"
                ? .respond(status: 410) : .respond(status: 429, headers: [HTTPHeader("Retry-After", "3600")])
        }
        let h = try Self.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        try await Self.run(Self.worker(h)) {
            try h.store.deliveries().filter { $0.downstream == "main" && $0.state == .dead }.count == 1
                && h.store.deliveries().filter { $0.downstream == "shadow" && $0.attempts == 1 }.count == 1
        }
        #expect(try h.store.deliveries().filter { $0.downstream == "main" }.map(\.attempts) == [1])
        // The 429 asked for an hour: the retry is scheduled no sooner.
        let next = try h.store.deliveries().first { $0.downstream == "shadow" }?.nextAttemptAt
        #expect((next ?? 0) >= GatewayHarness.t + 3_600_000 + 3_600_000)
    }

    @Test func sandboxEventsSkipProductionOnlyDownstreams() throws {
        let json = GatewayHarness.configJSON.replacingOccurrences(
            of: "\"url\": \"http://127.0.0.1:1/events\", \"environments\": [\"production\", \"sandbox\"]",
            with: "\"url\": \"http://127.0.0.1:1/events\""
        )
        let h = try GatewayHarness(configJSON: json)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)  // sandbox
        #expect(try h.store.deliveries().filter { $0.downstream == "main" }.count == 0)
        #expect(try h.store.deliveries().filter { $0.downstream == "shadow" }.count == 1)
    }

    @Test func aStuckDownstreamDoesNotHoldBackTheOthers() async throws {
        // `main` hangs on every request (its 4 slots stay busy); `shadow` answers at once. Main's requests outlast the
        // wait below by far (the hang and the delivery timeout alike): shadow deliveries that arrive in time did not
        // wait for main's slots to free up, however loaded the machine is.
        let receiver = try LoopbackHTTPServer { r in r.path == "/events" ? .hang(.seconds(600)) : .respond(status: 200)
        }
        let h = try Self.harness(receiver)
        defer { h.close() }
        for name in [
            "notif-did-renew", "notif-subscribed-initial-buy", "notif-refund", "notif-did-change-renewal-pref-upgrade",
            "notif-expired-voluntary", "notif-did-fail-to-renew-grace-period",
        ] {
            #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/\(name).json")).status == 200)
        }
        #expect(try h.store.deliveries().filter { $0.downstream == "main" }.count >= 6)
        let worker = Self.worker(h, timeoutMillis: 600_000)
        let task = Task { await worker.run() }
        let shadowRows = try h.store.deliveries().filter { $0.downstream == "shadow" }.count
        try await eventually("shadow deliveries not held back behind the stuck downstream") {
            try h.store.deliveries().filter { $0.downstream == "shadow" && $0.state == .delivered }.count >= shadowRows
        }
        #expect(
            receiver.requests.filter { $0.path == "/events" }.count == 4,
            "main: only its concurrency limit in flight"
        )
        #expect(try h.store.deliveries().filter { $0.downstream == "main" && $0.state == .delivered }.count == 0)
        receiver.stop()  // wakes the hung requests: main's attempts fail and are retried later
        worker.stop()
        await task.value
    }

    @Test func deliveriesForADownstreamNoLongerConfiguredAreDeadLettered() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        // An event queued for a downstream the config no longer has (it was configured when the event arrived).
        let retired = Routing(
            downstreams: [
                .init(name: "retired", kind: .webhook, environments: [.sandbox, .production], shadow: false)
            ],
            apps: [.init(bundleID: "com.example.gateway", downstreams: [], compares: false, hasV1Path: false)]
        )
        var event = CanonicalEvent(
            id: "retired-event",
            source: .v2,
            kind: .renewal,
            rawType: "DID_RENEW",
            eventDate: GatewayHarness.t,
            eventDateSource: .signedDate,
            verified: true
        )
        event.bundleID = "com.example.gateway"
        event.environment = .sandbox
        let queued = event
        _ = try await h.store.write { tx in
            try tx.storeEvents([queued], journalID: nil, routing: retired, now: GatewayHarness.t, authority: nil)
        }
        try await Self.run(Self.worker(h)) {
            try h.store.deliveries().filter { $0.downstream == "main" && $0.state == .delivered }.count == 1
                && h.store.deliveries().filter { $0.downstream == "retired" && $0.state == .dead }.count == 1
        }
        #expect(try h.store.deliveries().filter { $0.lastError == "downstream_unconfigured" }.count == 1)
        #expect(h.metrics.counter("iapgw_delivery_dead_total", ["downstream": "(unconfigured)"]) == 1)
    }
}
