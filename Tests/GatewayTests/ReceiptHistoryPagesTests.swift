import Canonical
import Crypto
import Foundation
import HTTPClient
import ReceiptPath
import ServiceKit
import Store
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

@testable import Gateway

/// A customer whose history takes many pages (docs/operations.md, "Moving the receipt path"): the pages kept as they
/// come, the fetch going on in the background past its request, the next request answered from the store, Apple's
/// 429 waited out, the customer's calls capped per hour, and Get Transaction History asked without consumables. Apple
/// is a scripted source whose calls take 250 ms of an injected clock, so every wait is the clock's, never the wall's.
@Suite struct ReceiptHistoryPagesTests {
    typealias E = ReceiptEndpointTests
    static let t = E.t

    /// Time that moves only when told; sleepers wake when it passes their time, or when their task is cancelled.
    final class ManualClock: Sendable {
        private struct State {
            var now: Int64
            var sleepers: [Int: (until: Int64, continuation: CheckedContinuation<Void, Never>)] = [:]
            var pending: Set<Int> = []
            var cancelled: Set<Int> = []
            var next = 0
        }
        private let state: Mutex<State>

        init(_ start: Int64) { state = Mutex(State(now: start)) }

        var now: Int64 { state.withLock { $0.now } }
        var sleepers: Int { state.withLock { $0.sleepers.count } }

        func advance(_ millis: Int64) {
            let due = state.withLock { s in
                s.now += millis
                let due = s.sleepers.filter { $0.value.until <= s.now }
                for id in due.keys { s.sleepers.removeValue(forKey: id) }
                return due.values.map(\.continuation)
            }
            for c in due { c.resume() }
        }

        func sleep(_ millis: Int64) async {
            let id = state.withLock { s in
                s.next += 1
                s.pending.insert(s.next)
                return s.next
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { s -> Bool in
                        s.pending.remove(id)
                        if s.cancelled.remove(id) != nil || millis <= 0 { return true }
                        s.sleepers[id] = (s.now + millis, c)
                        return false
                    }
                    if now { c.resume() }
                }
            } onCancel: {
                let c = state.withLock { s in
                    if s.pending.contains(id) { s.cancelled.insert(id) }
                    return s.sleepers.removeValue(forKey: id)?.continuation
                }
                c?.resume()
            }
        }
    }

    /// Apple's Get Transaction History for one customer, 20 transactions a page (the revision: how many were given),
    /// each call taking `latency` of the clock. A call can be held (`holdAt`) until released, and 429s scripted.
    final class PagedApple: ReceiptHistorySource, Sendable {
        struct State {
            var transactions: [TransactionPayload]
            var renewals: [RenewalInfoPayload] = []
            var calls = 0
            var renewalCalls = 0
            var revisions: [String?] = []
            var holdAt: Int?
            var released = false
            /// Call number → Retry-After (ms) of the 429 answering it.
            var limited: [Int: Int64] = [:]
        }
        let state: Mutex<State>
        let clock: ManualClock?
        let latency: Int64

        init(transactions: [TransactionPayload], renewals: [RenewalInfoPayload] = [], clock: ManualClock?) {
            state = Mutex(State(transactions: transactions, renewals: renewals))
            (self.clock, self.latency) = (clock, 250)
        }

        var calls: Int { state.withLock { $0.calls } }
        var revisions: [String?] { state.withLock { $0.revisions } }
        var held: Bool { state.withLock { $0.holdAt == $0.calls && !$0.released } }
        func release() { state.withLock { $0.released = true } }

        func historyPage(
            bundleID: String,
            environment: AppStoreEnvironment,
            transactionID: String,
            revision: String?
        ) async throws(PathFetchError) -> ReceiptHistoryPage {
            let call = state.withLock { s in
                s.calls += 1
                s.revisions.append(revision)
                return s.calls
            }
            // Held: waits for the test (a condition, not a clock), or for its task's cancellation.
            while state.withLock({ $0.holdAt == call && !$0.released }) {
                guard !Task.isCancelled else {
                    throw PathFetchError(code: "apple_unavailable", message: "cancelled", retryable: true)
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
            clock?.advance(latency)
            return try state.withLock { s throws(PathFetchError) in
                if let wait = s.limited.removeValue(forKey: call) {
                    throw PathFetchError(code: "rate_limited", message: "429", retryable: true, retryAfterMillis: wait)
                }
                let offset = Int(revision ?? "0") ?? 0
                let page = Array(s.transactions.dropFirst(offset).prefix(20))
                let next = offset + page.count
                return ReceiptHistoryPage(
                    transactions: page,
                    revision: String(next),
                    hasMore: next < s.transactions.count
                )
            }
        }

        func renewals(
            bundleID: String,
            environment: AppStoreEnvironment,
            transactionID: String
        ) async throws(PathFetchError) -> [RenewalInfoPayload] {
            clock?.advance(latency)
            return state.withLock { s in
                s.renewalCalls += 1
                return s.renewals
            }
        }
    }

    /// 1,200 transactions: 600 monthly periods of the customer's subscription and 600 non-consumables.
    static func bigHistory() -> (transactions: [TransactionPayload], renewals: [RenewalInfoPayload]) {
        let day: Int64 = 86_400_000
        var transactions: [TransactionPayload] = []
        for k in 0..<600 {
            let purchase = t - Int64(600 - k) * 30 * day
            transactions.append(
                E.transaction(
                    k == 0 ? E.customer : String(2_000_000_900_200_000 + k),
                    purchase: purchase,
                    expires: purchase + 30 * day
                )
            )
            transactions.append(
                E.transaction(
                    String(2_000_000_900_400_000 + k),
                    otid: String(2_000_000_900_400_000 + k),
                    product: "com.example.gateway.pack\(k)",
                    purchase: purchase + day,
                    expires: nil,
                    type: "Non-Consumable"
                )
            )
        }
        var renewal = RenewalInfoPayload()
        (renewal.originalTransactionID, renewal.productID, renewal.autoRenewProductID) = (
            E.customer, "com.example.gateway.monthly", "com.example.gateway.monthly"
        )
        (renewal.autoRenewStatus, renewal.signedDate) = (1, t)
        return (transactions, [renewal])
    }

    /// The endpoint of `rig`'s service (api mode, its store), asking `source` on `clock`.
    struct Gateway {
        let rig: E.Rig
        let clock: ManualClock
        let source: PagedApple
        let histories: ReceiptHistories
        let endpoint: ReceiptEndpoint
        let metrics = Metrics()

        init(
            _ rig: E.Rig,
            source: PagedApple,
            clock: ManualClock,
            owner: String = "a",
            settings: (inout ReceiptSettings) -> Void = { _ in }
        ) {
            var s = rig.service.receiptEndpoint.settings
            settings(&s)
            (self.rig, self.clock, self.source) = (rig, clock, source)
            histories = ReceiptHistories(
                store: rig.h.store,
                source: source,
                settings: s,
                now: { clock.now },
                sleep: { await clock.sleep($0) },
                owner: owner,
                metrics: metrics
            )
            let base = rig.service.receiptEndpoint
            endpoint = ReceiptEndpoint(
                settings: base.settings,
                verifyReceipt: base.verifyReceipt,
                apps: Array(base.apps.values),
                store: rig.h.store,
                read: E.reader,
                histories: histories,
                apple: base.apple,
                secrets: base.secrets,
                metrics: metrics,
                log: base.log,
                now: { clock.now }
            )
        }

        func ask() async throws -> JSONObject {
            var w = JSONObjectWriter()
            w.string("receipt-data", E.receiptData())
            w.string("password", E.secret)
            let answer = await endpoint.handle(w.finish(), sandboxURL: true)
            return try #require(try JSONParser.parse(answer).objectValue)
        }

        var key: ReceiptHistoryKey {
            ReceiptHistoryKey(bundleID: E.bundle, environment: .sandbox, customer: E.customer)
        }

        func pages() throws -> [StoredReceiptHistoryPage] {
            try rig.h.store.read { tx in try tx.receiptHistoryPages(key) }
        }
    }

    static func isRetryable21005(_ answer: JSONObject) -> Bool {
        answer["status"] == .number("21005") && answer["is-retryable"] == .bool(true)
    }

    @Test func aBigHistoryIsFinishedInTheBackgroundAndAnsweredFromTheStoreNext() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let (transactions, renewals) = Self.bigHistory()
        let apple = PagedApple(transactions: transactions, renewals: renewals, clock: clock)
        // 40 calls of 250 ms fill the request's 10 s; the 41st waits until the request has been answered.
        apple.state.withLock { $0.holdAt = 41 }
        let g = Gateway(rig, source: apple, clock: clock)
        let first = try await g.ask()
        #expect(Self.isRetryable21005(first), "\(first)")
        await eventually("the fetch goes on past its request") { apple.held }
        #expect(try g.pages().count == 40, "every page verified so far is kept")
        #expect(g.metrics.counter("iapgw_receipt_history_total", ["result": "background"]) == 1)
        #expect(g.metrics.gauge("iapgw_receipt_history_background") == 1)
        apple.release()
        await eventually("the fetch finished in the background") { g.histories.running == 0 }
        #expect(apple.calls == 60 && apple.state.withLock { $0.renewalCalls } == 1)
        #expect(try g.pages().isEmpty, "the pages became the stored history")
        #expect(g.metrics.gauge("iapgw_receipt_history_background") == 0)
        // The next request: answered from the store, all of it, without a call.
        let second = try await g.ask()
        #expect(second["status"] == .number("0"))
        #expect(E.ids(second).count == 1_200)
        #expect(second["pending_renewal_info"]?.arrayValue?.count == 1)
        #expect(apple.calls == 60)
        for _ in 0..<5 { #expect(try await g.ask()["status"] == .number("0")) }
        #expect(apple.calls == 60, "retries cost Apple nothing")
        #expect(g.metrics.counter("iapgw_receipt_history_total", ["result": "fresh"]) == 6)
    }

    @Test func applesRetryAfterPausesABackgroundFetchThatThenGoesOn() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let (transactions, renewals) = Self.bigHistory()
        let apple = PagedApple(transactions: transactions, renewals: renewals, clock: clock)
        apple.state.withLock { $0.limited[30] = 60_000 }
        let g = Gateway(rig, source: apple, clock: clock)
        // 29 pages kept, then a 429 asking for a minute: the request is answered at once, the fetch waits.
        let first = try await g.ask()
        #expect(Self.isRetryable21005(first), "\(first)")
        #expect(try g.pages().count == 29)
        await eventually("the fetch waits out Apple's Retry-After") { clock.sleepers == 1 }
        #expect(g.histories.running == 1 && apple.calls == 30)
        // Within the minute nothing more is asked; after it, the fetch goes on from page 30.
        clock.advance(59_000)
        #expect(apple.calls == 30 && clock.sleepers == 1)
        clock.advance(1_000)
        await eventually("the fetch finished after the pause") { g.histories.running == 0 }
        #expect(apple.calls == 61 && apple.revisions[30] == "580", "page 30 asked again, not from the start")
        let second = try await g.ask()
        #expect(second["status"] == .number("0") && E.ids(second).count == 1_200)
        #expect(apple.calls == 61)
    }

    @Test func theCustomersCallsAreCappedPerHour() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let (transactions, renewals) = Self.bigHistory()
        let apple = PagedApple(transactions: transactions, renewals: renewals, clock: nil)
        let g = Gateway(rig, source: apple, clock: clock) { $0.customerCallsPerHour = 10 }
        // Ten calls, then none: no stored history to answer with.
        #expect(Self.isRetryable21005(try await g.ask()))
        #expect(apple.calls == 10)
        #expect(try g.pages().count == 10)
        for _ in 0..<3 { #expect(Self.isRetryable21005(try await g.ask())) }
        #expect(apple.calls == 10, "no call to Apple past the cap")
        #expect(g.metrics.counter("iapgw_receipt_history_total", ["result": "capped"]) == 4)
        #expect(
            g.metrics.counter(
                "iapgw_receipt_history_calls_total",
                ["endpoint": "transaction_history", "outcome": "capped"]
            ) == 4
        )
        // An hour later: ten more, from where the pages end.
        clock.advance(3_600_000)
        _ = try await g.ask()
        #expect(apple.calls == 20 && apple.revisions[10] == "200")
        #expect(try g.pages().count == 20)
    }

    @Test func pastTheCapAStoredHistoryAnswersEvenWhenOld() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let apple = PagedApple(transactions: Self.bigHistory().transactions, clock: nil)
        let g = Gateway(rig, source: apple, clock: clock) { $0.customerCallsPerHour = 3 }
        // A history fetched two hours ago (past receipts.history_max_age).
        let old = E.history()
        let json = old.encoded()
        _ = try await rig.h.store.write { [key = g.key] tx in
            _ = try tx.claimReceiptHistory(key, owner: "old", until: .max, now: Self.t, freshSince: 0)
            try tx.settleReceiptHistory(key, json: json, fetchedAt: Self.t - 7_200_000, owner: "old")
        }
        let answer = try await g.ask()
        #expect(answer["status"] == .number("0"))
        #expect(E.ids(answer) == ["2000000900001001", E.customer, "2000000900003000"], "the stored history's answer")
        #expect(g.metrics.counter("iapgw_receipt_history_total", ["result": "stale"]) == 1)
        // The refresh went on in the background until the customer's calls for the hour were used up.
        await eventually("the background refresh stops at the cap") { apple.calls == 3 && g.histories.running == 0 }
        #expect(apple.calls == 3)
        // Past the cap the next answer is the stored history again, at once and without a call.
        #expect(try await g.ask()["status"] == .number("0"))
        #expect(apple.calls == 3 && g.histories.running == 0)
    }

    /// Past `history_max_age`, the stored history answers at once (`receipts.stale_wait` 0s): the request never waits
    /// for Apple — here held at its first call — and the refresh, in the background, keeps the new history.
    @Test func aStaleHistoryAnswersAtOnceAndIsRefreshedBehind() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let apple = PagedApple(transactions: Self.bigHistory().transactions, clock: nil)
        apple.state.withLock { $0.holdAt = 1 }
        let g = Gateway(rig, source: apple, clock: clock)
        let json = E.history().encoded()
        _ = try await rig.h.store.write { [key = g.key] tx in
            _ = try tx.claimReceiptHistory(key, owner: "old", until: .max, now: Self.t, freshSince: 0)
            try tx.settleReceiptHistory(key, json: json, fetchedAt: Self.t - 7_200_000, owner: "old")
        }
        let answer = try await g.ask()
        #expect(E.ids(answer) == ["2000000900001001", E.customer, "2000000900003000"], "the stored history's answer")
        await eventually("the refresh is held at Apple") { apple.held }
        #expect(g.histories.running == 1, "the refresh runs behind the answer")
        apple.release()
        await eventually("the refresh is kept") { g.histories.running == 0 }
        let row = try await rig.h.store.read { [key = g.key] tx in try tx.receiptHistory(key) }
        #expect(row?.fetchedAt == clock.now, "the refreshed history is stored")
        #expect(try await g.ask()["status"] == .number("0"))
        #expect(g.metrics.counter("iapgw_receipt_history_total", ["result": "fresh"]) == 1)
    }

    /// Past `history_max_age` a refresh is wanted, never a reason to fail: Apple's 429 on the refresh, and the
    /// stored history answers (it was a `21005`, the customer's app left without its purchases).
    @Test func aRefreshApplesRateLimitRefusesIsAnsweredFromTheStoredHistory() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let apple = PagedApple(transactions: Self.bigHistory().transactions, clock: nil)
        apple.state.withLock { $0.limited = [1: 60_000] }
        let g = Gateway(rig, source: apple, clock: clock)
        let json = E.history().encoded()
        _ = try await rig.h.store.write { [key = g.key] tx in
            _ = try tx.claimReceiptHistory(key, owner: "old", until: .max, now: Self.t, freshSince: 0)
            try tx.settleReceiptHistory(key, json: json, fetchedAt: Self.t - 7_200_000, owner: "old")
        }
        let answer = try await g.ask()
        #expect(answer["status"] == .number("0"))
        #expect(E.ids(answer) == ["2000000900001001", E.customer, "2000000900003000"], "the stored history's answer")
        await eventually("the refresh was asked, and refused") { apple.calls == 1 && g.histories.running == 0 }
        #expect(g.metrics.counter("iapgw_receipt_history_total", ["result": "stale"]) == 1)
        // Apple's Retry-After holds the refresh: the next answer is the stored history, without a call.
        #expect(try await g.ask()["status"] == .number("0"))
        #expect(apple.calls == 1)
        // Without a stored history the same refusal is a retryable 21005: nothing to answer from.
        let empty = try E.Rig(mode: .api)
        defer { empty.close() }
        let refusing = PagedApple(transactions: Self.bigHistory().transactions, clock: nil)
        refusing.state.withLock { $0.limited = [1: 60_000] }
        #expect(Self.isRetryable21005(try await Gateway(empty, source: refusing, clock: clock).ask()))
    }

    @Test func anotherOwnerGoesOnFromThePagesKeptAndShutdownEndsTheFetch() async throws {
        let rig = try E.Rig(mode: .api)
        defer { rig.close() }
        let clock = ManualClock(Self.t)
        let (transactions, renewals) = Self.bigHistory()
        let apple = PagedApple(transactions: transactions, renewals: renewals, clock: clock)
        apple.state.withLock { $0.holdAt = 41 }
        let a = Gateway(rig, source: apple, clock: clock, owner: "a")
        #expect(Self.isRetryable21005(try await a.ask()))
        await eventually("the fetch goes on past its request") { apple.held }
        #expect(a.histories.running == 1)
        // The service stops: the background fetch ends (no task left), its claim given up, its pages kept.
        await a.endpoint.stop()
        #expect(a.histories.running == 0)
        #expect(try a.pages().count == 40)
        let key = a.key
        let row = try await rig.h.store.read { tx in try tx.receiptHistory(key) }
        #expect(row?.claimedBy == nil)
        // Another instance (or the next start) goes on from page 40.
        apple.release()
        let b = Gateway(rig, source: apple, clock: clock, owner: "b")
        let answer = try await b.ask()
        #expect(answer["status"] == .number("0") && E.ids(answer).count == 1_200)
        #expect(apple.calls == 61 && apple.revisions[41] == "800")
    }

    @Test func aTransactionAppleSendsAgainOnALaterPageIsListedOnceAsLastSent() {
        var refunded = E.transaction("2000000900003000", purchase: Self.t - 1_000, expires: nil, type: "Non-Consumable")
        let first = refunded
        refunded.revocationDate = Self.t
        let other = E.transaction("2000000900004000", purchase: Self.t - 500, expires: nil, type: "Non-Consumable")
        let merged = CustomerHistory.latestViews([first, other, refunded])
        #expect(merged.map(\.transactionID) == ["2000000900003000", "2000000900004000"])
        #expect(merged.first?.revocationDate == Self.t)
    }

    @Test func getTransactionHistoryIsAskedWithoutConsumables() async throws {
        let transport = ScriptedTransport { _ throws(HTTPClientError) in
            HTTPResponse(
                status: 200,
                body: Array(
                    #"{"revision":"r2","hasMore":false,"bundleId":"com.example.gateway","environment":"Sandbox","signedTransactions":[]}"#
                        .utf8
                )
            )
        }
        let client = AppStoreAPIClient(
            configuration: .init(
                sandboxURL: "https://api.example",
                keyID: "KEY",
                issuerID: "ISSUER",
                bundleID: E.bundle,
                privateKey: try PrivateKey.generateP256(),
                maxAttempts: 1
            ),
            transport: transport,
            adapter: V2Adapter(verifier: AppleJWSVerifier(anchors: try .apple()), apps: nil),
            now: { Self.t }
        )
        let source = AppStoreAPIClients(clients: [E.bundle: client])
        let page = try await source.historyPage(
            bundleID: E.bundle,
            environment: .sandbox,
            transactionID: E.customer,
            revision: "r1"
        )
        #expect(page == ReceiptHistoryPage(transactions: [], revision: "r2", hasMore: false))
        #expect(
            transport.requests.map(\.url) == [
                "https://api.example/inApps/v2/history/\(E.customer)?revision=r1&productType=AUTO_RENEWABLE"
                    + "&productType=NON_RENEWABLE&productType=NON_CONSUMABLE"
            ]
        )
    }
}
