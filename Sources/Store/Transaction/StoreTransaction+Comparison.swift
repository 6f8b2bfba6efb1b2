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
        SnapshotJSON.decode(
            try c.queryOne(.snapshot, keyValues(k) + [.text(path.rawValue)])?.compressible("json", as: .snapshot)
        )
    }

    func receipt(of k: SubscriptionKey) throws -> StoredReceipt? {
        try c.queryOne(.receipt, keyValues(k)).map(StoredReceipt.init(row:))
    }

    func putReceipt(_ r: StoredReceipt, of k: SubscriptionKey) throws {
        try c.run(.putReceipt, keyValues(k) + [.text(r.receipt), .text(r.secretName), .int64(r.updatedAt)])
        // A fetch in flight at this moment is pending too, and its own outcome would overwrite this wake-up: the
        // comparison worker therefore looks at the receipt again in the transaction that settles it.
        try c.run(.wakeV1Fetches, [.int64(r.updatedAt)] + keyValues(k))
    }

    func fetchJobs(state: JobState?) throws -> [FetchJob] {
        try c.query(.fetchJobs, [StoreValue(state?.rawValue)]).map(FetchJob.init(row:))
    }

    func fetchJobCounts() throws -> [JobState: Int] {
        try stateCounts(c.query(.fetchJobCounts, []), as: JobState.self)
    }

    func pendingFetches() throws -> Int {
        try c.queryOne(.pendingFetches, [])?.int("n") ?? 0
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

    func ledgerTally(
        bundleID: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        byDay: Bool,
        in ledger: ComparisonLedger
    ) throws
        -> LedgerTally
    {
        var tally = LedgerTally()
        let sql = LedgerStatements.of(ledger)
        let key: [StoreValue] = [.text(bundleID), .text(environment.rawValue)]
        func count(_ outcome: CompareOutcome, _ lower: Int64, _ upper: Int64) throws -> Int {
            try c.queryOne(sql.count, key + [.text(outcome.rawValue), .int64(lower), .int64(upper)])?.int("n") ?? 0
        }
        guard from < to else { return tally }
        for outcome in CompareOutcome.allCases { tally.outcomes[outcome] = try count(outcome, from, to) }
        if byDay, (tally.outcomes[.agree] ?? 0) + (tally.outcomes[.disagree] ?? 0) > 0 {
            // Only the days that hold a pair are visited: each step finds the next pair on the index (two MIN
            // lookups), so a window of years with a few busy days costs those days, not every day in between.
            let dayMillis: Int64 = 86_400_000
            var cursor = from
            while cursor < to {
                let next = try [CompareOutcome.agree, .disagree].compactMap {
                    try c.queryOne(sql.next, key + [.text($0.rawValue), .int64(cursor), .int64(to)])?.int64("t")
                }.min()
                guard let next else { break }
                let day = next >= 0 ? next / dayMillis * dayMillis : (next - dayMillis + 1) / dayMillis * dayMillis
                let (lower, upper) = (max(from, day), min(to, day.clampedAdding(dayMillis)))
                let d = LedgerTally.Day(
                    start: day,
                    agreements: try count(.agree, lower, upper),
                    disagreements: try count(.disagree, lower, upper)
                )
                if d.agreements + d.disagreements > 0 { tally.daily.append(d) }
                cursor = upper
            }
        }
        if (tally.outcomes[.disagree] ?? 0) > 0 {
            for row in try c.query(sql.fieldSets, key + [.int64(from), .int64(to)]) {
                if let fields = row.string("fields") { tally.fieldSets[fields] = row.int("n") ?? 0 }
            }
        }
        return tally
    }

    func ledgerExamples(
        bundleID: String,
        environment: AppStoreEnvironment,
        outcome: CompareOutcome,
        to: Int64,
        after: (comparedAt: Int64, id: Int64),
        limit: Int,
        in ledger: ComparisonLedger
    ) throws -> [LedgerExample] {
        try c.query(
            LedgerStatements.of(ledger).examples,
            [
                .text(bundleID), .text(environment.rawValue), .text(outcome.rawValue), .int64(after.comparedAt),
                .int64(after.id), .int64(to), .limit(limit),
            ]
        ).compactMap { row in
            guard let id = row.int64("id"), let at = row.int64("compared_at"),
                let otid = row.string("original_transaction_id")
            else { return nil }
            let fields = row.string("fields").map { $0.split(separator: ",").map(String.init) } ?? []
            return LedgerExample(id: id, comparedAt: at, originalTransactionID: otid, fields: fields)
        }
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
    fileprivate static let pendingFetches = SQL("SELECT COUNT(*) AS n FROM compare_jobs WHERE state = 'pending'")

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

}

/// The report's statements over one comparison ledger, written once for both (the notifications' `compare_ledger`
/// and the receipts' `receipt_ledger` have the same columns and index).
struct LedgerStatements: Sendable {
    /// Index range counts (`…_outcome`): the index alone answers them.
    let count: SQL
    /// The first pair of one outcome compared in [$4, $5): one step down the index.
    let next: SQL
    /// The disagreements alone, grouped by their set of fields.
    let fieldSets: SQL
    /// One outcome's rows in ledger order after a cursor, a page at a time.
    let examples: SQL

    init(table: String) {
        count = SQL(
            """
            SELECT COUNT(*) AS n FROM \(table)
            WHERE bundle_id = $1 AND environment = $2 AND outcome = $3 AND compared_at >= $4 AND compared_at < $5
            """
        )
        next = SQL(
            """
            SELECT MIN(compared_at) AS t FROM \(table)
            WHERE bundle_id = $1 AND environment = $2 AND outcome = $3 AND compared_at >= $4 AND compared_at < $5
            """
        )
        fieldSets = SQL(
            """
            SELECT fields, COUNT(*) AS n FROM \(table)
            WHERE bundle_id = $1 AND environment = $2 AND outcome = 'disagree' AND compared_at >= $3 AND compared_at < $4
              AND fields IS NOT NULL
            GROUP BY fields
            """
        )
        examples = SQL(
            """
            SELECT id, compared_at, original_transaction_id, fields FROM \(table)
            WHERE bundle_id = $1 AND environment = $2 AND outcome = $3 AND compared_at >= $4 AND (compared_at > $4 OR id > $5)
              AND compared_at < $6
            ORDER BY compared_at, id LIMIT $7
            """
        )
    }

    static let notifications = LedgerStatements(table: "compare_ledger")
    static let receipts = LedgerStatements(table: "receipt_ledger")

    static func of(_ ledger: ComparisonLedger) -> LedgerStatements {
        switch ledger {
        case .notifications: notifications
        case .receipts: receipts
        }
    }
}

extension SQL {
    fileprivate static let ledger = SQL(
        """
        SELECT bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json FROM compare_ledger
        WHERE ($1::text IS NULL OR bundle_id = $1) AND ($2::text IS NULL OR environment = $2) AND compared_at >= $3 AND compared_at < $4
        ORDER BY compared_at, id
        """
    )
}
