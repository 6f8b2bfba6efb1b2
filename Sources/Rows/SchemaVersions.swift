/// The versions a migration runner has applied, as it records them: one row per version in a table of its own —
/// `schema_migrations` for the gateway's store (the SQLite module's `SQLiteDatabase.migrate`, the Store's
/// `PostgresSchema.migrate`), `schema_version` beside the team's tables (TeamDatabase). Every runner reads them here
/// (docs/architecture.md, "Rows").
public enum SchemaVersions {
    /// The table the gateway's store records its migrations in.
    public static let storeTable = "schema_migrations"

    /// The versions recorded in `table` (a name the caller made, never a value), read with `query` on the runner's
    /// connection; empty when none is. Each row's `version` is its primary key: an integer, never NULL.
    public static func applied<Row: ResultRow>(
        in table: String = storeTable,
        query: (String) throws -> [Row]
    ) throws -> Set<Int> {
        Set(try query("SELECT version FROM \(table)").map { try $0.requiredInt("version") })
    }
}
