internal import Canonical

// The claim (`claimDueReconcileRuns`) and the renewal of claims (`renewClaims`) differ by database: each store's
// `*Transaction+Reconcile.swift`.
extension SQLTransaction {
    func scheduleReconcileRuns(_ runs: [(key: ReconcileRunKey, firstRunAt: Int64)]) throws {
        for run in runs {
            try c.run(
                .scheduleReconcileRun,
                [
                    .text(run.key.bundleID), .text(run.key.environment.rawValue), .text(run.key.kind.rawValue),
                    .int64(run.firstRunAt),
                ]
            )
        }
    }

    func settleReconcileRun(id: Int64, _ o: ReconcileRunOutcome, now: Int64) throws {
        try c.run(
            .settleReconcileRun,
            [
                .int64(o.nextRunAt), StoreValue(o.watermark), .int64(Int64(o.attempts)), .int64(now),
                StoreValue(o.error),
                .int64(Int64(o.checked)), .int64(Int64(o.recovered)), .int64(Int64(o.calls)), .int64(id),
            ]
        )
    }

    func deferReconcileRuns(bundleID: String, environment: AppStoreEnvironment, until: Int64) throws {
        try c.run(.deferReconcileRuns, [.int64(until), .text(bundleID), .text(environment.rawValue)])
    }

    func reconcileRuns() throws -> [ReconcileRun] {
        try c.query(.reconcileRuns, []).compactMap(ReconcileRun.init(row:))
    }

    func reconcileCandidates(_ s: ReconcileSelection) throws -> [ReconcileCandidate] {
        try c.query(
            .reconcileCandidates,
            [
                .text(s.bundleID), .text(s.environment.rawValue), .text(s.path.rawValue), .int64(s.expiresFrom),
                .int64(s.expiresUntil),
                .int64(s.silentSince), .int64(s.checkedBefore), .limit(s.limit),
            ]
        ).map(ReconcileCandidate.init(row:))
    }

    func markReconciled(
        path: Generation,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        at time: Int64
    ) throws {
        try c.run(
            .markReconciled,
            [.int64(time), .text(path.rawValue), .text(environment.rawValue), .text(originalTransactionID)]
        )
    }

    func recoveredEventCounts(since: Int64, until: Int64) throws -> [RecoveredCount] {
        try c.query(.recoveredEventCounts, [.int64(since), .int64(until)]).map(RecoveredCount.init(row:))
    }
}

extension SQL {
    fileprivate static let scheduleReconcileRun = SQL(
        "INSERT INTO reconcile_runs (bundle_id, environment, kind, next_run_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
    )

    fileprivate static let settleReconcileRun = SQL { d in
        """
        UPDATE reconcile_runs SET next_run_at = $1, watermark = COALESCE($2, watermark), attempts = $3, last_run_at = $4, last_error = $5,
                                  checked = checked + $6, recovered = recovered + $7, calls = calls + $8\(d.clearClaim)
        WHERE id = $9
        """
    }

    fileprivate static let deferReconcileRuns = SQL(
        "UPDATE reconcile_runs SET next_run_at = $1 WHERE bundle_id = $2 AND environment = $3 AND next_run_at < $1"
    )

    fileprivate static let reconcileRuns = SQL(
        "SELECT \(reconcileRunColumns) FROM reconcile_runs ORDER BY bundle_id, environment, kind"
    )

    fileprivate static let reconcileCandidates = SQL(
        """
        SELECT original_transaction_id, event_id, expires_date FROM subscription_state
        WHERE bundle_id = $1 AND environment = $2 AND path = $3 AND expires_date BETWEEN $4 AND $5 AND updated_at <= $6
          AND (reconciled_at IS NULL OR reconciled_at <= $7)
        ORDER BY expires_date, original_transaction_id LIMIT $8
        """
    )

    fileprivate static let markReconciled = SQL(
        "UPDATE subscription_state SET reconciled_at = $1 WHERE path = $2 AND environment = $3 AND original_transaction_id = $4"
    )

    fileprivate static let recoveredEventCounts = SQL(
        """
        SELECT bundle_id, environment, recovered_by, (created_at / 86400000) * 86400000 AS day, COUNT(*) AS n FROM events
        WHERE recovered_by IS NOT NULL AND created_at >= $1 AND created_at < $2
        GROUP BY bundle_id, environment, recovered_by, day ORDER BY day, bundle_id, environment, recovered_by
        """
    )
}
