internal import Postgres

/// The upgrade that compresses, once, the values a PostgreSQL store held before it stored them compressed
/// (``StoredBlob``, its migration 17): the journal's bodies, the events', states', snapshots', both ledgers' and the
/// receipt histories' JSON. Run at open right after the schema's migrations (``PostgresSchema/migrate(_:_:dictionaries:)``),
/// before the store serves; the migration's version is recorded once every table is done.
///
/// - Streaming: each table is read in key order, at most ``batchRows`` rows and ``batchBytes`` plain bytes at a time,
///   whatever the store's size; each batch is one UPDATE, committed on its own.
/// - Resumable: an open interrupted in the middle (a crash, a restart) starts again at the next open, from the start
///   of each table, and skips the values compressed already — a compressed value is told by its first bytes, as
///   ``StoredBlob`` reads it (a plain value never starts with them).
/// - One instance at a time: it holds the schema's migration lock (``PostgresSchema/lock(_:)``) for its whole run, so an
///   instance or command opening the store meanwhile waits for it, then finds it done.
/// - A row another session changed between the batch's read and its update is left as that session wrote it (the
///   update checks the row's version, `xmin`): an upgraded gateway writes compressed values itself.
enum PostgresCompaction {
    /// One table's compressed columns and the key it is read in order of (its primary key, or `events.seq`).
    struct Table: Sendable {
        var name: String
        /// The key's columns and their types (`bigint` or `text`).
        var key: [(name: String, type: String)]
        var columns: [(name: String, kind: StoredColumn)]
    }

    static let tables: [Table] = [
        Table(name: "journal", key: [("id", "bigint")], columns: [("body", .body)]),
        Table(name: "events", key: [("seq", "bigint")], columns: [("json", .event)]),
        Table(
            name: "subscription_state",
            key: [("path", "text"), ("environment", "text"), ("original_transaction_id", "text")],
            columns: [("json", .state)]
        ),
        Table(
            name: "snapshots",
            key: [
                ("bundle_id", "text"), ("environment", "text"), ("original_transaction_id", "text"), ("path", "text"),
            ],
            columns: [("json", .snapshot)]
        ),
        Table(
            name: "compare_ledger",
            key: [("id", "bigint")],
            columns: [("v1_json", .snapshot), ("v2_json", .snapshot)]
        ),
        Table(
            name: "receipt_ledger",
            key: [("id", "bigint")],
            columns: [("v1_json", .snapshot), ("v2_json", .snapshot)]
        ),
        Table(
            name: "receipt_histories",
            key: [("bundle_id", "text"), ("environment", "text"), ("customer", "text")],
            columns: [("json", .receiptHistory)]
        ),
    ]

    /// Most rows, and most plain bytes (a batch always takes at least one row), per batch.
    static let batchRows = 1_000
    static let batchBytes = 8 * 1_048_576

    /// What a run did: rows compressed per table (and left as another session changed them meanwhile).
    struct Outcome: Sendable, Hashable {
        var compressed: [String: Int] = [:]
        var skipped = 0
        var finished = true
    }

    /// Compresses every table's plain values on `c` (outside a transaction), then records `version`. `maxBatches`
    /// stops after that many batches without recording it (an interrupted run, for tests).
    @discardableResult
    static func run(
        _ c: PostgresConnection,
        version: Int,
        dictionaries: BlobDictionaries,
        maxBatches: Int? = nil
    ) throws -> Outcome {
        try c.run(
            "SELECT pg_advisory_lock($1::integer, hashtext(COALESCE(current_schema(), '')))",
            [.int64(PostgresSchema.lockClass)]
        )
        defer {
            _ = try? c.run(
                "SELECT pg_advisory_unlock($1::integer, hashtext(COALESCE(current_schema(), '')))",
                [.int64(PostgresSchema.lockClass)]
            )
        }
        var outcome = Outcome()
        // Another instance finished it while this one waited for the lock.
        guard try !recorded(version, on: c) else { return outcome }
        let table = PostgresDictionaryTable(c: c, inserter: nil)
        var batches = 0
        for t in tables {
            var cursor: [PostgresValue]?
            while true {
                if let maxBatches, batches >= maxBatches {
                    outcome.finished = false
                    return outcome
                }
                guard let (next, done, skipped) = try batch(t, after: cursor, on: c, table, dictionaries) else { break }
                outcome.compressed[t.name, default: 0] += done
                outcome.skipped += skipped
                cursor = next
                batches += 1
            }
        }
        try c.transaction { c in
            try PostgresSchema.lock(c)
            try c.run(
                """
                INSERT INTO schema_migrations (version, applied_at) VALUES ($1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                ON CONFLICT (version) DO NOTHING
                """,
                [.int64(Int64(version))]
            )
        }
        return outcome
    }

    static func recorded(_ version: Int, on c: PostgresConnection) throws -> Bool {
        try c.queryOne("SELECT 1 AS y FROM schema_migrations WHERE version = $1", [.int64(Int64(version))]) != nil
    }

    /// A value the batch reads: not NULL, and not starting like a compressed value.
    private static func plain(_ column: String) -> String {
        "(\(column) IS NOT NULL AND substring(\(column) FROM 1 FOR 1) NOT IN ('\\x28'::bytea, '\\x78'::bytea, '\\xd1'::bytea, '\\xd2'::bytea))"
    }

    /// One batch of `t` after `cursor` (nil: from the start): the key of its last row, the rows compressed and those
    /// skipped; nil when no plain value is left after `cursor`.
    private static func batch(
        _ t: Table,
        after cursor: [PostgresValue]?,
        on c: PostgresConnection,
        _ table: PostgresDictionaryTable,
        _ dictionaries: BlobDictionaries
    ) throws -> (cursor: [PostgresValue], compressed: Int, skipped: Int)? {
        let keyList = t.key.map(\.name).joined(separator: ", ")
        let anyPlain = t.columns.map { plain($0.name) }.joined(separator: " OR ")
        let after = cursor == nil ? "" : "(\(keyList)) > (\(placeholders(t.key, from: 1))) AND "
        // The batch's extent: its keys, up to batchRows rows and batchBytes bytes.
        let lengths = t.columns.map { "COALESCE(octet_length(\($0.name)), 0)" }.joined(separator: " + ")
        let keys = try c.query(
            "SELECT \(keyList), \(lengths) AS n FROM \(t.name) WHERE \(after)(\(anyPlain)) ORDER BY \(keyList) LIMIT \(batchRows)",
            cursor ?? []
        )
        guard !keys.isEmpty else { return nil }
        var end = 0
        var bytes = 0
        while end < keys.count {
            bytes += Int(keys[end].int64("n") ?? 0)
            if end > 0 && bytes > batchBytes { break }
            end += 1
        }
        let first = t.key.map { keys[0][$0.name] }
        let last = t.key.map { keys[end - 1][$0.name] }
        let n = t.key.count
        let rows = try c.query(
            """
            SELECT \(keyList), xmin::text AS row_version, \(t.columns.map(\.name).joined(separator: ", ")) FROM \(t.name)
            WHERE (\(keyList)) >= (\(placeholders(t.key, from: 1))) AND (\(keyList)) <= (\(placeholders(t.key, from: n + 1)))
              AND (\(anyPlain))
            ORDER BY \(keyList)
            """,
            first + last
        )
        var values: [PostgresValue] = []
        var tuples: [String] = []
        let width = n + 1 + t.columns.count
        for row in rows {
            var changed = false
            var packed: [PostgresValue] = []
            for (column, kind) in t.columns {
                guard let stored = row.bytes(column), !StoredBlob.looksStored(stored) else {
                    packed.append(.null)
                    continue
                }
                let value =
                    kind == .body
                    ? try dictionaries.pack(stored, on: table) : try dictionaries.packJSON(stored, on: table)
                if value != stored {
                    changed = true
                    packed.append(.bytea(value))
                } else {
                    packed.append(.null)
                }
            }
            guard changed else { continue }
            let base = tuples.count * width
            tuples.append(
                "("
                    + (0..<width).map { i in
                        "$\(base + i + 1)"
                            + (i < n ? "::\(t.key[i].type)" : i == n ? "::xid" : "::bytea")
                    }.joined(separator: ", ") + ")"
            )
            values += t.key.map { row[$0.name] } + [row["row_version"]] + packed
        }
        var updated = 0
        if !tuples.isEmpty {
            let sets = t.columns.map { "\($0.name) = COALESCE(v.\($0.name), t.\($0.name))" }.joined(separator: ", ")
            let columns = (t.key.map(\.name) + ["row_version"] + t.columns.map(\.name)).joined(separator: ", ")
            let matches = t.key.map { "t.\($0.name) = v.\($0.name)" }.joined(separator: " AND ")
            updated = try c.query(
                """
                UPDATE \(t.name) AS t SET \(sets) FROM (VALUES \(tuples.joined(separator: ", "))) AS v(\(columns))
                WHERE \(matches) AND t.xmin = v.row_version RETURNING 1 AS y
                """,
                values,
                prepared: false
            ).count
        }
        return (last, updated, tuples.count - updated)
    }

    private static func placeholders(_ key: [(name: String, type: String)], from start: Int) -> String {
        key.indices.map { "$\(start + $0)::\(key[$0].type)" }.joined(separator: ", ")
    }
}
