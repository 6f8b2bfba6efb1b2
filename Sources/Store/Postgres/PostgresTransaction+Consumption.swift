internal import Postgres

extension PostgresTransaction {
    /// Claimed like deliveries (``claimDueDeliveries(downstream:at:limit:lease:payload:)``).
    func claimDueConsumptionJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ConsumptionJob] {
        try c.query(
            """
            UPDATE consumption_jobs SET claimed_by = $1, claimed_until = $2
            WHERE id IN (
                SELECT id FROM consumption_jobs
                WHERE state = 'pending' AND next_attempt_at <= $3
                  AND (claimed_until IS NULL OR claimed_until <= $3 OR claimed_by = $1)
                  AND NOT (id = ANY ($5::bigint[]))
                ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
            RETURNING \(SQL.consumptionJobColumns), next_attempt_at
            """,
            [
                .text(lease.owner), .int64(lease.until), .int64(time), StoreValue.limit(limit).postgres,
                .bigintArray(lease.running),
            ]
        ).sorted(by: dueFirst("id")).map(ConsumptionJob.init(row:))
    }
}
