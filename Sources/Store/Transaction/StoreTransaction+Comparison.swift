internal import Canonical

// The claim (`claimDueFetches`) and `enqueueFetch` differ by database: each store's `*Transaction+Comparison.swift`.
extension SQLTransaction {
    func keyValues(_ k: SubscriptionKey) -> [StoreValue] {
        [.text(k.bundleID), .text(k.environment.rawValue), .text(k.originalTransactionID)]
    }

    func putSnapshot(_ s: OutcomeSnapshot, path: Generation) throws {
        guard let bundle = s.bundleID, let env = s.environment, !s.originalTransactionID.isEmpty else { return }
        try c.run(
            .putSnapshot,
            [
                .text(bundle), .text(env.rawValue), .text(s.originalTransactionID), .text(path.rawValue),
                .text(s.source.rawValue),
                .int64(s.observedAt), .compressible(SnapshotJSON.encode(s)),
            ]
        )
    }

    func snapshot(of k: SubscriptionKey, path: Generation) throws -> OutcomeSnapshot? {
        SnapshotJSON.decode(try c.queryOne(.snapshot, keyValues(k) + [.text(path.rawValue)])?.compressible("json"))
    }

    func receipt(of k: SubscriptionKey) throws -> StoredReceipt? {
        try c.queryOne(.receipt, keyValues(k)).flatMap(StoredReceipt.init(row:))
    }

    func putReceipt(_ r: StoredReceipt, of k: SubscriptionKey) throws {
        try c.run(.putReceipt, keyValues(k) + [.text(r.receipt), .text(r.secretName), .int64(r.updatedAt)])
        // A fetch in flight at this moment is pending too, and its own outcome would overwrite this wake-up: the
        // comparison worker therefore looks at the receipt again in the transaction that settles it.
        try c.run(.wakeV1Fetches, [.int64(r.updatedAt)] + keyValues(k))
    }

    func fetchJobs(state: JobState?) throws -> [FetchJob] {
        try c.query(.fetchJobs, [StoreValue(state?.rawValue)]).compactMap(FetchJob.init(row:))
    }

    func fetchJobCounts() throws -> [JobState: Int] {
        stateCounts(try c.query(.fetchJobCounts, []), as: JobState.self)
    }

    func settleFetch(
        id: Int64,
        state: JobState,
        attempts: Int,
        nextAttemptAt: Int64?,
        error: String?,
        now: Int64
    ) throws {
        try c.run(
            .settleFetch,
            [
                .text(state.rawValue), .int64(Int64(attempts)), StoreValue(nextAttemptAt), StoreValue(error),
                .int64(now), .int64(id),
            ]
        )
    }

    func recordComparison(_ e: LedgerEntry) throws {
        try c.run(
            .recordComparison,
            keyValues(e.subscription) + [
                .int64(e.comparedAt), .text(e.outcome.rawValue),
                e.fields.isEmpty ? .null : .text(e.fields.joined(separator: ",")),
                e.v1.map { .compressible(SnapshotJSON.encode($0)) } ?? .null,
                e.v2.map { .compressible(SnapshotJSON.encode($0)) } ?? .null,
            ]
        )
    }

    func ledger(bundleID: String?, environment: AppStoreEnvironment?, from: Int64, to: Int64) throws -> [LedgerEntry] {
        try c.query(.ledger, [StoreValue(bundleID), StoreValue(environment), .int64(from), .int64(to)]).compactMap(
            LedgerEntry.init(row:)
        )
    }
}

extension SQL {
    /// The columns a fetch is read with (`"fetch"` is a reserved word in PostgreSQL: always quoted).
    static let fetchColumns = """
        id, bundle_id, environment, original_transaction_id, "fetch", v1_event_id, authority, compare, attempts, created_at, confirms, state,
        next_attempt_at, last_error
        """

    /// Keeps the newest snapshot per subscription and path.
    fileprivate static let putSnapshot = SQL(
        """
        INSERT INTO snapshots AS s (bundle_id, environment, original_transaction_id, path, source, observed_at, json)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (bundle_id, environment, original_transaction_id, path) DO UPDATE SET
            source = excluded.source, observed_at = excluded.observed_at, json = excluded.json
        WHERE excluded.observed_at >= s.observed_at
        """
    )

    fileprivate static let snapshot = SQL(
        "SELECT json FROM snapshots WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3 AND path = $4"
    )

    fileprivate static let receipt = SQL(
        "SELECT receipt, secret_name, updated_at FROM v1_receipts WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id = $3"
    )

    fileprivate static let putReceipt = SQL(
        """
        INSERT INTO v1_receipts (bundle_id, environment, original_transaction_id, receipt, secret_name, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (bundle_id, environment, original_transaction_id) DO UPDATE SET
            receipt = excluded.receipt, secret_name = excluded.secret_name, updated_at = excluded.updated_at
        """
    )

    /// The subscription's pending V1 fetches, due now.
    fileprivate static let wakeV1Fetches = SQL(
        """
        UPDATE compare_jobs SET next_attempt_at = $1 WHERE state = 'pending' AND "fetch" = 'v1' AND bundle_id = $2 AND environment = $3
          AND original_transaction_id = $4 AND next_attempt_at > $1
        """
    )

    fileprivate static let fetchJobs = SQL(
        "SELECT \(fetchColumns) FROM compare_jobs WHERE ($1::text IS NULL OR state = $1) ORDER BY id"
    )

    fileprivate static let fetchJobCounts = SQL("SELECT state, COUNT(*) AS n FROM compare_jobs GROUP BY state")

    fileprivate static let settleFetch = SQL { d in
        """
        UPDATE compare_jobs SET state = $1, attempts = $2, next_attempt_at = COALESCE($3::bigint, next_attempt_at), last_error = $4,
                                updated_at = $5\(d.clearClaim)
        WHERE id = $6
        """
    }

    fileprivate static let recordComparison = SQL(
        """
        INSERT INTO compare_ledger (bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        """
    )

    fileprivate static let ledger = SQL(
        """
        SELECT bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json FROM compare_ledger
        WHERE ($1::text IS NULL OR bundle_id = $1) AND ($2::text IS NULL OR environment = $2) AND compared_at >= $3 AND compared_at < $4
        ORDER BY compared_at, id
        """
    )
}
