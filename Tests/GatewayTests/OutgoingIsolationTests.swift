import Foundation
import HTTPClient
import Synchronization
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// What one purpose does to the others when its peer hangs (docs/architecture.md, "Outgoing transfers", "The receipt
/// path"): a `/verifyReceipt` flood with Apple's verifyReceipt hanging never holds the threads that answer Apple's
/// notifications, nor the transfer slots deliveries need; a hanging alert webhook never holds deliveries either. Each
/// check is a condition — the notification answered, the event delivered — met while the hanging requests are all
/// still waiting, never a time measured.
@Suite struct OutgoingIsolationTests {
    /// The answers of requests sent in the background, as they come.
    final class Answers: Sendable {
        private let bodies = Mutex<[JSONObject]>([])
        func add(_ body: [UInt8]) {
            let object = (try? JSONParser.parse(body).objectValue) ?? JSONObject([("unreadable", .bool(true))])
            bodies.withLock { $0.append(object) }
        }
        var all: [JSONObject] { bodies.withLock { $0 } }
    }

    static func receiptRequest(authenticated: Bool = true) -> [UInt8] {
        var w = JSONObjectWriter()
        w.string("receipt-data", ReceiptEndpointTests.receiptData(authenticated: authenticated))
        w.string("password", ReceiptEndpointTests.secret)
        return w.finish()
    }

    /// Posts `count` receipts to the sandbox verifyReceipt URL at once, without waiting for their answers.
    static func flood(_ g: GatewayServiceTests.Running, count: Int, into answers: Answers) {
        let body = receiptRequest()
        for _ in 0..<count {
            Task.detached {
                let response = try? await CurlTransport().send(
                    HTTPRequest(method: .post, url: g.url("/sandbox/verifyReceipt"), body: body, timeoutMillis: 120_000)
                )
                answers.add(response?.body ?? [])
            }
        }
    }

    /// A fresh TEST notification (the service's clock is `GatewayHarness.t` + 1 h), distinct per `i`.
    static func notification(_ i: Int) throws -> [UInt8] {
        let token = try TestJWS.testNotification(
            signedDate: GatewayHarness.t + 3_600_000,
            uuid: "00000000-0000-4000-8000-\(String(format: "%012d", 700_000 + i))"
        )
        return Array("{\"signedPayload\":\"".utf8) + token + Array("\"}".utf8)
    }

    @Test func aReceiptFloodWithAppleHangingLeavesTheNotificationsTheirThreads() async throws {
        let apple = try LoopbackHTTPServer { _ in .hang(.seconds(60)) }
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try GatewayServiceTests.start(receiver: receiver, apple: apple) { config, d in
            // Four handler threads: four requests waiting on them would leave none for Apple's notifications.
            config.limits.httpThreads = 4
            config.receiptSettings.fetchTimeoutMillis = 60_000
            config.receiptSettings.maxInFlight = 8
            config.receiptSettings.maxInFlightPerAddress = 6
            d.receiptReader = ReceiptEndpointTests.reader
        }
        // A receipt whose signature is not Apple's is answered here, never forwarded.
        let lookalike = try await GatewayServiceTests.post(
            g.url("/sandbox/verifyReceipt"),
            Self.receiptRequest(authenticated: false)
        )
        #expect(String(decoding: lookalike.body, as: UTF8.self) == #"{"status":21003}"#)
        #expect(apple.requests.isEmpty)

        // Ten at once from one address: six are taken and wait for Apple, four are told to come back.
        let answers = Answers()
        Self.flood(g, count: 10, into: answers)
        await eventually("six forwarded to Apple, four refused at once") {
            apple.requests.count == 6 && answers.all.count == 4
        }
        #expect(answers.all.allSatisfy { $0["status"] == .number("21005") && $0["is-retryable"] == .bool(true) })
        let refused = g.service.metrics.counter("iapgw_receipt_refused_total", ["reason": "address_busy"])
        #expect(refused == 4)
        #expect(g.service.metrics.gauge("iapgw_receipt_in_flight") == 6)

        // Apple's notification is answered while all six still wait for Apple.
        let notification = try await GatewayServiceTests.post(g.url("/notifications"), try Self.notification(0))
        #expect(notification.status == 200)
        #expect(answers.all.count == 4, "no receipt answered yet: the notification did not wait for them")
        #expect(apple.requests.count == 6)

        // Apple goes away: the six are answered retryable, and their room is free again.
        apple.stop()
        await eventually("every receipt answered") { answers.all.count == 10 }
        #expect(answers.all.allSatisfy { $0["is-retryable"] == .bool(true) })
        await eventually("room again") { g.service.metrics.gauge("iapgw_receipt_in_flight") == 0 }
        await g.service.shutdown()
    }

    @Test func aReceiptFloodWithAppleHangingLeavesTheDeliveriesTheirSlots() async throws {
        let apple = try LoopbackHTTPServer { _ in .hang(.seconds(60)) }
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try GatewayServiceTests.start(receiver: receiver, apple: apple) { config, d in
            // The live transport: one libcurl transport under every purpose's own slots.
            d.transport = GatewayService.Dependencies.liveTransport()
            config.receiptSettings.fetchTimeoutMillis = 60_000
            config.receiptSettings.maxInFlight = 24
            config.receiptSettings.maxInFlightPerAddress = 0
            d.receiptReader = ReceiptEndpointTests.reader
        }
        let answers = Answers()
        Self.flood(g, count: 24, into: answers)
        await eventually("24 forwarded to Apple") { apple.requests.count == 24 }

        let notification = try await GatewayServiceTests.post(g.url("/notifications"), try Self.notification(1))
        #expect(notification.status == 200)
        await eventually("delivered") { receiver.requests.contains { $0.path == "/events" } }
        #expect(answers.all.isEmpty, "delivered while every receipt still waits for Apple")

        apple.stop()
        await eventually("every receipt answered") { answers.all.count == 24 }
        await g.service.shutdown()
    }

    @Test func aHangingAlertWebhookLeavesTheDeliveriesTheirSlots() async throws {
        // `/dead` refuses for good (410: dead at once), so each of its deliveries sends an alert — to a webhook that
        // hangs; `/events` is healthy.
        let receiver = try LoopbackHTTPServer { r in
            switch r.path {
            case "/alerts": .hang(.seconds(60))
            case "/dead": .respond(status: 410)
            default: .respond(status: 200)
            }
        }
        let g = try GatewayServiceTests.start(receiver: receiver) { config, d in
            d.transport = GatewayService.Dependencies.liveTransport()
            d.environment["ALERT_SECRET"] = GatewayServiceTests.webhookSecret
            var dead = config.downstreams[0]
            (dead.name, dead.url) = ("dead", receiver.url("/dead"))
            config.downstreams.append(dead)
            config.apps[0].downstreams.append("dead")
            config.alertWebhook = .init(url: receiver.url("/alerts"), secretEnv: ["ALERT_SECRET"])
        }
        // Twenty dead letters, whose alerts all hang (sent one at a time, each cut short).
        for i in 0..<20 {
            #expect(
                try await GatewayServiceTests.post(g.url("/notifications"), try Self.notification(10 + i)).status == 200
            )
        }
        try await eventually("twenty dead letters") {
            try g.service.store.deliveries().filter { $0.downstream == "dead" && $0.state == .dead }.count == 20
        }
        // Every delivery to the healthy downstream went out meanwhile, while alerts were tried one at a time: had
        // alerts shared the deliveries' slots, the deliveries would have waited behind the first sixteen alerts.
        await eventually("the healthy downstream has every event") {
            receiver.requests.filter { $0.path == "/events" }.count == 20
        }
        let alertsTried = receiver.requests.filter { $0.path == "/alerts" }.count
        #expect(alertsTried < 16, "\(alertsTried) alerts tried before the deliveries were done")
        #expect(g.service.metrics.counter("iapgw_alerts_total", ["outcome": "sent"]) == 0)
        await g.service.shutdown()
        receiver.stop()
    }
}
