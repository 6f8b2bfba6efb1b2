import Canonical
import Crypto
import Foundation
import Gateway
import HTTPClient
import ServiceKit
import Simulator
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

/// The budget of App Store Server API calls (docs/operations.md, "Apple's rate limits"): per app × endpoint ×
/// environment a bucket at Apple's rate × the margin; calls over it wait for their turn (a waiting client request's
/// before background work) or fail `budget_exhausted` past their deadline; Apple's 429 holds every caller of the
/// app, endpoint and environment until its `Retry-After`. Time is a test clock: nothing sleeps.
@Suite struct AppleAPIBudgetTests {
    static let t: Int64 = Sim.t0 + 250
    static let history = AppStoreAPICall(
        bundleID: "com.example.a",
        endpoint: .transactionHistory,
        environment: .production
    )

    /// Time that moves only when told; sleepers wake when it reaches their time.
    final class Clock: Sendable {
        private struct State {
            var now: Int64
            var sleepers: [Int: (until: Int64, continuation: CheckedContinuation<Void, Never>)] = [:]
            var next = 0
        }
        private let state: Mutex<State>

        init(_ start: Int64) { state = Mutex(State(now: start)) }

        var now: Int64 { state.withLock { $0.now } }
        var sleepers: Int { state.withLock { $0.sleepers.count } }
        /// The earliest time a sleeper waits for.
        var nextWake: Int64? { state.withLock { $0.sleepers.values.map(\.until).min() } }

        func advance(_ millis: Int64) { set(now + millis) }

        /// Sets the clock back (a test story starting over, the wall clock stepped back).
        func rewind(_ millis: Int64) { state.withLock { $0.now -= millis } }

        func set(_ time: Int64) {
            let due = state.withLock { s in
                s.now = max(s.now, time)
                let due = s.sleepers.filter { $0.value.until <= s.now }
                for id in due.keys { s.sleepers.removeValue(forKey: id) }
                return due.values.map(\.continuation)
            }
            for c in due { c.resume() }
        }

        func sleep(_ millis: Int64) async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    guard millis > 0 else { return true }
                    s.next += 1
                    s.sleepers[s.next] = (s.now + millis, c)
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    static func budget(_ clock: Clock, _ settings: AppleRateLimitSettings = AppleRateLimitSettings()) -> AppleAPIBudget
    {
        AppleAPIBudget(settings: settings, now: { clock.now }, sleep: { await clock.sleep($0) })
    }

    /// The grants of calls started one after another, each queued before the next starts.
    final class Grants: Sendable {
        let order = Mutex<[String]>([])
        func add(_ name: String) { order.withLock { $0.append(name) } }
        var all: [String] { order.withLock { $0 } }
    }

    @Test func theBucketHoldsApplesRateTimesTheMarginAndABurstThatKeepsEverySecondWithinApplesRate() {
        let s = AppleRateLimitSettings()
        #expect(s.rate(.transactionHistory, .production) == 40)
        #expect(s.burst(.transactionHistory, .production) == 10, "40 a second + 10 at once: at most Apple's 50")
        #expect(s.rate(.transactionHistory, .sandbox) == 4)
        #expect(s.burst(.transactionHistory, .sandbox) == 1)
        #expect(s.rate(.lookUpOrderID, .production) == 8)
        #expect(s.rate(.testNotification, .sandbox) == 0.1 * 0.8)
    }

    @Test func aBurstOverTheRateWaitsForTheBucketToFill() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        for _ in 0..<10 {
            #expect(await budget.acquire(Self.history, priority: .background, deadline: Self.t) == .granted)
        }
        let grants = Grants()
        let waiting = Task {
            let g = await budget.acquire(Self.history, priority: .background, deadline: Self.t + 60_000)
            grants.add("\(g == .granted) at \(clock.now - Self.t)")
        }
        try #require(await eventually("the 11th call waits its turn") { budget.waiting == 1 && clock.sleepers == 1 })
        clock.advance(24)
        #expect(budget.waiting == 1, "40 a second: one turn every 25 ms")
        clock.advance(1)
        await waiting.value
        #expect(grants.all == ["true at 25"])
        #expect(budget.waiting == 0)
    }

    @Test func aClockSetBackDoesNotHoldCallsUntilItCatchesUp() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        for _ in 0..<10 { _ = await budget.acquire(Self.history, priority: .background, deadline: Self.t) }
        clock.rewind(86_400_000)
        let waiting = Task { await budget.acquire(Self.history, priority: .request, deadline: clock.now + 60_000) }
        try #require(await eventually("the call waits its turn") { budget.waiting == 1 && clock.sleepers == 1 })
        clock.advance(25)
        #expect(await waiting.value == .granted)
    }

    @Test func aWaitingRequestsCallGoesBeforeQueuedBackgroundCalls() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        for _ in 0..<10 { _ = await budget.acquire(Self.history, priority: .background, deadline: Self.t) }
        let grants = Grants()
        var tasks: [Task<Void, Never>] = []
        for (i, priority) in [AppStoreAPICallPriority.background, .background, .background, .request].enumerated() {
            let name = "\(priority)\(i)"
            tasks.append(
                Task {
                    if await budget.acquire(Self.history, priority: priority, deadline: Self.t + 60_000) == .granted {
                        grants.add(name)
                    }
                }
            )
            try #require(await eventually("\(name) queued") { budget.waiting == i + 1 })
        }
        for turn in 1...4 {
            try #require(await eventually("the budget waits for the next turn") { clock.sleepers == 1 })
            clock.advance(25)
            try #require(await eventually("turn \(turn) given") { grants.all.count == turn })
        }
        for task in tasks { await task.value }
        #expect(grants.all == ["request3", "background0", "background1", "background2"])
    }

    @Test func aCallWhoseTurnWouldComeAfterItsDeadlineFailsAtOnce() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        for _ in 0..<10 { _ = await budget.acquire(Self.history, priority: .background, deadline: Self.t) }
        #expect(
            await budget.acquire(Self.history, priority: .request, deadline: Self.t + 24)
                == .expired(nextAt: Self.t + 25)
        )
        // Queued background calls lose their turn to a request's and fail when theirs would come too late.
        let background = Task { await budget.acquire(Self.history, priority: .background, deadline: Self.t + 30) }
        try #require(await eventually { budget.waiting == 1 })
        let request = Task { await budget.acquire(Self.history, priority: .request, deadline: Self.t + 30) }
        try #require(await eventually { budget.waiting == 2 })
        clock.advance(25)
        #expect(await request.value == .granted)
        #expect(await background.value == .expired(nextAt: Self.t + 50))
    }

    @Test func applesRetryAfterHoldsEveryCallerOfThatAppEndpointAndEnvironmentOnly() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        let until = Self.t + 5_000
        budget.rateLimited(Self.history, until: until)
        #expect(
            await budget.acquire(Self.history, priority: .request, deadline: until - 1) == .expired(nextAt: until)
        )
        let held = Task { await budget.acquire(Self.history, priority: .background, deadline: Self.t + 60_000) }
        try #require(await eventually { budget.waiting == 1 && clock.sleepers == 1 })
        var others = [Self.history, Self.history, Self.history]
        others[0].endpoint = .subscriptionStatuses
        others[1].bundleID = "com.example.b"
        others[2].environment = .sandbox
        for other in others {
            #expect(await budget.acquire(other, priority: .background, deadline: Self.t) == .granted, "\(other)")
        }
        clock.set(until - 1)
        try #require(await eventually { clock.sleepers == 1 })
        #expect(budget.waiting == 1)
        clock.set(until)
        #expect(await held.value == .granted)
        #expect(clock.now == until)
    }

    // MARK: Through the client

    static func client(
        _ transport: any HTTPTransport,
        budget: AppleAPIBudget,
        clock: Clock,
        key: PrivateKey,
        waitMillis: Int64 = 60_000
    ) throws -> AppStoreAPIClient {
        AppStoreAPIClient(
            configuration: AppStoreAPIClient.Configuration(
                keyID: "KEY",
                issuerID: "ISSUER",
                bundleID: Self.history.bundleID,
                privateKey: key,
                maxAttempts: 1
            ),
            transport: transport,
            adapter: V2Adapter(verifier: AppleJWSVerifier(anchors: try .apple()), apps: nil),
            now: { clock.now },
            sleep: { _ in },
            jitter: { 0 },
            budget: budget,
            budgetWaitMillis: waitMillis
        )
    }

    @Test func a429OfOneCallerHoldsTheOthersUntilApplesInstant() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        let until = Self.t + 3_000
        let apple = ScriptedTransport { request throws(HTTPClientError) in
            if request.url.contains("first") {
                return HTTPResponse(
                    status: 429,
                    headers: [HTTPHeader("Retry-After", String(until))],
                    body: Array(#"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#.utf8)
                )
            }
            return HTTPResponse(status: 404, body: Array(#"{"errorCode":4040010,"errorMessage":"Not found."}"#.utf8))
        }
        let key = try PrivateKey.generateP256()
        let reconcile = try Self.client(apple, budget: budget, clock: clock, key: key)
        let receipts = try Self.client(apple, budget: budget, clock: clock, key: key).with(priority: .request)
        do {
            _ = try await reconcile.transactionInfo(transactionID: "first", environment: .production)
            Issue.record("expected a 429")
        } catch {
            #expect(error.code == .rateLimited)
        }
        let second = Task { () -> AppStoreAPIError.Code? in
            do throws(AppStoreAPIError) {
                _ = try await receipts.transactionInfo(transactionID: "second", environment: .production)
                return nil
            } catch { return error.code }
        }
        try #require(await eventually { budget.waiting == 1 })
        #expect(apple.requests.count == 1, "held until Apple's instant")
        // Another endpoint of the same app goes on.
        _ = try? await receipts.transactionHistoryPage(transactionID: "x", environment: .production, revision: nil)
        #expect(apple.requests.count == 2)
        clock.set(until)
        #expect(await second.value == .notFound)
        #expect(apple.requests.count == 3)
    }

    @Test func aCallGivenNoTurnBeforeItsDeadlineFailsBudgetExhaustedRetryable() async throws {
        let clock = Clock(Self.t)
        let budget = Self.budget(clock)
        budget.rateLimited(Self.history, until: Self.t + 120_000)
        let apple = ScriptedTransport(results: [])
        let client = try Self.client(apple, budget: budget, clock: clock, key: try PrivateKey.generateP256())
        do {
            _ = try await client.transactionHistoryPage(transactionID: "1", environment: .production, revision: nil)
            Issue.record("expected budget_exhausted")
        } catch {
            #expect(error.code == .budgetExhausted)
            #expect(error.code.rawValue == "budget_exhausted")
            #expect(error.retryAfter == .seconds(120))
            #expect(error.attempts == 0)
        }
        #expect(apple.requests.isEmpty, "nothing was sent")
        // The task's context (the receipt path's request deadline) bounds the wait as well.
        let context = AppStoreAPICallContext(priority: .request, deadline: Self.t + 1_000)
        let code = await AppStoreAPICallContext.$current.withValue(context) { () async -> AppStoreAPIError.Code? in
            do throws(AppStoreAPIError) {
                _ = try await client.with(maxAttempts: 1).transactionHistoryPage(
                    transactionID: "1",
                    environment: .production,
                    revision: nil
                )
                return nil
            } catch { return error.code }
        }
        #expect(code == .budgetExhausted)
    }

    @Test func theRateLimitsAreConfiguredUnderAppStoreAPI() throws {
        let config = try GatewayConfigTests.parse(
            String(
                #"""
                {"app_store_api": {"rate_limits": {"margin": 0.5, "max_wait": "10s",
                  "per_second": {"transaction_history": 100, "look_up_order_id": 20}}}}
                """#
            )
        )
        let limits = config.appStoreAPI.rateLimits
        #expect(limits.rate(.transactionHistory, .production) == 50)
        #expect(limits.rate(.lookUpOrderID, .sandbox) == 1)
        #expect(limits.rate(.subscriptionStatuses, .production) == 25)
        #expect(limits.maxWaitMillis == 10_000)
        for bad in [
            #"{"margin": 0}"#, #"{"margin": 1.5}"#, #"{"per_second": {"transaction_histroy": 5}}"#,
            #"{"per_second": {"transaction_history": "fast"}}"#, #"{"max_wait": "2h"}"#, #"{"burst": 5}"#,
        ] {
            #expect(throws: ConfigError.self, "\(bad)") {
                try GatewayConfigTests.parse(#"{"app_store_api": {"rate_limits": \#(bad)}}"#)
            }
        }
    }
}

/// The budget against the simulator's fake Apple with Apple's rate limits on (docs/simulator.md, "Apple's rate
/// limits"), on the fake's clock: many customers' histories asked at once get no 429 — while the same burst without
/// the budget does.
@Suite struct AppleAPIBudgetFakeAppleTests {
    typealias Clock = AppleAPIBudgetTests.Clock

    /// Counts the turns the budget gave.
    final class Counted: AppStoreAPIBudget {
        let inner: AppleAPIBudget
        let granted = Mutex(0)
        init(_ inner: AppleAPIBudget) { self.inner = inner }

        func acquire(
            _ call: AppStoreAPICall,
            priority: AppStoreAPICallPriority,
            deadline: Int64
        ) async
            -> AppStoreAPIBudgetGrant
        {
            let grant = await inner.acquire(call, priority: priority, deadline: deadline)
            if grant == .granted { granted.withLock { $0 += 1 } }
            return grant
        }

        func rateLimited(_ call: AppStoreAPICall, until: Int64?) { inner.rateLimited(call, until: until) }
    }

    final class Tally: Sendable {
        private let counts = Mutex((done: 0, failures: 0))
        func finish(ok: Bool) { counts.withLock { $0 = ($0.done + 1, $0.failures + (ok ? 0 : 1)) } }
        var done: Int { counts.withLock { $0.done } }
        var failures: Int { counts.withLock { $0.failures } }
    }

    struct Run {
        var answered429: Int64
        var calls: Int64
        var failures: Int
        var elapsed: Int64
    }

    /// `customers` histories asked at once of the fake with Apple's sandbox rates on, each client making one attempt;
    /// with the budget, the clock moves only when every call given a turn has been answered.
    static func run(customers: Int, budgeted: Bool) async throws -> Run {
        try await Sim.withPKI { pki in
            let clock = Clock(Sim.t0 + 250)
            let apple = FakeApple(pki: pki, now: { clock.now })
            var ids: [String] = []
            for i in 0..<customers {
                let plan = try Sim.plan("auto-renew", pki: pki, firstID: Int64(1 + i * 1_000))
                let s = try #require(plan.emissions.last).subscription
                ids.append(s.originalTransactionID)
                try apple.store.update { $0.subscriptions[s.originalTransactionID] = s }
            }
            let set = apple.handle(
                FakeAppleRequest(method: "POST", path: "/fake/api/apple-rate-limits", query: ["set": "sandbox"])
            )
            try #require(set.status == 200)
            let transport = ScriptedTransport { request throws(HTTPClientError) in
                let r = apple.handle(FakeAppleRequest(request))
                return HTTPResponse(status: r.status, headers: r.headers.map { HTTPHeader($0.0, $0.1) }, body: r.body)
            }
            let budget = Counted(AppleAPIBudgetTests.budget(clock))
            let client = AppStoreAPIClient(
                configuration: AppStoreAPIClient.Configuration(
                    productionURL: "https://api.fake-production.example",
                    sandboxURL: "https://api.fake-sandbox.example",
                    keyID: SimulatorPKI.apiKeyID,
                    issuerID: SimulatorPKI.issuerID,
                    bundleID: Sim.bundleID,
                    privateKey: pki.apiKey,
                    maxAttempts: 1
                ),
                transport: transport,
                adapter: try Sim.adapter(trusting: pki),
                now: { clock.now },
                sleep: { _ in },
                jitter: { 0 },
                budget: budgeted ? budget : nil,
                budgetWaitMillis: 3_600_000
            )
            let tally = Tally()
            for id in ids {
                Task { @Sendable in
                    let ok: Bool
                    do throws(AppStoreAPIError) {
                        _ = try await client.transactionHistory(transactionID: id, environment: .sandbox)
                        ok = true
                    } catch { ok = false }
                    tally.finish(ok: ok)
                }
            }
            while tally.done < customers {
                try #require(
                    await eventually("every call given a turn answered, the rest waiting") {
                        tally.done == customers
                            || (transport.requests.count == budget.granted.withLock { $0 } && clock.sleepers > 0)
                    }
                )
                if let wake = clock.nextWake { clock.set(wake) }
            }
            let stats = try #require(
                try JSONParser.parse(apple.handle(FakeAppleRequest(method: "GET", path: "/fake/api/stats")).body)
                    .objectValue
            )
            return Run(
                answered429: try #require(stats["answered_429"]?.int64Value),
                calls: try #require(stats["calls"]?.int64Value),
                failures: tally.failures,
                elapsed: clock.now - (Sim.t0 + 250)
            )
        }
    }

    @Test func manyCustomersHistoriesAtOnceGetNo429WithinTheBudget() async throws {
        let budgeted = try await Self.run(customers: 40, budgeted: true)
        #expect(budgeted.answered429 == 0)
        #expect(budgeted.failures == 0)
        #expect(budgeted.calls == 40)
        // Sandbox: Apple's 5 a second, the budget's 4 (and 1 at once): 40 calls take about 10 s of the clock.
        #expect(budgeted.elapsed >= 9_000 && budgeted.elapsed <= 10_500, "\(budgeted.elapsed) ms")
        let unbudgeted = try await Self.run(customers: 40, budgeted: false)
        #expect(unbudgeted.answered429 > 0, "the fake does refuse a burst over Apple's rate")
    }
}
