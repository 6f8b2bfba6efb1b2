internal import Canonical
internal import Policy
internal import SQLite

extension SQLiteTransaction {
    /// A plain comparison fetch (no `v1EventID`) is not queued again while one for the subscription and path is
    /// pending: one process writes, so a look first is enough (PostgreSQL's partial unique index does it across
    /// instances).
    func enqueueFetch(_ r: FetchRequest, at time: Int64, due: Int64?) throws {
        if r.v1EventID == nil {
            let pending = try c.queryOne(
                """
                SELECT id FROM compare_jobs WHERE state = 'pending' AND bundle_id = ? AND environment = ? AND original_transaction_id = ?
                  AND fetch = ? AND v1_event_id IS NULL
                """,
                keyValues(r.subscription).map(\.sqlite) + [.text(r.fetch.rawValue)]
            )
            if pending != nil { return }
        }
        try c.run(
            """
            INSERT INTO compare_jobs (bundle_id, environment, original_transaction_id, fetch, v1_event_id, authority, compare, confirms,
                                      next_attempt_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            keyValues(r.subscription).map(\.sqlite) + [
                .text(r.fetch.rawValue), SQLiteValue(r.v1EventID), SQLiteValue(r.authority?.rawValue),
                .integer(r.compare ? 1 : 0), .integer(Int64(r.confirms)), .integer(due ?? time), .integer(time),
                .integer(time),
            ]
        )
    }

    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueFetches(at time: Int64, limit: Int, lease: Lease) throws -> [FetchJob] {
        try c.query(
            """
            SELECT \(SQL.fetchColumns) FROM compare_jobs
            WHERE state = 'pending' AND next_attempt_at <= ? AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at, id LIMIT ?
            """,
            [.integer(time), StoreValue.ids(lease.running).sqlite, StoreValue.limit(limit).sqlite]
        ).map(FetchJob.init(row:))
    }
}
