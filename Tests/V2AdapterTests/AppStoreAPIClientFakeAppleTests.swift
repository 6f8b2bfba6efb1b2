import AppStoreConnect
import Canonical
import Crypto
import Foundation
import HTTPClient
import Simulator
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing

@testable import V2Adapter

/// Shared by the App Store Server API client tests: the simulator's fake Apple behind a transport (in memory or over
/// loopback HTTP), a client for it with recorded sleeps, and the real V2 verifier trusting the simulator's root.
enum APIFixture {
    /// Base URLs the scripted fake answers for (any host does; these make the environment visible in requests).
    static let production = "https://api.fake-production.example"
    static let sandbox = "https://api.fake-sandbox.example"

    static func httpResponse(_ r: FakeAppleResponse) -> HTTPResponse {
        HTTPResponse(status: r.status, headers: [HTTPHeader("Content-Type", "application/json")], body: r.body)
    }

    /// `FakeApple.handle` behind the HTTP seam, recording every request.
    static func transport(_ apple: FakeApple) -> ScriptedTransport {
        ScriptedTransport { request throws(HTTPClientError) in
            httpResponse(
                apple.handle(FakeAppleRequest(request))
            )
        }
    }

    static func configuration(
        key: PrivateKey,
        keyID: String = SimulatorPKI.apiKeyID,
        production: String = production,
        sandbox: String = sandbox,
        maxAttempts: Int = 4,
        maxPages: Int = 1000
    ) -> AppStoreAPIClient.Configuration {
        AppStoreAPIClient.Configuration(
            productionURL: production,
            sandboxURL: sandbox,
            keyID: keyID,
            issuerID: SimulatorPKI.issuerID,
            bundleID: Sim.bundleID,
            privateKey: key,
            maxAttempts: maxAttempts,
            baseDelay: .seconds(1),
            maxDelay: .seconds(30),
            timeoutMillis: 5_000,
            maxPages: maxPages
        )
    }

    /// The sleeps a client asked for, recorded instead of slept.
    final class Sleeps: Sendable {
        private let recorded = Mutex<[Duration]>([])
        func record(_ d: Duration) { recorded.withLock { $0.append(d) } }
        var all: [Duration] { recorded.withLock { $0 } }
    }

    static func client(
        _ configuration: AppStoreAPIClient.Configuration,
        transport: any HTTPTransport,
        adapter: V2Adapter,
        now: Int64,
        sleeps: Sleeps = Sleeps(),
        jitter: Double = 0.5
    ) -> AppStoreAPIClient {
        AppStoreAPIClient(
            configuration: configuration,
            transport: transport,
            adapter: adapter,
            now: { now },
            sleep: { sleeps.record($0) },
            jitter: { jitter }
        )
    }

    /// The error `body` fails with; an issue is recorded when it succeeds.
    static func error<T>(_ body: () async throws(AppStoreAPIError) -> T) async -> AppStoreAPIError? {
        do {
            _ = try await body()
            Issue.record("expected an AppStoreAPIError")
            return nil
        } catch {
            return error
        }
    }

    /// Header and payload of a compact JWT, decoded without verification.
    static func jwtParts(_ token: String) throws -> (header: [String: Any], payload: [String: Any]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        func object(_ s: Substring) throws -> [String: Any] {
            let bytes = try Base64.decode(Array(s.utf8), alphabet: .url)
            return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        }
        return (try object(parts[0]), try object(parts[1]))
    }

    /// The bearer token of a recorded request.
    static func bearer(_ request: HTTPRequest) throws -> String {
        let value = try #require(request.headers.first { $0.name == "Authorization" }?.value)
        try #require(value.hasPrefix("Bearer "))
        return String(value.dropFirst(7))
    }
}

/// One fake Apple over its own state file with a fixed clock, and a client of it.
struct FakeAppleAPI {
    let pki: SimulatorPKI
    let store: SimStateStore
    let apple: FakeApple
    let transport: ScriptedTransport
    let sleeps = APIFixture.Sleeps()
    let now: Int64
    let client: AppStoreAPIClient

    init(
        pki: SimulatorPKI,
        now: Int64,
        key: PrivateKey? = nil,
        keyID: String = SimulatorPKI.apiKeyID,
        maxAttempts: Int = 4
    ) throws {
        self.pki = pki
        self.now = now
        store = SimStateStore(folder: pki.folder)
        apple = FakeApple(pki: pki, now: { now })
        transport = APIFixture.transport(apple)
        client = APIFixture.client(
            APIFixture.configuration(key: key ?? pki.apiKey, keyID: keyID, maxAttempts: maxAttempts),
            transport: transport,
            adapter: try Sim.adapter(trusting: pki),
            now: now,
            sleeps: sleeps
        )
    }

    func put(_ s: SimSubscription) throws {
        try store.update { $0.subscriptions[s.originalTransactionID] = s }
    }
}

/// The client against the simulator's fake App Store Server API: in memory through a scripted transport, and once
/// over real HTTP with curl.
@Suite struct AppStoreAPIClientFakeAppleTests {
    /// The fake at the end of `name` with its final subscription stored.
    static func withAPI(
        _ name: String = "auto-renew",
        key: PrivateKey? = nil,
        keyID: String = SimulatorPKI.apiKeyID,
        _ body: (FakeAppleAPI, SimSubscription) async throws -> Void
    ) async throws {
        try await Sim.withPKI { pki in
            let plan = try Sim.plan(name, pki: pki)
            let s = try #require(plan.emissions.last).subscription
            let api = try FakeAppleAPI(pki: pki, now: plan.end + 1_000, key: key, keyID: keyID)
            try api.put(s)
            try await body(api, s)
        }
    }

    // MARK: Get All Subscription Statuses

    @Test func statusesAreVerifiedAndMatchTheSubscription() async throws {
        try await Self.withAPI { api, s in
            let answer = try await api.client.subscriptionStatuses(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            #expect(answer.environment == .sandbox)
            #expect(answer.bundleID == Sim.bundleID)
            let item = try #require(answer.items.first)
            #expect(answer.items.count == 1)
            #expect(item.status == 1)
            #expect(item.subscriptionGroupIdentifier == Catalogue.groupID)
            #expect(item.originalTransactionID == s.originalTransactionID)
            #expect(item.transaction.payload.transactionID == s.latest?.transactionID)
            #expect(item.transaction.environment == .sandbox)
            #expect(item.transaction.bundleID == Sim.bundleID)
            #expect(item.transaction.signedDate == api.now)
            let renewal = try #require(item.renewalInfo)
            #expect(renewal.payload.autoRenewStatus == 1)
            #expect(renewal.payload.originalTransactionID == s.originalTransactionID)

            let request = try #require(api.transport.requests.first)
            #expect(api.transport.requests.count == 1)
            #expect(request.method == .get)
            #expect(request.url == APIFixture.sandbox + "/inApps/v1/subscriptions/" + s.originalTransactionID)
            #expect(request.headers.contains(HTTPHeader("Accept", "application/json")))
            #expect(api.sleeps.all.isEmpty)
        }
    }

    /// The snapshot the API path produces at a lifecycle step, against the simulated App Store's own view.
    @Test(arguments: [
        ("initial-buy", 0, 1, Entitlement.State.active),
        ("auto-renew", 2, 1, .active),
        ("billing-grace-recovery", 1, 4, .gracePeriod),
        ("billing-retry-recovery", 1, 3, .billingRetry),
        ("refund", 1, 5, .revoked),
        ("auto-renew-off-then-expiry", 2, 2, .expired),
    ])
    func statusSnapshotsMatchTheEntitlement(name: String, step: Int, status: Int, state: Entitlement.State) async throws
    {
        try await Sim.withPKI { pki in
            let e = try Sim.plan(name, pki: pki).emissions[step]
            let api = try FakeAppleAPI(pki: pki, now: e.at)
            try api.put(e.subscription)
            let s = e.subscription
            let answer = try await api.client.subscriptionStatuses(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            #expect(answer.items.map(\.status) == [status])
            let snapshots = answer.snapshots(observedAt: e.at)
            let snapshot = try #require(snapshots.first)
            #expect(snapshots.count == 1)
            let latest = try #require(s.latest)
            #expect(snapshot.source == .v2API)
            #expect(snapshot.bundleID == Sim.bundleID)
            #expect(snapshot.environment == .sandbox)
            #expect(snapshot.observedAt == e.at)
            #expect(snapshot.originalTransactionID == s.originalTransactionID)
            #expect(snapshot.productID == latest.productID)
            #expect(snapshot.transactionID == latest.transactionID)
            #expect(snapshot.expiresDate == latest.expiresDate)
            #expect(snapshot.revocationDate == latest.revocationDate)
            #expect(snapshot.gracePeriodExpiresDate == s.renewal?.gracePeriodExpiresDate)
            #expect(snapshot.autoRenew == s.renewal?.autoRenew)
            #expect(snapshot.autoRenewProductID == s.renewal?.autoRenewProductID)
            #expect(snapshot.inBillingRetry == s.renewal?.inBillingRetry)
            #expect(snapshot.expirationIntent == s.renewal?.expirationIntent.map(AppleCodes.expirationIntent))
            #expect(snapshot.entitlement == Emitter.entitlement(s, at: e.at))
            #expect(snapshot.entitlement.state == state)
        }
    }

    @Test func voluntaryExpiryCarriesTheExpirationIntent() async throws {
        try await Self.withAPI("auto-renew-off-then-expiry") { api, s in
            let answer = try await api.client.subscriptionStatuses(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            let snapshot = try #require(answer.snapshots(observedAt: api.now).first)
            #expect(s.renewal?.expirationIntent == 1)
            #expect(snapshot.expirationIntent == "customer_cancelled")
            #expect(snapshot.autoRenew == false)
            #expect(snapshot.entitlement.state == .expired)
        }
    }

    @Test func anyTransactionIDOfTheSubscriptionFindsIt() async throws {
        try await Self.withAPI { api, s in
            let answer = try await api.client.subscriptionStatuses(
                transactionID: s.transactions[1].transactionID,
                environment: .sandbox
            )
            #expect(answer.items.first?.originalTransactionID == s.originalTransactionID)
        }
    }

    // MARK: Get Transaction History

    @Test func historyFollowsEveryPage() async throws {
        try await Self.withAPI { api, base in
            let s = try Sim.withTransactions(base, count: 45)
            try api.put(s)
            let history = try await api.client.transactionHistory(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            let expected = s.transactions.sorted {
                ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID)
            }
            #expect(
                history.map(\.payload.transactionID) == expected.map(\.transactionID),
                "every transaction once, oldest first"
            )
            #expect(
                history.allSatisfy {
                    $0.environment == .sandbox && $0.payload.originalTransactionID == s.originalTransactionID
                }
            )
            // 45 transactions in pages of 20: three requests, the revision of each page passed to the next.
            let urls = api.transport.requests.map(\.url)
            let path = APIFixture.sandbox + "/inApps/v2/history/" + s.originalTransactionID
            #expect(urls == [path, path + "?revision=20", path + "?revision=40"])
        }
    }

    @Test func shortHistoryIsOneRequest() async throws {
        try await Self.withAPI { api, s in
            let history = try await api.client.transactionHistory(
                transactionID: s.transactions[2].transactionID,
                environment: .sandbox
            )
            #expect(history.count == 3)
            #expect(api.transport.requests.count == 1)
        }
    }

    // MARK: Get Transaction Info

    @Test func transactionInfoIsVerified() async throws {
        try await Self.withAPI { api, s in
            for t in s.transactions {
                let verified = try await api.client.transactionInfo(
                    transactionID: t.transactionID,
                    environment: .sandbox
                )
                #expect(verified.payload.transactionID == t.transactionID)
                #expect(verified.payload.purchaseDate == t.purchaseDate)
                #expect(verified.payload.expiresDate == t.expiresDate)
                #expect(verified.bundleID == Sim.bundleID)
            }
            #expect(
                api.transport.requests.map(\.url)
                    == s.transactions.map { APIFixture.sandbox + "/inApps/v1/transactions/" + $0.transactionID }
            )
        }
    }

    // MARK: errors from the fake

    @Test func unknownTransactionIsNotFoundWithApplesCode() async throws {
        try await Self.withAPI { api, _ in
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.transactionInfo(transactionID: "2999999999999999", environment: .sandbox)
                }
            )
            #expect(error.code == .notFound)
            #expect(error.appleErrorCode == 4_040_010)
            #expect(error.httpStatus == 404)
            #expect(error.message.contains("Transaction id not found."))
            #expect(api.transport.requests.count == 1, "not found is final")
            let statuses = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.subscriptionStatuses(transactionID: "2999999999999999", environment: .sandbox)
                }
            )
            #expect(statuses.code == .notFound && statuses.appleErrorCode == 4_040_010)
        }
    }

    @Test func anotherKeyIsUnauthorized() async throws {
        let other = try PrivateKey.generateP256()
        try await Self.withAPI(key: other) { api, s in
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.subscriptionStatuses(
                        transactionID: s.originalTransactionID,
                        environment: .sandbox
                    )
                }
            )
            #expect(error.code == .unauthorized)
            #expect(error.httpStatus == 401)
            #expect(error.message.contains("key id, issuer id or private key"))
            #expect(api.transport.requests.count == 1, "401 is never retried")
            #expect(api.sleeps.all.isEmpty)
        }
    }

    @Test func anotherKeyIDIsUnauthorized() async throws {
        try await Self.withAPI(keyID: "OTHERKEY01") { api, s in
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.transactionInfo(transactionID: s.originalTransactionID, environment: .sandbox)
                }
            )
            #expect(error.code == .unauthorized)
        }
    }

    @Test func sandboxDataFromTheProductionURLIsRefused() async throws {
        // The fake signs everything as Sandbox: asked as production, the answer names the wrong environment.
        try await Self.withAPI { api, s in
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.transactionInfo(
                        transactionID: s.originalTransactionID,
                        environment: .production
                    )
                }
            )
            #expect(error.code == .invalidResponse)
            #expect(api.transport.requests.first?.url.hasPrefix(APIFixture.production + "/inApps/") == true)
        }
    }

    @Test func queuedRateLimitsAreRetriedWithGrowingWaits() async throws {
        try await Self.withAPI { api, s in
            try api.store.update { $0.apiFaults = [429, 429, 429] }
            let answer = try await api.client.subscriptionStatuses(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            #expect(answer.items.count == 1)
            #expect(api.transport.requests.count == 4)
            let sleeps = api.sleeps.all
            #expect(
                sleeps == [.milliseconds(750), .milliseconds(1500), .milliseconds(3000)],
                "1 s · 2^n · (0.5 + 0.5 · 0.5)"
            )
            #expect(zip(sleeps, sleeps.dropFirst()).allSatisfy { $0 < $1 })
            #expect(try api.store.read().apiFaults.isEmpty)
        }
    }

    @Test func rateLimitOutlastingTheAttemptsIsRateLimited() async throws {
        try await Self.withAPI { api, s in
            try api.store.update { $0.apiFaults = [429, 429, 429, 429, 429] }
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.transactionInfo(transactionID: s.originalTransactionID, environment: .sandbox)
                }
            )
            #expect(error.code == .rateLimited)
            #expect(error.appleErrorCode == 4_290_000)
            #expect(error.attempts == 4)
            #expect(api.transport.requests.count == 4)
            #expect(try api.store.read().apiFaults == [429])
        }
    }

    @Test func serverErrorsThenHistoryPages() async throws {
        // A fault in the middle of a paginated call costs a retry of that page only.
        try await Self.withAPI { api, base in
            let s = try Sim.withTransactions(base, count: 25)
            try api.put(s)
            try api.store.update { $0.apiFaults = [503] }
            let history = try await api.client.transactionHistory(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            #expect(history.count == 25)
            #expect(api.transport.requests.count == 3)
            #expect(api.sleeps.all.count == 1)
        }
    }

    // MARK: tokens

    @Test func eachRequestCarriesAFreshTokenWithTheRightClaims() async throws {
        try await Sim.withPKI { pki in
            let plan = try Sim.plan("auto-renew", pki: pki)
            let s = try #require(plan.emissions.last).subscription
            let clock = Mutex(plan.end + 1_000)
            let apple = FakeApple(pki: pki, now: { clock.withLock { $0 } })
            try SimStateStore(folder: pki.folder).update { $0.subscriptions[s.originalTransactionID] = s }
            let transport = APIFixture.transport(apple)
            let client = AppStoreAPIClient(
                configuration: APIFixture.configuration(key: pki.apiKey),
                transport: transport,
                adapter: try Sim.adapter(trusting: pki),
                now: { clock.withLock { $0 } },
                sleep: { _ in },
                jitter: { 0 }
            )

            _ = try await client.subscriptionStatuses(transactionID: s.originalTransactionID, environment: .sandbox)
            clock.withLock { $0 += 90_000 }
            _ = try await client.transactionInfo(transactionID: s.originalTransactionID, environment: .sandbox)

            let tokens = try transport.requests.map(APIFixture.bearer)
            #expect(tokens.count == 2 && tokens[0] != tokens[1], "a new token per request")
            for (token, at) in zip(tokens, [plan.end + 1_000, plan.end + 91_000]) {
                let (header, payload) = try APIFixture.jwtParts(token)
                #expect(header["alg"] as? String == "ES256")
                #expect(header["kid"] as? String == SimulatorPKI.apiKeyID)
                #expect(header["typ"] as? String == "JWT")
                #expect(payload["iss"] as? String == SimulatorPKI.issuerID)
                #expect(payload["aud"] as? String == "appstoreconnect-v1")
                #expect(payload["bid"] as? String == Sim.bundleID)
                let iat = try #require((payload["iat"] as? NSNumber)?.int64Value)
                let exp = try #require((payload["exp"] as? NSNumber)?.int64Value)
                #expect(iat == at / 1000)
                #expect(exp > iat && exp - iat <= 1200)
                #expect(exp - iat == 1200)
                // And it verifies with the API key's public half, as Apple checks it.
                let verified = try AppStoreAPIToken.verify(token, publicKey: pki.apiKey.publicKey, now: at / 1000)
                #expect(verified.bundleID == Sim.bundleID)
            }
        }
    }

    @Test func tokenLifetimeIsCappedAtTwentyMinutes() throws {
        let key = try PrivateKey.generateP256()
        let long = AppStoreAPIClient.Configuration(
            keyID: "K",
            issuerID: "I",
            bundleID: "b",
            privateKey: key,
            tokenLifetimeSeconds: 3600
        )
        #expect(long.tokenLifetimeSeconds == 1200)
        let short = AppStoreAPIClient.Configuration(
            keyID: "K",
            issuerID: "I",
            bundleID: "b",
            privateKey: key,
            tokenLifetimeSeconds: 300
        )
        #expect(short.tokenLifetimeSeconds == 300)
        #expect(
            AppStoreAPIClient.Configuration(keyID: "K", issuerID: "I", bundleID: "b", privateKey: key)
                .tokenLifetimeSeconds == 1200
        )
    }

    // MARK: Get Notification History

    /// 45 sent notifications one second apart from t0: even ones DID_RENEW, odd ones SUBSCRIBED/RESUBSCRIBE; every
    /// third about `otid`; every fifth's delivery timed out.
    static func sentNotifications(otid: String) -> [SimSentNotification] {
        (0..<45).map { i in
            var n = SimSentNotification(
                notificationUUID: "uuid-\(i)",
                bundleID: Sim.bundleID,
                signedDate: Sim.t0 + Int64(i) * 1_000,
                notificationType: i % 2 == 0 ? "DID_RENEW" : "SUBSCRIBED",
                subtype: i % 2 == 0 ? nil : "RESUBSCRIBE",
                originalTransactionID: i % 3 == 0 ? otid : nil,
                signedPayload: "payload-\(i)"
            )
            n.sendAttempts = [
                SendAttempt(attemptDate: n.signedDate, sendAttemptResult: i % 5 == 0 ? "TIMED_OUT" : "SUCCESS")
            ]
            return n
        }
    }

    @Test func notificationHistoryPagesOneAtATime() async throws {
        try await Self.withAPI { api, s in
            try api.store.update { $0.notifications = Self.sentNotifications(otid: s.originalTransactionID) }
            let request = NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 100_000)
            let first = try await api.client.notificationHistory(request, environment: .sandbox)
            #expect(first.items.count == 20)
            #expect(first.nextPaginationToken == "20")
            #expect(first.items.first?.signedPayload == "payload-0")
            #expect(
                first.items.first?.sendAttempts == [SendAttempt(attemptDate: Sim.t0, sendAttemptResult: "TIMED_OUT")]
            )
            let second = try await api.client.notificationHistory(
                request,
                environment: .sandbox,
                paginationToken: first.nextPaginationToken
            )
            #expect(second.items.map(\.signedPayload) == (20..<40).map { "payload-\($0)" })
            let third = try await api.client.notificationHistory(
                request,
                environment: .sandbox,
                paginationToken: second.nextPaginationToken
            )
            #expect(third.items.count == 5)
            #expect(third.nextPaginationToken == nil)

            let sent = api.transport.requests
            #expect(sent.map(\.method) == [.post, .post, .post])
            let path = APIFixture.sandbox + "/inApps/v1/notifications/history"
            #expect(sent.map(\.url) == [path, path + "?paginationToken=20", path + "?paginationToken=40"])
            #expect(sent[0].headers.contains(HTTPHeader("Content-Type", "application/json")))
            #expect(
                String(decoding: sent[0].body, as: UTF8.self)
                    == "{\"endDate\":\(Sim.t0 + 100_000),\"startDate\":\(Sim.t0)}",
                "members that are not set are left out"
            )
        }
    }

    @Test func notificationHistoryFollowsAllPagesWithFilters() async throws {
        try await Self.withAPI { api, s in
            try api.store.update { $0.notifications = Self.sentNotifications(otid: s.originalTransactionID) }
            let t0 = Sim.t0
            func payloads(_ r: NotificationHistoryRequest) async throws -> [String] {
                var all: [String] = []
                var token: String?
                repeat {
                    let page = try await api.client.notificationHistory(
                        r,
                        environment: .sandbox,
                        paginationToken: token
                    )
                    all += page.items.map(\.signedPayload)
                    token = page.nextPaginationToken
                } while token != nil
                return all
            }
            #expect(
                try await payloads(NotificationHistoryRequest(startDate: t0, endDate: t0 + 100_000))
                    == (0..<45).map { "payload-\($0)" }
            )
            #expect(
                try await payloads(NotificationHistoryRequest(startDate: t0 + 10_000, endDate: t0 + 20_000))
                    == (10..<20).map { "payload-\($0)" }
            )
            #expect(
                try await payloads(
                    NotificationHistoryRequest(startDate: t0, endDate: t0 + 100_000, notificationType: "DID_RENEW")
                )
                    == stride(from: 0, to: 45, by: 2).map { "payload-\($0)" }
            )
            #expect(
                try await payloads(
                    NotificationHistoryRequest(
                        startDate: t0,
                        endDate: t0 + 10_000,
                        notificationType: "SUBSCRIBED",
                        notificationSubtype: "RESUBSCRIBE"
                    )
                )
                    == [1, 3, 5, 7, 9].map { "payload-\($0)" }
            )
            #expect(
                try await payloads(NotificationHistoryRequest(startDate: t0, endDate: t0 + 100_000, onlyFailures: true))
                    == stride(from: 0, to: 45, by: 5).map { "payload-\($0)" }
            )
            #expect(
                try await payloads(
                    NotificationHistoryRequest(
                        startDate: t0,
                        endDate: t0 + 100_000,
                        transactionID: s.transactions[1].transactionID
                    )
                )
                    == stride(from: 0, to: 45, by: 3).map { "payload-\($0)" }
            )
            #expect(
                try await payloads(NotificationHistoryRequest(startDate: t0 + 100_000, endDate: t0 + 200_000)).isEmpty
            )

            let filtered = try #require(
                api.transport.requests.first { String(decoding: $0.body, as: UTF8.self).contains("RESUBSCRIBE") }
            )
            #expect(
                String(decoding: filtered.body, as: UTF8.self)
                    == "{\"endDate\":\(t0 + 10_000),\"notificationSubtype\":\"RESUBSCRIBE\",\"notificationType\":\"SUBSCRIBED\",\"startDate\":\(t0)}"
            )
        }
    }

    @Test func badNotificationHistoryRequestIsABadRequest() async throws {
        try await Self.withAPI { api, _ in
            let backwards = NotificationHistoryRequest(startDate: Sim.t0 + 10, endDate: Sim.t0)
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.notificationHistory(backwards, environment: .sandbox)
                }
            )
            #expect(error.code == .badRequest)
            #expect(error.appleErrorCode == 4_000_013)
            #expect(api.transport.requests.count == 1)
            let badToken = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.notificationHistory(
                        NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 1),
                        environment: .sandbox,
                        paginationToken: "next"
                    )
                }
            )
            #expect(badToken.code == .badRequest && badToken.appleErrorCode == 4_000_014)
        }
    }

    // MARK: Test notifications

    @Test func testNotificationRequestAndStatus() async throws {
        try await Self.withAPI { api, _ in
            // Apple sends test notifications in V2 only: the app's sandbox notifications are V2.
            try api.apple.appStoreConnect.setVersion(
                .v2,
                bundleID: Sim.bundleID,
                environment: .sandbox,
                immediately: true
            )
            let token = try await api.client.requestTestNotification(environment: .sandbox)
            #expect(!token.isEmpty)
            try api.store.recordTestAttempt(token: token, result: "SUCCESS", at: api.now + 1)
            let status = try await api.client.testNotificationStatus(token: token, environment: .sandbox)
            #expect(status.sendAttempts == [SendAttempt(attemptDate: api.now + 1, sendAttemptResult: "SUCCESS")])
            // The payload comes back raw; the notification pipeline verifies it.
            let n = try Sim.adapter(trusting: api.pki).verifyNotification(
                signedPayload: Array(status.signedPayload.utf8),
                now: api.now
            )
            #expect(n.payload.notificationType == "TEST")
            #expect(n.payload.notificationUUID == token)
            #expect(api.transport.requests.map(\.method) == [.post, .get])
            #expect(
                api.transport.requests.map(\.url) == [
                    APIFixture.sandbox + "/inApps/v1/notifications/test",
                    APIFixture.sandbox + "/inApps/v1/notifications/test/" + token,
                ]
            )
            let missing = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await api.client.testNotificationStatus(
                        token: "00000000-0000-4000-8000-000000000000",
                        environment: .sandbox
                    )
                }
            )
            #expect(missing.code == .notFound && missing.appleErrorCode == 4_040_008)
        }
    }

    // MARK: over real HTTP

    @Test func overLoopbackHTTPWithCurl() async throws {
        try await Self.withAPI { api, base in
            let s = try Sim.withTransactions(base, count: 23)
            try api.put(s)
            try api.store.update { $0.apiFaults = [429] }
            let apple = api.apple
            let server = try LoopbackHTTPServer { r in
                let fake = FakeAppleRequest(method: r.method, target: r.path, headers: r.headers, body: r.body)
                let answer = apple.handle(fake)
                let headers =
                    [HTTPHeader("Content-Type", "application/json")]
                    + (answer.status == 429 ? [HTTPHeader("Retry-After", "2")] : [])
                return .respond(status: answer.status, headers: headers, body: answer.body)
            }
            defer { server.stop() }
            let sleeps = APIFixture.Sleeps()
            let client = APIFixture.client(
                APIFixture.configuration(key: api.pki.apiKey, production: server.url(""), sandbox: server.url("/")),
                transport: CurlTransport(),
                adapter: try Sim.adapter(trusting: api.pki),
                now: api.now,
                sleeps: sleeps
            )

            let statuses = try await client.subscriptionStatuses(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            #expect(statuses.snapshots(observedAt: api.now).first?.entitlement.state == .active)
            #expect(sleeps.all == [.seconds(2)], "Retry-After over the backoff of 0.75 s")
            let history = try await client.transactionHistory(
                transactionID: s.originalTransactionID,
                environment: .sandbox
            )
            #expect(history.count == 23)
            let token = try await client.requestTestNotification(environment: .sandbox)
            let status = try await client.testNotificationStatus(token: token, environment: .sandbox)
            #expect(!status.signedPayload.isEmpty)
            let unknown = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await client.transactionInfo(transactionID: "2999999999999999", environment: .sandbox)
                }
            )
            #expect(unknown.code == .notFound && unknown.appleErrorCode == 4_040_010)

            let paths = server.requests.map(\.path)
            let otid = s.originalTransactionID
            #expect(
                paths == [
                    "/inApps/v1/subscriptions/\(otid)", "/inApps/v1/subscriptions/\(otid)",
                    "/inApps/v2/history/\(otid)",
                    "/inApps/v2/history/\(otid)?revision=20", "/inApps/v1/notifications/test",
                    "/inApps/v1/notifications/test/\(token)",
                    "/inApps/v1/transactions/2999999999999999",
                ]
            )
            #expect(server.requests.allSatisfy { $0.header("Authorization")?.hasPrefix("Bearer ") == true })
            #expect(server.requests.first?.header("Accept") == "application/json")
            #expect(server.requests.allSatisfy { $0.header("User-Agent") == GatewayVersion.userAgent })

            // Another key over the wire: 401, once.
            let intruder = APIFixture.client(
                APIFixture.configuration(
                    key: try PrivateKey.generateP256(),
                    production: server.url(""),
                    sandbox: server.url("")
                ),
                transport: CurlTransport(),
                adapter: try Sim.adapter(trusting: api.pki),
                now: api.now
            )
            let before = server.requests.count
            let refused = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await intruder.transactionInfo(transactionID: otid, environment: .sandbox)
                }
            )
            #expect(refused.code == .unauthorized)
            #expect(server.requests.count == before + 1)
        }
    }
}
