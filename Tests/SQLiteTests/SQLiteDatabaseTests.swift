import Foundation
import SQLite
import Synchronization
import Testing

@Suite struct SQLiteDatabaseTests {
    /// A fresh directory under the temporary directory, removed when `body` returns.
    static func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appending(path: "sqlite-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory.path)
    }

    /// A database at a fresh path with table `t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER)`, closed at the end.
    static func withDatabase<T>(
        _ options: SQLiteDatabase.Options = .init(),
        _ body: (SQLiteDatabase, String) async throws -> T
    ) async throws -> T {
        try await withTemporaryDirectory { directory in
            let path = directory + "/gateway.db"
            let db = try SQLiteDatabase(path: path, options: options)
            defer { db.close() }
            try db.write { try $0.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER)") }
            return try await body(db, path)
        }
    }

    static func count(_ db: SQLiteDatabase, _ table: String = "t") throws -> Int? {
        try db.read { try $0.queryOne("SELECT count(*) AS n FROM \(table)")?.int("n") }
    }

    static func count(_ c: SQLiteConnection, _ table: String = "t") throws -> Int? {
        try c.queryOne("SELECT count(*) AS n FROM \(table)")?.int("n")
    }

    struct Boom: Error {}

    // MARK: Opening

    @Test func opensInWALModeWithFullSynchronousAndForeignKeysOn() async throws {
        try await Self.withDatabase { db, _ in
            let (mode, synchronous, foreignKeys) = try db.write { c in
                (
                    try c.queryOne("PRAGMA journal_mode")?.string("journal_mode"),
                    try c.queryOne("PRAGMA synchronous")?.int64("synchronous"),
                    try c.queryOne("PRAGMA foreign_keys")?.int64("foreign_keys")
                )
            }
            #expect(mode == "wal")
            #expect(synchronous == 2)
            #expect(foreignKeys == 1)
            #expect(try db.read { try $0.queryOne("PRAGMA journal_mode")?.string("journal_mode") } == "wal")

            try db.write { c in
                try c.execute(
                    """
                    CREATE TABLE parent(id INTEGER PRIMARY KEY);
                    CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parent(id));
                    """
                )
            }
            let error = #expect(throws: SQLiteError.self) {
                try db.write { try $0.run("INSERT INTO child(parent) VALUES (?)", [42]) }
            }
            #expect(error?.isConstraintViolation == true)
            #expect(error?.isUniqueViolation == false)
        }
    }

    @Test func synchronousFollowsTheOptions() async throws {
        var options = SQLiteDatabase.Options()
        options.synchronous = .normal
        let synchronous = try await Self.withDatabase(options) { db, _ in
            try db.write { try $0.queryOne("PRAGMA synchronous")?.int64("synchronous") }
        }
        #expect(synchronous == 1)
    }

    @Test func refusesAnInMemoryDatabase() {
        let error = #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: ":memory:") }
        #expect(error?.code == SQLiteError.misuseCode)
    }

    // MARK: Values and rows

    @Test func roundTripsEveryValueKind() async throws {
        let values: [SQLiteValue] = [
            .null, .integer(0), .integer(-1), .integer(.min), .integer(.max), .real(3.25), .real(-1e308),
            .text(""), .text("plain"), .text("héllo wörld 🌍 日本語"), .text("a\u{0}b\u{0}"),
            .blob([]), .blob([0]), .blob([0, 1, 0, 255, 0]), .blob(Array(repeating: 0xAB, count: 4096)),
        ]
        let kinds = [
            "null", "integer", "integer", "integer", "integer", "real", "real",
            "text", "text", "text", "text", "blob", "blob", "blob", "blob",
        ]
        try await Self.withDatabase { db, _ in
            // No declared type: no affinity, so SQLite stores every value in its own storage class.
            try db.write { c in
                try c.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, x)")
                for (i, value) in values.enumerated() {
                    try c.run("INSERT INTO v(id, x) VALUES (?, ?)", [.integer(Int64(i)), value])
                }
            }
            let rows = try db.read { try $0.query("SELECT id, x, typeof(x) AS kind FROM v ORDER BY id") }
            #expect(rows.count == values.count)
            for (row, (value, kind)) in zip(rows, zip(values, kinds)) {
                #expect(row["x"] == value)
                #expect(row.string("kind") == kind, "\(value)")
            }
            // Bound values compare equal inside SQLite too, NUL bytes included.
            for value in values where value != .null {
                let found = try db.read {
                    try $0.queryOne("SELECT count(*) AS n FROM v WHERE x = ?", [value])?.int("n")
                }
                #expect(found == 1, "\(value)")
            }
            #expect(
                try db.read { try $0.queryOne("SELECT length(CAST(x AS BLOB)) AS n FROM v WHERE id = 10")?.int("n") }
                    == 4
            )
            #expect(try db.read { try $0.queryOne("SELECT x FROM v WHERE x IS NULL") }?[0] == .null)
        }
    }

    @Test func rowAccessorsReturnTheirOwnKindAndNilOtherwise() async throws {
        let row = try await Self.withDatabase { db, _ in
            try db.read { c in
                try c.queryOne(
                    "SELECT ? AS i, ? AS s, ? AS b, ? AS t, ? AS f, ? AS n, ? AS r, ? AS big",
                    [42, "text", .blob([1, 2]), true, false, nil, 2.5, .integer(.max)]
                )
            }
        }
        let r = try #require(row)
        #expect(r.columns == ["i", "s", "b", "t", "f", "n", "r", "big"])
        #expect(r.int64("i") == 42)
        #expect(r.int("i") == 42)
        #expect(r.string("s") == "text")
        #expect(r.blob("b") == [1, 2])
        #expect(r.bool("t") == true)
        #expect(r.bool("f") == false)
        #expect(r.double("r") == 2.5)
        #expect(r.int64("big") == .max)
        #expect(r["n"] == .null)
        #expect(r.int64("n") == nil)
        #expect(r.string("i") == nil)
        #expect(r.int64("s") == nil)
        #expect(r.blob("s") == nil)
        #expect(r.int64("r") == nil)
        #expect(r["missing"] == .null)
        #expect(r.string("missing") == nil)
        #expect(r[1] == .text("text"))
        #expect(r[99] == .null)
        #expect(r[-1] == .null)
    }

    @Test func valueInitialisersMapNilToNullAndBoolsToIntegers() {
        #expect(SQLiteValue(Int64?.none) == .null)
        #expect(SQLiteValue(Int64(7)) == .integer(7))
        #expect(SQLiteValue(String?.none) == .null)
        #expect(SQLiteValue("x" as String?) == .text("x"))
        #expect(SQLiteValue(true as Bool?) == .integer(1))
        #expect(SQLiteValue(false as Bool?) == .integer(0))
        #expect(SQLiteValue(Bool?.none) == .null)
        #expect(SQLiteValue([UInt8]?.none) == .null)
        #expect(SQLiteValue([UInt8]()) == .blob([]))
        let literals: [SQLiteValue] = ["s", 5, nil, 1.5, true]
        #expect(literals == [.text("s"), .integer(5), .null, .real(1.5), .integer(1)])
    }

    // MARK: Transactions

    @Test func writeRollsBackEverythingWhenTheBodyThrows() async throws {
        try await Self.withDatabase { db, _ in
            try db.write { try $0.run("INSERT INTO t(id, a, b) VALUES (1, 'kept', 1)") }
            #expect(throws: Boom.self) {
                try db.write { c in
                    try c.run("INSERT INTO t(a, b) VALUES ('new', 2)")
                    try c.run("UPDATE t SET b = 99 WHERE id = 1")
                    try c.execute("CREATE TABLE extra(x)")
                    throw Boom()
                }
            }
            #expect(try Self.count(db) == 1)
            #expect(try db.read { try $0.queryOne("SELECT b FROM t WHERE id = 1")?.int64("b") } == 1)
            #expect(try db.read { try $0.queryOne("SELECT name FROM sqlite_master WHERE name = 'extra'") } == nil)
            // The writer is usable again.
            #expect(try db.write { try $0.run("INSERT INTO t(a) VALUES ('after')") } == 1)
        }
    }

    @Test func aUniqueViolationRollsBackTheWholeTransaction() async throws {
        try await Self.withDatabase { db, _ in
            try db.write { c in
                try c.execute("CREATE TABLE events(id TEXT PRIMARY KEY, body BLOB); CREATE UNIQUE INDEX t_a ON t(a)")
                try c.run("INSERT INTO events(id, body) VALUES ('e1', x'01')")
                try c.run("INSERT INTO t(a, b) VALUES ('one', 1)")
            }
            let primaryKey = #expect(throws: SQLiteError.self) {
                try db.write { c in
                    try c.run("INSERT INTO events(id, body) VALUES ('e2', x'02')")
                    try c.run("UPDATE t SET b = 2")
                    try c.run("INSERT INTO events(id, body) VALUES (?, ?)", ["e1", .blob([3])])
                }
            }
            #expect(primaryKey?.isUniqueViolation == true)
            #expect(primaryKey?.isConstraintViolation == true)
            let unique = #expect(throws: SQLiteError.self) {
                try db.write { try $0.run("INSERT INTO t(a, b) VALUES (?, ?)", ["one", 3]) }
            }
            #expect(unique?.isUniqueViolation == true)
            #expect(unique?.extendedCode != primaryKey?.extendedCode)
            #expect(try Self.count(db, "events") == 1)
            #expect(try db.read { try $0.query("SELECT a, b FROM t") }.map { [$0["a"], $0["b"]] } == [["one", 1]])
        }
    }

    @Test func readTransactionKeepsOneSnapshotWhilePlainReadsSeeNewCommits() async throws {
        try await Self.withDatabase { db, _ in
            let (before, during) = try db.readTransaction { c in
                let before = try Self.count(c)
                try db.write { try $0.run("INSERT INTO t(a) VALUES ('x')") }
                return (before, try Self.count(c))
            }
            #expect(before == 0)
            #expect(during == 0)
            let plain = try db.read { c in
                try db.write { try $0.run("INSERT INTO t(a) VALUES ('y')") }
                return try Self.count(c)
            }
            #expect(plain == 2)
        }
    }

    @Test func readersSeeCommittedRowsButNotAnOpenWriteTransaction() async throws {
        try await Self.withDatabase { db, _ in
            let inserted = DispatchSemaphore(value: 0)
            let checked = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            let writerSaw = Mutex<Int?>(nil)
            Thread.detachNewThread {
                defer { finished.signal() }
                let seen = try? db.write { c in
                    try c.run("INSERT INTO t(a) VALUES ('pending')")
                    inserted.signal()
                    _ = checked.wait(timeout: .now() + 10)
                    return try Self.count(c)
                }
                writerSaw.withLock { $0 = seen ?? nil }
            }
            #expect(inserted.wait(timeout: .now() + 10) == .success)
            let whileOpen = try Self.count(db)
            checked.signal()
            #expect(finished.wait(timeout: .now() + 10) == .success)
            #expect(whileOpen == 0)
            #expect(writerSaw.withLock { $0 } == 1)
            #expect(try Self.count(db) == 1)
        }
    }

    @Test func aWriteWaitsForTheBusyTimeoutThenFailsBusy() async throws {
        var options = SQLiteDatabase.Options()
        options.busyTimeoutMillis = 200
        try await Self.withDatabase(options) { first, path in
            let second = try SQLiteDatabase(path: path, options: options)
            defer { second.close() }
            let clock = ContinuousClock()
            var elapsed = Duration.zero
            // `second` holds the write lock (BEGIN IMMEDIATE) while `first` tries to write.
            let error = try second.write { c in
                try c.run("INSERT INTO t(a) VALUES ('second')")
                let start = clock.now
                defer { elapsed = clock.now - start }
                return #expect(throws: SQLiteError.self) {
                    try first.write { try $0.run("INSERT INTO t(a) VALUES ('first')") }
                }
            }
            #expect(error?.isBusy == true)
            #expect(elapsed > .milliseconds(100))
            #expect(elapsed < .seconds(5))
            // Once `second` committed, `first` writes and sees both rows.
            try first.write { try $0.run("INSERT INTO t(a) VALUES ('first')") }
            #expect(try Self.count(first) == 2)
        }
    }

    @Test func fiftyConcurrentTasksWritingAndReadingAllSucceed() async throws {
        try await Self.withDatabase { db, _ in
            let results = try await withThrowingTaskGroup(of: (changed: Int, mine: Int?, total: Int?).self) { group in
                for task in 0..<50 {
                    group.addTask {
                        let changed = try db.write { c in
                            try c.run(
                                "INSERT INTO t(a, b) VALUES ('task', ?), ('task', ?)",
                                [.integer(Int64(task)), .integer(Int64(task))]
                            )
                        }
                        let mine = try db.read {
                            try $0.queryOne("SELECT count(*) AS n FROM t WHERE b = ?", [.integer(Int64(task))])?.int(
                                "n"
                            )
                        }
                        let total = try db.readTransaction { try Self.count($0) }
                        return (changed, mine, total)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 50)
            #expect(results.map(\.changed).reduce(0, +) == 100)
            #expect(results.allSatisfy { $0.mine == 2 })
            #expect(results.allSatisfy { ($0.total ?? 0) >= 2 && ($0.total ?? 0) <= 100 })
            #expect(try Self.count(db) == 100)
            #expect(try db.read { try $0.queryOne("SELECT sum(b) AS s FROM t")?.int("s") } == 2 * (0..<50).reduce(0, +))
        }
    }

    // MARK: Migrations

    static let migrations = [
        SQLiteMigration(version: 3, sql: "INSERT INTO plans(name, price) VALUES ('gold', 9)"),
        SQLiteMigration(version: 1, sql: "CREATE TABLE plans(name TEXT PRIMARY KEY)"),
        SQLiteMigration(
            version: 2,
            sql: "ALTER TABLE plans ADD COLUMN price INTEGER; CREATE INDEX plans_price ON plans(price)"
        ),
    ]

    static func appliedVersions(_ db: SQLiteDatabase) throws -> [Int] {
        try db.read {
            try $0.query("SELECT version FROM schema_migrations ORDER BY version").compactMap { $0.int("version") }
        }
    }

    @Test func migrationsApplyInVersionOrderOnceAcrossReopens() async throws {
        try await Self.withTemporaryDirectory { directory in
            let path = directory + "/gateway.db"
            do {
                let db = try SQLiteDatabase(path: path)
                defer { db.close() }
                try db.migrate(Self.migrations)
                try db.migrate(Self.migrations)
                #expect(try Self.appliedVersions(db) == [1, 2, 3])
                #expect(try Self.count(db, "plans") == 1)
                let appliedAt = try db.read { try $0.query("SELECT applied_at FROM schema_migrations") }
                #expect(appliedAt.allSatisfy { ($0.int64("applied_at") ?? 0) > 1_600_000_000 })
            }
            let reopened = try SQLiteDatabase(path: path)
            defer { reopened.close() }
            try reopened.migrate(Self.migrations)
            #expect(try Self.appliedVersions(reopened) == [1, 2, 3])
            #expect(try Self.count(reopened, "plans") == 1)
        }
    }

    @Test func aFailingMigrationLeavesThePreviousVersionAndThrows() async throws {
        try await Self.withDatabase { db, _ in
            let broken = [
                SQLiteMigration(version: 1, sql: "CREATE TABLE a(x)"),
                SQLiteMigration(version: 2, sql: "CREATE TABLE b(x); INSERT INTO no_such_table VALUES (1)"),
                SQLiteMigration(version: 3, sql: "CREATE TABLE c(x)"),
            ]
            let error = #expect(throws: SQLiteError.self) { try db.migrate(broken) }
            #expect(error?.message.contains("migration 2") == true)
            #expect(try Self.appliedVersions(db) == [1])
            let tables = try db.read {
                try $0.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.string("name") }
            }
            #expect(tables.contains("a"))
            #expect(!tables.contains("b"))
            #expect(!tables.contains("c"))
            // The fixed list carries on from version 1.
            var fixed = broken
            fixed[1].sql = "CREATE TABLE b(x)"
            try db.migrate(fixed)
            #expect(try Self.appliedVersions(db) == [1, 2, 3])
        }
    }

    @Test func refusesADatabaseThatANewerGatewayMigrated() async throws {
        try await Self.withDatabase { db, _ in
            try db.migrate(Self.migrations)
            let error = #expect(throws: SQLiteError.self) { try db.migrate(Array(Self.migrations.dropFirst())) }
            #expect(error?.message.contains("newer") == true)
            #expect(error?.message.contains("version 3") == true)
            #expect(try Self.appliedVersions(db) == [1, 2, 3])
            #expect(throws: SQLiteError.self) { try db.migrate(Self.migrations + [Self.migrations[0]]) }
        }
    }

    // MARK: Errors

    @Test func bindingAndSQLMistakesThrowWithoutLeakingBoundValues() async throws {
        let secret: SQLiteValue = "SECRET-VALUE"
        try await Self.withDatabase { db, _ in
            try db.write {
                try $0.execute("CREATE TABLE guarded(v TEXT NOT NULL CHECK (length(v) < 5), n INTEGER NOT NULL)")
            }
            let attempts: [(expectedCode: Int32, run: (SQLiteConnection) throws -> Void)] = [
                (SQLiteError.rangeCode, { try $0.run("INSERT INTO t(a, b) VALUES (?, ?)", [secret]) }),
                (SQLiteError.rangeCode, { try $0.run("INSERT INTO t(a, b) VALUES (?, ?)", [secret, 1, secret]) }),
                (SQLiteError.rangeCode, { _ = try $0.query("SELECT * FROM t", [secret]) }),
                (SQLiteError.errorCode, { _ = try $0.query("SELEC * FROM t WHERE a = ?", [secret]) }),
                (SQLiteError.errorCode, { try $0.run("INSERT INTO no_such_table VALUES (?)", [secret]) }),
                (SQLiteError.errorCode, { try $0.execute("CREATE TABLE (") }),
                (SQLiteError.misuseCode, { try $0.run("INSERT INTO t(a) VALUES (?); DELETE FROM t", [secret]) }),
                (SQLiteError.misuseCode, { try $0.run("  -- nothing here") }),
                (SQLiteError.constraintCode, { try $0.run("INSERT INTO guarded(v, n) VALUES (?, 1)", [secret]) }),
                (SQLiteError.constraintCode, { try $0.run("INSERT INTO guarded(v, n) VALUES ('ok', ?)", [nil]) }),
            ]
            for (number, attempt) in attempts.enumerated() {
                let error = #expect(throws: SQLiteError.self, "attempt \(number)") { try db.write(attempt.run) }
                #expect(error?.code == attempt.expectedCode, "attempt \(number): \(String(describing: error))")
                #expect(error.map { !"\($0)".contains("SECRET-VALUE") } == true, "attempt \(number)")
            }
            // Nothing was half-done, and both connections still work.
            #expect(try Self.count(db) == 0)
            try db.write { try $0.run("INSERT INTO t(a, b) VALUES (?, ?)", ["fine", 1]) }
            #expect(try Self.count(db) == 1)
            // A trailing semicolon or comment is one statement, not two.
            #expect(try db.read { try $0.queryOne("SELECT 1 AS one; -- done")?.int("one") } == 1)
        }
    }

    @Test func readersRefuseToWrite() async throws {
        try await Self.withDatabase { db, _ in
            let error = #expect(throws: SQLiteError.self) {
                try db.read { try $0.run("INSERT INTO t(a) VALUES ('x')") }
            }
            let remaining = try Self.count(db)
            #expect(error?.code == SQLiteError.readOnlyCode)
            #expect(remaining == 0)
        }
    }

    @Test func aConnectionUsedAfterItsClosureThrowsMisuse() async throws {
        try await Self.withDatabase { db, _ in
            var escaped: SQLiteConnection?
            let rowID = try db.write { c in
                escaped = c
                try c.run("INSERT INTO t(a) VALUES ('x')")
                return c.lastInsertRowID
            }
            #expect(rowID == 1)
            let connection = try #require(escaped)
            let error = #expect(throws: SQLiteError.self) { try connection.run("DELETE FROM t") }
            #expect(error?.code == SQLiteError.misuseCode)
            #expect(connection.lastInsertRowID == 0)
            #expect(try Self.count(db) == 1)
        }
    }

    @Test func aWriteBodyThatCommitsItselfIsReported() async throws {
        try await Self.withDatabase { db, _ in
            let error = #expect(throws: SQLiteError.self) { try db.write { try $0.execute("COMMIT") } }
            let changed = try db.write { try $0.run("INSERT INTO t(a) VALUES ('x')") }
            #expect(error?.code == SQLiteError.misuseCode)
            #expect(changed == 1)
        }
    }

    // MARK: Durability and closing

    @Test func committedRowsSurviveCloseAndReopen() async throws {
        try await Self.withTemporaryDirectory { directory in
            let path = directory + "/gateway.db"
            let body = Array((0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) })
            let db = try SQLiteDatabase(path: path)
            try db.write { try $0.execute("CREATE TABLE events(id INTEGER PRIMARY KEY, body BLOB NOT NULL)") }
            for batch in 0..<5 {
                try db.write { c in
                    for i in 0..<20 {
                        try c.run(
                            "INSERT INTO events(id, body) VALUES (?, ?)",
                            [.integer(Int64(batch * 20 + i)), .blob(body)]
                        )
                    }
                }
            }
            db.close()
            db.close()
            let afterClose = #expect(throws: SQLiteError.self) { try db.read { _ in 1 } }
            #expect(afterClose?.code == SQLiteError.misuseCode)
            #expect(throws: SQLiteError.self) { try db.write { _ in 1 } }
            #expect(throws: SQLiteError.self) { try db.migrate(Self.migrations) }

            let reopened = try SQLiteDatabase(path: path)
            defer { reopened.close() }
            let rows = try reopened.read { try $0.query("SELECT id, body FROM events ORDER BY id") }
            #expect(rows.map { $0.int("id") } == (0..<100).map { $0 })
            #expect(rows.allSatisfy { $0.blob("body") == body })
        }
    }
}
