internal import Canonical
internal import SQLite

extension SQLiteTransaction {
    /// No claims are recorded here: nothing to renew.
    func renewClaims(_ jobs: ClaimedJobs, ids: [Int64], lease: Lease) throws {}

    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueReconcileRuns(at time: Int64, limit: Int, lease: Lease) throws -> [ReconcileRun] {
        try c.query(
            """
            SELECT \(reconcileRunColumns) FROM reconcile_runs WHERE next_run_at <= ? AND id NOT IN (SELECT value FROM json_each(?))
            ORDER BY next_run_at, id LIMIT ?
            """,
            [.integer(time), StoreValue.ids(lease.running).sqlite, StoreValue.limit(limit).sqlite]
        ).compactMap(ReconcileRun.init(row:))
    }
}
