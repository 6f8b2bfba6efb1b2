import Canonical
import Crypto
import Foundation
import HTTPClient
import ReceiptPath
import Receipts
import ServiceKit
import Store
import Synchronization
import TestPKI
import TestSupport
import Testing
import V2Adapter
import WireJSON

@testable import Gateway

/// The verifyReceipt endpoint's rules with stand-ins for the receipt reader and the App Store Server API: statuses,
/// the password, the answer's shape, one fetch per customer at a time, freshness, notifications laid over a fetched
/// history, Apple's 429, and the `apple` and `shadow` modes against a local Apple. The reader itself is tested in
/// ReceiptsTests; the whole path with real receipts and real processes in ReceiptPathEndToEndTests.
@Suite struct ReceiptEndpointTests {
    static let bundle = "com.example.gateway"
    static let secret = GatewayHarness.v1Secret
    static let t = GatewayHarness.t
    static let customer = "2000000900001000"

    /// `receipt-data` for the stand-in reader: `kind|sandbox|authenticated|bundle|lookup id`.
    static func receiptData(
        kind: SubmittedReceipt.Kind = .app,
        sandbox: Bool = true,
        authenticated: Bool = true,
        bundle: String = bundle,
        id: String? = customer
    ) -> String {
        "\(kind.rawValue)|\(sandbox)|\(authenticated)|\(bundle)|\(id ?? "")"
    }

    /// Reads the stand-in `receipt-data`; anything else is not a receipt.
    static let reader: @Sendable ([UInt8]) -> ReceiptReading = { bytes in
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: "|", omittingEmptySubsequences: false)
            .map(String.init)
        guard parts.count == 5, let kind = SubmittedReceipt.Kind(rawValue: parts[0]) else {
            return .notAReceipt(code: "malformed")
        }
        let bundle = parts[3]
        return .receipt(
            SubmittedReceipt(
                kind: kind,
                bundleID: bundle,
                isSandbox: parts[1] == "true",
                authenticated: parts[2] == "true",
                lookupTransactionID: parts[4].isEmpty ? nil : parts[4],
                receiptObject: { time in
                    .object(
                        JSONObject([
                            ("receipt_type", .string(parts[1] == "true" ? "ProductionSandbox" : "Production")),
                            ("bundle_id", .string(bundle)), ("request_date_ms", .string(String(time))),
                        ])
                    )
                }
            )
        )
    }

    /// The App Store Server API as the receipt path asks it: one history per customer, all of it on one page; every
    /// call counted (`calls`: Get Transaction History, `renewalCalls`: Get All Subscription Statuses).
    final class FakeHistory: ReceiptHistorySource, Sendable {
        struct State {
            var histories: [String: CustomerHistory] = [:]
            var calls = 0
            var renewalCalls = 0
            var failure: PathFetchError?
            /// Failures of the next calls to Get Transaction History, one each, before ``failure``.
            var failuresOnce: [PathFetchError] = []
            var holds = false
            /// The budget context each call was made in.
            var contexts: [AppStoreAPICallContext?] = []
        }
        let state = Mutex(State())

        func historyPage(
            bundleID: String,
            environment: AppStoreEnvironment,
            transactionID: String,
            revision: String?
        ) async throws(PathFetchError) -> ReceiptHistoryPage {
            state.withLock {
                $0.calls += 1
                $0.contexts.append(AppStoreAPICallContext.current)
            }
            while state.withLock({ $0.holds }) { try? await Task.sleep(for: .milliseconds(1)) }
            return try state.withLock { s throws(PathFetchError) in
                if !s.failuresOnce.isEmpty { throw s.failuresOnce.removeFirst() }
                if let failure = s.failure { throw failure }
                let h = s.histories[transactionID] ?? CustomerHistory(fetchedAt: 0, transactions: [], renewals: [])
                return ReceiptHistoryPage(transactions: h.transactions, revision: "r\(s.calls)", hasMore: false)
            }
        }

        func renewals(
            bundleID: String,
            environment: AppStoreEnvironment,
            transactionID: String
        ) async throws(PathFetchError) -> [RenewalInfoPayload] {
            try state.withLock { s throws(PathFetchError) in
                s.renewalCalls += 1
                if let failure = s.failure { throw failure }
                return s.histories[transactionID]?.renewals ?? []
            }
        }
        var calls: Int { state.withLock { $0.calls } }
    }

    static func transaction(
        _ id: String,
        otid: String = customer,
        product: String = "com.example.gateway.monthly",
        purchase: Int64,
        expires: Int64?,
        type: String = "Auto-Renewable Subscription",
        signed: Int64 = t
    ) -> TransactionPayload {
        var tx = TransactionPayload()
        (tx.transactionID, tx.originalTransactionID, tx.productID, tx.bundleID) = (id, otid, product, bundle)
        (tx.purchaseDate, tx.originalPurchaseDate, tx.expiresDate, tx.type) = (
            purchase, t - 90 * 86_400_000, expires, type
        )
        (tx.quantity, tx.inAppOwnershipType, tx.signedDate, tx.environment) = (1, "PURCHASED", signed, "Sandbox")
        if expires != nil {
            (tx.webOrderLineItemID, tx.subscriptionGroupIdentifier) = ("3" + id.dropFirst(), "21000001")
        }
        return tx
    }

    /// A customer with two monthly periods, a consumable and a non-consumable; auto-renew on.
    static func history() -> CustomerHistory {
        let day: Int64 = 86_400_000
        var renewal = RenewalInfoPayload()
        (renewal.originalTransactionID, renewal.productID, renewal.autoRenewProductID) = (
            customer, "com.example.gateway.monthly", "com.example.gateway.monthly"
        )
        (renewal.autoRenewStatus, renewal.signedDate) = (1, t)
        return CustomerHistory(
            fetchedAt: t,
            transactions: [
                transaction(customer, purchase: t - 40 * day, expires: t - 10 * day),
                transaction("2000000900001001", purchase: t - 10 * day, expires: t + 20 * day),
                transaction(
                    "2000000900002000",
                    otid: "2000000900002000",
                    product: "com.example.gateway.coins",
                    purchase: t - 5 * day,
                    expires: nil,
                    type: "Consumable"
                ),
                transaction(
                    "2000000900003000",
                    otid: "2000000900003000",
                    product: "com.example.gateway.lifetime",
                    purchase: t - 60 * day,
                    expires: nil,
                    type: "Non-Consumable"
                ),
            ],
            renewals: [renewal]
        )
    }

    /// The service with the stand-ins, `com.example.gateway` answered in `mode`, Apple's verifyReceipt at `apple`.
    final class Rig: Sendable {
        let h: GatewayHarness
        let service: GatewayService
        let source = FakeHistory()
        let clock = AppleSwitcherTests.TestClock(ReceiptEndpointTests.t)

        init(
            mode: ReceiptMode,
            apple: String = "http://127.0.0.1:1",
            maxAgeMillis: Int64 = 3_600_000,
            realReader: Bool = false,
            legacyTransactionReceipts: Bool = false,
            receiptTrust: ReceiptTrust? = nil,
            logs: GatewayServiceTests.LogBox = GatewayServiceTests.LogBox(),
            fetchQueue: Int = ReceiptSettings().fetchQueue,
            backgroundFetches: Int = ReceiptSettings().backgroundFetches,
            shadowConcurrency: Int = ReceiptSettings().shadowConcurrency,
            maxWaitingForApple: Int? = nil
        ) throws {
            h = try GatewayHarness()
            source.state.withLock { $0.histories[ReceiptEndpointTests.customer] = ReceiptEndpointTests.history() }
            var config = h.config
            let i = try #require(config.apps.firstIndex { $0.bundleID == ReceiptEndpointTests.bundle })
            config.apps[i].receipts = mode
            config.apps[i].legacyTransactionReceipts = legacyTransactionReceipts
            (config.verifyReceiptProductionURL, config.verifyReceiptSandboxURL) = (
                apple + "/verifyReceipt", apple + "/sandbox/verifyReceipt"
            )
            config.receiptSettings.historyMaxAgeMillis = maxAgeMillis
            (config.receiptSettings.fetchQueue, config.receiptSettings.backgroundFetches) = (
                fetchQueue, backgroundFetches
            )
            config.receiptSettings.shadowConcurrency = shadowConcurrency
            config.receiptSettings.maxWaitingForAppleSetting = maxWaitingForApple
            if realReader || receiptTrust != nil {
                // RevenueCat's sample app, sandbox: the app of a real Apple-signed receipt.
                var sample = config.apps[i]
                (sample.bundleID, sample.environments, sample.appAppleID) = (
                    "com.revenuecat.sampleapp", [.sandbox], nil
                )
                config.apps.append(sample)
                // The app of Apple's Xcode (StoreKit testing) receipts, both environments.
                (sample.bundleID, sample.environments, sample.appAppleID) = (
                    "com.example.naturelab.backyardbirds.example", [.sandbox, .production], 1
                )
                config.apps.append(sample)
                // The app of the real iOS 6 transaction receipt of 2015 (mbaasy's demo), sandbox.
                (sample.bundleID, sample.environments, sample.appAppleID) = ("com.mbaasy.ios.demo", [.sandbox], nil)
                config.apps.append(sample)
            }
            var d = GatewayService.Dependencies(
                environment: ["APP_SECRET": GatewayHarness.v1Secret],
                transport: CurlTransport(),
                now: { [clock] in clock.now },
                jitter: { 0 },
                logSink: { line in logs.append(line) }
            )
            d.store = h.store
            d.v2PathSource = GatewayHarness.NoV2Path()
            d.trustAnchors = try TrustAnchors(appleRoots: [TrustAnchors.appleRootCAG3, try TestPKI.der("root")])
            d.receiptReader =
                receiptTrust.map { ReceiptReaderLoader.reader(trust: $0) }
                ?? (realReader ? nil : ReceiptEndpointTests.reader)
            d.receiptHistorySource = source
            service = try GatewayService(config: config, dependencies: d)
            try service.seedAuthority()
        }

        func ask(
            _ data: String = ReceiptEndpointTests.receiptData(),
            password: String? = ReceiptEndpointTests.secret,
            exclude: Bool = false,
            sandboxURL: Bool = true
        ) async throws -> JSONObject {
            var w = JSONObjectWriter()
            w.string("receipt-data", data)
            w.string("password", password)
            if exclude { w.bool("exclude-old-transactions", true) }
            let answer = await service.receiptEndpoint.handle(w.finish(), sandboxURL: sandboxURL)
            return try #require(try JSONParser.parse(answer).objectValue)
        }

        func advance(_ millis: Int64) { clock.advance(millis) }
        func close() { h.close() }
    }

    static func ids(_ answer: JSONObject) -> [String] {
        (answer["latest_receipt_info"]?.arrayValue ?? []).compactMap { $0.objectValue?["transaction_id"]?.stringValue }
    }

    @Test func anAPIAnswerIsApplesShapeFromTheCustomersHistory() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        let answer = try await rig.ask()
        #expect(
            answer.keys == [
                "status", "environment", "receipt", "latest_receipt_info", "latest_receipt", "pending_renewal_info",
            ]
        )
        #expect(answer["status"] == .number("0") && answer["environment"] == .string("Sandbox"))
        #expect(answer["receipt"]?.objectValue?["bundle_id"] == .string(Self.bundle))
        #expect(answer["latest_receipt"] == .string(Self.receiptData()), "the receipt sent, echoed")
        // Newest purchase first; the consumable left out, the non-consumable kept.
        #expect(Self.ids(answer) == ["2000000900001001", Self.customer, "2000000900003000"])
        let newest = try #require(answer["latest_receipt_info"]?.arrayValue?.first?.objectValue)
        #expect(newest["expires_date_ms"] == .string(String(Self.t + 20 * 86_400_000)))
        #expect(newest["is_trial_period"] == .string("false") && newest["quantity"] == .string("1"))
        #expect(newest.keys.allSatisfy { newest[$0]?.stringValue != nil }, "every value a string, as Apple's")
        let renewal = try #require(answer["pending_renewal_info"]?.arrayValue)
        #expect(renewal.count == 1)
        #expect(renewal.first?.objectValue?["auto_renew_status"] == .string("1"))
        #expect(renewal.first?.objectValue?["original_transaction_id"] == .string(Self.customer))
        // exclude-old-transactions: each subscription's newest alone.
        let newestOnly = try await rig.ask(exclude: true)
        #expect(Self.ids(newestOnly) == ["2000000900001001", "2000000900003000"])
        #expect(rig.source.calls == 1, "the second answer came from the store")
    }

    @Test func statusesAreApples() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        func status(_ answer: JSONObject) -> String? {
            answer["status"].map { String(decoding: $0.canonicalBytes(), as: UTF8.self) }
        }
        #expect(status(try await rig.ask(password: "not-the-secret")) == "21004")
        #expect(status(try await rig.ask(sandboxURL: false)) == "21007", "a sandbox receipt on the production URL")
        #expect(status(try await rig.ask(Self.receiptData(sandbox: false))) == "21008")
        #expect(status(try await rig.ask(Self.receiptData(authenticated: false))) == "21003")
        #expect(status(try await rig.ask(Self.receiptData(kind: .xcode))) == "21003")
        #expect(status(try await rig.ask(Self.receiptData(kind: .transaction))) == "21003", "not allowed for the app")
        #expect(status(try await rig.ask(Self.receiptData(bundle: "com.example.other"))) == "21010")
        #expect(status(try await rig.ask("garbage")) == "21002")
        let unreadable = await rig.service.receiptEndpoint.handle(Array("{".utf8), sandboxURL: true)
        #expect(unreadable == Array(#"{"status":21000}"#.utf8))
        // Without the password: the receipt alone, as Apple answered.
        let bare = try await rig.ask(password: nil)
        #expect(bare.keys == ["status", "environment", "receipt"])
        #expect(rig.source.calls == 0, "none of these needed a history")
        // A receipt without purchases: no lookup, an empty list.
        let empty = try await rig.ask(Self.receiptData(id: nil))
        #expect(empty["latest_receipt_info"] == .array([]) && rig.source.calls == 0)
    }

    @Test func concurrentRequestsForOneCustomerMakeOneCall() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        rig.source.state.withLock { $0.holds = true }
        let answers = Task {
            try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<20 { group.addTask { Self.ids(try await rig.ask()) } }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
        }
        await eventually("the first request is asking Apple") { rig.source.calls == 1 }
        rig.source.state.withLock { $0.holds = false }
        let all = try await answers.value
        #expect(all.count == 20 && Set(all).count == 1 && all.first?.count == 3)
        #expect(rig.source.calls == 1)
    }

    @Test func aFreshHistoryIsNotAskedAgainAndAStaleOneIs() async throws {
        let rig = try Rig(mode: .api, maxAgeMillis: 600_000)
        defer { rig.close() }
        _ = try await rig.ask()
        rig.advance(9 * 60_000)
        _ = try await rig.ask()
        #expect(rig.source.calls == 1)
        rig.advance(2 * 60_000)
        // Past the maximum age the stored history answers at once and is refreshed behind the answer.
        #expect(Self.ids(try await rig.ask()).count == 3)
        await eventually("the stale history is refreshed behind its answer") {
            rig.source.calls == 2 && rig.service.receiptEndpoint.histories?.running == 0
        }
        _ = try await rig.ask()
        #expect(rig.source.calls == 2, "the refreshed history is fresh again")
    }

    @Test func aNotificationJournaledAfterTheFetchAnswersWithoutAskingApple() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        _ = try await rig.ask()
        // A renewal arrives as a V2 notification: its event, stored after the fetch, is laid over the history.
        rig.advance(1_000)
        var renewal = CanonicalEvent(
            id: "renewal-after-fetch",
            source: .v2,
            kind: .renewal,
            reason: .auto,
            rawType: "DID_RENEW",
            eventDate: Self.t + 1_000,
            eventDateSource: .signedDate,
            verified: true
        )
        (renewal.bundleID, renewal.environment, renewal.productType) = (Self.bundle, .sandbox, .autoRenewable)
        renewal.apply(Self.transaction("2000000900001002", purchase: Self.t + 900, expires: Self.t + 30 * 86_400_000))
        (renewal.autoRenew, renewal.autoRenewProductID) = (false, "com.example.gateway.monthly")
        renewal.computeEntitlement()
        let event = renewal
        let router = rig.service.router
        _ = try await rig.h.store.write { tx in
            try tx.storeEvents([event], journalID: nil, routing: router.routing, now: Self.t + 1_000, authority: .v2)
        }
        let answer = try await rig.ask()
        #expect(Self.ids(answer).first == "2000000900001002")
        #expect(answer["pending_renewal_info"]?.arrayValue?.first?.objectValue?["auto_renew_status"] == .string("0"))
        #expect(rig.source.calls == 1)
    }

    @Test func applesRateLimitIsARetryableStatusAndPausesTheApp() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        rig.source.state.withLock {
            $0.failure = PathFetchError(code: "rate_limited", message: "429", retryable: true, retryAfterMillis: 60_000)
        }
        let answer = try await rig.ask()
        #expect(answer["status"] == .number("21005") && answer["is-retryable"] == .bool(true))
        // Within Apple's Retry-After nothing is asked, and nothing was stored as if it were an answer.
        rig.advance(30_000)
        _ = try await rig.ask()
        #expect(rig.source.calls == 1)
        let key = ReceiptHistoryKey(bundleID: Self.bundle, environment: .sandbox, customer: Self.customer)
        let stored = try await rig.h.store.read { tx in try tx.receiptHistory(key) }
        #expect(stored?.json == nil && stored?.claimedBy == nil)
        // After it, Apple answers again.
        rig.source.state.withLock { $0.failure = nil }
        rig.advance(31_000)
        #expect(try await rig.ask()["status"] == .number("0"))
        #expect(rig.source.calls == 2)
    }

    /// The budget of calls to Apple (docs/operations.md, "Apple's rate limits"): the request's fetch asks first, within
    /// the request's time; out of turns, the request is answered 21005, retryable, as for Apple's 429.
    @Test func aRequestsFetchAsksFirstInTheBudgetAndItsExhaustionIsARetryableStatus() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        rig.source.state.withLock {
            $0.failure = PathFetchError(code: "budget_exhausted", message: "no turn", retryable: true)
        }
        let asked = rig.clock.now
        let answer = try await rig.ask()
        #expect(answer["status"] == .number("21005") && answer["is-retryable"] == .bool(true))
        let context = try #require(rig.source.state.withLock { $0.contexts.first } ?? nil)
        #expect(context.priority == .request)
        #expect(context.deadline > asked && context.deadline <= asked + ReceiptSettings().fetchTimeoutMillis)
        #expect(
            rig.service.metrics.render().contains(#"iapgw_receipt_history_total{result="budget_exhausted"} 1"#)
        )
    }

    @Test func anotherInstancesFetchIsWaitedForNotRepeated() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        let key = ReceiptHistoryKey(bundleID: Self.bundle, environment: .sandbox, customer: Self.customer)
        // Another instance claimed this customer's fetch.
        let claimed = try await rig.h.store.write { tx in
            try tx.claimReceiptHistory(key, owner: "other", until: .max, now: Self.t, freshSince: 0)
        }
        #expect(claimed)
        let answer = Task { try await rig.ask() }
        let json = Self.history().encoded()
        try await Task.sleep(for: .milliseconds(50))
        _ = try await rig.h.store.write { tx in
            try tx.settleReceiptHistory(key, json: json, fetchedAt: Self.t, owner: "other")
        }
        #expect(Self.ids(try await answer.value).count == 3)
        #expect(rig.source.calls == 0)
    }

    /// A customer with a thousand transactions (a history far over the store's cap for the gateway's own JSON) is
    /// kept like any other: the second answer needs no call.
    @Test func aLongHistoryIsKeptToo() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        var long = Self.history()
        let day: Int64 = 86_400_000
        for k in 0..<1_000 {
            long.transactions.append(
                Self.transaction(
                    String(2_000_000_900_100_000 + k),
                    otid: String(2_000_000_900_100_000 + k),
                    product: "com.example.gateway.lifetime\(k)",
                    purchase: Self.t - Int64(k) * day,
                    expires: nil,
                    type: "Non-Consumable"
                )
            )
        }
        #expect(long.encoded().count > 262_144)
        let history = long
        rig.source.state.withLock { $0.histories[Self.customer] = history }
        #expect(Self.ids(try await rig.ask()).count == 1_003)
        rig.advance(1_000)
        #expect(Self.ids(try await rig.ask()).count == 1_003)
        #expect(rig.source.calls == 1)
    }

    /// A history is decoded once and kept; when another instance stores a newer fetch of the customer, that one answers.
    @Test func aHistoryAnotherInstanceFetchedAgainIsTheOneAnswered() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        #expect(Self.ids(try await rig.ask()).count == 3)
        #expect(Self.ids(try await rig.ask()).count == 3)
        let key = ReceiptHistoryKey(bundleID: Self.bundle, environment: .sandbox, customer: Self.customer)
        var newer = Self.history()
        newer.fetchedAt = Self.t + 1_000
        newer.transactions.append(
            Self.transaction("2000000900001002", purchase: Self.t + 500, expires: Self.t + 30 * 86_400_000)
        )
        let json = newer.encoded()
        _ = try await rig.h.store.write { tx in
            _ = try tx.claimReceiptHistory(key, owner: "other", until: .max, now: Self.t + 1_000, freshSince: 0)
            try tx.settleReceiptHistory(key, json: json, fetchedAt: Self.t + 1_000, owner: "other")
        }
        rig.advance(2_000)
        let answer = try await rig.ask()
        #expect(Self.ids(answer).first == "2000000900001002")
        #expect(Self.ids(answer).count == 4)
        #expect(rig.source.calls == 1)
    }

    /// Apple's verifyReceipt answer for the stand-in customer: what the gateway's own answer says, or with `expires`
    /// moved (a disagreement).
    static func applesAnswer(shiftingExpiryBy shift: Int64 = 0) async throws -> [UInt8] {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        let ours = try await rig.ask()
        guard shift != 0 else { return JSONValue.object(ours).text() }
        var items = ours["latest_receipt_info"]?.arrayValue ?? []
        if case .object(let first)? = items.first {
            let moved = String((Int64(first["expires_date_ms"]?.stringValue ?? "0") ?? 0) + shift)
            items[0] = .object(
                JSONObject(first.members.map { $0.key == "expires_date_ms" ? ($0.key, .string(moved)) : $0 })
            )
        }
        return JSONValue.object(
            JSONObject(ours.members.map { $0.key == "latest_receipt_info" ? ($0.key, .array(items)) : $0 })
        )
        .text()
    }

    @Test func appleModeIsATransparentProxy() async throws {
        let reply = Array(#"{"status":0,"environment":"Sandbox","receipt":{"from":"apple"}}"#.utf8)
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: reply) }
        let rig = try Rig(mode: .apple, apple: String(apple.url("/").dropLast()))
        defer { rig.close() }
        var w = JSONObjectWriter()
        w.string("receipt-data", Self.receiptData())
        w.string("password", Self.secret)
        let body = w.finish()
        let answer = await rig.service.receiptEndpoint.handle(body, sandboxURL: true)
        #expect(String(decoding: answer, as: UTF8.self) == String(decoding: reply, as: UTF8.self), "Apple's bytes")
        #expect(apple.requests.map(\.path) == ["/sandbox/verifyReceipt"])
        #expect(apple.requests.first.map { $0.body == body } == true, "the request's bytes, unchanged")
        #expect(rig.source.calls == 0)
        // Apple unreachable: a retryable status, never an invented answer.
        let down = try Rig(mode: .apple, apple: "http://127.0.0.1:1")
        defer { down.close() }
        #expect(try await down.ask()["is-retryable"] == .bool(true))
    }

    @Test(arguments: [0, 86_400_000] as [Int64])
    func shadowModeAnswersWithApplesAndRecordsTheComparison(_ shift: Int64) async throws {
        let reply = try await Self.applesAnswer(shiftingExpiryBy: shift)
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: reply) }
        let rig = try Rig(mode: .shadow, apple: String(apple.url("/").dropLast()))
        defer { rig.close() }
        let answer = try await rig.ask()
        #expect(JSONValue.object(answer) == (try JSONParser.parse(reply)), "Apple's answer is the one returned")
        await rig.service.receiptEndpoint.waitForShadows()
        let rows = try await rig.h.store.read { tx in
            try tx.receiptLedger(bundleID: Self.bundle, environment: .sandbox, from: 0, to: .max)
        }
        #expect(rows.count == 2, "one row per subscription in the answers")
        let subscription = try #require(rows.first { $0.subscription.originalTransactionID == Self.customer })
        if shift == 0 {
            #expect(rows.allSatisfy { $0.outcome == .agree })
        } else {
            #expect(subscription.outcome == .disagree && subscription.fields == ["expires_date"])
            #expect(subscription.apple?.expiresDate == (subscription.api?.expiresDate ?? 0) + shift)
        }
    }

    @Test func overTheListenersBodyLimitAReceiptIsAnsweredLikeApple() async throws {
        // On the real listener: a 2 MiB body to verifyReceipt gets verifyReceipt's own answer, HTTP 200 and 21002,
        // where every other path gets 413.
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try GatewayServiceTests.start(receiver: receiver) { _, d in d.receiptReader = Self.reader }
        let big =
            Array(#"{"receipt-data":""#.utf8) + [UInt8](repeating: UInt8(ascii: "M"), count: 2 << 20)
            + Array(#""}"#.utf8)
        for path in ["/verifyReceipt", "/sandbox/verifyReceipt"] {
            let answer = try await GatewayServiceTests.post(g.url(path), big)
            #expect(answer.status == 200, "\(path)")
            #expect(String(decoding: answer.body, as: UTF8.self) == #"{"status":21002}"#, "\(path)")
        }
        #expect(try await GatewayServiceTests.post(g.url("/notifications"), big).status == 413)
        // Under the limit, the endpoint itself answers.
        var w = JSONObjectWriter()
        w.string("receipt-data", Self.receiptData(bundle: "com.example.unknown"))
        let small = try await GatewayServiceTests.post(g.url("/verifyReceipt"), w.finish())
        #expect(small.status == 200 && String(decoding: small.body, as: UTF8.self) == #"{"status":21010}"#)
        await g.service.shutdown()
    }

    // MARK: A real receipt, read by the real reader

    /// The service answering RevenueCat's real 2020 sandbox receipt (its app configured, `api`), its history as the
    /// App Store Server API would give it: the transactions and renewal Apple's own verifyReceipt answer lists.
    static func realReceiptRig() throws -> (Rig, apple: JSONObject) {
        let apple = try #require(
            try JSONParser.parse(Fixtures.bytes("receipts/revenuecat-receiptsample1-sandbox-2020.verifyreceipt.json"))
                .objectValue
        )
        let rig = try Rig(mode: .api, realReader: true)
        let signed: Int64 = 1_595_440_486_402  // Apple's request_date
        var history = CustomerHistory(fetchedAt: signed, transactions: [], renewals: [])
        for case .object(let t) in apple["latest_receipt_info"]?.arrayValue ?? [] {
            func ms(_ key: String) -> Int64? { t[key]?.stringValue.flatMap { Int64($0) } }
            var tx = TransactionPayload()
            (tx.transactionID, tx.originalTransactionID, tx.productID) = (
                t["transaction_id"]?.stringValue, t["original_transaction_id"]?.stringValue,
                t["product_id"]?.stringValue
            )
            (tx.purchaseDate, tx.originalPurchaseDate, tx.expiresDate) = (
                ms("purchase_date_ms"), ms("original_purchase_date_ms"), ms("expires_date_ms")
            )
            (tx.webOrderLineItemID, tx.subscriptionGroupIdentifier) = (
                t["web_order_line_item_id"]?.stringValue, t["subscription_group_identifier"]?.stringValue
            )
            (tx.quantity, tx.type, tx.bundleID, tx.signedDate) = (
                1, "Auto-Renewable Subscription", "com.revenuecat.sampleapp", signed
            )
            if t["is_trial_period"] == .string("true") { (tx.offerType, tx.offerDiscountType) = (1, "FREE_TRIAL") }
            history.transactions.append(tx)
        }
        for case .object(let r) in apple["pending_renewal_info"]?.arrayValue ?? [] {
            var ri = RenewalInfoPayload()
            (ri.originalTransactionID, ri.productID, ri.autoRenewProductID) = (
                r["original_transaction_id"]?.stringValue, r["product_id"]?.stringValue,
                r["auto_renew_product_id"]?.stringValue
            )
            (ri.autoRenewStatus, ri.signedDate) = (r["auto_renew_status"] == .string("1") ? 1 : 0, signed)
            history.renewals.append(ri)
        }
        let customer = "1000000692878476"
        rig.source.state.withLock { $0.histories = [customer: history] }
        rig.clock.advance(signed - rig.clock.now)
        return (rig, apple)
    }

    @Test func aRealReceiptIsAnsweredAsApplesOwnVerifyReceiptAnsweredIt() async throws {
        let (rig, apple) = try Self.realReceiptRig()
        defer { rig.close() }
        let data = String(
            decoding: try Fixtures.bytes("receipts/revenuecat-receiptsample1-sandbox-2020.b64"),
            as: UTF8.self
        )
        let answer = try await rig.ask(data)
        #expect(answer["status"] == .number("0") && answer["environment"] == apple["environment"])
        #expect(answer["receipt"] == apple["receipt"], "the receipt object, request date included, key by key")
        // latest_receipt_info: every entry Apple gave, key by key and value by value (the order is the gateway's own).
        func entries(_ o: JSONObject, _ key: String) -> Set<JSONValue> {
            Set(
                (o[key]?.arrayValue ?? []).map { v in
                    .object(JSONObject((v.objectValue?.members ?? []).sorted { $0.key < $1.key }))
                }
            )
        }
        #expect(entries(answer, "latest_receipt_info") == entries(apple, "latest_receipt_info"))
        #expect(entries(answer, "pending_renewal_info") == entries(apple, "pending_renewal_info"))
        #expect(answer["latest_receipt"] == .string(data), "the receipt sent, echoed")
        // The same receipt on the production URL: 21007, as Apple answers a sandbox receipt there.
        #expect(try await rig.ask(data, sandboxURL: false)["status"] == .number("21007"))
    }

    @Test(arguments: [
        ("apple-xcode-app-receipt-with-transaction.b64", "21003"),
        ("revenuecat-legacy-transaction-receipt-sandbox-2015.b64", "21003"),  // its app does not take the format
        ("jackywu-legacy-transaction-receipt-production-2019.b64", "21010"),
        ("tpinappreceipt-receipt-production-2024.b64", "21010"),
    ])
    func realReceiptsOfOtherKindsAndAppsGetApplesStatuses(_ name: String, _ status: String) async throws {
        let (rig, _) = try Self.realReceiptRig()
        defer { rig.close() }
        let data = String(decoding: try Fixtures.bytes("receipts/" + name), as: UTF8.self)
        let answer = try await rig.ask(data)
        #expect(String(decoding: (answer["status"] ?? .null).canonicalBytes(), as: UTF8.self) == status, "\(name)")
    }

    // MARK: iOS 6 transaction receipts, read by the real reader

    /// An iOS 6 transaction receipt's property-list text (Apple's layout) around `purchaseInfo` (its own text), with
    /// `signature` (base64) when given: `receipt-data` as an iOS 6 app sent it.
    static func transactionReceiptData(_ purchaseInfo: String, signature: String? = nil) -> String {
        func base64(_ s: String) -> String { Data(s.utf8).base64EncodedString() }
        var lines = ["{"]
        if let signature { lines.append("\t\"signature\" = \"\(signature)\";") }
        lines.append("\t\"purchase-info\" = \"\(base64(purchaseInfo))\";")
        lines += ["\t\"environment\" = \"Sandbox\";", "\t\"pod\" = \"100\";", "\t\"signing-status\" = \"0\";", "}"]
        return base64(lines.joined(separator: "\n"))
    }

    /// A `purchase-info` naming the rig's customer: what anyone can write.
    static let madeUpPurchaseInfo = """
        {
        \t"original-transaction-id" = "\(customer)";
        \t"transaction-id" = "2000000900001001";
        \t"product-id" = "com.example.gateway.monthly";
        \t"bid" = "com.example.gateway";
        \t"purchase-date-ms" = "1447821281000";
        }
        """

    /// A transaction receipt anyone could write for a real customer's transaction id — unsigned, or with the
    /// signature of a real Apple receipt spliced on — is not authenticated: 21003, and the customer's history is not
    /// fetched, where the app takes the format.
    @Test func aMadeUpTransactionReceiptNamingARealCustomerIs21003() async throws {
        let rig = try Rig(mode: .api, realReader: true, legacyTransactionReceipts: true)
        defer { rig.close() }
        let real = try #require(
            Data(
                base64Encoded: Data(
                    try Fixtures.bytes("receipts/revenuecat-legacy-transaction-receipt-sandbox-2015.b64")
                )
            )
        )
        let applesSignature = try #require(OldStylePlist.string(try OldStylePlist.parse(Array(real)), "signature"))
        let inputs: [(String, String)] = [
            ("unsigned", Self.transactionReceiptData(Self.madeUpPurchaseInfo)),
            (
                "Apple's signature of another receipt",
                Self.transactionReceiptData(Self.madeUpPurchaseInfo, signature: applesSignature)
            ),
        ]
        for (name, data) in inputs {
            let answer = try await rig.ask(data)
            #expect(answer["status"] == .number("21003"), "\(name)")
            #expect(answer["latest_receipt_info"] == nil, "\(name)")
        }
        #expect(rig.source.calls == 0, "no history fetched for a receipt that is not Apple's")
    }

    /// A sandbox test chain for version-2 transaction receipts (Apple iTunes Store CA's profile), trusted as
    /// `trust.extra_receipt_roots` trusts a root: for sandbox receipts only.
    static let iTunesTestChain: GeneratedReceiptPKI = {
        do {
            return try GeneratedReceiptPKI.generate(
                notBefore: 1_577_836_800,
                notAfter: 2_208_988_800,
                names: .test("iap-gateway Endpoint iTunes"),
                profile: .iTunesStore
            )
        } catch { fatalError("test PKI: \(error)") }
    }()

    /// A transaction receipt naming the rig's customer, signed by ``iTunesTestChain``.
    static func signedTransactionReceiptData(environment: String? = "Sandbox") throws -> String {
        let fields: [(String, String)] = [
            ("original-transaction-id", customer), ("transaction-id", "2000000900001001"),
            ("product-id", "com.example.gateway.monthly"), ("bid", "com.example.gateway"),
            ("purchase-date-ms", String(t - 10 * 86_400_000)), ("expires-date", String(t + 20 * 86_400_000)),
        ]
        let text = try ReceiptBuilder.transactionReceipt(
            fields.map { TransactionReceipt.PurchaseInfoField(key: $0.0, value: $0.1) },
            environment: environment,
            pki: iTunesTestChain
        )
        return ReceiptBuilder.base64(text)
    }

    static let withTestChain = ReceiptTrust(
        extraSandboxRoots: [iTunesTestChain.root.der],
        extraIntermediates: [iTunesTestChain.intermediate.der]
    )

    @Test func aSignedTransactionReceiptIsAnsweredFromTheCustomersHistory() async throws {
        let rig = try Rig(mode: .api, legacyTransactionReceipts: true, receiptTrust: Self.withTestChain)
        defer { rig.close() }
        let data = try Self.signedTransactionReceiptData()
        let answer = try await rig.ask(data)
        #expect(answer["status"] == .number("0") && answer["environment"] == .string("Sandbox"))
        #expect(Self.ids(answer) == ["2000000900001001", Self.customer, "2000000900003000"])
        // verifyReceipt's iOS 6 `receipt`: the purchase-info with `_` for `-`.
        let receipt = try #require(answer["receipt"]?.objectValue)
        #expect(receipt["original_transaction_id"] == .string(Self.customer) && receipt["bid"] == .string(Self.bundle))
        #expect(answer["latest_receipt"] == .string(data), "the receipt sent, echoed")
        #expect(rig.source.calls == 1)
        // The same receipt where the app does not take the format, and a production one under a test chain: 21003.
        let off = try Rig(mode: .api, receiptTrust: Self.withTestChain)
        defer { off.close() }
        #expect(try await off.ask(data)["status"] == .number("21003"))
        let production = try Self.signedTransactionReceiptData(environment: nil)
        #expect(try await rig.ask(production, sandboxURL: false)["status"] == .number("21003"))
        #expect(rig.source.calls == 1 && off.source.calls == 0)
    }

    @Test(arguments: [true, false])
    func theRealTransactionReceiptOf2015IsAnsweredWhereItsAppTakesTheFormat(_ legacy: Bool) async throws {
        let rig = try Rig(mode: .api, realReader: true, legacyTransactionReceipts: legacy)
        defer { rig.close() }
        let i = try #require(rig.service.config.apps.firstIndex { $0.bundleID == "com.mbaasy.ios.demo" })
        #expect(rig.service.config.apps[i].legacyTransactionReceipts == legacy)
        var tx = Self.transaction(
            "1000000181298734",
            otid: "1000000180636226",
            product: "yearly",
            purchase: 1_447_821_281_000,
            expires: 1_448_346_881_000
        )
        tx.bundleID = "com.mbaasy.ios.demo"
        rig.source.state.withLock {
            $0.histories["1000000180636226"] = CustomerHistory(fetchedAt: 0, transactions: [tx], renewals: [])
        }
        let data = String(
            decoding: try Fixtures.bytes("receipts/revenuecat-legacy-transaction-receipt-sandbox-2015.b64"),
            as: UTF8.self
        )
        let answer = try await rig.ask(data)
        if legacy {
            #expect(answer["status"] == .number("0"))
            #expect(Self.ids(answer) == ["1000000181298734"])
            #expect(answer["receipt"]?.objectValue?["transaction_id"] == .string("1000000181298734"))
            #expect(rig.source.calls == 1)
        } else {
            #expect(answer["status"] == .number("21003") && rig.source.calls == 0)
        }
    }

    /// What is no receipt, through the real reader: Apple's 21002, nothing asked of Apple, nothing kept.
    @Test func aReceiptNotAuthenticatedIsAnswered21003AndTheLogSaysWhyOnce() async throws {
        // A receipt signed by a sandbox test chain whose root the config does not name: never forwarded to Apple in
        // shadow mode, answered 21003 — and the log says what to configure, once.
        let logs = GatewayServiceTests.LogBox()
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: Array(#"{"status":0}"#.utf8)) }
        let rig = try Rig(mode: .shadow, apple: String(apple.url("/").dropLast()), realReader: true, logs: logs)
        defer { rig.close() }
        let pki = try GeneratedReceiptPKI.generate(notBefore: Self.t / 1000 - 86_400, notAfter: Self.t / 1000 + 86_400)
        let receipt = AppReceipt(
            receiptType: "ProductionSandbox",
            bundleID: Self.bundle,
            applicationVersion: "1",
            originalApplicationVersion: "1.0",
            appItemID: 0,
            creationDate: Self.t,
            originalPurchaseDate: Self.t - 86_400_000,
            inApp: []
        )
        let data = ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: pki))
        for _ in 0..<3 {
            #expect(try await rig.ask(data)["status"] == .number("21003"))
        }
        #expect(apple.requests.isEmpty, "never forwarded")
        let warnings = logs.all.filter { $0.contains("receipt not authenticated") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("trust.extra_receipt_roots") == true)
        #expect(warnings.first?.contains(#""failure":"untrusted_root""#) == true)
    }

    @Test func whatIsNoReceiptIs21002ThroughTheRealReader() async throws {
        let (rig, _) = try Self.realReceiptRig()
        defer { rig.close() }
        let calls = rig.source.calls
        func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
        // 500,000 nested indefinite-length SEQUENCEs, closed: a nesting bomb of 2 MB.
        let bomb: [UInt8] = (0..<2_000_000).map { i in i < 1_000_000 ? (i % 2 == 0 ? 0x30 : 0x80) : 0x00 }
        let inputs: [(String, String)] = [
            ("empty", ""),
            ("garbage", "garbage!"),
            ("white space", " \n\t "),
            ("base64 of text", base64(Array("not a receipt".utf8))),
            ("StoreKit 2 JWS", "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlCIl19.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln"),
            ("nesting bomb", base64(Array(bomb.prefix(1_000_000)))),
            ("closed nesting bomb", base64(bomb)),
        ]
        for (name, data) in inputs {
            let answer = try await rig.ask(data)
            #expect(answer["status"] == .number("21002"), "\(name)")
            #expect(answer["latest_receipt_info"] == nil, "\(name)")
        }
        #expect(rig.source.calls == calls)
    }

    @Test func thePasswordReachesNoLogNoStoreNoAnswer() async throws {
        // Every outcome that involves the password: right, wrong, Apple's API failing.
        let logs = GatewayServiceTests.LogBox()
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let source = FakeHistory()
        source.state.withLock { $0.histories[Self.customer] = Self.history() }
        let g = try GatewayServiceTests.start(receiver: receiver, logs: logs) { config, d in
            config.apps[0].receipts = .api
            d.receiptReader = Self.reader
            d.receiptHistorySource = source
        }
        let wrong = "a-wrong-password-that-must-not-be-logged-0123456789"
        var answers: [[UInt8]] = []
        for password in [Self.secret, wrong] {
            var w = JSONObjectWriter()
            w.string("receipt-data", Self.receiptData())
            w.string("password", password)
            answers.append(try await GatewayServiceTests.post(g.url("/sandbox/verifyReceipt"), w.finish()).body)
        }
        source.state.withLock { $0.failure = PathFetchError(code: "unavailable", message: "503", retryable: true) }
        var w = JSONObjectWriter()
        w.string("receipt-data", Self.receiptData(id: "2000000900009999"))
        w.string("password", Self.secret)
        answers.append(try await GatewayServiceTests.post(g.url("/sandbox/verifyReceipt"), w.finish()).body)
        #expect(answers.map(ReceiptEndpoint.status(of:)) == [0, 21004, 21005])
        await g.service.shutdown()
        let stored =
            try Data(contentsOf: URL(filePath: g.directory + "/gateway.db"))
            + ((try? Data(contentsOf: URL(filePath: g.directory + "/gateway.db-wal"))) ?? Data())
        for secret in [Self.secret, wrong] {
            #expect(!logs.all.contains { $0.contains(secret) }, "a log line holds a password")
            #expect(!answers.contains { String(decoding: $0, as: UTF8.self).contains(secret) })
            #expect(stored.range(of: Data(secret.utf8)) == nil, "the store holds a password")
        }
    }
}
