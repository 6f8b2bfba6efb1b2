public import Canonical

// The store's typed rows and states. Each raw value is what the database holds (the SQL schema documents the same
// values), so the Swift side never spells a state as a string literal.

/// A delivery's state in the outbox.
public enum DeliveryState: String, Sendable, Hashable, CaseIterable {
    /// Due at its `nextAttemptAt`.
    case pending
    case delivered
    /// Gave up (attempts exhausted, a 410, or the downstream left the config); replayable.
    case dead
}

/// A background job's state (verifyReceipt jobs, comparison fetches).
public enum JobState: String, Sendable, Hashable, CaseIterable {
    case pending, done, failed
}

/// How a journaled notification arrived.
public enum JournalOrigin: String, Sendable, Hashable, CaseIterable {
    /// From Apple (or a client) on the public endpoint.
    case live
    /// Re-run from the quarantine by an operator, judged as of its arrival.
    case quarantineReplay = "quarantine_replay"
    /// Fetched from Apple's notification history by `backfill`.
    case backfill
    /// Fetched from Apple's notification history by the scheduled sweep.
    case historySweep = "history_sweep"
}

/// One ledger row's outcome.
public enum CompareOutcome: String, Sendable, Hashable, CaseIterable {
    case agree, disagree
    /// Only the V1 path knew the subscription once the grace window had passed.
    case v1Only = "v1_only"
    case v2Only = "v2_only"

    /// The one-sided outcome when `generation`'s path does not know a subscription the other path knows.
    public static func onlySeen(by generation: Generation) -> CompareOutcome { generation == .v1 ? .v1Only : .v2Only }
}

/// When each path of a bundle last produced an event: the silence alert's input.
public struct AuthorityActivity: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var authority: Generation
    /// Newest `created_at` of an event on the authoritative path, and on the other one (nil: none yet).
    public var lastAuthoritative: Int64?
    public var lastOther: Int64?
}

/// Who runs a claimed background job, and until when: when the store is shared by several instances, another one
/// takes the job over once `until` has passed (its instance died, say). Jobs claimed by `owner` itself are due to it
/// again at once (a restarted instance with the same name picks up its own work) — except those it is running now,
/// `running`, which no claim takes again: a poll while jobs run claims only new ones (on PostgreSQL, a claim is an
/// UPDATE of every row it takes).
public struct Lease: Sendable, Hashable {
    public var owner: String
    public var until: Int64
    /// Ids of the table's jobs this instance is running: never due to it.
    public var running: [Int64]
    public init(owner: String, until: Int64, running: [Int64] = []) {
        (self.owner, self.until, self.running) = (owner, until, running)
    }
}

/// A table of claimed background jobs (``StoreTransaction/renewClaims(_:ids:lease:)``).
public enum ClaimedJobs: String, Sendable, Hashable, CaseIterable {
    case deliveries, receiptJobs, fetches, reconcileRuns, consumptionJobs
}
