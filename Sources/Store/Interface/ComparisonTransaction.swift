public import Canonical
public import Policy

/// The comparison: each path's snapshots, the receipts kept for verifyReceipt, the fetch jobs and the ledger. One slice of ``StoreTransaction``.
public protocol ComparisonTransaction {
    /// Keeps the newest snapshot per subscription and path.
    func putSnapshot(_ snapshot: OutcomeSnapshot, path: Generation) throws
    func snapshot(of subscription: SubscriptionKey, path: Generation) throws -> OutcomeSnapshot?
    /// The receipt kept for a subscription; nil while no V1 notification for it was verified.
    func receipt(of subscription: SubscriptionKey) throws -> StoredReceipt?
    /// Keeps the latest receipt of a subscription and makes its pending V1 fetches due now: a comparison waiting
    /// for V1 to know this subscription runs at once. Both in one place, so a receipt is never stored without it.
    func putReceipt(_ receipt: StoredReceipt, of subscription: SubscriptionKey) throws
    /// Queues a fetch at `time`, due then or at `due`. A plain comparison fetch (no `v1EventID`) is not queued
    /// again while one for the same subscription and path is pending.
    func enqueueFetch(_ request: FetchRequest, at time: Int64, due: Int64?) throws
    /// At most `limit` fetches due at `time`, oldest due first; claimed like deliveries.
    func claimDueFetches(at time: Int64, limit: Int, lease: Lease) throws -> [FetchJob]
    /// Records a fetch's attempt: its state, attempts, when it is due again, and why.
    func settleFetch(
        id: Int64,
        state: JobState,
        attempts: Int,
        nextAttemptAt: Int64?,
        error: String?,
        now: Int64
    ) throws
    /// Fetches, oldest first, optionally of one state.
    func fetchJobs(state: JobState?) throws -> [FetchJob]
    /// Fetches per state.
    func fetchJobCounts() throws -> [JobState: Int]
    /// Pending fetches, counted on the index of pending rows (the gauge reads it every pass).
    func pendingFetches() throws -> Int
    /// Records a comparison (or a one-sided observation) in the ledger.
    func recordComparison(_ entry: LedgerEntry) throws
    /// A bundle's ledger over [from, to) counted in the store: rows per outcome, agreements and disagreements per UTC
    /// day (`byDay`), disagreements per set of fields. Index range counts: bounded whatever the ledger holds.
    func ledgerTally(
        bundleID: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        byDay: Bool,
        in ledger: ComparisonLedger
    ) throws
        -> LedgerTally
    /// Up to `limit` rows of one outcome compared before `to` and after `after` (ledger order: compared_at, id).
    func ledgerExamples(
        bundleID: String,
        environment: AppStoreEnvironment,
        outcome: CompareOutcome,
        to: Int64,
        after: (comparedAt: Int64, id: Int64),
        limit: Int,
        in ledger: ComparisonLedger
    ) throws -> [LedgerExample]
    /// Ledger rows of a bundle and environment compared in [from, to), oldest first (all bundles when nil).
    func ledger(bundleID: String?, environment: AppStoreEnvironment?, from: Int64, to: Int64) throws -> [LedgerEntry]
    /// A bundle's group (multiseat) subscriptions on the V2 path: those whose period runs at `now` and their seats,
    /// and the seat events stored in [since, until) — each on an index of its own (docs/architecture.md, "Group
    /// subscriptions").
    func groupCounts(
        bundleID: String,
        environment: AppStoreEnvironment,
        now: Int64,
        since: Int64,
        until: Int64
    ) throws -> GroupCounts
}

/// What ``ComparisonTransaction/groupCounts(bundleID:environment:now:since:until:)`` counts.
public struct GroupCounts: Sendable, Hashable {
    public var groups = 0
    public var seats = 0
    /// Seat events by kind and reason (`seats_changed/increase`, `seats_changed/decrease`, `seats_refunded`,
    /// `seats_unclaimed`).
    public var events: [String: Int] = [:]
    public init() {}
}
