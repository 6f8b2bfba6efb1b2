import Foundation
import Postgres
import SQLite
import TestSupport
import Testing

@testable import Store

/// The one migration list (`StoreSchema`) against the stores it makes: both databases end with the same tables,
/// columns and indexes but for the differences named here, and a store at any version the shipped lists left it at
/// upgrades to the schema of a fresh one.
@Suite(.serialized) struct StoreSchemaTests {
    /// Columns only PostgreSQL has: the job tables' claims (several instances share the store) and `events.seq` (the
    /// arrival order SQLite's rowid gives).
    static let postgresOnlyColumns: Set<String> = [
        "events.seq", "outbox.claimed_by", "outbox.claimed_until", "receipt_jobs.claimed_by",
        "receipt_jobs.claimed_until",
        "compare_jobs.claimed_by", "compare_jobs.claimed_until", "reconcile_runs.claimed_by",
        "reconcile_runs.claimed_until", "consumption_jobs.claimed_by", "consumption_jobs.claimed_until",
        // The App Store Server API budget every instance shares (its step 21): one process owns an SQLite store.
        "api_budget.bundle_id", "api_budget.environment", "api_budget.endpoint", "api_budget.tokens",
        "api_budget.updated_at", "api_budget.paused_until", "api_budget.last_lease", "api_budget.leased",
    ]
    /// Indexes only PostgreSQL has: the claims' indexes of pending rows of the job tables (its migration 7; the
    /// outbox's came to SQLite with its step 13) and the partial unique index that keeps one plain comparison fetch
    /// pending across instances.
    static let postgresOnlyIndexes: Set<String> = [
        "receipt_jobs_pending", "compare_jobs_pending", "compare_jobs_one_pending",
    ]
    static let sqliteOnlyIndexes: Set<String> = []

    /// A schema in comparable form: `table.column` → `type, not null, default`; index name → `table(columns) partial`
    /// or its whole definition; trigger names (with their SQL where one database is compared with itself).
    struct Shape: Equatable {
        var columns: [String: String] = [:]
        var indexes: [String: String] = [:]
        var triggers: [String: String] = [:]
    }

    static func folded(_ sql: String) -> String {
        sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    // MARK: SQLite

    /// `portable`: types folded to integer / text / bytes, indexes as table and columns, triggers by name — what is
    /// compared with PostgreSQL; otherwise everything as stored.
    static func sqliteShape(_ path: String, portable: Bool) throws -> Shape {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        return try db.read { c in
            var shape = Shape()
            let tables = try c.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .compactMap { $0.string("name") }
            for table in tables {
                for column in try c.query(
                    "SELECT name, type, \"notnull\" AS nn, dflt_value, pk FROM pragma_table_info(?)",
                    [.text(table)]
                ) {
                    let name = column.string("name") ?? ""
                    let notNull = (column.int("nn") ?? 0) != 0 || (column.int("pk") ?? 0) != 0
                    let type = column.string("type") ?? ""
                    shape.columns["\(table).\(name)"] =
                        portable
                        ? "\(type == "BLOB" ? "bytes" : type.lowercased()) \(notNull)"
                        : "\(column.int("pk") ?? 0) \(type) \(notNull) \(column.string("dflt_value") ?? "-")"
                }
            }
            for index in try c.query(
                "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            ) {
                let name = index.string("name") ?? ""
                let columns = try c.query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)])
                    .compactMap { $0.string("name") }
                let sql = index.string("sql") ?? ""
                shape.indexes[name] =
                    portable
                    ? "\(index.string("tbl_name") ?? "")(\(columns.joined(separator: ", "))) \(sql.contains(" WHERE ") ? "partial" : "")"
                    : folded(sql)
            }
            for trigger in try c.query("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'") {
                shape.triggers[trigger.string("name") ?? ""] = portable ? "" : folded(trigger.string("sql") ?? "")
            }
            return shape
        }
    }

    /// An SQLite store the shipped list left at `version`, then opened by this gateway (which migrates it).
    static func sqliteStore(at version: Int, in directory: String) throws -> String {
        let path = directory + "/store-\(version).db"
        let db = try SQLiteDatabase(path: path)
        try db.migrate(Array(ShippedSchema.sqlite.prefix(version)))
        db.close()
        try SQLiteStore(path: path).close()
        return path
    }

    @Test func anSQLiteStoreAtEveryShippedVersionUpgradesToTheSchemaOfAFreshOne() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The schema the shipped list gives, all of it applied (the store then has nothing to do).
        let shipped = try Self.sqliteShape(
            try Self.sqliteStore(at: ShippedSchema.sqlite.count, in: directory),
            portable: false
        )
        #expect(!shipped.columns.isEmpty)
        for version in 0..<ShippedSchema.sqlite.count {
            let path = try Self.sqliteStore(at: version, in: directory)
            #expect(try Self.sqliteShape(path, portable: false) == shipped, "from version \(version)")
            let db = try SQLiteDatabase(path: path)
            let versions = try db.read { c in
                try c.query("SELECT version FROM schema_migrations ORDER BY version").compactMap { $0.int("version") }
            }
            db.close()
            #expect(versions == StoreSchema.sqlite.map(\.version), "from version \(version)")
        }
        // The shipped versions are kept as they are; steps added since come after them (10: the indexes of the bounded
        // reads; 11, SQLite only: compressing the rows of an older store, which changes no table; 12, SQLite only: the
        // dictionaries' table; 13: only the indexes a statement reads; 14: no index of the events by path; 15: the
        // receipt path's tables; 16: the delivery log; 17: the refund requests; 18: the customers' history pages; 19: the
        // group subscriptions' seats; 20: the delivery log's heads redacted; 21: the customers' indexes).
        #expect(
            Array(StoreSchema.sqlite.map(\.version).prefix(ShippedSchema.sqlite.count))
                == ShippedSchema.sqlite.map(\.version)
        )
        #expect(
            StoreSchema.sqlite.map(\.version).dropFirst(ShippedSchema.sqlite.count) == [
                10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
            ]
        )
    }

    // MARK: PostgreSQL

    static func postgresShape(_ c: PostgresConnection, portable: Bool) throws -> Shape {
        var shape = Shape()
        let schema = try c.queryOne("SELECT current_schema() AS s")?.string("s") ?? ""
        for column in try c.query(
            """
            SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default FROM information_schema.columns
            WHERE table_schema = current_schema()
            """
        ) {
            let key = "\(column.string("table_name") ?? "").\(column.string("column_name") ?? "")"
            let type = column.string("data_type") ?? ""
            let notNull = column.string("is_nullable") == "NO"
            let portableType =
                ["bigint", "integer", "boolean"].contains(type) ? "integer" : type == "bytea" ? "bytes" : type
            shape.columns[key] =
                portable
                ? "\(portableType) \(notNull)"
                : "\(column.int("ordinal_position") ?? 0) \(type) \(notNull) \(column.string("column_default") ?? "-")"
        }
        for index in try c.query(
            """
            SELECT i.relname AS name, t.relname AS tbl, pg_get_indexdef(i.oid) AS def, x.indpred IS NOT NULL AS partial
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = current_schema() AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.oid)
            """
        ) {
            let def = (index.string("def") ?? "").replacingOccurrences(of: schema + ".", with: "")
            var columns = ""
            if let open = def.range(of: "USING btree ("), let close = def[open.upperBound...].firstIndex(of: ")") {
                columns = String(def[open.upperBound..<close]).replacingOccurrences(of: "\"", with: "")
            }
            shape.indexes[index.string("name") ?? ""] =
                portable
                ? "\(index.string("tbl") ?? "")(\(columns)) \(index.bool("partial") == true ? "partial" : "")"
                : def
        }
        for trigger in try c.query(
            "SELECT trigger_name, event_manipulation, action_statement FROM information_schema.triggers WHERE trigger_schema = current_schema()"
        ) {
            shape.triggers[trigger.string("trigger_name") ?? ""] =
                portable
                ? "" : "\(trigger.string("event_manipulation") ?? "") \(trigger.string("action_statement") ?? "")"
        }
        return shape
    }

    /// A PostgreSQL schema the shipped list left at `version`, then migrated by this gateway (as a store's open does).
    static func postgresSchema(at version: Int) throws -> (TestSchema, PostgresConnection) {
        let schema = try TestSchema()
        let c = try schema.connect()
        try PostgresSchema.migrate(c, Array(ShippedSchema.postgres.prefix(version)))
        try PostgresSchema.migrate(c)
        return (schema, c)
    }

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func aPostgresSchemaAtEveryShippedVersionUpgradesToTheSchemaOfAFreshOne() throws {
        let (reference, rc) = try Self.postgresSchema(at: ShippedSchema.postgres.count)
        defer {
            rc.close()
            _ = reference
        }
        let shipped = try Self.postgresShape(rc, portable: false)
        #expect(!shipped.columns.isEmpty)
        for version in 0..<ShippedSchema.postgres.count {
            let (schema, c) = try Self.postgresSchema(at: version)
            defer {
                c.close()
                _ = schema
            }
            #expect(try Self.postgresShape(c, portable: false) == shipped, "from version \(version)")
            let versions = try c.query("SELECT version FROM schema_migrations ORDER BY version").compactMap {
                $0.int("version")
            }
            #expect(versions == StoreSchema.postgres.map(\.version), "from version \(version)")
        }
        // Steps added since the lists were frozen come after them.
        #expect(StoreSchema.postgres.map(\.version).starts(with: ShippedSchema.postgres.map(\.version)))
    }

    // MARK: Both

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func freshStoresOfBothDatabasesHaveTheSameTablesColumnsAndIndexes() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqlite = try Self.sqliteShape(try Self.sqliteStore(at: 0, in: directory), portable: true)
        let (schema, c) = try Self.postgresSchema(at: 0)
        defer {
            c.close()
            _ = schema
        }
        let postgres = try Self.postgresShape(c, portable: true)

        // schema_migrations is each runner's own bookkeeping, not a step of the list. blob_dictionaries came to each
        // database by a step of its own (SQLite 12, PostgreSQL 17), and is the same in both.
        let sqliteColumns = sqlite.columns.filter { !$0.key.hasPrefix("schema_migrations.") }
        let pgColumns = postgres.columns.filter {
            !Self.postgresOnlyColumns.contains($0.key) && !$0.key.hasPrefix("schema_migrations.")
        }
        #expect(sqliteColumns == pgColumns)
        for name in Set(sqliteColumns.keys).symmetricDifference(pgColumns.keys).sorted() {
            Issue.record("column \(name) is in one store only")
        }
        for (name, shape) in sqliteColumns where pgColumns[name].map({ $0 != shape }) ?? false {
            Issue.record("column \(name): SQLite \(shape), PostgreSQL \(pgColumns[name] ?? "")")
        }
        #expect(Set(postgres.columns.keys).isSuperset(of: Self.postgresOnlyColumns))

        let sqliteIndexes = sqlite.indexes.filter { !Self.sqliteOnlyIndexes.contains($0.key) }
        let pgIndexes = postgres.indexes.filter { !Self.postgresOnlyIndexes.contains($0.key) }
        #expect(sqliteIndexes == pgIndexes)
        #expect(Set(sqlite.indexes.keys).isSuperset(of: Self.sqliteOnlyIndexes))
        #expect(Set(postgres.indexes.keys).isSuperset(of: Self.postgresOnlyIndexes))
        #expect(Set(sqlite.triggers.keys) == Set(postgres.triggers.keys))
    }
}
