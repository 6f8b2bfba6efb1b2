internal import Canonical
package import ServiceKit
package import Store
import Synchronization
package import V2Adapter

/// Customers' histories for the receipt path (docs/architecture.md, "The receipt path"; docs/operations.md, "Moving
/// the receipt path"): from the store while fresh (``ReceiptSettings/historyMaxAgeMillis``), else from Apple — once
/// per customer at a time, whatever asks: requests in this process wait for the one fetch in flight, other instances
/// of a shared store wait for the instance that claimed it.
///
/// A fetch walks Get Transaction History a page at a time and keeps each page in the store as it comes, with Apple's
/// revision, so that a fetch cut short — a request's deadline, a restart, Apple's 429, another instance taking over —
/// goes on from there (Apple sends a transaction it changed meanwhile again, later: the later view wins). A fetch still
/// keeping pages when its request's ``ReceiptSettings/fetchTimeoutMillis`` passes goes on in the background (at most
/// ``ReceiptSettings/backgroundFetches`` at once, each within ``ReceiptSettings/backgroundFetchTimeoutMillis``) while
/// the request is answered `21005`; the next request finds the history stored. A customer without a stored history
/// whose request found no turn in Apple's budget (or Apple's `Retry-After`, or no background place free) is queued
/// for a fetch that no request waits for (``enqueue(_:)``: at most ``ReceiptSettings/fetchQueue`` customers, each
/// once, started as background places free up, behind the requests in Apple's budget), so the old backend's retry
/// finds it stored; so is a stale history's refresh with no place free. Every call to Apple is counted per
/// customer and hour (``ReceiptSettings/customerCallsPerHour``). A 429 pauses the app and environment's fetches for
/// Apple's `Retry-After`; a fetch that had kept pages waits it out and goes on. ``stop()`` ends every fetch (the
/// service's shutdown).
package final class ReceiptHistories: Sendable {
    /// Why no history could be had: Apple is down, rate limiting or slow, the customer's calls for the hour are used
    /// up, or another instance held the fetch too long. Always retryable by the client.
    package struct Failure: Error, Sendable {
        package var code: String
        package var message: String
    }

    package enum Outcome: String {
        /// From the store, fetched less than the maximum age ago.
        case fresh
        /// Fetched from Apple now.
        case fetched
        /// Fetched now by another request or instance, waited for.
        case shared
        /// From the store, older than the maximum age: the refresh could not be had in time (Apple's 429, the
        /// customer's calls for the hour used up, Apple slow or down; it may go on in the background).
        case stale
    }

    package let store: any GatewayStore
    package let source: any ReceiptHistorySource
    package let settings: ReceiptSettings
    package let now: @Sendable () -> Int64
    /// Waits so many milliseconds, or less when the task is cancelled (the wall clock's `Task.sleep` in the service).
    package let sleep: @Sendable (Int64) async -> Void
    package let owner: String
    package let metrics: Metrics
    /// How often a request waiting for another instance's fetch looks at the store.
    package let pollMillis: Int64 = 25
    /// The fetches running in this process, one per customer.
    private let flights: Mutex<Flights>
    /// Per app and environment (`bundle|environment`): no fetch before this time (Apple's `Retry-After`).
    private let pausedUntil = Mutex<[String: Int64]>([:])
    /// Histories already decoded, by customer, with the fetch time and size of the stored JSON they were decoded from:
    /// a stored history is decoded again only when another fetch replaced it. At most 4,096, from 16 MiB of JSON.
    private let decoded = BoundedCache<ReceiptHistoryKey, (fetchedAt: Int64, bytes: Int, history: CustomerHistory)>(
        maxEntries: 4_096,
        maxCost: 16 << 20
    )

    private struct Flights {
        var running: [ReceiptHistoryKey: Flight] = [:]
        /// Flights holding one of the ``ReceiptSettings/backgroundFetches`` places: going on past every request that
        /// waited for them, or started from the queue.
        var background = 0
        var stopping = false
        /// Requests waiting for a fetch now (``ReceiptSettings/maxWaitingForApple``).
        var waiting = 0
        /// Customers waiting for a background place.
        var queue: ReceiptFetchQueue
        /// A drain of the queue is due when Apple's `Retry-After` for an app ends.
        var drainScheduled = false
    }

    package init(
        store: any GatewayStore,
        source: any ReceiptHistorySource,
        settings: ReceiptSettings,
        now: @escaping @Sendable () -> Int64,
        sleep: @escaping @Sendable (Int64) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) },
        owner: String,
        metrics: Metrics = Metrics()
    ) {
        (self.store, self.source, self.settings, self.now, self.sleep) = (store, source, settings, now, sleep)
        (self.owner, self.metrics) = (owner, metrics)
        flights = Mutex(Flights(queue: ReceiptFetchQueue(capacity: settings.fetchQueue)))
    }

    /// The customer's history, found through `transactionID` (the key's customer), within the request's
    /// ``ReceiptSettings/fetchTimeoutMillis``.
    package func history(_ key: ReceiptHistoryKey) async -> (Result<CustomerHistory, Failure>, Outcome) {
        let stored = try? await self.stored(key)
        if let fresh = stored?.fresh { return (.success(fresh), .fresh) }
        // Past the maximum age, with `stale_wait` 0 (the default), the stored history answers at once and its refresh
        // goes on in the background, behind the requests in Apple's budget: a refresh is wanted, never a wait or a
        // failure while the customer's history, with the events journaled since laid over it, can answer.
        let keptForAnswers = settings.historyMaxAgeMillis > 0
        if keptForAnswers, settings.staleWaitMillis == 0, let stored, let stale = stored.history {
            refreshInBackground(key, stored.row)
            return (.success(stale), .stale)
        }
        let patience =
            keptForAnswers && stored?.history != nil ? settings.staleWaitMillis : settings.fetchTimeoutMillis
        let deadline = now().clampedAdding(patience)
        // Past the maximum age a refresh is wanted and waited for, up to the request's deadline; when it cannot be
        // had (Apple's 429, the customer's calls used up, Apple slow or down), the stored history answers — with the
        // events journaled since laid over it — rather than a `21005`. Not started again while one runs: the request
        // waits for it.
        if flights.withLock({ $0.running[key] }) == nil, let refusal = refusal(key, stored?.row) {
            if let stale = stored?.history { return (.success(stale), .stale) }
            if Self.queuedAfter.contains(refusal.code) { enqueue(key) }
            return (.failure(refusal), .fetched)
        }
        // Requests waiting for Apple hold the receipt path's places while they wait; beyond
        // ``ReceiptSettings/maxWaitingForApple`` a request is answered at once — from the stored history, else `21005`
        // with its customer queued — so that the customers whose history is stored always find a place.
        let waits = flights.withLock { f -> Bool in
            guard f.waiting < settings.maxWaitingForApple else { return false }
            f.waiting += 1
            return true
        }
        guard waits else {
            if let stored, let stale = stored.history {
                refreshInBackground(key, stored.row)
                return (.success(stale), .stale)
            }
            enqueue(key)
            return (
                .failure(
                    Failure(
                        code: "queued",
                        message:
                            "receipts.max_waiting_for_apple requests wait for Apple already; the customer is queued"
                    )
                ), .fetched
            )
        }
        defer { flights.withLock { $0.waiting -= 1 } }
        let start = flights.withLock { f -> (Flight, Bool)? in
            if let running = f.running[key] {
                running.join()
                return (running, false)
            }
            guard !f.stopping else { return nil }
            let flight = Flight()
            f.running[key] = flight
            flight.join()
            flight.start { await self.run(key, flight) }
            return (flight, true)
        }
        guard let (flight, mine) = start else {
            return (.failure(Failure(code: "stopping", message: "the gateway is stopping")), .fetched)
        }
        let result = await wait(for: flight, until: deadline)
        let left = leave(flight, answered: result != nil)
        if case .success(let history)? = result { return (.success(history), mine ? .fetched : .shared) }
        // The refresh failed or outlasted the deadline (it may go on in the background): the stored history.
        if let stale = stored?.history { return (.success(stale), .stale) }
        switch result {
        case .success(let history)?: return (.success(history), mine ? .fetched : .shared)
        case .failure(let failure)?:
            if Self.queuedAfter.contains(failure.code) { enqueue(key) }
            return (.failure(failure), .fetched)
        case nil:
            // Cut short with no background place to go on in, or before it kept a page: queued, so that the retry
            // finds it (from the pages kept).
            if left == .cancelled { enqueue(key) }
            let message =
                left == .background
                ? "the App Store Server API is still being asked; the history is kept when it is whole"
                : "the App Store Server API did not answer within \(settings.fetchTimeoutMillis) ms"
            return (.failure(Failure(code: left == .background ? "background" : "timeout", message: message)), .fetched)
        }
    }

    /// Queues a refresh of `key` that no request waits for — unless the customer's calls for the hour are used up
    /// (then the next request asks again).
    private func refreshInBackground(_ key: ReceiptHistoryKey, _ row: StoredReceiptHistory) {
        if let refusal = refusal(key, row, counting: false), refusal.code == "capped" { return }
        enqueue(key)
    }

    /// Why a request found no history that queues its customer: no turn in Apple's budget in time, Apple's
    /// `Retry-After`, Apple too slow for the request's deadline.
    package static let queuedAfter: Set<String> = ["budget_exhausted", "rate_limited", "timeout"]

    /// Queues a fetch of `key`'s history that no request waits for (docs/operations.md, "The receipt path at scale"),
    /// behind the customers queued before: it starts when one of the ``ReceiptSettings/backgroundFetches`` places
    /// is free and Apple's `Retry-After` for the app has passed, and its calls take background turns in Apple's
    /// budget. A customer is queued once (and not while its fetch runs); with ``ReceiptSettings/fetchQueue``
    /// customers waiting, it is dropped (`iapgw_receipt_history_queued_total{outcome="dropped"}`), and the next
    /// request asks again.
    package func enqueue(_ key: ReceiptHistoryKey) {
        // No background place (or no queue) configured: nothing would ever start it.
        guard settings.backgroundFetches > 0, settings.fetchQueue > 0 else { return }
        let pushed = flights.withLock { f -> ReceiptFetchQueue.Pushed in
            guard !f.stopping, f.running[key] == nil else { return .present }
            return f.queue.push(key)
        }
        switch pushed {
        case .queued: metrics.increment(.receiptHistoryQueuedTotal, ["outcome": "queued"])
        case .dropped: metrics.increment(.receiptHistoryQueuedTotal, ["outcome": "dropped"])
        case .present: break
        }
        drain()
    }

    /// Customers queued for a fetch now (tests wait for them).
    package var queued: Int { flights.withLock { $0.queue.count } }

    /// Starts queued fetches while background places are free; a customer whose app Apple paused stays queued, and
    /// a drain is due when the pause ends.
    private func drain() {
        let time = now()
        let wake = flights.withLock { f -> Int64? in
            var deferred: [ReceiptHistoryKey] = []
            var wake: Int64?
            while !f.stopping, f.background < settings.backgroundFetches, let key = f.queue.pop() {
                guard f.running[key] == nil else { continue }
                if let until = pausedUntil.withLock({ $0[Self.pauseKey(key)] }), time < until {
                    deferred.append(key)
                    wake = min(wake ?? until, until)
                    continue
                }
                startBackground(key, &f)
            }
            for key in deferred { _ = f.queue.push(key) }
            metrics.set(.receiptHistoryQueue, [:], Double(f.queue.count))
            guard let wake, !f.drainScheduled, !f.stopping else { return nil }
            f.drainScheduled = true
            return wake
        }
        guard let wake else { return }
        let sleep = self.sleep
        Task {
            await sleep(max(1, wake - time))
            flights.withLock { $0.drainScheduled = false }
            drain()
        }
    }

    /// A fetch of `key` in one of the background places (under the flights' lock).
    private func startBackground(_ key: ReceiptHistoryKey, _ f: inout Flights) {
        let flight = Flight()
        flight.state.withLock {
            $0.background = true
            $0.place = true
        }
        f.running[key] = flight
        f.background += 1
        metrics.set(.receiptHistoryBackground, [:], Double(f.background))
        flight.start { await self.run(key, flight) }
    }

    /// What one prefetch of a customer did (``prefetch(_:)``).
    package struct Prefetched: Sendable {
        package var result: Result<Void, Failure>
        /// Calls made to Apple, by endpoint (`transaction_history`, `subscription_statuses`).
        package var calls: [String: Int]
    }

    /// Fetches `key`'s history now at background priority, whatever its age, and waits for it (`receipts
    /// prefetch`, docs/commands.md): outside the background places, within ``ReceiptSettings/backgroundFetchTimeoutMillis``.
    /// A fetch already running for the customer is waited for instead. Cancelling the task stops the fetch (its pages
    /// kept).
    package func prefetch(_ key: ReceiptHistoryKey) async -> Prefetched {
        let start = flights.withLock { f -> (Flight, Bool)? in
            if let running = f.running[key] {
                running.join()
                return (running, false)
            }
            guard !f.stopping else { return nil }
            let flight = Flight()
            flight.state.withLock { $0.background = true }
            f.running[key] = flight
            flight.join()
            flight.start { await self.run(key, flight) }
            return (flight, true)
        }
        guard let (flight, mine) = start else {
            return Prefetched(
                result: .failure(Failure(code: "stopping", message: "the gateway is stopping")),
                calls: [:]
            )
        }
        let result = await withTaskCancellationHandler {
            () async -> Result<CustomerHistory, Failure>? in
            while !Task.isCancelled {
                let seen = flight.snapshot
                if let result = seen.result { return result }
                await flight.changed(since: seen.version)
            }
            return flight.snapshot.result
        } onCancel: {
            if mine { flight.cancel() }
        }
        _ = leave(flight, answered: result != nil)
        let calls = flight.state.withLock { $0.calls }
        switch result {
        case .success?: return Prefetched(result: .success(()), calls: calls)
        case .failure(let failure)?: return Prefetched(result: .failure(failure), calls: calls)
        case nil:
            return Prefetched(
                result: .failure(Failure(code: "stopped", message: "the fetch was stopped; its pages are kept")),
                calls: calls
            )
        }
    }

    /// Until when Apple paused the fetches of `key`'s app and environment (its `Retry-After`), if it did.
    package func pausedUntil(_ key: ReceiptHistoryKey) -> Int64? {
        pausedUntil.withLock { $0[Self.pauseKey(key)] }.flatMap { $0 > now() ? $0 : nil }
    }

    /// Ends every fetch (their pages kept, their claims given up) and waits for them; no fetch starts after it.
    package func stop() async {
        while true {
            let flights = self.flights.withLock { f in
                f.stopping = true
                return Array(f.running.values)
            }
            guard !flights.isEmpty else { return }
            for flight in flights { flight.cancel() }
            for flight in flights { await flight.finished() }
        }
    }

    /// Fetches running in this process now (tests wait for them).
    package var running: Int { flights.withLock { $0.running.count } }

    // MARK: The store's history

    /// The stored history of a customer, decoded, and whether it is fresh.
    private struct Stored {
        var row: StoredReceiptHistory
        var history: CustomerHistory?
        var fresh: CustomerHistory?
    }

    private func stored(_ key: ReceiptHistoryKey) async throws -> Stored? {
        guard let row = try await store.readStatement({ tx in try tx.receiptHistory(key) }) else { return nil }
        var stored = Stored(row: row)
        guard let json = row.json, let fetched = row.fetchedAt else { return stored }
        if let known = decoded[key], known.fetchedAt == fetched, known.bytes == json.count {
            stored.history = known.history
        } else if let history = CustomerHistory.decode(json) {
            decoded.insert((fetched, json.count, history), for: key, cost: json.count)
            stored.history = history
        }
        if fetched >= now().clampedSubtracting(settings.historyMaxAgeMillis) { stored.fresh = stored.history }
        return stored
    }

    /// The history when it was fetched within the maximum age.
    private func cached(_ key: ReceiptHistoryKey) async throws -> CustomerHistory? {
        try await stored(key)?.fresh
    }

    /// Why no fetch may start now: Apple's `Retry-After` for the app, or the customer's calls for the hour used up.
    private func refusal(_ key: ReceiptHistoryKey, _ row: StoredReceiptHistory?, counting: Bool = true) -> Failure? {
        let time = now()
        if let until = pausedUntil.withLock({ $0[Self.pauseKey(key)] }), time < until {
            return Failure(code: "rate_limited", message: "Apple asked to wait until \(until)")
        }
        if let row, let since = row.callsSince, since > time.clampedSubtracting(Self.hourMillis),
            row.calls >= settings.customerCallsPerHour
        {
            if counting {
                metrics.increment(.receiptHistoryCallsTotal, ["endpoint": "transaction_history", "outcome": "capped"])
            }
            return Failure(code: "capped", message: "the customer's calls to Apple for this hour are used up")
        }
        return nil
    }

    package static let hourMillis: Int64 = 3_600_000

    package static func pauseKey(_ key: ReceiptHistoryKey) -> String { "\(key.bundleID)|\(key.environment.rawValue)" }

    // MARK: Requests and flights

    private enum Left: Equatable { case answered, others, background, cancelled }

    /// The flight's result, or nil once `deadline` passed — or once Apple's `Retry-After` outlasts it.
    private func wait(for flight: Flight, until deadline: Int64) async -> Result<CustomerHistory, Failure>? {
        while true {
            let seen = flight.snapshot
            if let result = seen.result { return result }
            let time = now()
            guard time < deadline, (seen.pausedUntil ?? .min) < deadline else { return nil }
            let (sleep, wait) = (self.sleep, deadline - time)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await flight.changed(since: seen.version) }
                group.addTask { await sleep(wait) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// A request stops waiting. The last to leave a flight without its result lets it go on in the background when it
    /// is keeping pages and a place is free, else cancels it (the pages it kept stay).
    private func leave(_ flight: Flight, answered: Bool) -> Left {
        let time = now()
        let decision = flights.withLock { f -> Left in
            flight.state.withLock { s -> Left in
                s.joined -= 1
                if answered || s.result != nil { return .answered }
                if s.background { return .background }
                if s.joined > 0 { return .others }
                let progressing =
                    s.progressAt.map { time.clampedSubtracting($0) <= settings.fetchTimeoutMillis } ?? false
                guard progressing, !f.stopping, f.background < settings.backgroundFetches else { return .cancelled }
                f.background += 1
                s.background = true
                s.place = true
                metrics.set(.receiptHistoryBackground, [:], Double(f.background))
                return .background
            }
        }
        if decision == .cancelled { flight.cancel() }
        return decision
    }

    /// The flight's task: the fetch, its result to every request waiting, and its place given back.
    private func run(_ key: ReceiptHistoryKey, _ flight: Flight) async {
        let result = await fetch(key, flight)
        let freed = flights.withLock { f -> Bool in
            if f.running[key] === flight { f.running.removeValue(forKey: key) }
            guard flight.state.withLock({ $0.place }) else { return false }
            f.background -= 1
            metrics.set(.receiptHistoryBackground, [:], Double(f.background))
            return true
        }
        flight.finish(result)
        if freed { drain() }
    }

    // MARK: The fetch

    /// Claims (or holds) the fetch of `key` for this instance until twice the fetch timeout after `from`: false when
    /// another instance holds it, the history is fresh, or the store cannot say.
    private func claim(_ key: ReceiptHistoryKey, from: Int64, at time: Int64) async -> Bool {
        (try? await store.write { [owner, settings] tx in
            try tx.claimReceiptHistory(
                key,
                owner: owner,
                until: from.clampedAdding(2 * settings.fetchTimeoutMillis),
                now: time,
                freshSince: time.clampedSubtracting(settings.historyMaxAgeMillis)
            )
        }) ?? false
    }

    private func fetch(_ key: ReceiptHistoryKey, _ flight: Flight) async -> Result<CustomerHistory, Failure> {
        if let until = pausedUntil.withLock({ $0[Self.pauseKey(key)] }), now() < until {
            return .failure(Failure(code: "rate_limited", message: "Apple asked to wait until \(until)"))
        }
        let started = now()
        // The claim outlives the request's deadline a little and is held longer with every page, so a crashed
        // instance's claim frees itself soon.
        guard await claim(key, from: started, at: started) else {
            return await waitForOther(key, deadline: started.clampedAdding(settings.fetchTimeoutMillis))
        }
        let owner = self.owner
        switch await walk(key, flight, started: started) {
        case .success(let history):
            let json = history.encoded()
            let fetchedAt = now()
            let kept: Void? = try? await store.write { tx in
                try tx.settleReceiptHistory(key, json: json, fetchedAt: fetchedAt, owner: owner)
            }
            if kept == nil {
                // Not kept (the store refused or failed): the claim is given up, so the next request fetches again
                // (from the pages kept) rather than waiting for it to lapse.
                _ = try? await store.write { tx in
                    try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: owner)
                }
            } else {
                decoded.insert((fetchedAt, json.count, history), for: key, cost: json.count)
            }
            return .success(history)
        case .failure(let failure):
            _ = try? await store.write { tx in try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: owner) }
            return .failure(failure)
        }
    }

    /// Get Transaction History from where the stored pages end, each page kept as it comes, then Get All
    /// Subscription Statuses when the customer has a subscription.
    private func walk(
        _ key: ReceiptHistoryKey,
        _ flight: Flight,
        started: Int64
    ) async -> Result<CustomerHistory, Failure> {
        let loaded = try? await store.read { tx in try tx.receiptHistoryPages(key) }
        guard let storedPages = loaded else {
            return .failure(
                Failure(code: OutcomeCode.storeUnavailable.rawValue, message: "the store could not be read")
            )
        }
        let chained = Self.chain(storedPages)
        if chained == nil {
            _ = try? await store.write { tx in try tx.dropReceiptHistoryPages(key) }
        }
        let pages = chained ?? []
        var count = pages.count
        var transactions = pages.flatMap(\.transactions)
        var revision = pages.last?.revision
        var more = pages.last?.hasMore ?? true
        var firstAsked = pages.first?.askedAt
        let bound = started.clampedAdding(settings.backgroundFetchTimeoutMillis)
        let owner = self.owner
        while more {
            let asked = now()
            let after = revision
            let step = await call(key, flight, "transaction_history", until: bound) {
                [source] () async throws(PathFetchError) in
                try await source.historyPage(
                    bundleID: key.bundleID,
                    environment: key.environment,
                    transactionID: key.customer,
                    revision: after
                )
            }
            guard case .value(let page) = step else { return .failure(step.failure) }
            let kept = StoredReceiptHistoryPage(
                page: count,
                askedWith: after,
                revision: page.revision,
                hasMore: page.hasMore,
                askedAt: asked,
                json: Self.encode(page.transactions)
            )
            let until = now().clampedAdding(2 * settings.fetchTimeoutMillis)
            let held = try? await store.write { tx in
                try tx.addReceiptHistoryPage(key, kept, owner: owner, until: until)
            }
            guard let held else {
                return .failure(
                    Failure(code: OutcomeCode.storeUnavailable.rawValue, message: "a page could not be kept")
                )
            }
            guard held else {
                return .failure(Failure(code: "taken_over", message: "another instance took the fetch over"))
            }
            flight.progress(at: now())
            count += 1
            firstAsked = firstAsked ?? asked
            transactions += page.transactions
            (revision, more) = (page.revision ?? revision, page.hasMore)
        }
        let merged = CustomerHistory.latestViews(transactions)
        var renewals: [RenewalInfoPayload] = []
        // Renewal info exists only for auto-renewable subscriptions.
        if merged.contains(where: { $0.type == "Auto-Renewable Subscription" }) {
            let step = await call(key, flight, "subscription_statuses", until: bound) {
                [source] () async throws(PathFetchError) in
                try await source.renewals(
                    bundleID: key.bundleID,
                    environment: key.environment,
                    transactionID: key.customer
                )
            }
            guard case .value(let found) = step else { return .failure(step.failure) }
            renewals = found
        }
        return .success(
            CustomerHistory(
                fetchedAt: firstAsked ?? started,
                transactions: merged,
                renewals: renewals
            )
        )
    }

    /// The stored pages with their transactions when each follows the one before (the first from the start); nil
    /// when they do not (a page is damaged, or missing).
    package static func chain(
        _ pages: [StoredReceiptHistoryPage]
    ) -> [(askedAt: Int64, transactions: [TransactionPayload], revision: String?, hasMore: Bool)]? {
        var chained: [(askedAt: Int64, transactions: [TransactionPayload], revision: String?, hasMore: Bool)] = []
        var expected: String? = nil
        for (i, page) in pages.enumerated() {
            guard page.page == i, page.askedWith == expected, chained.last?.hasMore ?? true,
                let transactions = decode(page.json)
            else { return nil }
            chained.append((page.askedAt, transactions, page.revision, page.hasMore))
            expected = page.revision
        }
        return chained
    }

    package static func encode(_ transactions: [TransactionPayload]) -> [UInt8] {
        CustomerHistory(fetchedAt: 0, transactions: transactions, renewals: []).encoded()
    }

    package static func decode(_ json: [UInt8]) -> [TransactionPayload]? {
        CustomerHistory.decode(json)?.transactions
    }

    private enum Step<T> {
        case value(T)
        case stop(Failure)

        var failure: Failure {
            if case .stop(let failure) = self { return failure }
            return Failure(code: "failed", message: "")
        }
    }

    /// One call to Apple, counted against the customer's hour; Apple's 429 pauses the app, and a fetch that kept
    /// pages waits it out (holding its claim) and asks again, within `bound`.
    private func call<T>(
        _ key: ReceiptHistoryKey,
        _ flight: Flight,
        _ endpoint: String,
        until bound: Int64,
        _ body: @Sendable () async throws(PathFetchError) -> T
    ) async -> Step<T> {
        let settings = self.settings
        while true {
            if Task.isCancelled || flights.withLock({ $0.stopping }) {
                return .stop(Failure(code: "stopped", message: "the fetch was stopped; its pages are kept"))
            }
            let time = now()
            guard time < bound else {
                return .stop(Failure(code: "timeout", message: "the fetch ran past receipts.background_fetch_timeout"))
            }
            let counted = try? await store.write { tx in
                try tx.countReceiptHistoryCall(key, now: time, limit: settings.customerCallsPerHour)
            }
            guard let counted else {
                return .stop(
                    Failure(code: OutcomeCode.storeUnavailable.rawValue, message: "the call could not be counted")
                )
            }
            guard counted else {
                metrics.increment(.receiptHistoryCallsTotal, ["endpoint": endpoint, "outcome": "capped"])
                return .stop(
                    Failure(code: "capped", message: "the customer's calls to Apple for this hour are used up")
                )
            }
            // In the budget of calls to Apple, a fetch a request waits for goes first, within the request's time; one
            // gone on in the background waits its turn behind, within its own bound (docs/operations.md, "Apple's
            // rate limits"). Out of turns: the request is answered 21005 (retryable), as for Apple's 429.
            let background = flight.state.withLock { $0.background }
            let context = AppStoreAPICallContext(
                priority: background ? .background : .request,
                deadline: background ? bound : min(bound, time.clampedAdding(settings.fetchTimeoutMillis))
            )
            let answer = await AppStoreAPICallContext.$current.withValue(context) {
                () async -> Result<T, PathFetchError> in
                do throws(PathFetchError) { return .success(try await body()) } catch { return .failure(error) }
            }
            // A call the budget refused was not made.
            var made = true
            if case .failure(let error) = answer, error.code == "budget_exhausted" { made = false }
            if made { flight.state.withLock { $0.calls[endpoint, default: 0] += 1 } }
            do throws(PathFetchError) {
                let value = try answer.get()
                metrics.increment(.receiptHistoryCallsTotal, ["endpoint": endpoint, "outcome": "ok"])
                return .value(value)
            } catch {
                let limited = error.code == "rate_limited"
                let outcome = limited || error.code == "budget_exhausted" ? error.code : "failed"
                metrics.increment(.receiptHistoryCallsTotal, ["endpoint": endpoint, "outcome": outcome])
                guard limited else { return .stop(Failure(code: error.code, message: error.message)) }
                let wait = min(max(error.retryAfterMillis ?? 1_000, 1_000), Self.hourMillis)
                let until = now().clampedAdding(wait)
                pausedUntil.withLock { $0[Self.pauseKey(key)] = until }
                // A fetch that kept no page yet ends as it began (the request is answered 21005 at once).
                guard flight.hasProgress, until < bound else {
                    return .stop(Failure(code: error.code, message: error.message))
                }
                guard await claim(key, from: until, at: time) else {
                    return .stop(Failure(code: "taken_over", message: "the claim was lost"))
                }
                flight.pause(until: until)
                await sleep(wait)
                flight.pause(until: nil)
            }
        }
    }

    /// Another instance claimed the fetch: its result, read from the store once it lands.
    private func waitForOther(_ key: ReceiptHistoryKey, deadline: Int64) async -> Result<CustomerHistory, Failure> {
        while now() < deadline, !Task.isCancelled {
            if let fresh = try? await cached(key) { return .success(fresh) }
            await sleep(pollMillis)
        }
        return .failure(Failure(code: "timeout", message: "another instance's fetch of this customer did not finish"))
    }
}

/// One fetch of one customer's history in this process: its task, the requests waiting for it, and what they look at
/// (its result, whether it goes on in the background, when it last kept a page, Apple's `Retry-After`).
package final class Flight: Sendable {
    package struct State {
        package var result: Result<CustomerHistory, ReceiptHistories.Failure>?
        /// Counts changes, so that a request never misses one between looking and waiting.
        package var version = 0
        package var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits begun and not yet registered, and those of them cancelled meanwhile.
        package var pendingWaiters: Set<Int> = []
        package var cancelledWaiters: Set<Int> = []
        package var nextWaiter = 0
        /// Requests waiting for it now.
        package var joined = 0
        package var background = false
        /// It holds one of the background places (``ReceiptSettings/backgroundFetches``).
        package var place = false
        /// Calls made to Apple, by endpoint.
        package var calls: [String: Int] = [:]
        package var progressAt: Int64?
        package var pausedUntil: Int64?
    }

    package struct Snapshot {
        package var result: Result<CustomerHistory, ReceiptHistories.Failure>?
        package var version: Int
        package var pausedUntil: Int64?
    }

    let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)

    package func start(_ body: @escaping @Sendable () async -> Void) {
        task.withLock { $0 = Task { await body() } }
    }

    package func cancel() { task.withLock { $0 }?.cancel() }

    package func finished() async { await task.withLock({ $0 })?.value }

    package var snapshot: Snapshot {
        state.withLock { Snapshot(result: $0.result, version: $0.version, pausedUntil: $0.pausedUntil) }
    }

    package var hasProgress: Bool { state.withLock { $0.progressAt != nil } }

    package func join() { state.withLock { $0.joined += 1 } }

    package func progress(at time: Int64) { change { $0.progressAt = time } }

    package func pause(until: Int64?) { change { $0.pausedUntil = until } }

    package func finish(_ result: Result<CustomerHistory, ReceiptHistories.Failure>) { change { $0.result = result } }

    /// Changes the state and wakes every request waiting.
    private func change(_ body: (inout State) -> Void) {
        let woken = state.withLock { s in
            body(&s)
            s.version += 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the state changed after `version` (at once when it has), or the task is cancelled.
    package func changed(since version: Int) async {
        let id = state.withLock { s in
            s.nextWaiter += 1
            s.pendingWaiters.insert(s.nextWaiter)
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    s.pendingWaiters.remove(id)
                    if s.cancelledWaiters.remove(id) != nil || s.version != version { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s in
                guard let waiter = s.waiters.removeValue(forKey: id) else {
                    if s.pendingWaiters.contains(id) { s.cancelledWaiters.insert(id) }
                    return CheckedContinuation<Void, Never>?.none
                }
                return waiter
            }
            waiter?.resume()
        }
    }
}
