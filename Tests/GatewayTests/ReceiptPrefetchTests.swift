import Canonical
import ReceiptPath
import ServiceKit
import Store
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

@testable import Gateway

/// Customers fetched when no request waits for them (docs/operations.md, "The receipt path at scale"): queued after a
/// request found no turn in Apple's budget, and `receipts prefetch` before a cutover.
@Suite struct ReceiptPrefetchTests {
    typealias Rig = ReceiptEndpointTests.Rig
    static let bundle = ReceiptEndpointTests.bundle
    static let customer = ReceiptEndpointTests.customer
    static let limits = AppleRateLimitSettings()

    static func key(_ customer: String) -> ReceiptHistoryKey {
        ReceiptHistoryKey(bundleID: bundle, environment: .sandbox, customer: customer)
    }

    static func stored(_ rig: Rig, _ customer: String) async throws -> Int64? {
        try await rig.h.store.read { tx in try tx.receiptHistory(key(customer)) }?.fetchedAt
    }

    /// Customers of the receipt ledger (as `shadow` compares them).
    static func seen(_ rig: Rig, _ customers: [String]) async throws {
        try await rig.h.store.write { tx in
            for otid in customers {
                try tx.recordReceiptComparison(
                    ReceiptLedgerEntry(
                        subscription: SubscriptionKey(
                            bundleID: bundle,
                            environment: .sandbox,
                            originalTransactionID: otid
                        ),
                        comparedAt: 1,
                        outcome: .agree,
                        fields: [],
                        apple: nil,
                        api: nil
                    )
                )
            }
        }
    }

    // MARK: The queue

    @Test func theQueueHoldsEachCustomerOnceOldestFirstWithinItsBound() {
        var queue = ReceiptFetchQueue(capacity: 2)
        #expect(queue.push(Self.key("1")) == .queued)
        #expect(queue.push(Self.key("1")) == .present)
        #expect(queue.push(Self.key("2")) == .queued)
        #expect(queue.push(Self.key("3")) == .dropped)
        #expect(queue.pop() == Self.key("1"))
        #expect(queue.push(Self.key("3")) == .queued)
        #expect(queue.pop() == Self.key("2") && queue.pop() == Self.key("3") && queue.pop() == nil)
        #expect(queue.count == 0)
    }

    /// A customer never fetched whose request found no turn in Apple's budget is answered 21005 and queued; the fetch
    /// runs behind, at background priority, and the old backend's retry is answered from the store.
    @Test func aCustomerTheBudgetHadNoTurnForIsFetchedBehindItsAnswer() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        rig.source.state.withLock {
            $0.failuresOnce = [PathFetchError(code: "budget_exhausted", message: "no turn", retryable: true)]
        }
        let first = try await rig.ask()
        #expect(first["status"] == .number("21005") && first["is-retryable"] == .bool(true))
        let histories = try #require(rig.service.receiptEndpoint.histories)
        await eventually("the queued fetch kept the history") {
            (try? await Self.stored(rig, Self.customer)) != nil && histories.running == 0
        }
        let contexts = rig.source.state.withLock { $0.contexts }
        #expect(contexts.count == 2 && contexts.last??.priority == .background)
        #expect(ReceiptEndpointTests.ids(try await rig.ask()).count == 3)
        #expect(rig.source.calls == 2, "the retry is answered from the store")
        #expect(rig.service.metrics.render().contains(#"iapgw_receipt_history_queued_total{outcome="queued"} 1"#))
        #expect(histories.queued == 0)
    }

    /// With every background place taken, customers wait in the queue, and beyond its bound are dropped and counted.
    @Test func customersBeyondTheQueuesBoundAreDroppedAndCounted() async throws {
        let rig = try Rig(mode: .api, fetchQueue: 1, backgroundFetches: 1)
        defer { rig.close() }
        let histories = try #require(rig.service.receiptEndpoint.histories)
        rig.source.state.withLock { $0.holds = true }
        histories.enqueue(Self.key("1"))
        await eventually("the first takes the place") { rig.source.calls == 1 }
        histories.enqueue(Self.key("2"))
        histories.enqueue(Self.key("2"))
        histories.enqueue(Self.key("3"))
        #expect(histories.queued == 1)
        let metrics = rig.service.metrics.render()
        #expect(metrics.contains(#"iapgw_receipt_history_queued_total{outcome="dropped"} 1"#))
        #expect(metrics.contains(#"iapgw_receipt_history_queued_total{outcome="queued"} 2"#))
        rig.source.state.withLock { $0.holds = false }
        await eventually("the queued one ran once the place was free") {
            (try? await Self.stored(rig, "2")) != nil && histories.running == 0
        }
        #expect(try await Self.stored(rig, "3") == nil)
    }

    /// With `receipts.max_waiting_for_apple` requests waiting for Apple, the next cold customer is answered 21005 at
    /// once and queued, and a customer with a stored history is answered from it at once: waits for Apple never take
    /// every place of the receipt path.
    @Test func requestsBeyondTheWaitingBoundAreAnsweredAtOnceAndTheirCustomerQueued() async throws {
        let rig = try Rig(mode: .api, maxWaitingForApple: 1)
        defer { rig.close() }
        let histories = try #require(rig.service.receiptEndpoint.histories)
        rig.source.state.withLock { $0.holds = true }
        let waiting = Task { try await rig.ask() }
        await eventually("the first request waits for Apple") { rig.source.calls == 1 }
        let other = "2000000900007000"
        let second = try await rig.ask(ReceiptEndpointTests.receiptData(id: other))
        #expect(second["status"] == .number("21005") && second["is-retryable"] == .bool(true))
        #expect(rig.service.metrics.render().contains(#"iapgw_receipt_history_total{result="queued"} 1"#))
        rig.source.state.withLock { $0.holds = false }
        #expect(ReceiptEndpointTests.ids(try await waiting.value).count == 3)
        await eventually("the queued customer is fetched") {
            (try? await Self.stored(rig, other)) != nil && histories.running == 0
        }
    }

    /// In `shadow`, a request whose comparison is skipped (over `receipts.shadow_concurrency`) is answered with
    /// Apple's answer, and its customer is warmed all the same, behind the requests in Apple's budget.
    @Test func aShadowComparisonSkippedStillWarmsItsCustomer() async throws {
        let reply = try await ReceiptEndpointTests.applesAnswer(shiftingExpiryBy: 0)
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: reply) }
        let rig = try Rig(mode: .shadow, apple: String(apple.url("/").dropLast()), shadowConcurrency: 0)
        defer { rig.close() }
        let answer = try await rig.ask()
        #expect(JSONValue.object(answer) == (try JSONParser.parse(reply)))
        let histories = try #require(rig.service.receiptEndpoint.histories)
        await eventually("the skipped comparison's customer is fetched") {
            (try? await Self.stored(rig, Self.customer)) != nil && histories.running == 0
        }
        #expect(rig.source.state.withLock { $0.contexts }.map { $0?.priority } == [.background])
        #expect(rig.service.metrics.render().contains(#"iapgw_receipt_comparisons_total{outcome="skipped"} 1"#))
    }

    // MARK: receipts prefetch

    @Test func prefetchFetchesTheCustomersNotFreshAndSaysWhereItIs() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        try await Self.seen(rig, [Self.customer, "2000000900005000", "2000000900006000"])
        // One is fresh already.
        _ = try await rig.h.store.write { tx in
            let key = Self.key("2000000900006000")
            _ = try tx.claimReceiptHistory(key, owner: "x", until: .max, now: 0, freshSince: 0)
            try tx.settleReceiptHistory(key, json: Array("{}".utf8), fetchedAt: ReceiptEndpointTests.t, owner: "x")
        }
        let lines = Mutex<[ReceiptPrefetch.Progress]>([])
        var options = ReceiptPrefetch.Options(bundleID: Self.bundle, environment: .sandbox)
        options.pageSize = 2
        let last = try await ReceiptPrefetch.run(
            receipts: rig.service.receiptEndpoint,
            rateLimits: Self.limits,
            options: options
        ) { line in
            lines.withLock { $0.append(line) }
        }
        #expect(last.state == "complete" && last.total == 3 && last.done == 3)
        #expect(last.fetched == 2 && last.skipped == 1 && last.failed == 0)
        #expect(last.after == "2000000900006000")
        // Two Get Transaction History calls, one Get All Subscription Statuses (the customer with a subscription).
        #expect(last.calls == 3 && last.historyCalls == 2)
        #expect(lines.withLock { $0 } == [last])
        #expect(rig.source.state.withLock { $0.contexts }.allSatisfy { $0?.priority == .background })
        #expect(try await Self.stored(rig, Self.customer) != nil)
        // The next run finds every one fresh.
        options.after = ""
        let again = try await ReceiptPrefetch.run(
            receipts: rig.service.receiptEndpoint,
            rateLimits: Self.limits,
            options: options
        ) { _ in }
        #expect(again.skipped == 3 && again.calls == 0)
        // From a resume point, with a limit.
        options.after = Self.customer
        options.limit = 1
        let resumed = try await ReceiptPrefetch.run(
            receipts: rig.service.receiptEndpoint,
            rateLimits: Self.limits,
            options: options
        ) { _ in }
        #expect(
            resumed.state == "limit" && resumed.total == 1 && resumed.done == 1 && resumed.after == "2000000900005000"
        )
    }

    /// Stopped (a signal cancels the run) while a customer is being fetched: its fetch stops, and the resume point
    /// stays before it.
    @Test func aStoppedPrefetchResumesBeforeTheCustomerItWasFetching() async throws {
        let rig = try Rig(mode: .api)
        defer { rig.close() }
        try await Self.seen(rig, [Self.customer, "2000000900005000"])
        var options = ReceiptPrefetch.Options(bundleID: Self.bundle, environment: .sandbox)
        options.concurrency = 1
        let service = rig.service
        rig.source.state.withLock { $0.holds = true }
        let run = Task {
            try await ReceiptPrefetch.run(receipts: service.receiptEndpoint, rateLimits: Self.limits, options: options)
            { _ in }
        }
        await eventually("the first customer is being fetched") { rig.source.calls == 1 }
        run.cancel()
        rig.source.state.withLock { $0.holds = false }
        let last = try await run.value
        #expect(last.state == "stopped" && last.done == 0 && last.after == nil)
        #expect(rig.source.calls == 1 && rig.source.state.withLock { $0.renewalCalls } == 0)
        #expect(try await Self.stored(rig, Self.customer) == nil)
    }
}
