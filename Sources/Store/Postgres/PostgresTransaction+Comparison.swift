internal import Postgres
internal import Canonical

extension PostgresTransaction {
    private func keyValues(_ k: SubscriptionKey) -> [PostgresValue] {
        [.text(k.bundleID), .text(k.environment.rawValue), .text(k.originalTransactionID)]
    }

    func putSnapshot(_ s: OutcomeSnapshot, path: Generation) throws {
        guard let bundle = s.bundleID, let env = s.environment, !s.originalTransactionID.isEmpty else { return }
        try c.run(
            """
            INSERT INTO snapshots AS s (bundle_id, environment, original_transaction_id, path, source, observed_at, json)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (bundle_id, environment, original_transaction_id, path) DO UPDATE SET
                source = excluded.source, observed_at = excluded.observed_at, json = excluded.json
            WHERE excluded.observed_at >= s.observed_at
            """,
            [.text(bundle), .text(env.rawValue), .text(s.originalTransactionID), .text(path.rawValue), .text(s.source.rawValue),
             .int64(s.observedAt), .bytea(SnapshotJSON.encode(s))])
    }

    func snapshot(of k: SubscriptionKey, path: Generation) throws -> OutcomeSnapshot? {
        SnapshotJSON.decode(try c.queryOne(
            "SELECT json FROM snapshots WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3 AND path = $4",
            keyValues(k) + [.text(path.rawValue)])?.bytes("json"))
    }

    func receipt(of k: SubscriptionKey) throws -> StoredReceipt? {
        try c.queryOne(
            "SELECT receipt, secret_name, updated_at FROM v1_receipts WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3",
            keyValues(k)
        ).flatMap(StoredReceipt.init(row:))
    }

    func putReceipt(_ r: StoredReceipt, of k: SubscriptionKey) throws {
        try c.run(
            """
            INSERT INTO v1_receipts (bundle_id, environment, original_transaction_id, receipt, secret_name, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (bundle_id, environment, original_transaction_id) DO UPDATE SET
                receipt = excluded.receipt, secret_name = excluded.secret_name, updated_at = excluded.updated_at
            """,
            keyValues(k) + [.text(r.receipt), .text(r.secretName), .int64(r.updatedAt)])
        // A fetch in flight at this moment is pending too, and its own outcome would overwrite this wake-up: the
        // comparison worker therefore looks at the receipt again in the transaction that settles it.
        try c.run(
            """
            UPDATE compare_jobs SET next_attempt_at = $1 WHERE state = 'pending' AND "fetch" = 'v1' AND bundle_id = $2 AND environment = $3
              AND original_transaction_id = $4 AND next_attempt_at > $1
            """, [.int64(r.updatedAt)] + keyValues(k))
    }

    /// A plain comparison fetch already pending for the subscription and path conflicts with the partial unique
    /// index compare_jobs_one_pending (also one another instance just queued): nothing is queued then.
    func enqueueFetch(_ r: FetchRequest, at time: Int64, due: Int64?) throws {
        try c.run(
            """
            INSERT INTO compare_jobs (bundle_id, environment, original_transaction_id, "fetch", v1_event_id, authority, compare, confirms,
                                      next_attempt_at, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) ON CONFLICT DO NOTHING
            """,
            keyValues(r.subscription) + [.text(r.fetch.rawValue), PostgresValue(r.v1EventID), PostgresValue(r.authority),
                                         .bool(r.compare), .int64(Int64(r.confirms)), .int64(due ?? time), .int64(time)])
    }

    private static let fetchColumns = """
        id, bundle_id, environment, original_transaction_id, "fetch", v1_event_id, authority, compare, attempts, created_at, confirms, state,
        next_attempt_at, last_error
        """

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
            RETURNING \(Self.fetchColumns)
            """, [.text(lease.owner), .int64(lease.until), .int64(time), pgLimit(limit), .bigintArray(lease.running)]
        ).sorted(by: dueFirst("id")).compactMap(FetchJob.init(row:))
    }

    func fetchJobs(state: JobState?) throws -> [FetchJob] {
        try c.query("SELECT \(Self.fetchColumns) FROM compare_jobs WHERE ($1::text IS NULL OR state = $1) ORDER BY id", [PostgresValue(state?.rawValue)])
            .compactMap(FetchJob.init(row:))
    }

    func fetchJobCounts() throws -> [JobState: Int] {
        stateCounts(try c.query("SELECT state, COUNT(*) AS n FROM compare_jobs GROUP BY state"), as: JobState.self)
    }

    func settleFetch(id: Int64, state: JobState, attempts: Int, nextAttemptAt: Int64?, error: String?, now: Int64) throws {
        try c.run(
            """
            UPDATE compare_jobs SET state = $1, attempts = $2, next_attempt_at = COALESCE($3::bigint, next_attempt_at), last_error = $4,
                                    updated_at = $5, claimed_by = NULL, claimed_until = NULL
            WHERE id = $6
            """,
            [.text(state.rawValue), .int64(Int64(attempts)), PostgresValue(nextAttemptAt), PostgresValue(error), .int64(now), .int64(id)])
    }

    func recordComparison(_ e: LedgerEntry) throws {
        try c.run(
            """
            INSERT INTO compare_ledger (bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            keyValues(e.subscription) + [
                .int64(e.comparedAt), .text(e.outcome.rawValue), e.fields.isEmpty ? .null : .text(e.fields.joined(separator: ",")),
                PostgresValue(e.v1.map(SnapshotJSON.encode)), PostgresValue(e.v2.map(SnapshotJSON.encode)),
            ])
    }

    func ledger(bundleID: String?, environment: AppStoreEnvironment?, from: Int64, to: Int64) throws -> [LedgerEntry] {
        try c.query(
            """
            SELECT bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json FROM compare_ledger
            WHERE ($1::text IS NULL OR bundle_id = $1) AND ($2::text IS NULL OR environment = $2) AND compared_at >= $3 AND compared_at < $4
            ORDER BY compared_at, id
            """,
            [PostgresValue(bundleID), PostgresValue(environment), .int64(from), .int64(to)]
        ).compactMap(LedgerEntry.init(row:))
    }
}
