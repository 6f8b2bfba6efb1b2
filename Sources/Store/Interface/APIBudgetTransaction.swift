/// The App Store Server API budget every instance on a PostgreSQL store shares (docs/operations.md, "Apple's rate
/// limits"): per app × environment × endpoint one token bucket, whose turns each instance leases a few at a time. One
/// slice of ``StoreTransaction``, PostgreSQL only: an SQLite store has one process, which keeps its budget in memory
/// (these operations throw there). Each is one statement, for ``GatewayStore/writeStatement(_:)``.
public protocol APIBudgetTransaction {
    /// Takes up to `turns` whole turns from `bucket` as of `time` (ms since the epoch): the bucket fills at `refill`
    /// from its stored tokens and time (a bucket met for the first time starts full), gives none before the pause
    /// of a 429 ends, and keeps what it does not give. One atomic statement: instances never take the same turn.
    func leaseAPIBudget(
        _ bucket: APIBudgetBucket,
        turns: Int,
        refill: APIBudgetRefill,
        at time: Int64
    ) throws -> APIBudgetLease
    /// Apple answered 429 with `Retry-After` `until`: the bucket is emptied, gives no turn before `until`, and its
    /// first turn after gathers exactly then. A later pause on record is kept.
    func pauseAPIBudget(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) throws
    /// The bucket as stored; nil when no instance used it yet.
    func apiBudget(_ bucket: APIBudgetBucket) throws -> APIBudgetState?
}
