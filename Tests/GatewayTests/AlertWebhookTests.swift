import Canonical
import Foundation
import Gateway
import HTTPClient
import ServiceKit
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

/// `alerts.webhook`: one signed JSON per dead letter (docs/operations.md, "Alerts").
@Suite struct AlertWebhookTests {
    static let secret = WebhookSigner.Secret(name: "ALERT_SECRET", text: DeliveryWorkerTests.webhookSecret)!

    @Test func aDeadLetterSendsOneSignedAlert() async throws {
        let receiver = try LoopbackHTTPServer { r in .respond(status: r.path == "/alerts" ? 200 : 500) }
        let h = try DeliveryWorkerTests.harness(receiver, maxAttempts: 1)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let now: @Sendable () -> Int64 = { GatewayHarness.t + 3_600_000 }
        let alerts = AlertWebhook(
            url: receiver.url("/alerts"),
            signer: WebhookSigner(secrets: [Self.secret]),
            transport: CurlTransport(),
            now: now,
            metrics: h.metrics,
            retryDelay: .milliseconds(1)
        )
        var policy = DeliveryTuning()
        policy.pollMillis = 20
        let worker = DeliveryWorker(
            context: WorkerContext(
                store: h.store,
                metrics: h.metrics,
                log: Log(now: now, sink: { _ in }),
                now: now,
                jitter: { 0 }
            ),
            router: h.router,
            transport: CurlTransport(),
            signers: [:],
            passthroughSecrets: [],
            redactor: SecretRedactor([]),
            tuning: policy,
            alerts: alerts
        )
        // `main` takes one attempt (the others retry for longer): its delivery dies, and says so once.
        try await DeliveryWorkerTests.run(worker) {
            let dead = try h.store.deliveries().filter { $0.state == .dead }.count
            return dead >= 1 && receiver.requests.filter { $0.path == "/alerts" }.count == dead
        }
        let dead = try h.store.deliveries().filter { $0.state == .dead }.count
        let sent = receiver.requests.filter { $0.path == "/alerts" }
        #expect(sent.count == dead)
        for request in sent {
            let id = try #require(request.header("webhook-id"))
            let timestamp = try #require(request.header("webhook-timestamp").flatMap { Int64($0) })
            let signature = try #require(request.header("webhook-signature"))
            #expect(
                WebhookSigner.verify(
                    header: signature,
                    id: id,
                    timestamp: timestamp,
                    body: request.body,
                    secrets: [Self.secret]
                )
            )
            let body = try #require(try JSONParser.parse(request.body).objectValue)
            #expect(body["type"] == .string("delivery.dead_lettered"))
            #expect(body["attempts"] == .number("1") && body["error"] == .string("http_500"))
            #expect(body["event_id"]?.stringValue != nil && body["downstream"]?.stringValue != nil)
            #expect(!String(decoding: request.body, as: UTF8.self).contains("whsec_"), "no secret in an alert")
        }
        await eventually("counted", every: .milliseconds(10)) {
            h.metrics.counter("iapgw_alerts_total", ["outcome": "sent"]) == Double(dead)
        }
    }

    /// A start that dead-letters the deliveries queued for downstreams the configuration no longer has says so once,
    /// with how many (`deliveries.unconfigured`, schemas/alert.schema.json).
    @Test func deliveriesOfADownstreamNoLongerConfiguredAreDeadLetteredAndSaidOnce() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try DeliveryWorkerTests.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let queued = try h.store.deliveries().filter { $0.state == .pending }.count
        #expect(queued >= 2)
        // The same store under a configuration without any downstream: every delivery queued is for one it lost.
        let bare = try GatewayConfig.parse(
            Array(
                #"{"apps": [{"bundle_id": "com.example.gateway", "environments": ["sandbox"]}]}"#.utf8
            ),
            baseDirectory: h.directory
        )
        let now: @Sendable () -> Int64 = { GatewayHarness.t + 3_600_000 }
        let worker = DeliveryWorker(
            context: WorkerContext(
                store: h.store,
                metrics: h.metrics,
                log: Log(now: now, sink: { _ in }),
                now: now,
                jitter: { 0 }
            ),
            router: Router(config: bare),
            transport: CurlTransport(),
            signers: [:],
            passthroughSecrets: [],
            redactor: SecretRedactor([]),
            alerts: AlertWebhook(
                url: receiver.url("/alerts"),
                signer: WebhookSigner(secrets: [Self.secret]),
                transport: CurlTransport(),
                now: now,
                metrics: h.metrics,
                retryDelay: .milliseconds(1)
            )
        )
        try await DeliveryWorkerTests.run(worker) { receiver.requests.contains { $0.path == "/alerts" } }
        #expect(try h.store.deliveries().allSatisfy { $0.state == .dead })
        let sent = receiver.requests.filter { $0.path == "/alerts" }
        #expect(sent.count == 1)
        let alert = try #require(sent.first)
        let body = try #require(try JSONParser.parse(alert.body).objectValue)
        #expect(body["type"] == .string("deliveries.unconfigured"))
        #expect(body["count"] == .number(String(queued)) && body["error"] == .string("downstream_unconfigured"))
        #expect(body["at"] == .number(String(now())) && body["downstream"] == nil && body["event_id"] == nil)
        #expect(receiver.requests.allSatisfy { $0.path == "/alerts" }, "nothing delivered to a downstream it lost")
    }
}
