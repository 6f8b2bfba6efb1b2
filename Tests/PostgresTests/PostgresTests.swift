import Dispatch
import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

/// The server the tests use: `scripts/with-postgres swift test --filter PostgresTests` starts a throw-away one and
/// sets these. Without them the suite is skipped.
enum TestServer {
    static let url = TestPostgresServer.url
    /// `stop` / `start` / `restart` the server (only with scripts/with-postgres).
    static let ctl = TestPostgresServer.ctl

    static func connect(_ label: String = "test") throws -> PostgresConnection {
        try PostgresConnection(url!, label: label)
    }

    /// Runs `IAPGW_TEST_PG_CTL ARGUMENT` to completion.
    static func control(_ argument: String) throws -> Int32 { try TestPostgresServer.control(argument) }
}

/// A schema of its own for one test (`t_<uuid>`), dropped at the end with a fresh connection (the test's may be
/// broken on purpose). Identifiers only are interpolated into SQL, never values.
func withSchema<T>(_ body: (PostgresConnection, String) throws -> T) throws -> T {
    let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    let connection = try TestServer.connect()
    defer {
        connection.close()
        if let cleaner = try? TestServer.connect("cleanup") {
            try? cleaner.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
            cleaner.close()
        }
    }
    try connection.execute("CREATE SCHEMA \(schema)")
    return try body(connection, schema)
}

struct Boom: Error {}

/// What a helper thread reports back.
final class Outcome<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
    func set(_ body: (inout Value) -> Void) { value.withLock { body(&$0) } }
    var current: Value { value.withLock { $0 } }
}

@Test func postgresTestsRunWhereRequired() {
    // CI sets IAPGW_REQUIRE_POSTGRES=1 so that a missing server fails the run instead of skipping the suite.
    if ProcessInfo.processInfo.environment["IAPGW_REQUIRE_POSTGRES"] == "1" {
        #expect(TestServer.url != nil, "IAPGW_REQUIRE_POSTGRES=1 but IAPGW_TEST_DATABASE_URL is not set")
    }
}

@Test func errorsAreClassifiedByTheirSQLSTATE() {
    func error(_ code: String) -> PostgresError { PostgresError(code: code, message: "") }
    #expect(error("23505").isUniqueViolation && !error("23503").isUniqueViolation)
    #expect(error("40001").isSerializationFailure && error("40P01").isSerializationFailure)
    for code in ["08000", "08001", "08003", "08006", "57P01", "57P02", "57P03"] {
        #expect(error(code).isConnectionFailure, "\(code)")
    }
    for code in ["08P01", "57014", "23505", "25P02", "53300", "XX000"] {
        #expect(!error(code).isConnectionFailure, "\(code)")
    }
    #expect(error("53300").isPoolExhausted)
    #expect(error("23505") == PostgresError(code: "23505", message: "another message"))
}

@Suite(
    .serialized,
    .enabled(if: TestServer.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)")
)
struct PostgresTests {
    // MARK: Values

    @Test func everyValueTypeRoundTrips() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).v(n int PRIMARY KEY, i int8, t text, b bytea, f bool, d float8)")
            var allBytes = Array(0...255).map { UInt8($0) }
            allBytes += [0, 0, 0xFF, 0xFF, 0]
            var generator = SystemRandomNumberGenerator()
            let large = (0..<1_048_576).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let largeText = String(repeating: "é✓𝄞 ", count: 1_048_576 / 10)
            let rows: [[PostgresValue]] = [
                [1, .int64(.max), "héllo ✓ 𝄞 日本語 \u{1F600}", .bytea(allBytes), true, 0.1],
                [2, .int64(.min), "", .bytea([]), false, -0.0],
                [3, 0, "line\nbreak\ttab \\ backslash 'quote' \"double\"", .bytea([0]), true, .double(.infinity)],
                [4, -1, .text(largeText), .bytea(large), false, .double(-.infinity)],
                [5, .null, .null, .null, .null, .null],
                [6, 42, "x", .bytea([0xFF]), true, .double(.greatestFiniteMagnitude)],
                [7, 7, "y", .bytea([0x5C, 0x78, 0x30]), false, .double(.leastNonzeroMagnitude)],
            ]
            for row in rows {
                #expect(try c.run("INSERT INTO \(s).v(n, i, t, b, f, d) VALUES ($1, $2, $3, $4, $5, $6)", row) == 1)
            }
            try c.run("INSERT INTO \(s).v(n, d) VALUES ($1, $2)", [8, .double(.nan)])

            func check() throws {
                let read = try c.query("SELECT n, i, t, b, f, d FROM \(s).v WHERE n < 8 ORDER BY n")
                #expect(read.count == rows.count)
                for (got, want) in zip(read, rows) {
                    #expect(got.columns == ["n", "i", "t", "b", "f", "d"])
                    #expect(Array(got.values.dropFirst()) == Array(want.dropFirst()), "row \(want[0])")
                }
                let nan = try c.queryOne("SELECT d FROM \(s).v WHERE n = $1", [8])?.double("d")
                #expect(nan?.isNaN == true)
            }
            try check()
            // bytea also decodes from the older escape output format.
            try c.execute("SET bytea_output = 'escape'")
            try check()
            try c.execute("RESET bytea_output")

            let one = try #require(try c.queryOne("SELECT i, t, b, f, d FROM \(s).v WHERE n = $1", [1]))
            #expect(one.int64("i") == .max)
            #expect(one.string("t") == "héllo ✓ 𝄞 日本語 \u{1F600}")
            #expect(one.bytes("b") == allBytes)
            #expect(one.bool("f") == true)
            #expect(one.double("d") == 0.1)
            #expect(one.int64("t") == nil)  // no conversions
            let nulls = try #require(try c.queryOne("SELECT i, t, b, f, d FROM \(s).v WHERE n = $1", [5]))
            #expect(["i", "t", "b", "f", "d"].allSatisfy { nulls.isNull($0) })
            #expect(nulls.int64("i") == nil && nulls.string("t") == nil && nulls.bytes("b") == nil)
            #expect(!one.isNull("b"))
            let empty = try #require(try c.queryOne("SELECT b FROM \(s).v WHERE n = $1", [2]))
            #expect(empty.bytes("b") == [])  // empty, not NULL

            // Column types map as documented; other types come back as text.
            let typed = try #require(
                try c.queryOne(
                    "SELECT 1::int2 AS a, 2::int4 AS b, 3::int8 AS c, 1.5::float4 AS d, 12.50::numeric AS e, "
                        + "'2026-01-02T03:04:05Z'::timestamptz AT TIME ZONE 'UTC' AS f, $1::jsonb AS g",
                    [#"{"k": [1, 2]}"#]
                )
            )
            #expect(typed["a"] == 1 && typed["b"] == 2 && typed["c"] == 3)
            #expect(typed.double("d") == 1.5)
            #expect(typed.string("e") == "12.50")
            #expect(typed.string("f") == "2026-01-02 03:04:05")
            #expect(typed.string("g") == #"{"k": [1, 2]}"#)
        }
    }

    @Test func textWithANulByteIsRefusedNotTruncated() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).t(v text)")
            let error = #expect(throws: PostgresError.self) {
                try c.run("INSERT INTO \(s).t(v) VALUES ($1)", ["before\u{0}after"])
            }
            #expect(error?.code == "22021")
            #expect(error?.message.contains("before") == false)
            #expect(try c.queryOne("SELECT count(*) AS n FROM \(s).t")?.int64("n") == 0)
        }
    }

    @Test func aParameterIsStoredLiterallyNeverAsSQL() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).notes(id int8 PRIMARY KEY, body text)")
            let hostile = "x'); DROP TABLE \(s).notes; --"
            let quoted = "'; DROP TABLE \(s).notes; --"
            try c.run("INSERT INTO \(s).notes(id, body) VALUES ($1, $2)", [1, .text(hostile)])
            try c.run("INSERT INTO \(s).notes(id, body) VALUES ($1, $2)", [2, .text(quoted)])
            #expect(try c.query("SELECT body FROM \(s).notes WHERE body = $1", [.text(quoted)]).count == 1)
            let bodies = try c.query("SELECT body FROM \(s).notes ORDER BY id").map { $0.string("body") }
            #expect(bodies == [hostile, quoted])
            // Unprepared (PQexecParams) binds the same way.
            let echoed = try c.query("SELECT $1::text AS v", [.text(quoted)], prepared: false)
            #expect(echoed.first?.string("v") == quoted)
        }
    }

    // MARK: Statements

    @Test func preparedStatementsAreReusedPerConnection() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).k(id int8 PRIMARY KEY, v text)")
            let insert = "INSERT INTO \(s).k(id, v) VALUES ($1, $2)"
            for i in 1...20 { try c.run(insert, [.int64(Int64(i)), .text("v\(i)")]) }
            #expect(c.preparedStatementCount == 1)
            let serverSide = "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = $1"
            #expect(try c.queryOne(serverSide, [.text(insert)])?.int64("n") == 1)
            #expect(try c.queryOne("SELECT v FROM \(s).k WHERE id = $1", [7])?.string("v") == "v7")
            #expect(try c.queryOne("SELECT v FROM \(s).k WHERE id = $1", [8])?.string("v") == "v8")
            #expect(c.preparedStatementCount == 3)  // insert, the count, the select

            // Statements the server forgot (DEALLOCATE ALL) are prepared again.
            try c.execute("DEALLOCATE ALL")
            try c.run(insert, [21, "v21"])
            #expect(try c.queryOne("SELECT count(*) AS n FROM \(s).k")?.int64("n") == 21)

            // The wrong number of parameters is refused before anything runs.
            let error = #expect(throws: PostgresError.self) { try c.run(insert, [22]) }
            #expect(error?.code == PostgresError.parameterCountCode)
            // Several statements do not prepare; execute takes them.
            #expect(throws: PostgresError.self) { try c.query("SELECT 1; SELECT 2") }
            try c.execute("SELECT 1; SELECT 2")
        }
    }

    // MARK: Transactions

    @Test func aTransactionCommitsOrRollsBack() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).t(id int8 PRIMARY KEY)")
            let count = "SELECT count(*) AS n FROM \(s).t"
            try c.transaction { c in
                try c.run("INSERT INTO \(s).t(id) VALUES ($1)", [1])
                #expect(c.inTransaction)
            }
            #expect(!c.inTransaction)
            #expect(try c.queryOne(count)?.int64("n") == 1)

            #expect(throws: Boom.self) {
                try c.transaction { c in
                    try c.run("INSERT INTO \(s).t(id) VALUES ($1)", [2])
                    throw Boom()
                }
            }
            #expect(!c.inTransaction)
            #expect(try c.queryOne(count)?.int64("n") == 1)

            // A failed statement whose error the body caught: the commit is refused, nothing stays.
            let caught = #expect(throws: PostgresError.self) {
                try c.transaction(isolation: .serializable) { c in
                    try c.run("INSERT INTO \(s).t(id) VALUES ($1)", [3])
                    _ = try? c.run("INSERT INTO \(s).t(id) VALUES ($1)", [1])  // unique violation, swallowed
                }
            }
            #expect(caught?.code == "25P02")
            #expect(try c.queryOne(count)?.int64("n") == 1)

            // Nested transactions are refused rather than committing the outer one early.
            let nested = #expect(throws: PostgresError.self) {
                try c.transaction { c in try c.transaction { _ in } }
            }
            #expect(nested?.code == "25001")
            // A body that commits by itself is reported.
            let ended = #expect(throws: PostgresError.self) {
                try c.transaction { c in try c.execute("COMMIT") }
            }
            #expect(ended?.code == "25P02")
            #expect(!c.inTransaction)
        }
    }

    @Test func aUniqueViolationIsMappedAndItsMessageHoldsNoValue() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).events(id text PRIMARY KEY, body bytea)")
            let secret = "secret-event-id-8d1f"
            try c.run("INSERT INTO \(s).events(id, body) VALUES ($1, $2)", [.text(secret), .bytea([1])])
            let error = #expect(throws: PostgresError.self) {
                try c.run("INSERT INTO \(s).events(id, body) VALUES ($1, $2)", [.text(secret), .bytea([2])])
            }
            #expect(error?.isUniqueViolation == true)
            #expect(error?.isConnectionFailure == false)
            #expect(error?.message.contains("events_pkey") == true)
            #expect(error?.message.contains(secret) == false)

            // A data exception quotes the value in the server's message: withheld.
            let bad = #expect(throws: PostgresError.self) {
                try c.query("SELECT $1::int8 AS n", ["not-a-number-secret"])
            }
            #expect(bad?.code == "22P02")
            #expect(bad?.message.contains("not-a-number-secret") == false)
            #expect(bad?.isUniqueViolation == false)
            // The session goes on after a statement error.
            #expect(try c.queryOne("SELECT 1 AS one")?.int64("one") == 1)
        }
    }

    @Test func aWrongPasswordFailsToConnectWithoutShowingIt() throws {
        var components = try #require(URLComponents(string: TestServer.url!))
        components.password = "wrong-password-5e2a"
        let wrong = try #require(components.string)
        let error = #expect(throws: PostgresError.self) { _ = try PostgresConnection(wrong) }
        #expect(error?.code == PostgresError.cannotConnectCode)
        #expect(error?.isConnectionFailure == true)
        #expect(error?.message.contains("wrong-password-5e2a") == false)
        let unparsable = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection("postgresql://u:s3cr%zzet@127.0.0.1/db")
        }
        #expect(unparsable?.code == PostgresError.cannotConnectCode)
        #expect(unparsable?.message.contains("s3cr") == false)
    }

    // MARK: Locking

    @Test func skipLockedSkipsTheRowAnotherConnectionLocked() throws {
        try withSchema { a, s in
            let b = try TestServer.connect("b")
            defer { b.close() }
            try a.execute("CREATE TABLE \(s).jobs(id int8 PRIMARY KEY, state text NOT NULL)")
            for id in 1...3 {
                try a.run("INSERT INTO \(s).jobs(id, state) VALUES ($1, $2)", [.int64(Int64(id)), "due"])
            }
            let claim = "SELECT id FROM \(s).jobs WHERE state = $1 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
            try a.transaction { a in
                let mine = try a.queryOne(claim, ["due"])?.int64("id")
                #expect(mine == 1)
                // b does not wait for a: it takes the next row.
                let next = try b.transaction { b in try b.queryOne(claim, ["due"])?.int64("id") }
                #expect(next == 2)
                let locked = #expect(throws: PostgresError.self) {
                    try b.query("SELECT id FROM \(s).jobs WHERE id = $1 FOR UPDATE NOWAIT", [1])
                }
                #expect(locked?.code == "55P03")
            }
            // Both locks are gone with their transactions.
            let first = try b.transaction { b in try b.queryOne(claim, ["due"])?.int64("id") }
            #expect(first == 1)
        }
    }

    // MARK: LISTEN / NOTIFY

    @Test func aNotificationWakesAWaiter() throws {
        let channel = "wake_" + UUID().uuidString.prefix(8).lowercased()
        let sender = try TestServer.connect("sender")
        defer { sender.close() }
        let url = TestServer.url!
        let ready = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let outcome = Outcome<(notifications: [PostgresNotification], waited: Duration, error: String?)>(
            ([], .zero, nil)
        )
        Thread.detachNewThread {
            do {
                let listener = try PostgresConnection(url, label: "listener")
                defer { listener.close() }
                try listener.listen(channel)
                // Nothing yet: the wait times out empty.
                let none = try listener.notifications(timeout: .milliseconds(50))
                ready.signal()
                let start = ContinuousClock.now
                let got = try listener.notifications(timeout: .seconds(30))
                let waited = start.duration(to: .now)
                outcome.set { $0 = (none + got, waited, nil) }
            } catch {
                outcome.set { $0.error = "\(error)" }
                ready.signal()
            }
            done.signal()
        }
        #expect(ready.wait(timeout: .now() + 30) == .success)
        // Inside a transaction: delivered at commit only, never on rollback.
        try? sender.transaction { c in
            try c.notify(channel, payload: "rolled back")
            throw Boom()
        }
        try sender.transaction { c in try c.notify(channel, payload: "payload 'with' quotes ✓") }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let result = outcome.current
        #expect(result.error == nil)
        #expect(result.notifications.map(\.payload) == ["payload 'with' quotes ✓"])
        #expect(result.notifications.first?.channel == channel)
        #expect(result.notifications.first?.senderProcessID == sender.serverProcessID)
        #expect(result.waited < .seconds(29))
    }

    @Test func aChannelMustBeAPlainName() throws {
        let c = try TestServer.connect()
        defer { c.close() }
        for bad in ["", "a b", "x\"; DROP TABLE y; --", String(repeating: "a", count: 64)] {
            let error = #expect(throws: PostgresError.self) { try c.listen(bad) }
            #expect(error?.code == "42602")
        }
        try c.listen("Mixed_Case_1")
        try c.notify("Mixed_Case_1", payload: "p")
        #expect(try c.notifications(timeout: .seconds(10)).map(\.channel) == ["Mixed_Case_1"])
        try c.unlisten("Mixed_Case_1")
        try c.notify("Mixed_Case_1", payload: "p")
        #expect(try c.notifications(timeout: .milliseconds(100)).isEmpty)
    }

    // MARK: Pool

    @Test func thePoolLendsResetsAndTimesOut() throws {
        var options = PostgresPool.Options()
        options.size = 1
        options.borrowTimeout = .milliseconds(200)
        let pool = try PostgresPool(TestServer.url!, options: options)
        defer { pool.close() }
        var escaped: PostgresConnection?
        let pid = try pool.withConnection { c in
            escaped = c
            try c.execute("BEGIN")  // left open on purpose
            try c.listen("pool_left_listening")
            // Every connection is lent: a second borrower waits out the timeout.
            let exhausted = #expect(throws: PostgresError.self) { try pool.withConnection { _ in } }
            #expect(exhausted?.isPoolExhausted == true)
            return c.serverProcessID
        }
        // The lent connection is no longer usable.
        let stale = #expect(throws: PostgresError.self) { try escaped?.query("SELECT 1") }
        #expect(stale?.code == PostgresError.connectionClosedCode)
        try pool.withConnection { c in
            #expect(c.serverProcessID == pid)  // the same session …
            #expect(!c.inTransaction)  // … with the transaction rolled back
            let listening = try c.queryOne("SELECT count(*) AS n FROM pg_listening_channels()")
            #expect(listening?.int64("n") == 0)
        }
        #expect(try pool.transaction { c in try c.queryOne("SELECT 5 AS v")?.int64("v") } == 5)
        pool.close()
        let closed = #expect(throws: PostgresError.self) { try pool.withConnection { _ in } }
        #expect(closed?.code == PostgresError.connectionClosedCode)
    }

    @Test func thePoolSharesItsConnectionsAcrossThreads() throws {
        try withSchema { c, s in
            try c.execute("CREATE TABLE \(s).hits(id int8 PRIMARY KEY)")
            var options = PostgresPool.Options()
            options.size = 3
            let pool = try PostgresPool(TestServer.url!, options: options)
            defer { pool.close() }
            let failures = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                for i in 0..<25 {
                    do {
                        try pool.transaction { c in
                            try c.run("INSERT INTO \(s).hits(id) VALUES ($1)", [.int64(Int64(worker * 1000 + i))])
                        }
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
            #expect(try c.queryOne("SELECT count(*) AS n FROM \(s).hits")?.int64("n") == 200)
        }
    }

    // MARK: Server restart

    @Test(.enabled(if: TestServer.ctl != nil, "IAPGW_TEST_PG_CTL is not set (run under scripts/with-postgres)"))
    func everythingRecoversAfterTheServerRestarts() throws {
        var options = PostgresPool.Options()
        options.size = 2
        let pool = try PostgresPool(TestServer.url!, options: options)
        defer { pool.close() }
        // Both pooled sessions open before the restart.
        let before = try pool.withConnection { a in
            try pool.withConnection { b in [a.serverProcessID, b.serverProcessID] }
        }
        let channel = "restart_" + UUID().uuidString.prefix(8).lowercased()
        let listener = try TestServer.connect("listener")
        defer { listener.close() }
        try listener.listen(channel)
        let standalone = try TestServer.connect("standalone")
        defer { standalone.close() }
        #expect(try standalone.queryOne("SELECT 1 AS one")?.int64("one") == 1)

        #expect(try TestServer.control("restart") == 0)

        // A standalone session meets the break as a connection failure, and reset() brings it back.
        let broken = #expect(throws: PostgresError.self) { try standalone.query("SELECT 1") }
        #expect(broken?.isConnectionFailure == true)
        eventuallyBlocking("the standalone session reset", every: .milliseconds(50)) {
            (try? standalone.reset()) != nil
        }
        #expect(try standalone.queryOne("SELECT 2 AS two")?.int64("two") == 2)

        // The pool reconnects its stale sessions before lending them.
        var failures = 0
        eventuallyBlocking("the pool's sessions reconnected", every: .milliseconds(50)) {
            do {
                let pids = try pool.withConnection { a in
                    try pool.withConnection { b in
                        _ = try a.query("SELECT 1")
                        _ = try b.query("SELECT 1")
                        return [a.serverProcessID, b.serverProcessID]
                    }
                }
                return Set(pids).isDisjoint(with: before)
            } catch {
                failures += 1
                return false
            }
        }
        #expect(failures == 0, "the pool lent a session the restart had closed")

        // The listener notices, listens again after reset, and hears what is sent afterwards.
        let lost = #expect(throws: PostgresError.self) { _ = try listener.notifications(timeout: .seconds(10)) }
        #expect(lost?.isConnectionFailure == true)
        eventuallyBlocking("the listener reset", every: .milliseconds(50)) { (try? listener.reset()) != nil }
        try pool.withConnection { c in try c.notify(channel, payload: "after restart") }
        #expect(try listener.notifications(timeout: .seconds(10)).map(\.payload) == ["after restart"])
    }
}
