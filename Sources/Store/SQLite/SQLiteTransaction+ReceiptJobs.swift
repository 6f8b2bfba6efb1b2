internal import SQLite

extension SQLiteTransaction {
    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueReceiptJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ReceiptJob] {
        try c.query(
            """
            SELECT r.journal_id, r.attempts, j.body, j.bundle_id, j.secret_name, j.received_at, j.notification_key, j.authority, j.version,
                   j.environment
            FROM receipt_jobs r JOIN journal j ON j.id = r.journal_id
            WHERE r.state = 'pending' AND r.next_attempt_at <= ? AND r.journal_id NOT IN (SELECT value FROM json_each(?))
            ORDER BY r.next_attempt_at LIMIT ?
            """, [.integer(time), idList(lease.running), limitValue(limit)]
        ).compactMap { ReceiptJob(row: $0, time: time) }
    }

    func settleReceiptJob(journalID: Int64, state: JobState, attempts: Int, nextAttemptAt: Int64, error: String?, appleStatus: Int?,
                          now: Int64) throws {
        try c.run(
            "UPDATE receipt_jobs SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?, apple_status = ?, updated_at = ? WHERE journal_id = ?",
            [.text(state.rawValue), .integer(Int64(attempts)), .integer(nextAttemptAt), SQLiteValue(error), SQLiteValue(appleStatus),
             .integer(now), .integer(journalID)])
    }

    func receiptJobs(state: JobState?) throws -> [ReceiptJobStatus] {
        let s = SQLiteValue(state?.rawValue)
        return try c.query(
            "SELECT journal_id, state, attempts, next_attempt_at, last_error, apple_status FROM receipt_jobs WHERE (? IS NULL OR state = ?) ORDER BY journal_id",
            [s, s]
        ).map(ReceiptJobStatus.init(row:))
    }

    func receiptJobCounts() throws -> [JobState: Int] {
        stateCounts(try c.query("SELECT state, COUNT(*) AS n FROM receipt_jobs GROUP BY state"), as: JobState.self)
    }
}
