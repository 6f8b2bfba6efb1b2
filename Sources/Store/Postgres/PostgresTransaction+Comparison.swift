internal import Canonical
internal import Policy
internal import Postgres

extension PostgresTransaction {
    /// A plain comparison fetch already pending for the subscription and path conflicts with the partial unique
    /// index compare_jobs_one_pending (also one another instance just queued): nothing is queued then.
    func enqueueFetch(_ r: FetchRequest, at time: Int64, due: Int64?) throws {
        try c.run(
            """
            INSERT INTO compare_jobs (bundle_id, environment, original_transaction_id, "fetch", v1_event_id, authority, compare, confirms,
                                      next_attempt_at, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) ON CONFLICT DO NOTHING
            """,
            keyValues(r.subscription).map(\.postgres) + [
                .text(r.fetch.rawValue), PostgresValue(r.v1EventID), PostgresValue(r.authority?.rawValue),
                .bool(r.compare), .int64(Int64(r.confirms)), .int64(due ?? time), .int64(time),
            ]
        )
    }

    /// Claimed like deliveries (``claimDueDeliveries(downstream:at:limit:lease:)``).
    func claimDueFetches(at time: Int64, limit: Int, lease: Lease) throws -> [FetchJob] {
        try c.query(
            """
            UPDATE compare_jobs SET claimed_by = $1, claimed_until = $2
            WHERE id IN (
                SELECT id FROM compare_jobs
                WHERE state = 'pending' AND next_attempt_at <= $3 AND (claimed_until IS NULL OR claimed_until <= $3 OR claimed_by = $1)
                  AND NOT (id = ANY ($5::bigint[]))
                ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
            RETURNING \(SQL.fetchColumns)
            """,
            [
                .text(lease.owner), .int64(lease.until), .int64(time), StoreValue.limit(limit).postgres,
                .bigintArray(lease.running),
            ]
        ).sorted(by: dueFirst("id")).map(FetchJob.init(row:))
    }
}
