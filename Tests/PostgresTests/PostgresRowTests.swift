import Postgres
import Rows
import Testing

/// `PostgresRow` through the one row protocol (`ResultRow`): the strict accessors throw `RowError` naming the
/// column, and the migration runners' schema-version query.
@Suite(
    .serialized,
    .enabled(if: TestServer.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)")
)
struct PostgresRowTests {
    /// `(id int8, a text, b int8, f bool)` of one row.
    static func row(a: PostgresValue, b: PostgresValue) throws -> PostgresRow? {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).t(id int8 PRIMARY KEY, a text, b int8, f bool NOT NULL DEFAULT true)")
            _ = try c.run("INSERT INTO \(s).t(id, a, b) VALUES (1, $1, $2::int8)", [a, b])
            return try c.queryOne("SELECT id, a, b, f FROM \(s).t")
        }
    }

    @Test func aWellFormedRowReadsAsTheLenientAccessorsDo() throws {
        let row = try #require(try Self.row(a: "x", b: nil))
        #expect(try row.requiredInt64("id") == 1)
        #expect(try row.requiredString("a") == "x")
        #expect(try row.requiredBool("f"))
        #expect(try row.nullableInt64("b") == nil)
    }

    @Test func aMissingColumnThrowsNamingIt() throws {
        let row = try #require(try Self.row(a: "x", b: 2))
        for read in [{ _ = try row.requiredString("bundle_id") }, { _ = try row.nullableString("bundle_id") }] {
            let error = #expect(throws: RowError.self) { try read() }
            #expect(error?.code == .missingColumn)
            #expect(error?.column == "bundle_id")
        }
    }

    @Test func aMistypedColumnThrowsNamingIt() throws {
        let row = try #require(try Self.row(a: "x", b: 2))
        let text = #expect(throws: RowError.self) { try row.requiredString("b") }
        #expect(text?.code == .wrongType)
        #expect(text?.column == "b")
        #expect(text?.description.contains("holds an integer, expected text") == true)
        let flag = #expect(throws: RowError.self) { try row.nullableBool("a") }
        #expect(flag?.code == .wrongType)
        #expect(flag?.column == "a")
    }

    @Test func nullInAColumnReadAsRequiredThrows() throws {
        let row = try #require(try Self.row(a: nil, b: 2))
        let error = #expect(throws: RowError.self) { try row.requiredString("a") }
        #expect(error?.code == .nullValue)
        #expect(try row.nullableString("a") == nil)
    }

    @Test func theSchemaVersionQueryReadsEveryAppliedVersion() throws {
        try withSchema { c, s in
            try c.execute(
                "CREATE TABLE \(s).schema_migrations (version bigint PRIMARY KEY, applied_at bigint NOT NULL)"
            )
            #expect(try SchemaVersions.applied(in: "\(s).schema_migrations") { try c.query($0) } == [])
            try c.execute("INSERT INTO \(s).schema_migrations VALUES (1, 0), (2, 0)")
            #expect(try SchemaVersions.applied(in: "\(s).schema_migrations") { try c.query($0) } == [1, 2])
            // The team database's version table: `integer`, read the same.
            try c.execute("CREATE TABLE \(s).schema_version (version integer PRIMARY KEY, applied_at bigint NOT NULL)")
            try c.execute("INSERT INTO \(s).schema_version VALUES (1, 0)")
            #expect(try SchemaVersions.applied(in: "\(s).schema_version") { try c.query($0) } == [1])
        }
    }
}
