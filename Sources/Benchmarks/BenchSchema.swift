internal import FoundationEssentials
internal import Postgres

/// A schema of its own for one `bench ingest --store postgres` run (`bench_<random>`), in the database whose libpq
/// connection string is in `IAPGW_BENCH_DATABASE_URL` (else `IAPGW_TEST_DATABASE_URL`, as `scripts/with-postgres`
/// sets it); dropped with everything in it by ``drop()``. The connection string is never printed.
final class BenchSchema {
    static let variables = ["IAPGW_BENCH_DATABASE_URL", "IAPGW_TEST_DATABASE_URL"]

    let name: String
    /// The connection string with `search_path` set to the schema for every session (libpq's `options`).
    let url: String
    private let server: String
    private var dropped = false

    init(environment: [String: String]) throws {
        guard let server = Self.variables.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
            throw IngestBenchmark.Failure(
                description: "--store postgres needs IAPGW_BENCH_DATABASE_URL (or IAPGW_TEST_DATABASE_URL)"
            )
        }
        self.server = server
        name = "bench_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        url = Self.url(server, searchPath: name)
        let c = try PostgresConnection(server, label: "bench setup")
        defer { c.close() }
        try c.execute("CREATE SCHEMA \(name)")  // an identifier made here, never a value
    }

    /// `url` with `search_path` set to `schema` for every session, in URI or key=value form.
    static func url(_ url: String, searchPath schema: String) -> String {
        if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
            return url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
        }
        return url + " options='-csearch_path=\(schema)'"
    }

    /// Leaves the schema in place: neither ``drop()`` nor the deinit drops it (`bench scale --keep`).
    func keep() { dropped = true }

    /// Bytes the schema's tables take, indexes and TOAST included (`pg_total_relation_size`).
    func totalBytes() throws -> Int64 {
        let c = try PostgresConnection(server, label: "bench size")
        defer { c.close() }
        return try c.queryOne(
            """
            SELECT COALESCE(SUM(pg_total_relation_size(format('%I.%I', schemaname, tablename)::regclass)), 0)::bigint AS n
            FROM pg_tables WHERE schemaname = $1
            """,
            [.text(name)]
        )?.int64("n") ?? 0
    }

    /// Drops the schema and everything in it. Once.
    func drop() {
        guard !dropped else { return }
        dropped = true
        guard let c = try? PostgresConnection(server, label: "bench cleanup") else { return }
        try? c.execute("DROP SCHEMA IF EXISTS \(name) CASCADE")
        c.close()
    }

    deinit { drop() }
}
