import Rows
import SQLite
import Testing

/// `SQLiteRow` through the one row protocol (`ResultRow`): the strict accessors throw `RowError` naming the column,
/// and the migration runners' schema-version query.
@Suite struct SQLiteRowTests {
    /// A row of `t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER)` holding `(1, a, b)`.
    static func row(a: SQLiteValue, b: SQLiteValue) async throws -> SQLiteRow? {
        try await SQLiteDatabaseTests.withDatabase { db, _ in
            try db.write { _ = try $0.run("INSERT INTO t(id, a, b) VALUES (1, ?, ?)", [a, b]) }
            return try db.read { try $0.queryOne("SELECT id, a, b FROM t") }
        }
    }

    @Test func aWellFormedRowReadsAsTheLenientAccessorsDo() async throws {
        let row = try #require(try await Self.row(a: "x", b: nil))
        #expect(try row.requiredInt64("id") == 1)
        #expect(try row.requiredString("a") == "x")
        #expect(try row.nullableString("a") == "x")
        #expect(try row.nullableInt64("b") == nil)
        #expect(try row.nullableBool("b") == nil)
    }

    @Test func aMissingColumnThrowsNamingIt() async throws {
        let row = try #require(try await Self.row(a: "x", b: 2))
        for read in [{ _ = try row.requiredString("bundle_id") }, { _ = try row.nullableString("bundle_id") }] {
            let error = #expect(throws: RowError.self) { try read() }
            #expect(error?.code == .missingColumn)
            #expect(error?.column == "bundle_id")
            #expect(error?.description.contains("bundle_id") == true)
        }
    }

    @Test func aMistypedColumnThrowsNamingIt() async throws {
        // SQLite keeps text that is no number as text in an INTEGER column.
        let row = try #require(try await Self.row(a: "x", b: "not a number"))
        for read in [{ _ = try row.requiredInt64("b") }, { _ = try row.nullableInt64("b") }] {
            let error = #expect(throws: RowError.self) { try read() }
            #expect(error?.code == .wrongType)
            #expect(error?.column == "b")
            #expect(error?.description.contains("holds text, expected integer") == true)
        }
        let blob = #expect(throws: RowError.self) { try row.requiredBytes("a") }
        #expect(blob?.code == .wrongType)
        #expect(blob?.column == "a")
    }

    @Test func nullInAColumnReadAsRequiredThrows() async throws {
        let row = try #require(try await Self.row(a: nil, b: 2))
        let error = #expect(throws: RowError.self) { try row.requiredString("a") }
        #expect(error?.code == .nullValue)
        #expect(error?.column == "a")
        #expect(try row.nullableString("a") == nil)
    }

    @Test func textThatIsNoneOfTheValuesThrows() async throws {
        enum Colour: String { case red }
        let row = try #require(try await Self.row(a: "blue", b: 2))
        let error = #expect(throws: RowError.self) { try row.required("a", as: Colour.self) }
        #expect(error?.code == .unknownValue)
        #expect(error?.column == "a")
    }

    @Test func theSchemaVersionQueryReadsEveryAppliedVersion() async throws {
        try await SQLiteDatabaseTests.withDatabase { db, _ in
            // The store's runner: `schema_migrations`, through `migrate`.
            try db.migrate([
                SQLiteMigration(version: 1, sql: "CREATE TABLE a(x)"), .init(version: 2, sql: "CREATE TABLE b(x)"),
            ])
            #expect(try db.read { c in try SchemaVersions.applied { try c.query($0) } } == [1, 2])
            // The team database's runner: a table of its own, empty at first.
            try db.write { try $0.execute("CREATE TABLE v(version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)") }
            #expect(try db.read { c in try SchemaVersions.applied(in: "v") { try c.query($0) } } == [])
            try db.write { try $0.execute("INSERT INTO v VALUES (3, 0), (1, 0)") }
            #expect(try db.read { c in try SchemaVersions.applied(in: "v") { try c.query($0) } } == [1, 3])
        }
    }
}
