internal import HTTPClient
package import Store

/// One kind of background job kept in a table (the outbox, `receipt_jobs`, `compare_jobs`): which jobs are due, how
/// many may run at once, and how one runs. ``JobScheduler`` does the rest — polling, claiming, running, stopping.
package protocol JobTable: ContextualWorker, Sendable {
    associatedtype Job: ScheduledJob
    /// The lanes jobs run in; each has its own concurrency limit.
    var lanes: [String] { get }
    /// How many jobs of `lane` may run at once.
    func limit(lane: String) -> Int
    /// At most `count` due jobs of `lane`, in the order they should start, claimed for `lease` where the store is
    /// shared by instances; runs on a blocking thread, in a write transaction then (a read transaction otherwise).
    func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: Transaction) throws -> [Job]
    /// Runs one job; returns once its outcome is committed.
    func process(_ job: Job) async
    /// Gauges and alerts, about once a second while running.
    func housekeeping() async
    /// The table its jobs are claimed in, for renewing the leases of those still running.
    var claimedJobs: ClaimedJobs { get }
}

/// A job a ``JobScheduler`` runs: its row id, and the lane its concurrency limit counts in (a downstream, say).
package protocol ScheduledJob: Sendable {
    var id: Int64 { get }
    var lane: String { get }
}

extension RetryPolicy {
    /// The state a job settles in: `pending` (to be tried again) becomes `failed` once `attempts` reach `maxAttempts`.
    package func jobState(_ wanted: JobState, attempts: Int) -> JobState {
        wanted == .pending && !allowsRetry(afterAttempt: attempts) ? .failed : wanted
    }
}
