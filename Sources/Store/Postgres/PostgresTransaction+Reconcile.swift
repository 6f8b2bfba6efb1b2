internal import Postgres
internal import Canonical

extension PostgresTransaction {
    func scheduleReconcileRuns(_ runs: [(key: ReconcileRunKey, firstRunAt: Int64)]) throws {
        for run in runs {
            try c.run(
                "INSERT INTO reconcile_runs (bundle_id, environment, kind, next_run_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                [.text(run.key.bundleID), .text(run.key.environment.rawValue), .text(run.key.kind.rawValue), .int64(run.firstRunAt)])
        }
    }

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
            """, [.text(lease.owner), .int64(lease.until), .int64(time), pgLimit(limit), .bigintArray(lease.running)]
        ).compactMap(ReconcileRun.init(row:)).sorted { ($0.nextRunAt, $0.id) < ($1.nextRunAt, $1.id) }
    }

    /// One statement for every table; only the table and its key column differ (a receipt job's key is its journal
    /// row). Both are names from this switch, never a value.
    func renewClaims(_ jobs: ClaimedJobs, ids: [Int64], lease: Lease) throws {
        guard !ids.isEmpty else { return }
        let (table, key) = switch jobs {
        case .deliveries: ("outbox", "id")
        case .receiptJobs: ("receipt_jobs", "journal_id")
        case .fetches: ("compare_jobs", "id")
        case .reconcileRuns: ("reconcile_runs", "id")
        }
        try c.run(
            "UPDATE \(table) SET claimed_until = $1 WHERE \(key) = ANY ($2::bigint[]) AND claimed_by = $3 AND claimed_until < $1",
            [.int64(lease.until), .bigintArray(ids), .text(lease.owner)])
    }

    func settleReconcileRun(id: Int64, _ o: ReconcileRunOutcome, now: Int64) throws {
        try c.run(
            """
            UPDATE reconcile_runs SET next_run_at = $1, watermark = COALESCE($2, watermark), attempts = $3, last_run_at = $4, last_error = $5,
                                      checked = checked + $6, recovered = recovered + $7, calls = calls + $8,
                                      claimed_by = NULL, claimed_until = NULL
            WHERE id = $9
            """,
            [.int64(o.nextRunAt), PostgresValue(o.watermark), .int64(Int64(o.attempts)), .int64(now), PostgresValue(o.error),
             .int64(Int64(o.checked)), .int64(Int64(o.recovered)), .int64(Int64(o.calls)), .int64(id)])
    }

    func deferReconcileRuns(bundleID: String, environment: AppStoreEnvironment, until: Int64) throws {
        try c.run("UPDATE reconcile_runs SET next_run_at = $1 WHERE bundle_id = $2 AND environment = $3 AND next_run_at < $1",
                  [.int64(until), .text(bundleID), .text(environment.rawValue)])
    }

    func reconcileRuns() throws -> [ReconcileRun] {
        try c.query("SELECT \(reconcileRunColumns) FROM reconcile_runs ORDER BY bundle_id, environment, kind").compactMap(ReconcileRun.init(row:))
    }

    func reconcileCandidates(_ s: ReconcileSelection) throws -> [ReconcileCandidate] {
        try c.query(
            """
            SELECT original_transaction_id, event_id, expires_date FROM subscription_state
            WHERE bundle_id = $1 AND environment = $2 AND path = $3 AND expires_date BETWEEN $4 AND $5 AND updated_at <= $6
              AND (reconciled_at IS NULL OR reconciled_at <= $7)
            ORDER BY expires_date, original_transaction_id LIMIT $8
            """,
            [.text(s.bundleID), .text(s.environment.rawValue), .text(s.path.rawValue), .int64(s.expiresFrom), .int64(s.expiresUntil),
             .int64(s.silentSince), .int64(s.checkedBefore), pgLimit(s.limit)]
        ).map(ReconcileCandidate.init(row:))
    }

    func markReconciled(path: Generation, environment: AppStoreEnvironment, originalTransactionID: String, at time: Int64) throws {
        try c.run(
            "UPDATE subscription_state SET reconciled_at = $1 WHERE path = $2 AND environment = $3 AND original_transaction_id = $4",
            [.int64(time), .text(path.rawValue), .text(environment.rawValue), .text(originalTransactionID)])
    }

    func recoveredEventCounts(since: Int64, until: Int64) throws -> [RecoveredCount] {
        try c.query(
            """
            SELECT bundle_id, environment, recovered_by, (created_at / 86400000) * 86400000 AS day, COUNT(*) AS n FROM events
            WHERE recovered_by IS NOT NULL AND created_at >= $1 AND created_at < $2
            GROUP BY bundle_id, environment, recovered_by, day ORDER BY day, bundle_id, environment, recovered_by
            """, [.int64(since), .int64(until)]
        ).map(RecoveredCount.init(row:))
    }
}
