import Canonical
import Foundation
import Gateway
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter

/// The budget of App Store Server API calls shared by every instance on one store (docs/operations.md, "Apple's rate
/// limits"): each instance leases turns from the ledger's bucket and hands them out through its own queue. Time is a
/// test clock (``AppleAPIBudgetTests/Clock``): the tests wait for conditions, never for time.
@Suite(.serialized) struct SharedAppleAPIBudgetTests {
    typealias Clock = AppleAPIBudgetTests.Clock
    static let t = AppleAPIBudgetTests.t
    static let history = AppleAPIBudgetTests.history
    static let settings = AppleRateLimitSettings()

    static func budget(
        _ clock: Clock,
        _ ledger: any SharedAPIBudgetLedger,
        metrics: Metrics = Metrics()
    )
        -> AppleAPIBudget
    {
        AppleAPIBudget(
            settings: settings,
            now: { clock.now },
            sleep: { await clock.sleep($0) },
            metrics: metrics,
            ledger: ledger
        )
    }

    // MARK: The arithmetic

    @Test func aLeaseTakesATenthOfASecondOfTheRateAndTheSharedBurstLeavesRoomForIt() {
        let s = Self.settings
        // 40 a second: 4 turns a lease; 6 at once, so that a second holds at most 6 + 40 + 4 = Apple's 50.
        #expect(s.leaseTurns(.transactionHistory, .production) == 4)
        #expect(s.sharedBurst(.transactionHistory, .production) == 6)
        #expect(
            s.sharedBurst(.transactionHistory, .production) + s.rate(.transactionHistory, .production)
                + Double(s.leaseTurns(.transactionHistory, .production))
                <= s.published(.transactionHistory, .production)
        )
        // The sandbox's 4 a second: one turn a lease, one at once.
        #expect(s.leaseTurns(.transactionHistory, .sandbox) == 1)
        #expect(s.sharedBurst(.transactionHistory, .sandbox) == 1)
        #expect(s.leaseTurns(.testNotification, .sandbox) == 1)
    }

    // MARK: Without a server

    /// A ledger that gives `turns` to each lease while `failing` is false, and throws while it is true.
    final class ScriptedLedger: SharedAPIBudgetLedger {
        struct Down: Error {}
        let state = Mutex((failing: false, turns: 1, leases: 0, pauses: [Int64]()))

        func lease(
            _ bucket: APIBudgetBucket,
            turns: Int,
            refill: APIBudgetRefill,
            at time: Int64
        ) async throws
            -> APIBudgetLease
        {
            let (failing, given) = state.withLock { s in
                s.leases += 1
                return (s.failing, min(turns, s.turns))
            }
            if failing { throw Down() }
            return APIBudgetLease(turns: given, nextTurnAt: time + refill.turnMillis, pausedUntil: 0)
        }

        func pause(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) async throws {
            let failing = state.withLock { s in
                s.pauses.append(until)
                return s.failing
            }
            if failing { throw Down() }
        }

        var leases: Int { state.withLock { $0.leases } }
    }

    @Test func aLedgerThatFailsGivesNoTurnAndTheCallFailsAtItsDeadline() async throws {
        let clock = Clock(Self.t)
        let ledger = ScriptedLedger()
        let metrics = Metrics()
        let budget = Self.budget(clock, ledger, metrics: metrics)
        #expect(await budget.acquire(Self.history, priority: .request, deadline: Self.t + 500) == .granted)
        ledger.state.withLock { $0.failing = true }
        // The ledger is asked once, fails: no turn; it is left alone for a second, past the call's deadline.
        let refused = await budget.acquire(Self.history, priority: .request, deadline: clock.now + 500)
        #expect(refused == .expired(nextAt: clock.now + AppleAPIBudget.ledgerRetryMillis))
        #expect(ledger.leases == 2)
        #expect(
            metrics.counter(
                "iapgw_apple_api_budget_store_failures_total",
                ["endpoint": "transaction_history", "operation": "lease"]
            ) == 1
        )
        // A call that can wait is served once the ledger answers again, at the next try.
        let waiting = Task { await budget.acquire(Self.history, priority: .background, deadline: clock.now + 5_000) }
        try #require(await eventually("the call waits for the next try") { budget.waiting == 1 && clock.sleepers == 1 })
        ledger.state.withLock { $0.failing = false }
        #expect(ledger.leases == 2, "no lease before the retry")
        clock.advance(AppleAPIBudget.ledgerRetryMillis)
        #expect(await waiting.value == .granted)
        #expect(ledger.leases == 3)
    }

    @Test func apples429IsRecordedInTheLedgerForTheOtherInstances() async throws {
        let clock = Clock(Self.t)
        let ledger = ScriptedLedger()
        let budget = Self.budget(clock, ledger)
        budget.rateLimited(Self.history, until: Self.t + 7_000)
        try #require(
            await eventually("the pause reaches the ledger") { ledger.state.withLock { $0.pauses } == [Self.t + 7_000] }
        )
        // This instance holds too, without asking the ledger.
        let held = await budget.acquire(Self.history, priority: .request, deadline: Self.t + 1_000)
        guard case .expired(let nextAt) = held else {
            Issue.record("\(held)")
            return
        }
        #expect(nextAt >= Self.t + 7_000 && ledger.leases == 0)
    }

    /// A store whose one-statement writes hang until released (a network gone mid-statement).
    final class HangingStore: GatewayStore {
        let inner: SQLiteStore
        let held = Mutex<[CheckedContinuation<Void, Never>]>([])
        init(_ inner: SQLiteStore) { self.inner = inner }
        func write<T: Sendable>(bytes: Int, _ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T
        {
            try inner.write(bytes: bytes, body)
        }
        func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            try await inner.write(body)
        }
        func writeStatement<T: Sendable>(
            _ body: @escaping @Sendable (any StoreTransaction) throws -> T
        ) async throws -> T {
            await withCheckedContinuation { c in held.withLock { $0.append(c) } }
            throw ScriptedLedger.Down()
        }
        func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T { try inner.read(body) }
        func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            try await inner.read(body)
        }
        var isClosing: Bool { inner.isClosing }
        var sharedByInstances: Bool { true }
        func close() { inner.close() }
        var commitStatistics: (batches: Int, items: Int) { inner.commitStatistics }

        var hanging: Int { held.withLock { $0.count } }
        func release() {
            for c in held.withLock({ h in
                defer { h = [] }
                return h
            }) { c.resume() }
        }
    }

    @Test(.timeLimit(.minutes(1))) func aStoreThatHangsFailsTheLeaseAtTheLedgersTimeout() async throws {
        let store = HangingStore(try SQLiteStore(path: try Scratch.directory() + "/g.db"))
        defer { store.close() }
        let ledger = StoreAPIBudgetLedger(store: store, timeoutMillis: 20)
        let bucket = APIBudgetBucket(
            bundleID: "com.example.a",
            environment: .production,
            endpoint: "transaction_history"
        )
        let refill = APIBudgetRefill(perSecond: 40, capacity: 6)
        await #expect(throws: StoreAPIBudgetLedger.Timeout.self) {
            _ = try await ledger.lease(bucket, turns: 1, refill: refill, at: Self.t)
        }
        await #expect(throws: StoreAPIBudgetLedger.Timeout.self) {
            try await ledger.pause(bucket, until: Self.t + 1_000, refill: refill)
        }
        // Both statements still hang: their answers, when they come, are dropped.
        try #require(await eventually("both statements hang") { store.hanging == 2 })
        store.release()
    }

    // MARK: On PostgreSQL

    /// Two instances (two stores on one schema, each with its budget) and their calls; `workers` calls wait at every
    /// moment on each. Returns the time of each grant, per instance, until the clock reaches `end`: the clock moves to
    /// the next wake of a budget only once every call waits and both budgets sleep (nothing is left to happen now).
    static func simulate(
        _ budgets: [AppleAPIBudget],
        clock: Clock,
        workers: Int,
        until end: Int64
    ) async throws -> [[Int64]] {
        final class Recorded: Sendable {
            let times: Mutex<[[Int64]]>
            init(_ count: Int) { times = Mutex([[Int64]](repeating: [], count: count)) }
        }
        let grants = Recorded(budgets.count)
        let running = Task {
            await withTaskGroup(of: Void.self) { group in
                for (i, budget) in budgets.enumerated() {
                    for _ in 0..<workers {
                        group.addTask {
                            while !Task.isCancelled {
                                let g = await budget.acquire(Self.history, priority: .background, deadline: .max)
                                guard g == .granted else { return }
                                let time = clock.now
                                grants.times.withLock { $0[i].append(time) }
                            }
                        }
                    }
                }
            }
        }
        while clock.now < end {
            let quiet = await eventually("every call waits and both budgets sleep", every: .milliseconds(1)) {
                budgets.allSatisfy { $0.waiting == workers } && clock.sleepers == budgets.count
            }
            guard quiet, let wake = clock.nextWake else { break }
            clock.set(min(wake, end))
        }
        running.cancel()
        await running.value
        return grants.times.withLock { $0 }
    }

    @Test func anSQLiteStoreKeepsTheBudgetInItsOneProcess() throws {
        let store = try SQLiteStore(path: try Scratch.directory() + "/g.db")
        defer { store.close() }
        #expect(StoreAPIBudgetLedger.of(store) == nil)
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func aPostgresStoreGivesEveryInstanceItsLedger() throws {
        let schema = try TestSchema()
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        #expect(StoreAPIBudgetLedger.of(store) != nil)
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func twoInstancesTogetherStayWithinTheSharedRate() async throws {
        let schema = try TestSchema()
        let stores = [try PostgresStore(url: schema.url), try PostgresStore(url: schema.url)]
        defer { for s in stores { s.close() } }
        let clock = Clock(Self.t)
        let budgets = stores.map { Self.budget(clock, StoreAPIBudgetLedger(store: $0)) }
        let seconds: Int64 = 3
        let grants = try await Self.simulate(budgets, clock: clock, workers: 8, until: Self.t + seconds * 1000)
        let all = (grants[0] + grants[1]).sorted()
        let s = Self.settings
        let rate = s.rate(.transactionHistory, .production)
        // Over the whole run: the shared burst, the rate, and one lease's turns at most — not each instance's share.
        let bound =
            s.sharedBurst(.transactionHistory, .production) + rate * Double(seconds)
            + Double(s.leaseTurns(.transactionHistory, .production))
        #expect(Double(all.count) <= bound, "\(all.count) calls in \(seconds) s, at most \(bound)")
        #expect(Double(all.count) >= rate * Double(seconds) * 0.9, "the shared rate is spent: \(all.count)")
        #expect(grants.allSatisfy { $0.count >= 20 }, "both instances call: \(grants.map(\.count))")
        // No second, anywhere in the run, holds more than Apple's published rate.
        let published = Int(s.published(.transactionHistory, .production))
        for (i, start) in all.enumerated() {
            let inSecond = all[i...].prefix { $0 < start + 1000 }.count
            #expect(inSecond <= published, "\(inSecond) calls in the second from \(start - Self.t) ms")
        }
        let state = try await StoreAPIBudgetLedger(store: stores[0]).state(
            APIBudgetBucket(bundleID: Self.history.bundleID, environment: .production, endpoint: "transaction_history")
        )
        #expect(state.map { Int($0.leased) >= all.count } == true, "every call's turn was leased")
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func a429OneInstanceMetHoldsTheOtherUntilApplesInstant() async throws {
        let schema = try TestSchema()
        let (a, b) = (try PostgresStore(url: schema.url), try PostgresStore(url: schema.url))
        defer {
            a.close()
            b.close()
        }
        let clock = Clock(Self.t)
        let ledger = StoreAPIBudgetLedger(store: a)
        let (first, second) = (Self.budget(clock, ledger), Self.budget(clock, StoreAPIBudgetLedger(store: b)))
        #expect(await second.acquire(Self.history, priority: .request, deadline: Self.t + 1_000) == .granted)
        let until = Self.t + 30_000
        first.rateLimited(Self.history, until: until)
        let bucket = APIBudgetBucket(
            bundleID: Self.history.bundleID,
            environment: .production,
            endpoint: "transaction_history"
        )
        try #require(await eventually("the pause is stored") { try await ledger.state(bucket)?.pausedUntil == until })
        // The other instance's turns leased before the pause are dropped within a lease's time.
        clock.advance(AppleRateLimitSettings.leaseMillis)
        let held = await second.acquire(Self.history, priority: .request, deadline: clock.now + 1_000)
        guard case .expired(let nextAt) = held else {
            Issue.record("the other instance called during Apple's pause: \(held)")
            return
        }
        #expect(nextAt >= until)
        // At Apple's instant a turn is there again, for either instance.
        let waiting = Task { await second.acquire(Self.history, priority: .request, deadline: until + 5_000) }
        try #require(
            await eventually("the call waits for Apple's instant") { second.waiting == 1 && clock.sleepers == 1 }
        )
        clock.set(until)
        #expect(await waiting.value == .granted)
    }

    @Test(.enabled(if: TestPostgresServer.ctl != nil, "IAPGW_TEST_PG_CTL is not set (run under scripts/with-postgres)"))
    func whileTheServerIsDownNoTurnIsGivenAndOnceBackTheCallsGoOn() async throws {
        let schema = try TestSchema()
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        let clock = Clock(Self.t)
        let metrics = Metrics()
        let budget = Self.budget(clock, StoreAPIBudgetLedger(store: store), metrics: metrics)
        #expect(await budget.acquire(Self.history, priority: .request, deadline: Self.t + 1_000) == .granted)
        #expect(try TestPostgresServer.control("stop") == 0)
        var restarted = false
        defer { if !restarted { _ = try? TestPostgresServer.control("start") } }
        let refused = await budget.acquire(Self.history, priority: .request, deadline: clock.now + 500)
        #expect(refused == .expired(nextAt: clock.now + AppleAPIBudget.ledgerRetryMillis))
        let failures = metrics.counter(
            "iapgw_apple_api_budget_store_failures_total",
            ["endpoint": "transaction_history", "operation": "lease"]
        )
        #expect(failures == 1)
        #expect(try TestPostgresServer.control("start") == 0)
        restarted = true
        // The same store, its session reconnected at the next try: the waiting call gets its turn.
        let waiting = Task {
            await budget.acquire(Self.history, priority: .background, deadline: clock.now + 10_000)
        }
        try #require(await eventually("the call waits for the next try") { budget.waiting == 1 && clock.sleepers == 1 })
        clock.advance(AppleAPIBudget.ledgerRetryMillis)
        #expect(await waiting.value == .granted)
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func aStoreThatGoesAwayStopsTheCallsItsInstanceMakesAndNothingElse() async throws {
        let schema = try TestSchema()
        let store = try PostgresStore(url: schema.url)
        let clock = Clock(Self.t)
        let metrics = Metrics()
        let budget = Self.budget(clock, StoreAPIBudgetLedger(store: store), metrics: metrics)
        #expect(await budget.acquire(Self.history, priority: .request, deadline: Self.t + 1_000) == .granted)
        store.close()
        let refused = await budget.acquire(Self.history, priority: .request, deadline: clock.now + 500)
        #expect(refused == .expired(nextAt: clock.now + AppleAPIBudget.ledgerRetryMillis))
        #expect(
            metrics.counter(
                "iapgw_apple_api_budget_store_failures_total",
                ["endpoint": "transaction_history", "operation": "lease"]
            ) == 1
        )
        // A 429 it cannot record is counted too; nothing crashes, nothing waits past its deadline.
        budget.rateLimited(Self.history, until: Self.t + 10_000)
        try #require(
            await eventually("the failed pause is counted") {
                metrics.counter(
                    "iapgw_apple_api_budget_store_failures_total",
                    ["endpoint": "transaction_history", "operation": "pause"]
                ) == 1
            }
        )
    }
}
