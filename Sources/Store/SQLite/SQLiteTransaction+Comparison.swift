internal import SQLite
internal import Canonical

extension SQLiteTransaction {
    private func keyValues(_ k: SubscriptionKey) -> [SQLiteValue] {
        [.text(k.bundleID), .text(k.environment.rawValue), .text(k.originalTransactionID)]
    }

    func putSnapshot(_ s: OutcomeSnapshot, path: Generation) throws {
        guard let bundle = s.bundleID, let env = s.environment, !s.originalTransactionID.isEmpty else { return }
        try c.run(
            """
            INSERT INTO snapshots (bundle_id, environment, original_transaction_id, path, source, observed_at, json)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(bundle_id, environment, original_transaction_id, path) DO UPDATE SET
                source = excluded.source, observed_at = excluded.observed_at, json = excluded.json
            WHERE excluded.observed_at >= snapshots.observed_at
            """,
            [.text(bundle), .text(env.rawValue), .text(s.originalTransactionID), .text(path.rawValue), .text(s.source.rawValue),
             .integer(s.observedAt), .blob(SnapshotJSON.encode(s))])
    }

    func snapshot(of k: SubscriptionKey, path: Generation) throws -> OutcomeSnapshot? {
        SnapshotJSON.decode(try c.queryOne(
            "SELECT json FROM snapshots WHERE bundle_id = ? AND environment = ? AND original_transaction_id = ? AND path = ?",
            keyValues(k) + [.text(path.rawValue)])?.blob("json"))
    }

    func receipt(of k: SubscriptionKey) throws -> StoredReceipt? {
        try c.queryOne(
            "SELECT receipt, secret_name, updated_at FROM v1_receipts WHERE bundle_id = ? AND environment = ? AND original_transaction_id = ?",
            keyValues(k)
        ).flatMap(StoredReceipt.init(row:))
    }

    func putReceipt(_ r: StoredReceipt, of k: SubscriptionKey) throws {
        try c.run(
            """
            INSERT INTO v1_receipts (bundle_id, environment, original_transaction_id, receipt, secret_name, updated_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(bundle_id, environment, original_transaction_id) DO UPDATE SET
                receipt = excluded.receipt, secret_name = excluded.secret_name, updated_at = excluded.updated_at
            """,
            keyValues(k) + [.text(r.receipt), .text(r.secretName), .integer(r.updatedAt)])
        // A fetch in flight at this moment is pending too, and its own outcome would overwrite this wake-up: the
        // comparison worker therefore looks at the receipt again in the transaction that settles it.
        try c.run(
            """
            UPDATE compare_jobs SET next_attempt_at = ? WHERE state = 'pending' AND fetch = 'v1' AND bundle_id = ? AND environment = ?
              AND original_transaction_id = ? AND next_attempt_at > ?
            """, [.integer(r.updatedAt)] + keyValues(k) + [.integer(r.updatedAt)])
    }

    func enqueueFetch(_ r: FetchRequest, at time: Int64, due: Int64?) throws {
        if r.v1EventID == nil {
            let pending = try c.queryOne(
                """
                SELECT id FROM compare_jobs WHERE state = 'pending' AND bundle_id = ? AND environment = ? AND original_transaction_id = ?
                  AND fetch = ? AND v1_event_id IS NULL
                """, keyValues(r.subscription) + [.text(r.fetch.rawValue)])
            if pending != nil { return }
        }
        try c.run(
            """
            INSERT INTO compare_jobs (bundle_id, environment, original_transaction_id, fetch, v1_event_id, authority, compare, confirms,
                                      next_attempt_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            keyValues(r.subscription) + [.text(r.fetch.rawValue), SQLiteValue(r.v1EventID), SQLiteValue(r.authority),
                                         .integer(r.compare ? 1 : 0), .integer(Int64(r.confirms)), .integer(due ?? time), .integer(time),
                                         .integer(time)])
    }

    private func fetchJobs(where condition: String, _ bindings: [SQLiteValue]) throws -> [FetchJob] {
        try c.query(
            """
            SELECT id, bundle_id, environment, original_transaction_id, fetch, v1_event_id, authority, compare, attempts, created_at,
                   confirms, state, next_attempt_at, last_error
            FROM compare_jobs WHERE \(condition)
            """, bindings
        ).compactMap(FetchJob.init(row:))
    }

    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueFetches(at time: Int64, limit: Int, lease: Lease) throws -> [FetchJob] {
        try fetchJobs(
            where: "state = 'pending' AND next_attempt_at <= ? AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at, id LIMIT ?",
            [.integer(time), idList(lease.running), limitValue(limit)])
    }

    func fetchJobs(state: JobState?) throws -> [FetchJob] {
        let s = SQLiteValue(state?.rawValue)
        return try fetchJobs(where: "(? IS NULL OR state = ?) ORDER BY id", [s, s])
    }

    func fetchJobCounts() throws -> [JobState: Int] {
        stateCounts(try c.query("SELECT state, COUNT(*) AS n FROM compare_jobs GROUP BY state"), as: JobState.self)
    }

    func settleFetch(id: Int64, state: JobState, attempts: Int, nextAttemptAt: Int64?, error: String?, now: Int64) throws {
        try c.run(
            """
            UPDATE compare_jobs SET state = ?, attempts = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?, updated_at = ?
            WHERE id = ?
            """,
            [.text(state.rawValue), .integer(Int64(attempts)), SQLiteValue(nextAttemptAt), SQLiteValue(error), .integer(now), .integer(id)])
    }

    func recordComparison(_ e: LedgerEntry) throws {
        try c.run(
            """
            INSERT INTO compare_ledger (bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            keyValues(e.subscription) + [
                .integer(e.comparedAt), .text(e.outcome.rawValue), e.fields.isEmpty ? .null : .text(e.fields.joined(separator: ",")),
                e.v1.map { .blob(SnapshotJSON.encode($0)) } ?? .null, e.v2.map { .blob(SnapshotJSON.encode($0)) } ?? .null,
            ])
    }

    func ledger(bundleID: String?, environment: AppStoreEnvironment?, from: Int64, to: Int64) throws -> [LedgerEntry] {
        try c.query(
            """
            SELECT bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json FROM compare_ledger
            WHERE (? IS NULL OR bundle_id = ?) AND (? IS NULL OR environment = ?) AND compared_at >= ? AND compared_at < ?
            ORDER BY compared_at, id
            """,
            [SQLiteValue(bundleID), SQLiteValue(bundleID), SQLiteValue(environment), SQLiteValue(environment), .integer(from), .integer(to)]
        ).compactMap(LedgerEntry.init(row:))
    }
}
