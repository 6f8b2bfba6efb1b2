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
            """,
            [.integer(time), StoreValue.ids(lease.running).sqlite, StoreValue.limit(limit).sqlite]
        ).map(ReceiptJob.init(row:))
    }
}
