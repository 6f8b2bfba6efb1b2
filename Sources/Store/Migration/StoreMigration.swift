internal import FoundationEssentials
internal import Postgres
internal import SQLite
public import WireJSON

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Moves an installation's SQLite store into an empty PostgreSQL database (`iap-gateway migrate-store`,
/// docs/operations.md, "Moving from SQLite to PostgreSQL"): every table, row for row, ids and arrival order kept.
///
/// 1. Refuses an SQLite file another process has open (a gateway still running would go on writing into it).
/// 2. Opens the SQLite file (its schema brought up to this gateway's, as any command does; quarantine rows stored
///    before bodies were redacted and delivery attempts logged before answer heads were scrubbed with `redactor`,
///    ``GatewayStore/scrubQuarantine(_:batch:)``, ``GatewayStore/scrubDeliveryLog(_:batch:)``) and a ``PostgresStore`` on
///    the target (which migrates the target's schema), then closes that store again.
/// 3. In one PostgreSQL transaction — under the schema's migration lock, with the gateway's tables locked against
///    writes — refuses a target that holds any gateway row; copies every table of ``tables`` from one SQLite
///    snapshot, in rowid order (`events.seq` is the SQLite rowid: the arrival order); checks the row counts of both
///    sides and the quarantine usage the PostgreSQL trigger counted; sets every `bigserial` sequence past the
///    largest id copied; commits. Any failure rolls all of it back.
/// 4. Vacuums and analyzes every table (statistics for the planner, the visibility map for index-only scans) and
///    counts it again on a fresh session, for the report.
///
/// Claims (`claimed_by`, `claimed_until`) start empty: every pending job is due to any instance. One generic copier
/// walks the table list below; a column or table of either schema the list does not name stops the migration before
/// anything is copied, so a new migration that forgets this list cannot lose data silently.
public enum StoreMigration {
    /// One table's rows on each side.
    public struct TableCount: Sendable, Hashable {
        public var table: String
        /// Rows in the SQLite store (the snapshot copied).
        public var source: Int64
        /// Rows in PostgreSQL after the commit.
        public var target: Int64
        public var verified: Bool { source == target }
    }

    /// What a migration did.
    public struct Report: Sendable, Hashable {
        /// Every copied table, in copy order.
        public var tables: [TableCount]
        /// Whether each quarantine lane's usage (rows, bytes) in PostgreSQL equals the SQLite store's.
        public var quarantineUsageVerified: Bool
        /// The sequences set past the largest id copied: (table.column, the next value it hands out).
        public var sequences: [String: Int64]
        public var milliseconds: Int64
        public var verified: Bool { quarantineUsageVerified && tables.allSatisfy(\.verified) }
    }

    /// Why nothing was migrated. The message never holds a value of a row or the connection string.
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public var message: String
        public var description: String { message }
        init(_ message: String) { self.message = message }
    }

    /// One table to copy: its columns under the PostgreSQL names, each read from the SQLite column of the same name
    /// unless `sourceExpressions` says otherwise.
    struct Table {
        let name: String
        let columns: [String]
        /// A PostgreSQL column filled from an SQLite expression instead (`events.seq` ← `rowid`).
        var sourceExpressions: [String: String] = [:]
        /// PostgreSQL-only columns left at their default (the job claims: empty).
        var targetOnly: Set<String> = []
        /// The `bigserial` column whose sequence is set past the largest value copied.
        var serial: String?
        /// Columns both stores keep compressed (``StoredBlob``): each value is checked to decompress, then copied as it
        /// is (the dictionaries it names are copied first, ids kept: `blob_dictionaries`).
        var compressed: Set<String> = []

        var sourceColumns: Set<String> { Set(columns.filter { sourceExpressions[$0] == nil }) }
    }

    /// Every table of the gateway, parents before the tables that reference them.
    static let claims: Set<String> = ["claimed_by", "claimed_until"]
    static let tables: [Table] = [
        // First: the compressed values below name its rows by id.
        Table(name: "blob_dictionaries", columns: ["id", "header_digest", "header"], serial: "id"),
        Table(
            name: "journal",
            columns: [
                "id", "notification_key", "version", "received_at", "origin", "bundle_id", "environment",
                "notification_type",
                "subtype", "secret_name", "leaf_serial", "body", "body_purged_at", "authority",
            ],
            serial: "id",
            compressed: ["body"]
        ),
        Table(
            name: "events",
            columns: [
                "id", "seq", "journal_id", "path", "source", "kind", "reason", "bundle_id", "environment",
                "original_transaction_id",
                "event_date", "authoritative", "created_at", "json", "recovered_by",
            ],
            sourceExpressions: ["seq": "rowid"],
            serial: "seq",
            compressed: ["json"]
        ),
        Table(
            name: "subscription_state",
            columns: [
                "path", "environment", "original_transaction_id", "bundle_id", "event_id", "event_date", "event_seq",
                "json",
                "updated_at", "expires_date", "reconciled_at", "seats",
            ],
            compressed: ["json"]
        ),
        Table(
            name: "outbox",
            columns: [
                "id", "downstream", "event_id", "journal_id", "state", "attempts", "next_attempt_at", "created_at",
                "delivered_at",
                "last_status", "last_error", "replayed_at",
            ],
            targetOnly: claims,
            serial: "id"
        ),
        Table(
            name: "delivery_attempts",
            columns: [
                "id", "outbox_id", "attempt", "started_at", "latency_ms", "status", "error", "response_head", "replay",
                "redacted",
            ],
            serial: "id"
        ),
        Table(
            name: "receipt_jobs",
            columns: [
                "journal_id", "state", "attempts", "next_attempt_at", "last_error", "apple_status", "updated_at",
            ],
            targetOnly: claims
        ),
        // quarantine_usage is not copied: the PostgreSQL trigger counts every row copied here (and is checked).
        Table(
            name: "quarantine",
            columns: [
                "id", "lane", "received_at", "version", "code", "message", "bundle_id", "environment",
                "password_fingerprint",
                "body", "size", "replay_attempts", "replay_started_at", "last_replay_at", "last_replay_code",
                "redacted",
            ],
            serial: "id"
        ),
        Table(name: "authority", columns: ["bundle_id", "environment", "authority", "origin", "updated_at"]),
        Table(
            name: "v1_receipts",
            columns: ["bundle_id", "environment", "original_transaction_id", "receipt", "secret_name", "updated_at"]
        ),
        Table(name: "receipt_modes", columns: ["bundle_id", "environment", "mode", "origin", "updated_at"]),
        Table(
            name: "receipt_histories",
            columns: [
                "bundle_id", "environment", "customer", "fetched_at", "json", "claimed_by", "claimed_until", "calls",
                "calls_since",
            ],
            compressed: ["json"]
        ),
        Table(
            name: "receipt_history_pages",
            columns: [
                "bundle_id", "environment", "customer", "page", "asked_with", "revision", "has_more", "asked_at",
                "json",
            ],
            compressed: ["json"]
        ),
        Table(
            name: "receipt_ledger",
            columns: [
                "id", "bundle_id", "environment", "original_transaction_id", "compared_at", "outcome", "fields",
                "v1_json", "v2_json",
            ],
            serial: "id",
            compressed: ["v1_json", "v2_json"]
        ),
        Table(
            name: "snapshots",
            columns: ["bundle_id", "environment", "original_transaction_id", "path", "source", "observed_at", "json"],
            compressed: ["json"]
        ),
        Table(
            name: "compare_jobs",
            columns: [
                "id", "bundle_id", "environment", "original_transaction_id", "fetch", "v1_event_id", "authority",
                "compare", "state",
                "attempts", "next_attempt_at", "created_at", "updated_at", "last_error", "confirms",
            ],
            targetOnly: claims,
            serial: "id"
        ),
        Table(
            name: "compare_ledger",
            columns: [
                "id", "bundle_id", "environment", "original_transaction_id", "compared_at", "outcome", "fields",
                "v1_json",
                "v2_json",
            ],
            serial: "id",
            compressed: ["v1_json", "v2_json"]
        ),
        Table(
            name: "cutover_log",
            columns: [
                "id", "at", "bundle_id", "environment", "from_authority", "to_authority", "who", "reason", "verdict",
                "forced",
                "origin",
            ],
            serial: "id"
        ),
        Table(
            name: "apple_switches",
            columns: [
                "bundle_id", "environment", "app_id", "apple_version", "apple_url", "read_at", "migration_id", "target",
                "previous",
                "step", "probe_token", "who", "reason", "forced", "started_at", "updated_at", "error",
            ]
        ),
        Table(
            name: "apple_switch_log",
            columns: ["id", "at", "bundle_id", "environment", "migration_id", "step", "outcome", "detail"],
            serial: "id"
        ),
        Table(
            name: "reconcile_runs",
            columns: [
                "id", "bundle_id", "environment", "kind", "next_run_at", "watermark", "attempts", "last_run_at",
                "last_error",
                "checked", "recovered", "calls",
            ],
            targetOnly: claims,
            serial: "id"
        ),
        Table(
            name: "consumption_jobs",
            columns: [
                "id", "event_id", "journal_id", "bundle_id", "environment", "transaction_id", "original_transaction_id",
                "product_type", "reason", "requested_at", "deadline_at", "state", "asks", "sends", "next_attempt_at",
                "answer", "answer_source", "refund_preference", "sent_at", "apple_status", "apple_error_code",
                "last_error", "created_at", "updated_at", "decision", "decided_at",
            ],
            targetOnly: claims,
            serial: "id"
        ),
    ]
    /// Tables of both schemas that are not copied: each side's own migration record, and the usage the trigger keeps.
    static let notCopied: Set<String> = ["schema_migrations", "quarantine_usage"]

    /// Rows read from SQLite at a time, and most rows and bytes per INSERT.
    static let pageRows = 256
    static let maxInsertBytes = 8 * 1_048_576

    /// Copies the SQLite store at `sqlitePath` into the empty PostgreSQL database (or schema, through the connection
    /// string's `search_path`) `postgresURL` names. Throws a ``Refusal`` when the source is in use or missing, the
    /// target is not empty, or the schemas hold something this copier does not know; any other error is the
    /// database's. Nothing is left half-copied either way.
    public static func sqliteToPostgres(
        sqlitePath: String,
        postgresURL: String,
        redactor: SecretRedactor = SecretRedactor([])
    ) throws
        -> Report
    {
        let started = ContinuousClock.now
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw Refusal("no SQLite store at \(sqlitePath)")
        }
        if let holder = otherProcessHoldsOpen(sqlitePath) {
            throw Refusal(
                "\(sqlitePath) is open in another process\(holder): stop the gateway (and every command using the store) first"
            )
        }
        // Quarantine rows stored before bodies were redacted, and delivery attempts logged before answer heads were,
        // are scrubbed in the SQLite file before they are copied, so that no secret reaches the PostgreSQL database
        // (or its log).
        let store = try SQLiteStore(path: sqlitePath)
        defer { store.close() }
        try store.scrubQuarantine(redactor)
        try store.scrubDeliveryLog(redactor)
        let source = store.database
        try PostgresStore(url: postgresURL, options: targetOptions).close()

        let target = try PostgresConnection(postgresURL, label: "migrate-store target")
        defer { target.close() }
        let (sourceCounts, sequences) = try source.readTransaction { s in
            try target.transaction { p in try copy(from: s, to: p) }
        }
        var counts: [TableCount] = []
        for table in tables {
            // The planner's statistics and the visibility map of the tables just filled, as autovacuum would make
            // them later: the first queries on the new store already read the indexes made for them.
            try target.execute("VACUUM (ANALYZE) \(quoted(table.name))")
            let n = try rowCount(table.name, in: target) ?? -1
            counts.append(TableCount(table: table.name, source: sourceCounts[table.name] ?? -1, target: n))
        }
        let usageVerified = try source.readTransaction { s in try usage(s) == usage(target) }
        let elapsed = ContinuousClock.now - started
        let ms = elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return Report(tables: counts, quarantineUsageVerified: usageVerified, sequences: sequences, milliseconds: ms)
    }

    private static var targetOptions: PostgresStore.Options {
        var options = PostgresStore.Options()
        options.poolSize = 1
        options.label = "migrate-store target"
        return options
    }

    /// The whole copy, inside the target's transaction and the source's read snapshot: (rows per table in the source,
    /// the sequences set).
    static func copy(from s: SQLiteConnection, to p: PostgresConnection) throws -> ([String: Int64], [String: Int64]) {
        // Instances starting now wait for this transaction (they migrate under the same lock); writers of an instance
        // already running wait for the table locks, and then find the rows copied.
        try PostgresSchema.lock(p)
        try p.execute(
            "LOCK TABLE \((tables.map(\.name) + ["quarantine_usage"]).map(quoted).joined(separator: ", ")) IN EXCLUSIVE MODE"
        )
        let types = try checkSchemas(s, p)
        let occupied = try (tables.map(\.name) + ["quarantine_usage"]).filter { name in
            try p.queryOne("SELECT EXISTS (SELECT 1 FROM \(quoted(name))) AS y")?.bool("y") == true
        }
        guard occupied.isEmpty else {
            throw Refusal(
                "the PostgreSQL target already holds gateway data (\(occupied.joined(separator: ", "))): migrate-store copies only into "
                    + "an empty store, nothing was changed"
            )
        }
        var sourceCounts: [String: Int64] = [:]
        let dictionaries = try BlobDictionaries.all(on: s)
        for table in tables {
            sourceCounts[table.name] = try copyTable(
                table,
                types: types[table.name] ?? [:],
                dictionaries: dictionaries,
                from: s,
                to: p
            )
            let copied = try rowCount(table.name, in: p)
            guard copied == sourceCounts[table.name] else {
                throw Refusal(
                    "\(table.name): \(sourceCounts[table.name] ?? 0) rows read but \(copied ?? 0) stored; rolled back"
                )
            }
        }
        guard try usage(s) == usage(p) else {
            throw Refusal("quarantine_usage differs between the SQLite store and the rows copied; rolled back")
        }
        var sequences: [String: Int64] = [:]
        for table in tables {
            guard let column = table.serial else { continue }
            let next = try p.queryOne(
                """
                SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max(\(quoted(column))) FROM \(quoted(table.name))), 0) + 1, false)
                    AS next
                """,
                [.text(table.name), .text(column)]
            )?.int64("next")
            sequences["\(table.name).\(column)"] = next ?? 0
        }
        return (sourceCounts, sequences)
    }

    /// Each table's PostgreSQL column types; refuses when the SQLite store holds a table, or either side a column,
    /// that ``tables`` does not account for (or lacks one it names).
    static func checkSchemas(_ s: SQLiteConnection, _ p: PostgresConnection) throws -> [String: [String: String]] {
        // Only the SQLite side's tables matter: what is there is copied or known not to need it. (The PostgreSQL schema
        // may hold tables of its own; the gateway's are checked column by column below.)
        let known = Set(tables.map(\.name)).union(notCopied)
        let sqliteTables = Set(
            try s.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .compactMap { $0.string("name") }
        )
        let unknown = sqliteTables.subtracting(known).sorted()
        guard unknown.isEmpty else {
            throw Refusal(
                "the SQLite store has tables this gateway's migrate-store does not copy: \(unknown.joined(separator: ", "))"
            )
        }
        var types: [String: [String: String]] = [:]
        for table in tables {
            let sqliteColumns = Set(
                try s.query("SELECT name FROM pragma_table_info(?)", [.text(table.name)]).compactMap {
                    $0.string("name")
                }
            )
            let postgresRows = try p.query(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
                [.text(table.name)]
            )
            var columnTypes: [String: String] = [:]
            for row in postgresRows {
                if let name = row.string("column_name"), let type = row.string("data_type") { columnTypes[name] = type }
            }
            if sqliteColumns != table.sourceColumns {
                throw Refusal(
                    "SQLite table \(table.name) has columns \(sqliteColumns.sorted()), migrate-store copies \(table.sourceColumns.sorted())"
                )
            }
            if Set(columnTypes.keys) != Set(table.columns).union(table.targetOnly) {
                throw Refusal(
                    "PostgreSQL table \(table.name) has columns \(columnTypes.keys.sorted()), migrate-store fills "
                        + "\(Set(table.columns).union(table.targetOnly).sorted())"
                )
            }
            types[table.name] = columnTypes
        }
        return types
    }

    /// Copies one table in rowid order, a page at a time; returns the rows read.
    static func copyTable(
        _ table: Table,
        types: [String: String],
        dictionaries: [Int64: [UInt8]] = [:],
        from s: SQLiteConnection,
        to p: PostgresConnection
    ) throws -> Int64 {
        let select =
            "SELECT rowid AS \"_rowid\", "
            + table.columns.map { column in table.sourceExpressions[column] ?? quoted(column) }.joined(separator: ", ")
            + " FROM \(quoted(table.name)) WHERE rowid > ? ORDER BY rowid LIMIT ?"
        let rowsPerInsert = min(pageRows, 60_000 / table.columns.count)
        var last = Int64.min
        var total: Int64 = 0
        while true {
            let page = try s.query(select, [.integer(last), .integer(Int64(pageRows))])
            guard let end = page.last?.int64("_rowid") else { break }
            var batch: [PostgresValue] = []
            var (rows, bytes) = (0, 0)
            for row in page {
                for (i, column) in table.columns.enumerated() {
                    if table.compressed.contains(column) {
                        // Only a value that reads back is copied (as it is: PostgreSQL reads every stored format).
                        _ = try plain(
                            row[i + 1],
                            table: table.name,
                            column: column,
                            rowid: row.int64("_rowid"),
                            dictionaries: dictionaries
                        )
                    }
                    let value = try convert(
                        row[i + 1],
                        to: types[column] ?? "",
                        table: table.name,
                        column: column,
                        rowid: row.int64("_rowid")
                    )
                    if case .bytea(let b) = value { bytes += b.count }
                    if case .text(let t) = value { bytes += t.utf8.count }
                    batch.append(value)
                }
                rows += 1
                if rows == rowsPerInsert || bytes >= maxInsertBytes {
                    try insert(table, rows: rows, batch, into: p, prepared: rows == rowsPerInsert)
                    (batch, rows, bytes) = ([], 0, 0)
                }
            }
            if rows > 0 { try insert(table, rows: rows, batch, into: p, prepared: false) }
            total += Int64(page.count)
            last = end
        }
        return total
    }

    /// One multi-row INSERT of `rows` rows (`values` holds them, row after row).
    static func insert(
        _ table: Table,
        rows: Int,
        _ values: [PostgresValue],
        into p: PostgresConnection,
        prepared: Bool
    ) throws {
        let width = table.columns.count
        let tuples = (0..<rows).map { r in "(" + (1...width).map { "$\(r * width + $0)" }.joined(separator: ", ") + ")"
        }
        let sql =
            "INSERT INTO \(quoted(table.name)) (\(table.columns.map(quoted).joined(separator: ", "))) VALUES "
            + tuples.joined(separator: ", ")
        _ = try p.query(sql, values, prepared: prepared)
    }

    /// A value of a column SQLite stores compressed, plain. A value that does not decompress stops the migration
    /// (nothing is copied): the error names the row by rowid, never its content.
    static func plain(
        _ value: SQLiteValue,
        table: String,
        column: String,
        rowid: Int64?,
        dictionaries: [Int64: [UInt8]] = [:]
    ) throws -> SQLiteValue {
        guard case .blob(let stored) = value else { return value }
        switch StoredBlob.read(stored, limit: StoredBlob.maxCopiedBytes, dictionaries: dictionaries) {
        case .value(let plain): return .blob(plain)
        case .missing: return .null
        case .damaged(let damage):
            throw Refusal(
                "\(table).\(column) of rowid \(rowid.map(String.init) ?? "?"): "
                    + (damage == .tooLarge
                        ? "a compressed value that would expand past \(StoredBlob.maxCopiedBytes) bytes"
                        : "a compressed value that does not decompress")
                    + " (the SQLite file is damaged); nothing was copied"
            )
        }
    }

    /// An SQLite value as the PostgreSQL column of type `type` takes it: integers as `bigint`/`integer`, 0 and 1 as
    /// `boolean`, blobs (or text) as `bytea`, text as `text`. The error names the row by rowid, never its content.
    static func convert(
        _ value: SQLiteValue,
        to type: String,
        table: String,
        column: String,
        rowid: Int64?
    ) throws -> PostgresValue {
        switch (type, value) {
        case (_, .null): return .null
        case ("bigint", .integer(let v)), ("integer", .integer(let v)), ("smallint", .integer(let v)): return .int64(v)
        case ("boolean", .integer(let v)): return .bool(v != 0)
        case ("bytea", .blob(let b)): return .bytea(b)
        case ("bytea", .text(let t)): return .bytea(Array(t.utf8))
        case ("text", .text(let t)): return .text(t)
        case ("text", .blob(let b)):
            if let t = String(validating: b, as: UTF8.self) { return .text(t) }
        case ("text", .integer(let v)): return .text(String(v))
        default: break
        }
        let kind =
            switch value {
            case .null: "NULL"
            case .integer: "an integer"
            case .real: "a real"
            case .text: "text"
            case .blob: "a blob"
            }
        throw Refusal(
            "\(table).\(column) of rowid \(rowid.map(String.init) ?? "?"): \(kind) cannot go into a PostgreSQL \(type) column"
        )
    }

    /// Each lane's (rows, bytes), lanes with rows only: of either store.
    static func usage(_ c: some StoreConnection) throws -> [String: [Int64]] {
        var usage: [String: [Int64]] = [:]
        for row in try c.query(usageStatement, []) {
            if let lane = row.string("lane") { usage[lane] = [row.int64("rows") ?? -1, row.int64("bytes") ?? -1] }
        }
        return usage
    }

    private static let usageStatement = SQL(
        "SELECT lane, rows, bytes FROM quarantine_usage WHERE rows <> 0 OR bytes <> 0"
    )

    /// The rows of a table of the lists above in the PostgreSQL store.
    static func rowCount(_ table: String, in p: PostgresConnection) throws -> Int64? {
        try p.queryOne("SELECT count(*) AS n FROM \(quoted(table))")?.int64("n")
    }

    /// An identifier of the lists above, quoted for either database (`fetch` is reserved in PostgreSQL).
    static func quoted(_ name: String) -> String { "\"" + name + "\"" }

    /// Whether another process has the SQLite store open: each SQLite connection in WAL mode holds a shared lock on
    /// one byte of `FILE-shm` (byte 128, "DMS") while it is open. Asked with an open-file-description lock query
    /// (Linux), which also sees this process's own connections; elsewhere with a POSIX one, which sees other
    /// processes only. Returns nil when nobody holds it, else " (pid N)" when the holder's pid is known (or ""). Call
    /// it before opening the file: closing the probe's descriptor would drop the process's own POSIX locks on it.
    static func otherProcessHoldsOpen(_ sqlitePath: String) -> String? {
        let shm = sqlitePath + "-shm"
        let fd = open(shm, O_RDONLY)
        guard fd >= 0 else { return nil }  // no -shm (nobody has the store open in WAL mode) or not ours to read
        defer { close(fd) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 128
        lock.l_len = 1
        #if os(Linux)
        let query: Int32 = 36  // F_OFD_GETLK (linux/fcntl.h)
        #else
        let query = F_GETLK
        #endif
        guard fcntl(fd, query, &lock) == 0 else { return nil }
        guard lock.l_type != Int16(F_UNLCK) else { return nil }
        return lock.l_pid > 0 ? " (pid \(lock.l_pid))" : ""
    }
}
