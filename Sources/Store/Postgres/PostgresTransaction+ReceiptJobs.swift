internal import Postgres

extension PostgresTransaction {
    /// Claimed like deliveries (``claimDueDeliveries(downstream:at:limit:lease:)``), with each job's journal row.
    func claimDueReceiptJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ReceiptJob] {
        try c.query(
            """
            UPDATE receipt_jobs r SET claimed_by = $1, claimed_until = $2
            FROM journal j
            WHERE j.id = r.journal_id AND r.journal_id IN (
                SELECT journal_id FROM receipt_jobs
                WHERE state = 'pending' AND next_attempt_at <= $3 AND (claimed_until IS NULL OR claimed_until <= $3 OR claimed_by = $1)
                  AND NOT (journal_id = ANY ($5::bigint[]))
                ORDER BY next_attempt_at, journal_id LIMIT $4 FOR UPDATE SKIP LOCKED)
            RETURNING r.journal_id, r.attempts, r.next_attempt_at, j.body, j.bundle_id, j.secret_name, j.received_at, j.notification_key,
                      j.authority, j.version, j.environment
            """,
            [
                .text(lease.owner), .int64(lease.until), .int64(time), StoreValue.limit(limit).postgres,
                .bigintArray(lease.running),
            ]
        ).sorted(by: dueFirst("journal_id")).map(ReceiptJob.init(row:))
    }
}
