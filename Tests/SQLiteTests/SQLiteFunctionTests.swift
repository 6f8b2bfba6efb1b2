import Foundation
import SQLite
import Testing

/// Swift functions registered on every connection (`SQLiteDatabase.Options.functions`), as a migration calls them.
@Suite struct SQLiteFunctionTests {
    struct Refused: Error, CustomStringConvertible {
        var description: String { "refused" }
    }

    static let functions = [
        SQLiteFunction(name: "reversed_bytes") { Array($0.reversed()) },
        SQLiteFunction(name: "null_if_empty") { $0.isEmpty ? nil : $0 },
        SQLiteFunction(name: "refuse") { _ in throw Refused() },
    ]

    @Test func aFunctionRewritesValuesOnTheWriterAndReadsOnTheReaders() async throws {
        var options = SQLiteDatabase.Options()
        options.functions = Self.functions
        try await SQLiteDatabaseTests.withDatabase(options) { db, _ in
            try db.write { c in
                try c.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, x BLOB)")
                try c.run("INSERT INTO v(id, x) VALUES (1, x'010203'), (2, NULL), (3, x''), (4, 'ab')")
                #expect(try c.run("UPDATE v SET x = reversed_bytes(x)") == 4)
            }
            let rows = try db.read { c in try c.query("SELECT x FROM v ORDER BY id").map { $0.values[0] } }
            #expect(rows == [.blob([3, 2, 1]), .null, .blob([]), .blob(Array("ba".utf8))])
            let empty = try db.read { c in try c.queryOne("SELECT null_if_empty(x'') AS y")?.values[0] }
            #expect(empty == .null)
            let error = #expect(throws: SQLiteError.self) {
                try db.write { c in try c.run("UPDATE v SET x = refuse(x)") }
            }
            #expect(error?.message.contains("refuse: refused") == true)
            // Rolled back: the values are as before.
            #expect(try db.read { c in try c.queryOne("SELECT x FROM v WHERE id = 1")?.values[0] } == .blob([3, 2, 1]))
        }
    }

    @Test func aViewStoredInTheFileCannotCallAFunction() async throws {
        var options = SQLiteDatabase.Options()
        options.functions = Self.functions
        try await SQLiteDatabaseTests.withDatabase(options) { db, _ in
            try db.write { c in try c.execute("CREATE VIEW w AS SELECT reversed_bytes(a) AS r FROM t") }
            #expect(throws: SQLiteError.self) { try db.read { c in try c.query("SELECT r FROM w") } }
        }
    }
}
