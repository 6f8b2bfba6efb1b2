internal import SQLite
internal import Canonical

extension SQLiteTransaction {
    func scheduleReconcileRuns(_ runs: [(key: ReconcileRunKey, firstRunAt: Int64)]) throws {
        for run in runs {
            try c.run(
                "INSERT INTO reconcile_runs (bundle_id, environment, kind, next_run_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(run.key.bundleID), .text(run.key.environment.rawValue), .text(run.key.kind.rawValue), .integer(run.firstRunAt)])
        }
    }

    /// No claims are recorded here: nothing to renew.
    func renewClaims(_ jobs: ClaimedJobs, ids: [Int64], lease: Lease) throws {}

    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueReconcileRuns(at time: Int64, limit: Int, lease: Lease) throws -> [ReconcileRun] {
        try c.query(
            """
            SELECT \(reconcileRunColumns) FROM reconcile_runs WHERE next_run_at <= ? AND id NOT IN (SELECT value FROM json_each(?))
            ORDER BY next_run_at, id LIMIT ?
            """,
            [.integer(time), idList(lease.running), limitValue(limit)]
        ).compactMap(ReconcileRun.init(row:))
    }

    func settleReconcileRun(id: Int64, _ o: ReconcileRunOutcome, now: Int64) throws {
        try c.run(
            """
            UPDATE reconcile_runs SET next_run_at = ?, watermark = COALESCE(?, watermark), attempts = ?, last_run_at = ?, last_error = ?,
                                      checked = checked + ?, recovered = recovered + ?, calls = calls + ?
            WHERE id = ?
            """,
            [.integer(o.nextRunAt), SQLiteValue(o.watermark), .integer(Int64(o.attempts)), .integer(now), SQLiteValue(o.error),
             .integer(Int64(o.checked)), .integer(Int64(o.recovered)), .integer(Int64(o.calls)), .integer(id)])
    }

    func deferReconcileRuns(bundleID: String, environment: AppStoreEnvironment, until: Int64) throws {
        try c.run("UPDATE reconcile_runs SET next_run_at = ? WHERE bundle_id = ? AND environment = ? AND next_run_at < ?",
                  [.integer(until), .text(bundleID), .text(environment.rawValue), .integer(until)])
    }

    func reconcileRuns() throws -> [ReconcileRun] {
        try c.query("SELECT \(reconcileRunColumns) FROM reconcile_runs ORDER BY bundle_id, environment, kind").compactMap(ReconcileRun.init(row:))
    }

    func reconcileCandidates(_ s: ReconcileSelection) throws -> [ReconcileCandidate] {
        try c.query(
            """
            SELECT original_transaction_id, event_id, expires_date FROM subscription_state
            WHERE bundle_id = ? AND environment = ? AND path = ? AND expires_date BETWEEN ? AND ? AND updated_at <= ?
              AND (reconciled_at IS NULL OR reconciled_at <= ?)
            ORDER BY expires_date, original_transaction_id LIMIT ?
            """,
            [.text(s.bundleID), .text(s.environment.rawValue), .text(s.path.rawValue), .integer(s.expiresFrom), .integer(s.expiresUntil),
             .integer(s.silentSince), .integer(s.checkedBefore), limitValue(s.limit)]
        ).map(ReconcileCandidate.init(row:))
    }

    func markReconciled(path: Generation, environment: AppStoreEnvironment, originalTransactionID: String, at time: Int64) throws {
        try c.run(
            "UPDATE subscription_state SET reconciled_at = ? WHERE path = ? AND environment = ? AND original_transaction_id = ?",
            [.integer(time), .text(path.rawValue), .text(environment.rawValue), .text(originalTransactionID)])
    }

    func recoveredEventCounts(since: Int64, until: Int64) throws -> [RecoveredCount] {
        try c.query(
            """
            SELECT bundle_id, environment, recovered_by, (created_at / 86400000) * 86400000 AS day, COUNT(*) AS n FROM events
            WHERE recovered_by IS NOT NULL AND created_at >= ? AND created_at < ?
            GROUP BY bundle_id, environment, recovered_by, day ORDER BY day, bundle_id, environment, recovered_by
            """, [.integer(since), .integer(until)]
        ).map(RecoveredCount.init(row:))
    }
}
