internal import Canonical
internal import Postgres

extension PostgresTransaction {
    /// As ``claimDueDeliveries(downstream:at:limit:lease:)``: one instance runs each due run.
    func claimDueReconcileRuns(at time: Int64, limit: Int, lease: Lease) throws -> [ReconcileRun] {
        try c.query(
            """
            UPDATE reconcile_runs SET claimed_by = $1, claimed_until = $2
            WHERE id IN (
                SELECT id FROM reconcile_runs
                WHERE next_run_at <= $3 AND (claimed_until IS NULL OR claimed_until <= $3 OR claimed_by = $1)
                  AND NOT (id = ANY ($5::bigint[]))
                ORDER BY next_run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
            RETURNING \(reconcileRunColumns)
            """,
            [
                .text(lease.owner), .int64(lease.until), .int64(time), StoreValue.limit(limit).postgres,
                .bigintArray(lease.running),
            ]
        ).compactMap(ReconcileRun.init(row:)).sorted { ($0.nextRunAt, $0.id) < ($1.nextRunAt, $1.id) }
    }

    /// One statement for every table; only the table and its key column differ (a receipt job's key is its journal
    /// row). Both are names from this switch, never a value.
    func renewClaims(_ jobs: ClaimedJobs, ids: [Int64], lease: Lease) throws {
        guard !ids.isEmpty else { return }
        let (table, key) =
            switch jobs {
            case .deliveries: ("outbox", "id")
            case .receiptJobs: ("receipt_jobs", "journal_id")
            case .fetches: ("compare_jobs", "id")
            case .reconcileRuns: ("reconcile_runs", "id")
            case .consumptionJobs: ("consumption_jobs", "id")
            }
        try c.run(
            "UPDATE \(table) SET claimed_until = $1 WHERE \(key) = ANY ($2::bigint[]) AND claimed_by = $3 AND claimed_until < $1",
            [.int64(lease.until), .bigintArray(ids), .text(lease.owner)]
        )
    }
}
