import Canonical
import Foundation
import Gateway
import HTTPClient
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

/// The consumption responder (docs/operations.md, "Refund requests"): a CONSUMPTION_REQUEST queues a durable job in
/// the notification's transaction; the team's service is asked (signed), its answer — or the default — is kept and
/// sent to Apple before the deadline; nothing without consent; Apple's refusals and a passed deadline are dead
/// letters; Apple's later REFUND / REFUND_DECLINED is recorded on the request.
@Suite struct ConsumptionResponderTests {
    static let bundle = "com.example.gateway"
    static let askSecret = DeliveryWorkerTests.webhookSecret

    /// Apple's Send Consumption Information as a script: each call takes the next scripted error (none: 202).
    final class FakeApple: ConsumptionSender {
        let script = Mutex<[AppStoreAPIError]>([])
        let calls = Mutex<[(transactionID: String, info: ConsumptionInformation)]>([])
        var sent: [(transactionID: String, info: ConsumptionInformation)] { calls.withLock { $0 } }

        func fail(_ errors: AppStoreAPIError...) { script.withLock { $0 += errors } }

        func sendConsumptionInformation(
            bundleID: String,
            transactionID: String,
            _ information: ConsumptionInformation,
            environment: AppStoreEnvironment
        ) async throws(AppStoreAPIError) {
            calls.withLock { $0.append((transactionID, information)) }
            let next = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let next { throw next }
        }
    }

    /// A minute after the test notifications' signed date, running at the real pace (retries fall due), moved on by
    /// ``advance(_:)``.
    final class Clock: Sendable {
        let offset = Mutex<Int64>(TestCA.signedDate + 60_000)
        let start = ContinuousClock.now
        var now: Int64 {
            let elapsed = (ContinuousClock.now - start).components
            return offset.withLock { $0 } + elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
        }
        func advance(_ ms: Int64) { offset.withLock { $0 += ms } }
    }

    struct Setup {
        let directory: String
        let store: SQLiteStore
        let service: GatewayService
        /// A responder as `serve` runs it (a fresh one per run: a stopped worker stays stopped).
        let makeResponder: @Sendable () -> ConsumptionResponder
        let apple: FakeApple
        let clock: Clock
        let signer: TestSigner

        func close() {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// A CONSUMPTION_REQUEST (or `type`) of the test purchase, signed by the test CA, through the endpoint.
        @discardableResult
        func notify(
            _ type: String = "CONSUMPTION_REQUEST",
            uuid: String = "00000000-0000-4000-8000-00000000c001",
            reason: String? = "UNINTENDED_PURCHASE",
            productType: String = "Consumable",
            signedDate: Int64 = TestCA.signedDate
        ) throws -> Int {
            var tx = TestTransaction()
            tx.type = productType
            var n = TestNotification(
                notificationType: type,
                notificationUUID: uuid,
                appAppleID: 1_234_567_890,
                signedDate: signedDate,
                transaction: tx
            )
            n.consumptionRequestReason = type == "CONSUMPTION_REQUEST" ? reason : nil
            let token = try n.signed(by: signer)
            return service.ingest.handle(Array("{\"signedPayload\":\"\(token)\"}".utf8)).status
        }

        func job() throws -> ConsumptionJobStatus? {
            try store.read { tx in try tx.consumptionJobs(state: nil, limit: 10) }.first
        }

        /// Runs the responder until the request's job holds `done`.
        func run(until done: @escaping @Sendable (ConsumptionJobStatus) -> Bool) async throws {
            try await runUntil { try job().map(done) ?? false }
        }

        func runUntil(_ done: @escaping @Sendable () throws -> Bool) async throws {
            let responder = makeResponder()
            try await GatewayHarness.runUntil(run: { await responder.run() }, stop: { responder.stop() }, done)
        }
    }

    static func consumption(ask: LoopbackHTTPServer?, askFor: String = "1s", extra: String = "") -> String {
        let askPart =
            ask.map {
                #""ask_url": "\#($0.url("/ask"))", "ask_secret_env": "ASK_SECRET", "ask_timeout": "300ms", "#
            } ?? ""
        return """
            { "respond": true, \(askPart)"ask_for": "\(askFor)", "deadline": "11h", "retry_delay": "10ms",
              "max_retry_delay": "1h"\(extra) }
            """
    }

    static let defaultAnswer = """
        , "default": { "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false,
          "consumptionPercentage": 25000, "refundPreference": "DECLINE" }
        """

    static func setup(consumption: String, apple: FakeApple = FakeApple()) throws -> Setup {
        let directory = try Scratch.directory()
        let json = """
            { "apps": [ { "bundle_id": "\(bundle)", "app_apple_id": 1234567890, "environments": ["production", "sandbox"],
                          "authority": "v2", "consumption": \(consumption) } ] }
            """
        var config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
        config.sqlitePath = directory + "/gateway.db"
        let store = try SQLiteStore(path: config.sqlitePath)
        let ca = try TestCA()
        let clock = Clock()
        var dependencies = GatewayService.Dependencies(
            environment: ["ASK_SECRET": askSecret],
            transport: CurlTransport(),
            now: { clock.now },
            jitter: { 0 },
            logSink: { _ in }
        )
        dependencies.store = store
        dependencies.v2PathSource = GatewayHarness.NoV2Path()
        dependencies.trustAnchors = try TrustAnchors(appleRoots: [TrustAnchors.appleRootCAG3, ca.root.der])
        dependencies.consumptionSender = apple
        let service = try GatewayService(config: config, dependencies: dependencies)
        try service.seedAuthority()
        let context = WorkerContext(
            store: store,
            router: service.router,
            metrics: service.metrics,
            log: Log(now: { clock.now }, sink: { _ in }),
            now: { clock.now },
            jitter: { 0 }
        )
        var policy = ConsumptionResponder.Policy()
        policy.pollMillis = 10
        let settings = try #require(config.apps.first?.consumption)
        let secret = try #require(WebhookSigner.Secret(name: "ASK_SECRET", text: askSecret))
        let policyValue = policy
        let makeResponder: @Sendable () -> ConsumptionResponder = {
            ConsumptionResponder(
                context: context,
                apps: [bundle: settings],
                signers: [bundle: WebhookSigner(secrets: [secret])],
                sender: apple,
                transport: CurlTransport(),
                policy: policyValue
            )
        }
        return Setup(
            directory: directory,
            store: store,
            service: service,
            makeResponder: makeResponder,
            apple: apple,
            clock: clock,
            signer: try ca.chain.signer()
        )
    }

    static func answer(_ json: String) -> LoopbackHTTPServer.Action {
        .respond(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: Array(json.utf8))
    }

    // MARK: The team's service answers

    @Test func theTeamsAnswerIsAskedSignedAndSentToAppleOnce() async throws {
        let team = try LoopbackHTTPServer { _ in
            Self.answer(
                #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": true, "consumptionPercentage": 100000, "refundPreference": "DECLINE"}"#
            )
        }
        let s = try Self.setup(consumption: Self.consumption(ask: team))
        defer { s.close() }
        #expect(try s.notify() == 200)
        // Apple's retry of the same notification queues nothing more.
        #expect(try s.notify() == 200)
        let queued = try #require(try s.job())
        #expect(queued.state == .pending)
        #expect(queued.reason == "unintended_purchase")
        #expect(queued.transactionID == "2000000900101004")
        #expect(queued.deadlineAt == TestCA.signedDate + 11 * 3_600_000)
        try await s.run { $0.state == .sent }
        let job = try #require(try s.job())
        #expect(job.answerSource == .team)
        #expect(job.refundPreference == "DECLINE")
        #expect(job.appleStatus == 202)
        #expect(job.asks == 1 && job.sends == 1)
        #expect(s.apple.sent.count == 1)
        #expect(s.apple.sent.first?.transactionID == "2000000900101004")
        #expect(s.apple.sent.first?.info.consumptionPercentage == 100_000)
        #expect(s.apple.sent.first?.info.refundPreference == .decline)
        // The ask: the request and its canonical event, signed with the app's secret.
        let ask = try #require(team.requests.first)
        #expect(team.requests.count == 1)
        #expect(ask.header("webhook-id") == "consumption-00000000-0000-4000-8000-00000000c001")
        let signer = WebhookSigner(secrets: [
            try #require(WebhookSigner.Secret(name: "ASK_SECRET", text: Self.askSecret))
        ])
        let timestamp = try #require(ask.header("webhook-timestamp").flatMap { Int64($0) })
        #expect(
            signer.headers(id: ask.header("webhook-id") ?? "", timestamp: timestamp, body: ask.body)
                .first { $0.name == "webhook-signature" }?.value == ask.header("webhook-signature")
        )
        let body = try #require(try JSONParser.parse(ask.body).objectValue)
        #expect(body["type"]?.stringValue == "consumption.request")
        #expect(body["request"]?.objectValue?["reason"]?.stringValue == "unintended_purchase")
        #expect(body["event"]?.objectValue?["kind"]?.stringValue == "consumption_request")
        #expect(body["event"]?.objectValue?["consumption_request_reason"]?.stringValue == "unintended_purchase")
        #expect(
            s.service.metrics.counter("iapgw_consumption_requests_total", ["bundle": Self.bundle, "state": "sent"]) == 1
        )
    }

    @Test func a204MeansNothingIsSent() async throws {
        let team = try LoopbackHTTPServer { _ in .respond(status: 204) }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify() == 200)
        try await s.run { $0.state == .declined }
        #expect(s.apple.sent.isEmpty, "the team said not to answer: the default is not used either")
    }

    @Test func aTeamThatDoesNotAnswerInTimeGetsTheDefaultSent() async throws {
        let team = try LoopbackHTTPServer { _ in .hang(.seconds(5)) }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify() == 200)
        s.clock.advance(2_000)  // past ask_for (1 s after Apple's signed date): no second ask
        try await s.run { $0.state == .sent }
        let job = try #require(try s.job())
        #expect(job.answerSource == .default)
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_asks_total",
                ["bundle": Self.bundle, "outcome": "ask_timeout"]
            ) == 1
        )
        #expect(s.apple.sent.first?.info.refundPreference == .decline)
        #expect(s.apple.sent.first?.info.consumptionPercentage == 25_000, "a consumable keeps the default's percentage")
    }

    @Test func aSubscriptionsDefaultGoesWithoutPercentageAndATeamPercentageIsRefused() async throws {
        let team = try LoopbackHTTPServer { _ in
            Self.answer(
                #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "consumptionPercentage": 5000}"#
            )
        }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify(productType: "Auto-Renewable Subscription") == 200)
        s.clock.advance(2_000)
        try await s.run { $0.state == .sent }
        let job = try #require(try s.job())
        #expect(job.answerSource == .default)
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_asks_total",
                ["bundle": Self.bundle, "outcome": "answer_percentage_for_subscription"]
            ) == 1
        )
        #expect(s.apple.sent.first?.info.consumptionPercentage == nil)
    }

    @Test func anAnswerWithoutConsentIsNeverSent() async throws {
        let team = try LoopbackHTTPServer { _ in
            Self.answer(#"{"customerConsented": false, "deliveryStatus": "DELIVERED", "sampleContentProvided": false}"#)
        }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify() == 200)
        try await s.run { $0.state == .noConsent }
        #expect(s.apple.sent.isEmpty)
    }

    @Test func anInvalidAnswerIsAskedAgainThenTheDefault() async throws {
        let asks = Mutex(0)
        let team = try LoopbackHTTPServer { _ in
            asks.withLock { $0 += 1 }
            return Self.answer(
                #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "refundPrefrence": "GRANT_FULL"}"#
            )
        }
        let s = try Self.setup(consumption: Self.consumption(ask: team, askFor: "10m", extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify() == 200)
        // Asked again while ask_for lasts (the clock stands still): the misspelt member is never taken as no preference.
        try await s.runUntil { asks.withLock { $0 } >= 3 }
        #expect(try s.job()?.state == .pending)
        #expect(try s.job()?.lastError == "invalid_answer")
        #expect(s.apple.sent.isEmpty)
        s.clock.advance(10 * 60_000)
        try await s.run { $0.state == .sent }
        #expect(try s.job()?.answerSource == .default)
    }

    @Test func withoutAnAnswerOrADefaultNothingIsSent() async throws {
        let team = try LoopbackHTTPServer { _ in .respond(status: 500) }
        let s = try Self.setup(consumption: Self.consumption(ask: team))
        defer { s.close() }
        #expect(try s.notify() == 200)
        s.clock.advance(2_000)
        try await s.run { $0.state == .unanswered }
        #expect(try s.job()?.lastError == "ask_http_500")
        #expect(s.apple.sent.isEmpty)
    }

    // MARK: Apple's answers

    @Test func appleRefusingTheAnswerIsADeadLetterNotRetried() async throws {
        for (status, code, apple) in [
            (400, AppStoreAPIError.Code.badRequest, Int64(4_000_035)), (404, .notFound, Int64(4_040_010)),
        ] {
            let fake = FakeApple()
            fake.fail(AppStoreAPIError(code, "refused", httpStatus: status, appleErrorCode: apple, attempts: 1))
            let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), apple: fake)
            defer { s.close() }
            #expect(try s.notify() == 200)
            try await s.run { $0.state == .rejected }
            let job = try #require(try s.job())
            #expect(job.appleStatus == status)
            #expect(job.appleErrorCode == apple)
            #expect(fake.sent.count == 1, "\(status): not sent again")
            #expect(
                s.service.metrics.counter(
                    "iapgw_consumption_dead_total",
                    ["bundle": Self.bundle, "reason": code.rawValue]
                )
                    == 1
            )
        }
    }

    @Test func appleUnavailableIsRetriedUntilTheDeadlineThenDeadLettered() async throws {
        let fake = FakeApple()
        let down = AppStoreAPIError(.appleUnavailable, "HTTP 503", httpStatus: 503, attempts: 1)
        fake.fail(down, down, down)
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), apple: fake)
        defer { s.close() }
        #expect(try s.notify() == 200)
        // 503, then Apple takes it on the fourth try.
        try await s.run { $0.state == .sent }
        #expect(fake.sent.count == 4)
        #expect(try s.job()?.sends == 4)

        // A request whose next try would pass the deadline is given up.
        let fake2 = FakeApple()
        for _ in 0..<100 { fake2.fail(down) }
        let s2 = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), apple: fake2)
        defer { s2.close() }
        #expect(try s2.notify() == 200)
        try await s2.runUntil { fake2.sent.count >= 2 }
        s2.clock.advance(11 * 3_600_000)
        try await s2.run { $0.state == .dead }
        // The deadline came while the job waited for its next try: the last failure stays the reason.
        #expect(try s2.job()?.lastError == "apple_unavailable")
        #expect(try s2.job()?.appleStatus == 503)
        let reason = try #require(try s2.job()?.lastError)
        #expect(
            s2.service.metrics.counter("iapgw_consumption_dead_total", ["bundle": Self.bundle, "reason": reason]) == 1
        )
    }

    @Test func appleRateLimitHonoursRetryAfter() async throws {
        let fake = FakeApple()
        fake.fail(AppStoreAPIError(.rateLimited, "429", httpStatus: 429, retryAfter: .seconds(60), attempts: 1))
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), apple: fake)
        defer { s.close() }
        #expect(try s.notify() == 200)
        let before = s.clock.now
        try await s.run { $0.sends == 1 && $0.state == .pending }
        let job = try #require(try s.job())
        #expect(job.nextAttemptAt >= before + 60_000, "Apple's Retry-After")
        #expect(job.answer != nil, "the answer is kept for the retry")
        s.clock.advance(60_000)
        try await s.run { $0.state == .sent }
        #expect(fake.sent.count == 2)
    }

    @Test func aRequestPastItsDeadlineIsExpiredWithoutAsking() async throws {
        let team = try LoopbackHTTPServer { _ in .respond(status: 204) }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify() == 200)
        s.clock.advance(12 * 3_600_000)
        try await s.run { $0.state == .expired }
        #expect(team.requests.isEmpty)
        #expect(s.apple.sent.isEmpty)
    }

    // MARK: Apple's decision

    @Test func applesDecisionIsRecordedOnTheRequestAndCounted() async throws {
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify() == 200)
        try await s.run { $0.state == .sent }
        s.clock.advance(2 * 3_600_000)
        #expect(
            try s.notify(
                "REFUND_DECLINED",
                uuid: "00000000-0000-4000-8000-00000000c002",
                signedDate: TestCA.signedDate + 3_600_000
            ) == 200
        )
        let job = try #require(try s.job())
        #expect(job.decision == "refund_declined")
        #expect(job.decidedAt == TestCA.signedDate + 3_600_000)
        let counts = try await s.store.read { tx in
            try tx.refundRequestCounts(since: TestCA.signedDate - 1, until: TestCA.signedDate + 1)
        }
        #expect(counts.count == 1)
        #expect(counts.first?.state == .sent)
        #expect(counts.first?.inTime == true)
        #expect(counts.first?.refundPreference == "DECLINE")
        #expect(counts.first?.decision == "refund_declined")
    }

    // MARK: Configuration

    @Test func configurationsThatCannotAnswerAreRefused() throws {
        let cases: [(String, String)] = [
            (#"{ "respond": true }"#, "apps[0].consumption.respond"),
            (#"{ "respond": true, "ask_url": "http://127.0.0.1:1/ask" }"#, "apps[0].consumption.ask_secret_env"),
            (#"{ "respond": true, "deadline": "13h" }"#, "apps[0].consumption.deadline"),
            (
                #"{ "respond": true, "default": { "customerConsented": false, "deliveryStatus": "DELIVERED", "sampleContentProvided": false } }"#,
                "apps[0].consumption.default.customerConsented"
            ),
            (
                #"{ "respond": true, "default": { "customerConsented": true, "deliveryStatus": "LOST", "sampleContentProvided": false } }"#,
                "apps[0].consumption.default"
            ),
            (
                #"{ "respond": true, "default": { "customerConsented": true, "deliveryStatus": "UNDELIVERED_OTHER", "sampleContentProvided": false, "consumptionPercentage": 10 } }"#,
                "apps[0].consumption.default"
            ),
            (#"{ "respond": true, "ask_for": "12h", "deadline": "11h" }"#, "apps[0].consumption.ask_for"),
        ]
        for (consumption, field) in cases {
            let json = """
                { "apps": [ { "bundle_id": "\(Self.bundle)", "app_apple_id": 1, "consumption": \(consumption) } ] }
                """
            #expect(throws: ConfigError.self, "\(consumption)") {
                try GatewayConfig.parse(Array(json.utf8), baseDirectory: "/tmp")
            }
            do {
                _ = try GatewayConfig.parse(Array(json.utf8), baseDirectory: "/tmp")
            } catch {
                #expect(error.field == field, "\(consumption): \(error)")
            }
        }
        // Answering needs the App Store Server API.
        let json = """
            { "apps": [ { "bundle_id": "\(Self.bundle)", "app_apple_id": 1, "consumption": \(Self.consumption(ask: nil, extra: Self.defaultAnswer)) } ] }
            """
        let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: "/tmp")
        var d = GatewayService.Dependencies(environment: [:], transport: CurlTransport(), now: { 0 }, jitter: { 0 })
        d.store = try SQLiteStore(path: try Scratch.directory() + "/g.db")
        #expect(throws: ConfigError.self) { try GatewayService(config: config, dependencies: d) }
    }
}
