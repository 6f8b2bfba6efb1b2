/// The verifyReceipt jobs of V1 notifications (and the V1 views of V2 ones). One slice of ``StoreTransaction``.
public protocol ReceiptJobTransaction {
    /// At most `limit` verifyReceipt jobs due at `time`, oldest due first, with their journaled bodies; claimed like
    /// deliveries.
    func claimDueReceiptJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ReceiptJob]
    /// Records an attempt: the job's state, attempts, when it is due again, and what Apple said.
    func settleReceiptJob(
        journalID: Int64,
        state: JobState,
        attempts: Int,
        nextAttemptAt: Int64,
        error: String?,
        appleStatus: Int?,
        now: Int64
    ) throws
    /// verifyReceipt jobs, oldest first, optionally of one state.
    func receiptJobs(state: JobState?) throws -> [ReceiptJobStatus]
    /// verifyReceipt jobs still owed work, per state (pending, failed), each counted on its index: the done ones, one per
    /// verified V1 notification, grow with the journal and are not counted.
    func receiptJobCounts() throws -> [JobState: Int]
    /// Pending verifyReceipt jobs, counted on the index of pending rows (the gauge reads it every pass).
    func pendingReceiptJobs() throws -> Int
}
