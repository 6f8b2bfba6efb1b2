package import Store

/// Recording a background job's outcome when the store refuses writes (a full disk).
extension WorkerContext {
    /// Commits `work` — a job's outcome — retrying with backoff (100 ms doubling to 5 s) for as long as the store
    /// refuses it, so that the job stays claimed meanwhile. Without this a delivery whose outcome could not be
    /// written was released as still due and sent again at once, every few milliseconds, for as long as the disk
    /// stayed full (the same for verifyReceipt calls). Gives up when the task is cancelled (shutdown) or the
    /// writer stops: the row is then still pending, and runs again after a restart (at least once).
    ///
    /// Run by a ``JobScheduler``'s job, the first attempt is written with the scheduler's next claim
    /// (``OutcomeBatch``); the retries are written on their own, so that an outcome that cannot be written never holds
    /// back another job's.
    package func recordOutcome(_ work: @escaping @Sendable (any StoreTransaction) throws -> Void) async {
        var delay: Duration = .milliseconds(100)
        var logged = false
        var settlement = JobSettlement.current
        while true {
            do {
                if let joining = settlement {
                    settlement = nil
                    if try await !joining.commit(work) { try await store.write(work) }
                } else {
                    try await store.write(work)
                }
                if logged { log.info("store writable again: job outcomes recorded") }
                return
            } catch {
                guard !Task.isCancelled, !store.isClosing else { return }
                metrics.increment(.storeFailuresTotal, ["operation": "job_outcome"])
                if !logged {
                    log.error(
                        "store refuses writes: job outcomes wait",
                        ["error": .string(String(describing: error).prefix(300).description)]
                    )
                    logged = true
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}
