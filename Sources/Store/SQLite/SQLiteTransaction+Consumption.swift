internal import SQLite

extension SQLiteTransaction {
    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueConsumptionJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ConsumptionJob] {
        try c.query(
            """
            SELECT \(SQL.consumptionJobColumns) FROM consumption_jobs
            WHERE state = 'pending' AND next_attempt_at <= ? AND id NOT IN (SELECT value FROM json_each(?))
            ORDER BY next_attempt_at, id LIMIT ?
            """,
            [.integer(time), StoreValue.ids(lease.running).sqlite, StoreValue.limit(limit).sqlite]
        ).map(ConsumptionJob.init(row:))
    }
}
