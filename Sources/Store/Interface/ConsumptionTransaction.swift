/// The consumption responder's jobs: Apple's refund requests and their answers (docs/operations.md, "Refund
/// requests"). One slice of ``StoreTransaction``. The jobs are queued, and Apple's decisions recorded, by the
/// notification rule's plans (``PlannedWrite/consumptionJob(_:)``, ``PlannedWrite/refundDecision(_:)``).
public protocol ConsumptionTransaction {
    /// At most `limit` pending jobs due at `time`, oldest due first, claimed for `lease` where the store is shared by
    /// instances (the jobs in `lease.running` left out).
    func claimDueConsumptionJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ConsumptionJob]
    /// Records an attempt's outcome over the job's row (its claim ends).
    func settleConsumptionJob(_ settlement: ConsumptionSettlement, now: Int64) throws
    /// The newest `limit` jobs, optionally of one state, newest first.
    func consumptionJobs(state: ConsumptionState?, limit: Int) throws -> [ConsumptionJobStatus]
    /// The job of the request event `eventID`, if any.
    func consumptionJob(eventID: String) throws -> ConsumptionJobStatus?
    /// Pending jobs (the gauge reads it every pass), counted on the pending rows' index.
    func pendingConsumptionJobs() throws -> Int
    /// The refund requests Apple signed in [since, until), counted by outcome (the report's section).
    func refundRequestCounts(since: Int64, until: Int64) throws -> [RefundRequestCount]
}
