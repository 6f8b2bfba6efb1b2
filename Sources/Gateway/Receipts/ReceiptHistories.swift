internal import Canonical
internal import Store
import Synchronization
internal import V2Adapter

/// Customers' histories for the receipt path (docs/architecture.md, "The receipt path"): from the store while fresh
/// (``ReceiptSettings/historyMaxAgeMillis``), else from Apple — once per customer at a time, whatever asks: requests
/// in this process wait for the one fetch in flight, other instances of a shared store wait for the instance that
/// claimed it. A 429 pauses the app and environment's fetches for Apple's `Retry-After`.
final class ReceiptHistories: Sendable {
    /// Why no history could be had: Apple is down, rate limiting or slow, or another instance held the fetch too long.
    /// Always retryable by the client.
    struct Failure: Error, Sendable {
        var code: String
        var message: String
    }

    enum Outcome: String {
        /// From the store, fetched less than the maximum age ago.
        case fresh
        /// Fetched from Apple now.
        case fetched
        /// Fetched now by another request or instance, waited for.
        case shared
    }

    let store: any GatewayStore
    let source: any ReceiptHistorySource
    let settings: ReceiptSettings
    let now: @Sendable () -> Int64
    let owner: String
    /// How often a request waiting for another instance's fetch looks at the store.
    let pollMillis: Int64 = 25
    private let inFlight = Mutex<[ReceiptHistoryKey: Task<Result<CustomerHistory, Failure>, Never>]>([:])
    /// Per app and environment (`bundle|environment`): no fetch before this time (Apple's `Retry-After`).
    private let pausedUntil = Mutex<[String: Int64]>([:])
    /// Histories already decoded, by customer, with the fetch time and size of the stored JSON they were decoded from:
    /// a stored history is decoded again only when another fetch replaced it. At most 4,096, from 16 MiB of JSON.
    private let decoded = BoundedCache<ReceiptHistoryKey, (fetchedAt: Int64, bytes: Int, history: CustomerHistory)>(
        maxEntries: 4_096,
        maxCost: 16 << 20
    )

    init(
        store: any GatewayStore,
        source: any ReceiptHistorySource,
        settings: ReceiptSettings,
        now: @escaping @Sendable () -> Int64,
        owner: String
    ) {
        (self.store, self.source, self.settings, self.now, self.owner) = (store, source, settings, now, owner)
    }

    /// The customer's history, found through `transactionID` (the key's customer).
    func history(_ key: ReceiptHistoryKey) async -> (Result<CustomerHistory, Failure>, Outcome) {
        if let fresh = try? await cached(key) { return (.success(fresh), .fresh) }
        let (task, mine) = inFlight.withLock { flights -> (Task<Result<CustomerHistory, Failure>, Never>, Bool) in
            if let running = flights[key] { return (running, false) }
            let task = Task { await self.fetch(key) }
            flights[key] = task
            return (task, true)
        }
        let result = await task.value
        if mine { _ = inFlight.withLock { $0.removeValue(forKey: key) } }
        return (result, mine ? .fetched : .shared)
    }

    /// The stored history when it was fetched within the maximum age.
    private func cached(_ key: ReceiptHistoryKey) async throws -> CustomerHistory? {
        let oldest = now().clampedSubtracting(settings.historyMaxAgeMillis)
        guard let row = try await store.readStatement({ tx in try tx.receiptHistory(key) }), let json = row.json,
            let fetched = row.fetchedAt, fetched >= oldest
        else { return nil }
        if let known = decoded[key], known.fetchedAt == fetched, known.bytes == json.count { return known.history }
        guard let history = CustomerHistory.decode(json) else { return nil }
        decoded.insert((fetched, json.count, history), for: key, cost: json.count)
        return history
    }

    private func fetch(_ key: ReceiptHistoryKey) async -> Result<CustomerHistory, Failure> {
        let pauseKey = "\(key.bundleID)|\(key.environment.rawValue)"
        if let until = pausedUntil.withLock({ $0[pauseKey] }), now() < until {
            return .failure(Failure(code: "rate_limited", message: "Apple asked to wait until \(until)"))
        }
        let started = now()
        let deadline = started.clampedAdding(settings.fetchTimeoutMillis)
        // The claim outlives the fetch's own deadline a little, so a crashed instance's claim frees itself soon.
        let (owner, until) = (self.owner, deadline.clampedAdding(settings.fetchTimeoutMillis))
        // Not claimed when a fresh history landed since the look at the store (another instance's fetch).
        let fresh = started.clampedSubtracting(settings.historyMaxAgeMillis)
        let claimed =
            (try? await store.write { tx in
                try tx.claimReceiptHistory(key, owner: owner, until: until, now: started, freshSince: fresh)
            }) ?? false
        guard claimed else { return await waitForOther(key, deadline: deadline) }
        let result = await fetchWithin(key, deadline: deadline)
        switch result {
        case .success(let history):
            let json = history.encoded()
            let kept: Void? = try? await store.write { tx in
                try tx.settleReceiptHistory(key, json: json, fetchedAt: history.fetchedAt, owner: owner)
            }
            if kept == nil {
                // Not kept (the store refused or failed): the claim is given up, so the next request fetches again
                // rather than waiting for it to lapse.
                _ = try? await store.write { tx in
                    try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: owner)
                }
            }
            decoded.insert((history.fetchedAt, json.count, history), for: key, cost: json.count)
            return .success(history)
        case .failure(let error):
            _ = try? await store.write { tx in try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: owner) }
            if error.code == "rate_limited" {
                let wait = error.retryAfterMillis ?? 1_000
                pausedUntil.withLock { $0[pauseKey] = now().clampedAdding(min(max(wait, 1_000), 3_600_000)) }
            }
            return .failure(Failure(code: error.code, message: error.message))
        }
    }

    /// Apple's answer, or a timeout at `deadline`: the slower of the two is cancelled.
    private func fetchWithin(_ key: ReceiptHistoryKey, deadline: Int64) async -> Result<CustomerHistory, PathFetchError>
    {
        let (source, now) = (self.source, self.now)
        let wait = max(0, deadline - now())
        return await withTaskGroup(of: Result<CustomerHistory, PathFetchError>?.self) { group in
            group.addTask {
                do throws(PathFetchError) {
                    return .success(
                        try await source.history(
                            bundleID: key.bundleID,
                            environment: key.environment,
                            transactionID: key.customer,
                            now: now()
                        )
                    )
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(wait))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
                ?? .failure(
                    PathFetchError(
                        code: "timeout",
                        message: "the App Store Server API did not answer within \(wait) ms",
                        retryable: true
                    )
                )
        }
    }

    /// Another instance claimed the fetch: its result, read from the store once it lands.
    private func waitForOther(_ key: ReceiptHistoryKey, deadline: Int64) async -> Result<CustomerHistory, Failure> {
        while now() < deadline {
            if let fresh = try? await cached(key) { return .success(fresh) }
            try? await Task.sleep(for: .milliseconds(pollMillis))
        }
        return .failure(Failure(code: "timeout", message: "another instance's fetch of this customer did not finish"))
    }
}
