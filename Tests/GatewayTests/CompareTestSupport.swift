import Store

/// Changes to comparison fetches that tests make in the comparison worker's place, through the store's own operations.
extension GatewayStore {
    /// Marks the fetches `which` selects done, as the worker settles a fetch it made when it was due (attempts, due
    /// time and last error kept).
    func finishFetches(where which: @escaping @Sendable (FetchJob) -> Bool) throws {
        try write { tx in
            for job in try tx.fetchJobs(state: nil) where which(job) {
                try tx.settleFetch(
                    id: job.id,
                    state: .done,
                    attempts: job.attempts,
                    nextAttemptAt: nil,
                    error: job.lastError,
                    now: job.nextAttemptAt
                )
            }
        }
    }

    /// Makes the pending fetches `which` selects due at `time`, nothing else about them changed: a retry come due.
    func makeFetchesDue(at time: Int64, where which: @escaping @Sendable (FetchJob) -> Bool = { _ in true }) throws {
        try write { tx in
            for job in try tx.fetchJobs(state: .pending) where which(job) {
                try tx.settleFetch(
                    id: job.id,
                    state: job.state,
                    attempts: job.attempts,
                    nextAttemptAt: time,
                    error: job.lastError,
                    now: time
                )
            }
        }
    }
}
