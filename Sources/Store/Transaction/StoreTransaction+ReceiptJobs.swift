internal import Canonical

// The claim (`claimDueReceiptJobs`) differs by database: each store's `*Transaction+ReceiptJobs.swift`.
extension SQLTransaction {
    func settleReceiptJob(
        journalID: Int64,
        state: JobState,
        attempts: Int,
        nextAttemptAt: Int64,
        error: String?,
        appleStatus: Int?,
        now: Int64
    ) throws {
        try c.run(
            .settleReceiptJob,
            [
                .text(state.rawValue), .int64(Int64(attempts)), .int64(nextAttemptAt), StoreValue(error),
                StoreValue(appleStatus), .int64(now),
                .int64(journalID),
            ]
        )
    }

    func receiptJobs(state: JobState?) throws -> [ReceiptJobStatus] {
        try c.query(.receiptJobs, [StoreValue(state?.rawValue)]).map(ReceiptJobStatus.init(row:))
    }

    func receiptJobCounts() throws -> [JobState: Int] {
        // Each state counted on its index; the done jobs, one per verified V1 notification, are not counted.
        var counts: [JobState: Int] = [:]
        for state in [JobState.pending, .failed] {
            let n = try c.queryOne(.receiptJobsInState, [.text(state.rawValue)])?.int("n") ?? 0
            if n > 0 { counts[state] = n }
        }
        return counts
    }

    func pendingReceiptJobs() throws -> Int {
        try c.queryOne(.pendingReceiptJobs, [])?.int("n") ?? 0
    }
}

extension SQL {
    fileprivate static let settleReceiptJob = SQL { d in
        """
        UPDATE receipt_jobs SET state = $1, attempts = $2, next_attempt_at = $3, last_error = $4, apple_status = $5, updated_at = $6\(d.clearClaim)
        WHERE journal_id = $7
        """
    }

    fileprivate static let receiptJobs = SQL(
        """
        SELECT journal_id, state, attempts, next_attempt_at, last_error, apple_status FROM receipt_jobs
        WHERE ($1::text IS NULL OR state = $1) ORDER BY journal_id
        """
    )

    static let receiptJobsInState = SQL("SELECT COUNT(*) AS n FROM receipt_jobs WHERE state = $1")
    fileprivate static let pendingReceiptJobs = SQL("SELECT COUNT(*) AS n FROM receipt_jobs WHERE state = 'pending'")
}
