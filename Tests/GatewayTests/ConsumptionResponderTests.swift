import Canonical
import Crypto
import Foundation
import Gateway
import HTTPClient
import RefundRequests
import ServiceKit
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
            productType: ProductType?,
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
        /// With `appleClient`: every request the App Store Server API client sent (each answered 202).
        let appleRequests: ScriptedTransport?
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
            signedDate: Int64 = TestCA.signedDate,
            ownership: String = "PURCHASED"
        ) throws -> Int {
            var tx = TestTransaction()
            tx.type = productType
            tx.ownership = ownership
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

    /// `appleClient`: Send Consumption Information goes through the gateway's own App Store Server API client (its
    /// checks included) to a transport answering 202, instead of `apple`.
    static func setup(consumption: String, apple: FakeApple = FakeApple(), appleClient: Bool = false) throws -> Setup {
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
        var sender: any ConsumptionSender = apple
        var appleRequests: ScriptedTransport?
        if appleClient {
            let transport = ScriptedTransport { _ throws(HTTPClientError) in
                HTTPResponse(status: 202, headers: [], body: [])
            }
            let client = AppStoreAPIClient(
                configuration: .init(
                    keyID: "KEY",
                    issuerID: "ISSUER",
                    bundleID: bundle,
                    privateKey: try PrivateKey.generateP256(),
                    maxAttempts: 1
                ),
                transport: transport,
                adapter: service.ingest.v2,
                now: { clock.now },
                sleep: { _ in },
                jitter: { 0 }
            )
            sender = AppStoreAPIClients(clients: [bundle: client])
            appleRequests = transport
        }
        try service.seedAuthority()
        let context = WorkerContext(
            store: store,
            metrics: service.metrics,
            log: Log(now: { clock.now }, sink: { _ in }),
            now: { clock.now },
            jitter: { 0 }
        )
        var policy = ConsumptionResponder.Tuning()
        policy.pollMillis = 10
        let settings = try #require(config.apps.first?.consumption)
        let secret = try #require(WebhookSigner.Secret(name: "ASK_SECRET", text: askSecret))
        let (policyValue, senderValue) = (policy, sender)
        let makeResponder: @Sendable () -> ConsumptionResponder = {
            ConsumptionResponder(
                context: context,
                apps: [bundle: settings],
                signers: [bundle: WebhookSigner(secrets: [secret])],
                sender: senderValue,
                transport: CurlTransport(),
                tuning: policyValue
            )
        }
        return Setup(
            directory: directory,
            store: store,
            service: service,
            makeResponder: makeResponder,
            apple: apple,
            appleRequests: appleRequests,
            clock: clock,
            signer: try ca.chain.signer()
        )
    }

    static func answer(_ json: String) -> LoopbackHTTPServer.Action {
        .respond(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: Array(json.utf8))
    }

    // MARK: The team's service answers

    @Test func aGroupMembersRequestIsKeptAssignedAndNeverSent() async throws {
        // Apple refuses consumption information for an ASSIGNED transaction (InvalidAssignedTransactionNotSupportedError).
        let apple = FakeApple()
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), apple: apple)
        defer { s.close() }
        #expect(try s.notify(productType: "Auto-Renewable Subscription", ownership: "ASSIGNED") == 200)
        let job = try #require(try s.job())
        #expect(job.state == .assigned && job.lastError == "assigned_transaction")
        #expect(job.asks == 0 && job.sends == 0)
        // The responder never picks it up: a request of a purchaser's, queued after it, is answered, this one not.
        #expect(try s.notify(uuid: "00000000-0000-4000-8000-00000000c002") == 200)
        try await s.runUntil {
            try s.store.read { tx in try tx.consumptionJobs(state: .sent, limit: 10) }.count == 1
        }
        #expect(apple.sent.count == 1, "only the purchaser's request reached Apple")
        #expect(try await s.store.read { tx in try tx.consumptionJobs(state: .assigned, limit: 10) }.count == 1)
        let counted = s.service.metrics.counter(
            "iapgw_consumption_requests_total",
            ["bundle": Self.bundle, "state": "assigned"]
        )
        #expect(counted == 1)
    }

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

    /// The team's explicit "no consent" is final whatever else its answer holds: the answer is not a failed ask, and
    /// the default — whose consent is the app's own assertion — never replaces it.
    @Test(arguments: [
        // A percentage Apple takes for no auto-renewable subscription.
        (
            #"{"customerConsented": false, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "consumptionPercentage": 5000}"#,
            "Auto-Renewable Subscription"
        ),
        // A percentage out of Apple's range.
        (
            #"{"customerConsented": false, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "consumptionPercentage": 250000}"#,
            "Consumable"
        ),
        // Required members missing, a preference Apple does not know.
        (#"{"customerConsented": false, "refundPreference": "MAYBE"}"#, "Consumable"),
        // A member this build does not know.
        (
            #"{"customerConsented": false, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "note": "asked by phone"}"#,
            "Consumable"
        ),
    ])
    func anExplicitNoConsentIsFinalWhateverElseTheAnswerHolds(_ body: String, _ productType: String) async throws {
        let team = try LoopbackHTTPServer { _ in Self.answer(body) }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer))
        defer { s.close() }
        #expect(try s.notify(productType: productType) == 200)
        s.clock.advance(2_000)  // past ask_for: an answer taken as a failed ask is followed by the default at once
        try await s.run { $0.state != .pending }
        let job = try #require(try s.job())
        #expect(job.state == .noConsent, "\(body): \(job.state) \(job.lastError ?? "")")
        #expect(job.answerSource == .team)
        #expect(job.asks == 1 && job.sends == 0)
        #expect(s.apple.sent.isEmpty, "the default is never sent over the team's no")
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_asks_total",
                ["bundle": Self.bundle, "outcome": "no_consent"]
            ) == 1
        )
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_requests_total",
                ["bundle": Self.bundle, "state": "no_consent"]
            ) == 1
        )
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

    // MARK: What Apple takes for the product

    static let proratedDefault = """
        , "default": { "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false,
          "consumptionPercentage": 25000, "refundPreference": "GRANT_PRORATED" }
        """

    /// Apple takes GRANT_PRORATED for an auto-renewable subscription without a percentage (it prorates by the time
    /// elapsed): the default's preference is sent, its percentage — the other products' — left out.
    @Test(arguments: [
        (
            "Auto-Renewable Subscription",
            #"{"customerConsented":true,"deliveryStatus":"DELIVERED","refundPreference":"GRANT_PRORATED","#
                + #""sampleContentProvided":false}"#
        ),
        (
            "Consumable",
            #"{"consumptionPercentage":25000,"customerConsented":true,"deliveryStatus":"DELIVERED","#
                + #""refundPreference":"GRANT_PRORATED","sampleContentProvided":false}"#
        ),
    ])
    func aProratedDefaultServesEveryProduct(_ productType: String, _ sent: String) async throws {
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.proratedDefault), appleClient: true)
        defer { s.close() }
        #expect(try s.notify(productType: productType) == 200)
        try await s.run { $0.state != .pending }
        let job = try #require(try s.job())
        #expect(job.state == .sent, "\(productType): \(job.state) \(job.lastError ?? "")")
        #expect(job.answerSource == .default)
        #expect(job.refundPreference == "GRANT_PRORATED")
        let requests = try #require(s.appleRequests).requests
        #expect(requests.count == 1)
        #expect(requests.first.map { String(decoding: $0.body, as: UTF8.self) } == sent)
    }

    /// The team's GRANT_PRORATED without a percentage is what Apple takes for a subscription, and sent; for a
    /// consumable Apple would refuse it, so it is no answer (the default follows) — never Apple's refusal.
    @Test(arguments: ["Auto-Renewable Subscription", "Consumable"])
    func aTeamsProratedAnswerIsJudgedForTheProduct(_ productType: String) async throws {
        let team = try LoopbackHTTPServer { _ in
            Self.answer(
                #"{"customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": true, "refundPreference": "GRANT_PRORATED"}"#
            )
        }
        let s = try Self.setup(consumption: Self.consumption(ask: team, extra: Self.defaultAnswer), appleClient: true)
        defer { s.close() }
        #expect(try s.notify(productType: productType) == 200)
        s.clock.advance(2_000)
        try await s.run { $0.state != .pending }
        let job = try #require(try s.job())
        #expect(job.state == .sent, "\(productType): \(job.state) \(job.lastError ?? "")")
        #expect(job.asks == 1)
        let subscription = productType == "Auto-Renewable Subscription"
        #expect(job.answerSource == (subscription ? .team : .default))
        #expect(job.refundPreference == (subscription ? "GRANT_PRORATED" : "DECLINE"))
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_asks_total",
                ["bundle": Self.bundle, "outcome": subscription ? "answered" : "answer_prorated_without_percentage"]
            ) == 1
        )
        #expect(try #require(s.appleRequests).requests.count == 1)
    }

    /// An answer kept on the job that Apple would refuse for its product (kept by an earlier version of the
    /// gateway) is refused by the gateway itself, under a state of its own — never Apple's `rejected` /
    /// `bad_request` — and nothing is sent; counted and listed as the other dead letters.
    @Test func anAnswerTheGatewayRefusesIsNamedAsTheGatewaysRefusal() async throws {
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), appleClient: true)
        defer { s.close() }
        #expect(try s.notify(productType: "Auto-Renewable Subscription") == 200)
        let queued = try #require(try s.job())
        let kept = Array(
            #"{"consumptionPercentage":5000,"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#
                .utf8
        )
        try await s.store.write { tx in
            try tx.settleConsumptionJob(
                ConsumptionSettlement(
                    id: queued.id,
                    state: .pending,
                    asks: 0,
                    sends: 0,
                    nextAttemptAt: 0,
                    answer: kept,
                    answerSource: .default
                ),
                now: 0
            )
        }
        try await s.run { $0.state != .pending }
        let job = try #require(try s.job())
        #expect(job.state == .gatewayRefused, "\(job.state) \(job.lastError ?? "")")
        #expect(job.lastError == "percentage_for_subscription")
        #expect(job.appleStatus == nil && job.sends == 0)
        #expect(try #require(s.appleRequests).requests.isEmpty, "nothing reached Apple")
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_requests_total",
                ["bundle": Self.bundle, "state": "gateway_refused"]
            ) == 1
        )
        #expect(
            s.service.metrics.counter(
                "iapgw_consumption_dead_total",
                ["bundle": Self.bundle, "reason": "percentage_for_subscription"]
            ) == 1
        )
        // `GET /admin/refund-requests?state=gateway_refused`, and the report's counts.
        let listed = try Operations(store: s.store, now: { s.clock.now }).refundRequests(state: .gatewayRefused)
        #expect(listed.arrayValue?.count == 1, "listed under its own state")
        #expect(listed.arrayValue?.first?.objectValue?["state"]?.stringValue == "gateway_refused")
        // The answer kept is the JSON object Apple would take, not its text.
        let answer = try #require(listed.arrayValue?.first?.objectValue?["answer"]?.objectValue)
        #expect(answer["customerConsented"] == .bool(true))
        let counts = try await s.store.read { tx in
            try tx.refundRequestCounts(since: TestCA.signedDate - 1, until: TestCA.signedDate + 1)
        }
        #expect(counts.map(\.state) == [.gatewayRefused])
    }

    /// The App Store Server API client refusing to make the request (Apple never answered: no HTTP status) is the
    /// gateway's refusal too, not Apple's.
    @Test func theClientsOwnRefusalIsNotApples() async throws {
        let fake = FakeApple()
        fake.fail(AppStoreAPIError(.badRequest, "no transaction id to ask for"))
        let s = try Self.setup(consumption: Self.consumption(ask: nil, extra: Self.defaultAnswer), apple: fake)
        defer { s.close() }
        #expect(try s.notify() == 200)
        try await s.run { $0.state != .pending }
        let job = try #require(try s.job())
        #expect(job.state == .gatewayRefused, "\(job.state) \(job.lastError ?? "")")
        #expect(job.lastError == "invalid_request")
        #expect(job.appleStatus == nil)
        #expect(fake.sent.count == 1, "not tried again")
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
                "apps[0].consumption.default.consumptionPercentage"
            ),
            // An explicit "no consent" is named as such, whatever else the default holds.
            (
                #"{ "respond": true, "default": { "customerConsented": false, "deliveryStatus": "LOST" } }"#,
                "apps[0].consumption.default.customerConsented"
            ),
            // GRANT_PRORATED without a percentage: the default serves the app's other products too.
            (
                #"{ "respond": true, "default": { "customerConsented": true, "deliveryStatus": "DELIVERED", "sampleContentProvided": false, "refundPreference": "GRANT_PRORATED" } }"#,
                "apps[0].consumption.default.refundPreference"
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
