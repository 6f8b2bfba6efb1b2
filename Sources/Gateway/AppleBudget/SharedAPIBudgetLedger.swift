public import Store

/// Where the instances on one store keep the budget of App Store Server API calls they share (``AppleAPIBudget``,
/// docs/operations.md, "Apple's rate limits"): the PostgreSQL store's `api_budget` (``StoreAPIBudgetLedger``), or a
/// test's own.
public protocol SharedAPIBudgetLedger: Sendable {
    /// Takes up to `turns` turns of `bucket` as of `time` (``APIBudgetTransaction/leaseAPIBudget(_:turns:refill:at:)``).
    func lease(
        _ bucket: APIBudgetBucket,
        turns: Int,
        refill: APIBudgetRefill,
        at time: Int64
    ) async throws
        -> APIBudgetLease
    /// Apple's 429: `bucket` gives no turn before `until`, to any instance.
    func pause(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) async throws
}

/// The ledger in the store's `api_budget` table: one statement per lease or pause, outside the journal's group commit
/// (``GatewayStore/writeStatement(_:)``).
public struct StoreAPIBudgetLedger: SharedAPIBudgetLedger {
    let store: StoreSlice<any APIBudgetTransaction>

    public init(store: any GatewayStore) {
        self.store = StoreSlice(store) { $0 }
    }

    /// The ledger of a store several instances share (PostgreSQL), nil for one a process owns (SQLite: its budget
    /// stays in memory).
    public static func of(_ store: any GatewayStore) -> StoreAPIBudgetLedger? {
        store.sharedByInstances ? StoreAPIBudgetLedger(store: store) : nil
    }

    public func lease(
        _ bucket: APIBudgetBucket,
        turns: Int,
        refill: APIBudgetRefill,
        at time: Int64
    ) async throws
        -> APIBudgetLease
    {
        try await store.store.writeStatement(
            store.narrow { tx in try tx.leaseAPIBudget(bucket, turns: turns, refill: refill, at: time) }
        )
    }

    public func pause(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) async throws {
        try await store.store.writeStatement(
            store.narrow { tx in try tx.pauseAPIBudget(bucket, until: until, refill: refill) }
        )
    }

    /// The bucket as stored (what an operator or a test looks at).
    public func state(_ bucket: APIBudgetBucket) async throws -> APIBudgetState? {
        try await store.readStatement { tx in try tx.apiBudget(bucket) }
    }
}
