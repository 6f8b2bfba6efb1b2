internal import Postgres
internal import Rows

/// One schema change, applied once per database (`schema_migrations`).
struct PostgresMigration: Sendable {
    var version: Int
    var sql: String
    /// Recorded only once the rows stored before it are compressed (``PostgresCompaction``), which runs right after
    /// the migrations; until then its SQL runs again at every open, so it must be idempotent.
    var compactsRows = false
}

/// Runs the gateway's migrations on PostgreSQL: the steps of ``StoreSchema`` PostgreSQL runs, under its versions.
/// Applied at open under an advisory lock, so instances starting together migrate once (docs/architecture.md,
/// "PostgreSQL store").
enum PostgresSchema {
    static var migrations: [PostgresMigration] { StoreSchema.postgres }

    /// The advisory lock (class, object) migrations run under: the class names the gateway's migrations, the object
    /// the schema they apply to (`hashtext(current_schema())`), so instances on one schema migrate one at a time while
    /// other schemas of the database (tests) do not wait for them.
    static let lockClass: Int64 = 0x6961_7067  // "iapg"

    /// Takes the migrations' lock for the rest of the transaction: what else changes the whole schema (`migrate-store`)
    /// takes it too.
    static func lock(_ c: PostgresConnection) throws {
        try c.run(
            "SELECT pg_advisory_xact_lock($1::integer, hashtext(COALESCE(current_schema(), '')))",
            [.int64(lockClass)]
        )
    }

    /// Applies the migrations not applied yet, in one transaction holding `pg_advisory_xact_lock`: an instance that
    /// starts while another migrates waits for it, then finds every version applied. Refuses a database a newer
    /// gateway migrated past the versions it knows. Then, when a migration that compacts rows is not recorded yet,
    /// compresses the rows stored before it and records it (``PostgresCompaction``, with `dictionaries`).
    static func migrate(
        _ c: PostgresConnection,
        _ migrations: [PostgresMigration] = migrations,
        dictionaries: BlobDictionaries = BlobDictionaries()
    ) throws {
        let ordered = migrations.sorted { $0.version < $1.version }
        for (a, b) in zip(ordered, ordered.dropFirst()) where a.version == b.version {
            throw PostgresError(code: "XX000", message: "migrate: version \(a.version) is listed twice")
        }
        var compaction: Int?
        try c.transaction { c in
            try lock(c)
            try c.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version bigint PRIMARY KEY, applied_at bigint NOT NULL)"
            )
            let applied = try SchemaVersions.applied { try c.query($0) }
            let known = ordered.last?.version ?? 0
            if let newest = applied.max(), newest > known {
                throw PostgresError(
                    code: "XX000",
                    message:
                        "migrate: the database is at schema version \(newest) but this gateway knows versions up to "
                        + "\(known): a newer gateway wrote it; refusing to use it"
                )
            }
            for migration in ordered where !applied.contains(migration.version) {
                do {
                    try c.execute(migration.sql)
                    if migration.compactsRows {
                        compaction = migration.version
                        continue
                    }
                    try c.run(
                        "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
                        [.int64(Int64(migration.version))]
                    )
                } catch var error as PostgresError {
                    error.message = "migration \(migration.version): \(error.message)"
                    throw error
                }
            }
        }
        if let compaction {
            do {
                try PostgresCompaction.run(c, version: compaction, dictionaries: dictionaries)
            } catch var error as PostgresError {
                error.message = "migration \(compaction): \(error.message)"
                throw error
            }
        }
    }
}
