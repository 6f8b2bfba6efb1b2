public import Canonical
public import ServiceKit
internal import Store
import Synchronization

/// `iap-gateway receipts prefetch` (docs/commands.md; docs/operations.md, "The receipt path at scale"): the histories
/// of every customer the gateway knows for one app and environment — the original transaction ids of its journaled
/// subscriptions and of the receipts compared in `shadow` — fetched before a cutover, so that the old backend's
/// requests find them stored. Customers whose stored history is fresh (``ReceiptSettings/historyMaxAgeMillis``) are
/// skipped; the others are fetched at background priority in the process's budget of calls to Apple (the command
/// gives it its share), several at once, read from the store a page at a time in the order of their ids: memory is
/// bounded whatever the number of customers, and ``Progress/after`` is where a later run goes on from.
public struct ReceiptPrefetch: Sendable {
    /// What one run does.
    public struct Options: Sendable {
        public var bundleID: String
        public var environment: AppStoreEnvironment
        /// Go on after this original transaction id (a run's ``Progress/after``); `""`: from the first.
        public var after = ""
        /// Customers gone through, at most (nil: every one).
        public var limit: Int?
        /// Customers fetched at once.
        public var concurrency = 16
        /// Customers read from the store at a time.
        public var pageSize = 1_000
        /// A progress line at most this often (ms), and one at the end.
        public var progressEveryMillis: Int64 = 10_000
        /// So many failures in a row end the run (Apple down, the key refused): what follows would fail the same way.
        public var maxFailuresInARow = 100

        public init(bundleID: String, environment: AppStoreEnvironment) {
            (self.bundleID, self.environment) = (bundleID, environment)
        }
    }

    /// A progress line (JSON on standard output), and the run's result.
    public struct Progress: Sendable, Encodable, Equatable {
        public var bundleID: String
        public var environment: String
        /// `running`; at the end `complete` (every customer gone through), `limit` (`--limit` reached), `stopped`
        /// (a signal), `failing` (``Options/maxFailuresInARow``), `store_unavailable`.
        public var state = "running"
        /// Customers known at the start (from the resume point on).
        public var total = 0
        /// Customers gone through: fetched, skipped or failed.
        public var done = 0
        public var fetched = 0
        /// Fresh already.
        public var skipped = 0
        public var failed = 0
        /// Failures by code (`budget_exhausted`, `capped`, Apple's codes, …).
        public var failures: [String: Int] = [:]
        /// Calls made to Apple, and those of them to Get Transaction History (the busier endpoint).
        public var calls = 0
        public var historyCalls = 0
        public var elapsedSeconds = 0.0
        /// The resume point: every customer up to this id is done (`--after`); nil before the first.
        public var after: String?
        /// The budget of Get Transaction History calls per second this run spends (its share).
        public var budgetPerSecond = 0.0
        /// Get Transaction History calls per second made so far.
        public var callsPerSecond = 0.0
        /// Hours the customers left take at the budget, at the calls a fetched customer has cost so far (one until
        /// one has been fetched).
        public var projectedHours = 0.0

        public init(bundleID: String, environment: String) {
            (self.bundleID, self.environment) = (bundleID, environment)
        }

        package enum CodingKeys: String, CodingKey {
            case bundleID = "bundle_id"
            case environment, state, total, done, fetched, skipped, failed, failures, calls
            case historyCalls = "history_calls"
            case elapsedSeconds = "elapsed_seconds"
            case after
            case budgetPerSecond = "budget_per_second"
            case callsPerSecond = "calls_per_second"
            case projectedHours = "projected_hours"
        }
    }

    /// Why a run cannot start.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Runs to the end of the customers, the limit, the task's cancellation (a signal: the fetches running stop,
    /// their pages kept, and the resume point says where to go on) or too many failures in a row; `progress` gets a
    /// line at most every ``Options/progressEveryMillis`` and the last one, which is also returned.
    /// `receipts`: the service's receipt path; `rateLimits`: the budget the process's calls take their turns from.
    public static func run(
        receipts: ReceiptEndpoint,
        rateLimits: AppleRateLimitSettings,
        options: Options,
        progress: @escaping @Sendable (Progress) -> Void
    ) async throws(Refusal) -> Progress {
        guard let histories = receipts.histories else {
            throw Refusal(message: "receipts prefetch needs app_store_api (issuer_id, key_id, private_key_env)")
        }
        guard histories.settings.historyMaxAgeMillis > 0 else {
            throw Refusal(message: "receipts.history_max_age is 0s: histories are not kept for answers")
        }
        let rate = rateLimits.rate(.transactionHistory, options.environment)
        return await Run(histories: histories, store: receipts.store, options: options, rate: rate, progress: progress)
            .go()
    }

    /// One run's state: the tally, and which customers are done in the order they were read.
    private final class Run: Sendable {
        let histories: ReceiptHistories
        let store: any GatewayStore
        let options: Options
        let progress: @Sendable (Progress) -> Void
        let started: Int64
        let tally: Mutex<Tally>

        struct Tally {
            package var line: Progress
            package var order = DoneOrder()
            package var failuresInARow = 0
            package var lastLine: Int64
        }

        init(
            histories: ReceiptHistories,
            store: any GatewayStore,
            options: Options,
            rate: Double,
            progress: @escaping @Sendable (Progress) -> Void
        ) {
            (self.histories, self.store, self.options, self.progress) = (histories, store, options, progress)
            started = histories.now()
            var line = Progress(bundleID: options.bundleID, environment: options.environment.rawValue)
            line.budgetPerSecond = (rate * 1_000).rounded() / 1_000
            line.after = options.after.isEmpty ? nil : options.after
            tally = Mutex(Tally(line: line, lastLine: started))
        }

        func go() async -> Progress {
            let (bundleID, environment, after) = (options.bundleID, options.environment, options.after)
            if let total = try? await store.read({ tx in
                try tx.receiptCustomerCount(bundleID: bundleID, environment: environment, after: after)
            }) {
                tally.withLock { $0.line.total = options.limit.map { min($0, total) } ?? total }
            }
            // The walk, and a line every so often even while no customer finishes (Apple slow, the budget spent).
            let state = await withTaskGroup(of: String?.self) { group in
                group.addTask { await self.walk() }
                group.addTask {
                    await self.tick()
                    return nil
                }
                var state = "complete"
                while let next = await group.next() {
                    guard let ended = next else { continue }
                    state = ended
                    group.cancelAll()
                }
                return state
            }
            let last = tally.withLock { t in
                if t.line.state == "running" { t.line.state = state }
                update(&t.line)
                return t.line
            }
            progress(last)
            return last
        }

        /// Reads the customers page by page and fetches the ones not fresh, `concurrency` at once; the state it ended in.
        private func walk() async -> String {
            var cursor = options.after
            var taken = 0
            return await withTaskGroup(of: Void.self) { group in
                var running = 0
                while true {
                    let (bundleID, environment, after, size) = (
                        options.bundleID, options.environment, cursor, options.pageSize
                    )
                    guard
                        let page = try? await store.read({ tx in
                            try tx.receiptCustomers(
                                bundleID: bundleID,
                                environment: environment,
                                after: after,
                                limit: size
                            )
                        })
                    else {
                        await group.waitForAll()
                        // A read the stop cut short is no failure of the store.
                        return Task.isCancelled ? "stopped" : OutcomeCode.storeUnavailable.rawValue
                    }
                    guard !page.isEmpty else {
                        await group.waitForAll()
                        return Task.isCancelled ? "stopped" : "complete"
                    }
                    for customer in page {
                        if let limit = options.limit, taken >= limit {
                            await group.waitForAll()
                            return "limit"
                        }
                        if running >= options.concurrency {
                            await group.next()
                            running -= 1
                        }
                        if Task.isCancelled {
                            await group.waitForAll()
                            return "stopped"
                        }
                        if tally.withLock({ $0.failuresInARow >= options.maxFailuresInARow }) {
                            await group.waitForAll()
                            return "failing"
                        }
                        taken += 1
                        let id = customer.originalTransactionID
                        let seq = tally.withLock { $0.order.begin(id) }
                        if let fetched = customer.historyFetchedAt,
                            fetched >= histories.now().clampedSubtracting(histories.settings.historyMaxAgeMillis)
                        {
                            finish(seq) { $0.skipped += 1 }
                            continue
                        }
                        running += 1
                        group.addTask { await self.fetch(id, seq) }
                    }
                    cursor = page.last?.originalTransactionID ?? cursor
                }
            }
        }

        /// One customer's fetch; Apple's `Retry-After` (or no turn in the budget) is waited out and the customer
        /// asked again, a few times.
        private func fetch(_ id: String, _ seq: Int) async {
            let key = ReceiptHistoryKey(bundleID: options.bundleID, environment: options.environment, customer: id)
            var calls: [String: Int] = [:]
            var outcome: Result<Void, ReceiptHistories.Failure> = .success(())
            for attempt in 0..<5 {
                let done = await histories.prefetch(key)
                calls.merge(done.calls, uniquingKeysWith: +)
                outcome = done.result
                guard case .failure(let failure) = done.result,
                    failure.code == "rate_limited" || failure.code == "budget_exhausted", !Task.isCancelled
                else { break }
                let wait = (histories.pausedUntil(key) ?? histories.now()) - histories.now()
                await histories.sleep(max(wait, 1_000 << attempt))
            }
            if Task.isCancelled, case .failure = outcome {
                // Stopped mid-way: not done, so the resume point stays before it.
                tally.withLock { t in
                    t.line.calls += calls.values.reduce(0, +)
                    t.line.historyCalls += calls["transaction_history"] ?? 0
                }
                return
            }
            finish(seq) { line in
                line.calls += calls.values.reduce(0, +)
                line.historyCalls += calls["transaction_history"] ?? 0
                switch outcome {
                case .success: line.fetched += 1
                case .failure(let failure):
                    line.failed += 1
                    line.failures[failure.code, default: 0] += 1
                }
            }
            tally.withLock { t in
                if case .failure = outcome { t.failuresInARow += 1 } else { t.failuresInARow = 0 }
            }
        }

        /// A line whenever ``Options/progressEveryMillis`` passed since the last one, until cancelled.
        private func tick() async {
            while !Task.isCancelled {
                await histories.sleep(options.progressEveryMillis)
                guard !Task.isCancelled else { return }
                let time = histories.now()
                let line = tally.withLock { t -> Progress? in
                    guard time - t.lastLine >= options.progressEveryMillis else { return nil }
                    t.lastLine = time
                    update(&t.line)
                    return t.line
                }
                if let line { progress(line) }
            }
        }

        /// Counts a customer done, moves the resume point, and prints a line when one is due.
        private func finish(_ seq: Int, _ count: (inout Progress) -> Void) {
            let time = histories.now()
            let line = tally.withLock { t -> Progress? in
                count(&t.line)
                t.line.done += 1
                if let after = t.order.finish(seq) { t.line.after = after }
                guard time - t.lastLine >= options.progressEveryMillis else { return nil }
                t.lastLine = time
                update(&t.line)
                return t.line
            }
            if let line { progress(line) }
        }

        /// The figures derived from the counts.
        private func update(_ line: inout Progress) {
            let elapsed = Double(max(0, histories.now() - started)) / 1_000
            line.elapsedSeconds = (elapsed * 1_000).rounded() / 1_000
            line.callsPerSecond = elapsed > 0 ? ((Double(line.historyCalls) / elapsed) * 100).rounded() / 100 : 0
            let perCustomer = line.fetched > 0 ? Double(line.historyCalls) / Double(line.fetched) : 1
            let left = Double(max(0, line.total - line.done))
            line.projectedHours =
                line.budgetPerSecond > 0
                ? ((left * perCustomer / line.budgetPerSecond / 3_600) * 100).rounded() / 100 : 0
        }
    }
}

/// Which customers of a run are done, in the order they were read: the resume point is the last id before the first
/// not done, so a run stopped mid-way goes on without skipping one that was still being fetched.
package struct DoneOrder {
    private var ids: [Int: String] = [:]
    private var finished: Set<Int> = []
    private var next = 0
    private var oldest = 0

    /// A customer read: its place in the order.
    package mutating func begin(_ id: String) -> Int {
        ids[next] = id
        next += 1
        return next - 1
    }

    /// A customer done: the new resume point, when it moved.
    package mutating func finish(_ seq: Int) -> String? {
        finished.insert(seq)
        var moved: String?
        while finished.remove(oldest) != nil {
            moved = ids.removeValue(forKey: oldest)
            oldest += 1
        }
        return moved
    }
}
