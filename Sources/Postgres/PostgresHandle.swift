internal import CPostgres

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Owns one `PGconn*`, its cached prepared statements and the channels it `LISTEN`s on. Every libpq call of the
/// package is in this file.
///
/// Not Sendable and not thread-safe (libpq allows a connection on any thread, never on two at once): a standalone
/// ``PostgresConnection`` confines it to its owner, and ``PoolSlot`` is the one place that shares it between threads,
/// behind a mutex. All calls block (libpq's synchronous API); run them on threads that may block, never on Swift's
/// cooperative pool.
final class PostgresHandle {
    /// "postgres", "pool 2", …: which connection an error came from.
    let label: String
    /// Passed to libpq untouched (URI or `key=value` form; TLS settings such as `sslmode` included). Never shown:
    /// it may hold a password.
    private let conninfo: String
    /// Parameterless statements run on every new session (``PostgresPool/Options/sessionSetup``).
    private let sessionSetup: String?
    private var conn: OpaquePointer?
    private var closedForGood = false
    private var statements: [StatementKey: PreparedStatement] = [:]
    private var statementCounter = 0
    /// Channels this session `LISTEN`s on; listened again after a reconnect.
    private(set) var channels: Set<String> = []

    /// Enough for a fixed statement set; past it every statement is deallocated (callers building SQL dynamically
    /// would otherwise grow it without bound).
    static let statementCacheLimit = 256
    private static let sqlInMessagesLimit = 160

    private struct StatementKey: Hashable {
        var sql: String
        /// The parameter types it was prepared with: text and NULL leave the type to the server, the other cases
        /// fix it, so the same SQL bound with other cases is another statement.
        var types: [Oid]
    }

    private struct PreparedStatement {
        var name: String
        var parameterCount: Int
    }

    init(conninfo: String, label: String, sessionSetup: String? = nil) {
        (self.conninfo, self.label, self.sessionSetup) = (conninfo, label, sessionSetup)
    }

    deinit { close() }

    // MARK: Connecting

    /// Checks that `conninfo` parses, without connecting. libpq's reason is not shown: it quotes the string.
    static func validate(_ conninfo: String, label: String) throws(PostgresError) {
        var reason: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &reason) else {
            if let reason { PQfreemem(reason) }
            throw PostgresError(
                code: PostgresError.cannotConnectCode,
                message: "\(label): the connection string does not parse (libpq's reason is withheld: it quotes the "
                    + "string, which may hold a password)"
            )
        }
        PQconninfoFree(options)
    }

    /// Connects: a fresh `PQconnectdb` when there is no session, else `PQreset` (same parameters). Prepared statements
    /// are forgotten (the server's are gone with the old session) and the channels listened again. On failure the
    /// handle stays unconnected and the next call tries again.
    func reconnect() throws(PostgresError) {
        guard !closedForGood else { throw closedError() }
        statements = [:]
        if let c = conn {
            PQreset(c)
            guard PQstatus(c) == CONNECTION_OK else {
                throw PostgresError(
                    code: PostgresError.cannotConnectCode,
                    message: "\(label): reconnect: \(Self.clientMessage(c))"
                )
            }
            try configure(c)
        } else {
            try Self.validate(conninfo, label: label)
            guard let c = PQconnectdb(conninfo) else {
                throw PostgresError(code: PostgresError.cannotConnectCode, message: "\(label): connect: out of memory")
            }
            guard PQstatus(c) == CONNECTION_OK else {
                let reason = Self.clientMessage(c)
                PQfinish(c)
                throw PostgresError(code: PostgresError.cannotConnectCode, message: "\(label): connect: \(reason)")
            }
            conn = c
            try configure(c)
        }
        for channel in channels.sorted() { try listen(channel) }
    }

    private func configure(_ c: OpaquePointer) throws(PostgresError) {
        // libpq's default prints NOTICEs ("relation … already exists, skipping") on stderr: not ours to log.
        _ = PQsetNoticeProcessor(c, { _, _ in }, nil)
        // PQerrorMessage without DETAIL lines, which quote rows and keys.
        _ = PQsetErrorVerbosity(c, PQERRORS_TERSE)
        // Text travels as UTF-8 whatever the database's encoding.
        guard PQsetClientEncoding(c, "UTF8") == 0 else {
            throw PostgresError(
                code: PostgresError.cannotConnectCode,
                message: "\(label): connect: setting client_encoding to UTF8 failed: \(Self.clientMessage(c))"
            )
        }
        if let sessionSetup {
            PQclear(try check(PQexec(c, sessionSetup), "session setup", sql: sessionSetup, c: c))
        }
    }

    /// Ends the session; the next ``reconnect()`` opens a new one.
    func disconnect() {
        statements = [:]
        guard let c = conn else { return }
        PQfinish(c)
        conn = nil
    }

    /// Ends the session for good: later calls throw `08003`. Idempotent.
    func close() {
        disconnect()
        closedForGood = true
    }

    var isClosed: Bool { closedForGood }

    /// True while the session is up as far as libpq knows (it learns of a server gone only when it reads).
    var isConnected: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The server process serving this session (`pg_backend_pid()`), 0 when not connected.
    var serverProcessID: Int32 { conn.map { PQbackendPID($0) } ?? 0 }

    var preparedStatementCount: Int { statements.count }

    private func closedError() -> PostgresError {
        PostgresError(code: PostgresError.connectionClosedCode, message: "\(label): the connection is closed")
    }

    /// The session, or the error saying why there is none.
    private func open() throws(PostgresError) -> OpaquePointer {
        guard !closedForGood else { throw closedError() }
        guard let c = conn else {
            throw PostgresError(
                code: PostgresError.connectionFailureCode,
                message: "\(label): not connected (the last connection attempt failed); reconnect first"
            )
        }
        guard PQstatus(c) == CONNECTION_OK else {
            throw PostgresError(
                code: PostgresError.connectionFailureCode,
                message: "\(label): the connection is broken: \(Self.clientMessage(c)); reconnect first"
            )
        }
        return c
    }

    /// Makes the session fit for a new borrower: connected, alive (a server that restarted left a closed socket,
    /// which is noticed here rather than by the borrower's first statement), no transaction open, nothing buffered.
    func prepareForUse() throws(PostgresError) {
        guard !closedForGood else { throw closedError() }
        if let c = conn, isAlive(c) {
            while let notice = PQnotifies(c) { PQfreemem(notice) }  // meant for a previous borrower
            let state = transactionState
            if state == .inTransaction || state == .failed { _ = try? execute("ROLLBACK") }
            if transactionState == .idle, isAlive(c) { return }
        }
        try reconnect()
    }

    /// Reads what the server sent meanwhile; false when that showed the connection closed or broken.
    private func isAlive(_ c: OpaquePointer) -> Bool {
        for _ in 0..<4 {
            guard PQstatus(c) == CONNECTION_OK, PQconsumeInput(c) == 1 else { return false }
            // Still readable after reading: more data, or the end of the stream (the next read marks it broken).
            guard Self.waitReadable(PQsocket(c), milliseconds: 0) == .ready else { break }
        }
        return PQstatus(c) == CONNECTION_OK
    }

    // MARK: Transactions

    enum TransactionState { case idle, inTransaction, failed, broken }

    var transactionState: TransactionState {
        guard let c = conn, PQstatus(c) == CONNECTION_OK else { return .broken }
        let status = PQtransactionStatus(c)
        if status == PQTRANS_IDLE { return .idle }
        if status == PQTRANS_INTRANS { return .inTransaction }
        if status == PQTRANS_INERROR { return .failed }
        return .broken  // PQTRANS_ACTIVE (never between calls of the synchronous API) or PQTRANS_UNKNOWN
    }

    /// `COMMIT`, checking that the server did commit: it answers `COMMIT` on a failed transaction by rolling back.
    func commit() throws(PostgresError) {
        let c = try open()
        let result = try check(PQexec(c, "COMMIT"), "commit", sql: nil, c: c)
        defer { PQclear(result) }
        let tag = String(cString: PQcmdStatus(result))
        guard tag == "COMMIT" else {
            throw PostgresError(
                code: "25P02",
                message: "\(label): commit: the server rolled the transaction back (it answered \(tag))"
            )
        }
    }

    // MARK: Statements

    /// One or more `;`-separated statements without parameters (DDL, `SET`, `LISTEN`), through `PQexec`.
    func execute(_ sql: String) throws(PostgresError) {
        let c = try open()
        PQclear(try check(PQexec(c, sql), "execute", sql: sql, c: c))
    }

    struct Outcome {
        var rows: [PostgresRow]
        /// `PQcmdTuples`: the rows an INSERT, UPDATE, DELETE, MERGE, SELECT, FETCH or COPY touched; 0 otherwise.
        var affected: Int
    }

    /// One statement with its parameters: prepared once per connection and cached by SQL text (and the parameters'
    /// types), or, with `prepared: false`, sent with `PQexecParams` and planned for this call only.
    func query(_ sql: String, _ values: [PostgresValue], prepared: Bool) throws(PostgresError) -> Outcome {
        let c = try open()
        let parameters = try EncodedParameters(values, label: label, sql: Self.clip(sql))
        guard prepared else {
            let result = parameters.withArguments { types, pointers, lengths, formats in
                PQexecParams(c, sql, Int32(values.count), types, pointers, lengths, formats, 0)
            }
            return try outcome(check(result, "query", sql: sql, c: c))
        }
        let key = StatementKey(sql: sql, types: parameters.types)
        var statement = try preparedStatement(key, c: c)
        guard statement.parameterCount == values.count else {
            throw PostgresError(
                code: PostgresError.parameterCountCode,
                message: "\(label): query `\(Self.clip(sql))`: the statement takes \(statement.parameterCount) "
                    + "parameters, \(values.count) given"
            )
        }
        do throws(PostgresError) {
            return try outcome(check(execute(statement, parameters, c: c), "query", sql: sql, c: c))
        } catch  where error.code == "26000" {
            // "prepared statement does not exist": someone ran DEALLOCATE or DISCARD ALL. Prepare it again, unless
            // the error aborted a transaction (then the caller's transaction fails anyway).
            statements = [:]
            guard transactionState == .idle else { throw error }
            statement = try preparedStatement(key, c: c)
            return try outcome(check(execute(statement, parameters, c: c), "query", sql: sql, c: c))
        }
    }

    private func execute(
        _ statement: PreparedStatement,
        _ parameters: EncodedParameters,
        c: OpaquePointer
    )
        -> OpaquePointer?
    {
        parameters.withArguments { _, pointers, lengths, formats in
            PQexecPrepared(c, statement.name, Int32(parameters.count), pointers, lengths, formats, 0)
        }
    }

    private func preparedStatement(_ key: StatementKey, c: OpaquePointer) throws(PostgresError) -> PreparedStatement {
        if let statement = statements[key] { return statement }
        if statements.count >= Self.statementCacheLimit {
            PQclear(try check(PQexec(c, "DEALLOCATE ALL"), "deallocate", sql: nil, c: c))
            statements = [:]
        }
        statementCounter += 1
        let name = "iapgw_\(statementCounter)"
        let prepared = key.types.withUnsafeBufferPointer { types in
            PQprepare(c, name, key.sql, Int32(types.count), types.baseAddress)
        }
        PQclear(try check(prepared, "prepare", sql: key.sql, c: c))
        let described = try check(PQdescribePrepared(c, name), "describe", sql: key.sql, c: c)
        let statement = PreparedStatement(name: name, parameterCount: Int(PQnparams(described)))
        PQclear(described)
        statements[key] = statement
        return statement
    }

    /// The result if it succeeded; else the error it describes (and the result cleared).
    private func check(
        _ result: OpaquePointer?,
        _ operation: String,
        sql: String?,
        c: OpaquePointer
    )
        throws(PostgresError) -> OpaquePointer
    {
        guard let result else { throw failure(nil, operation, sql: sql, c: c) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            let error = failure(result, operation, sql: sql, c: c)
            PQclear(result)
            throw error
        }
        return result
    }

    private func outcome(_ result: OpaquePointer) -> Outcome {
        defer { PQclear(result) }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard columnCount > 0, rowCount > 0 else { return Outcome(rows: [], affected: affected) }
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [PostgresValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(.null)
                    continue
                }
                let bytes = UnsafeRawBufferPointer(
                    start: PQgetvalue(result, row, column),
                    count: Int(PQgetlength(result, row, column))
                )
                values.append(TextFormat.decode(bytes, type: types[Int(column)]))
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        return Outcome(rows: rows, affected: affected)
    }

    // MARK: Errors

    /// The error a failed call left: the server's SQLSTATE and primary message (withheld for the classes that quote
    /// values), or libpq's own message when the server sent none.
    private func failure(_ result: OpaquePointer?, _ operation: String, sql: String?, c: OpaquePointer) -> PostgresError
    {
        var code = result.flatMap { Self.field($0, "C") }
        var reason: String
        if let result, let primary = Self.field(result, "M") {
            if let code, code.hasPrefix("22") || code.hasPrefix("P0") {
                reason = "the server's message is withheld (it may quote a bound value)"
            } else {
                reason = primary
            }
            var names: [String] = []
            if let column = Self.field(result, "c") { names.append("column \(column)") }
            if let type = Self.field(result, "d") { names.append("type \(type)") }
            if let table = Self.field(result, "t") { names.append("table \(table)") }
            if let constraint = Self.field(result, "n") { names.append("constraint \(constraint)") }
            if !names.isEmpty { reason += " (\(names.joined(separator: ", ")))" }
        } else {
            reason = Self.clientMessage(c)
        }
        // A broken session is a connection failure whatever the last message was (a FATAL `57P01` stays itself).
        if PQstatus(c) == CONNECTION_BAD,
            !(code.map { PostgresError(code: $0, message: "").isConnectionFailure } ?? false)
        {
            code = PostgresError.connectionFailureCode
        }
        var text = "\(label): \(operation)"
        if let sql { text += " `\(Self.clip(sql))`" }
        let finalCode = code ?? "XX000"  // libpq refused the call itself (no SQLSTATE, session intact)
        return PostgresError(code: finalCode, message: "\(text): \(finalCode) \(reason)")
    }

    private static func field(_ result: OpaquePointer, _ code: Unicode.Scalar) -> String? {
        guard let value = PQresultErrorField(result, Int32(code.value)) else { return nil }
        return String(cString: value)
    }

    /// libpq's own message for the connection (terse: no DETAIL), on one line.
    private static func clientMessage(_ c: OpaquePointer) -> String {
        let text = String(cString: PQerrorMessage(c))
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        return lines.isEmpty ? "no message" : lines.joined(separator: "; ")
    }

    private static func clip(_ sql: String) -> String {
        sql.count > sqlInMessagesLimit ? "\(sql.prefix(sqlInMessagesLimit))…" : sql
    }

    // MARK: LISTEN / NOTIFY

    /// `LISTEN` on `channel` (1–63 ASCII letters, digits and `_`; case is kept: it is quoted).
    func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN " + identifier(channel))
        channels.insert(channel)
    }

    func unlisten(_ channel: String) throws(PostgresError) {
        try execute("UNLISTEN " + identifier(channel))
        channels.remove(channel)
    }

    /// `UNLISTEN *`. The channels are forgotten even when that fails: a broken session listens on nothing, and
    /// the next session must not listen again for a borrower that is gone.
    func unlistenAll() throws(PostgresError) {
        channels = []
        try execute("UNLISTEN *")
    }

    /// The channel as a quoted SQL identifier. Channels are names, not values: `LISTEN` takes no parameter.
    private func identifier(_ channel: String) throws(PostgresError) -> String {
        let plain = channel.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
        }
        guard plain, !channel.isEmpty, channel.utf8.count <= 63 else {
            throw PostgresError(
                code: "42602",
                message: "\(label): listen: a channel is 1 to 63 ASCII letters, digits or underscores"
            )
        }
        let c = try open()
        guard let quoted = PQescapeIdentifier(c, channel, channel.utf8.count) else {
            throw failure(nil, "listen", sql: nil, c: c)
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    /// Notifications already received, else waits up to `timeout` for the first ones (`PQsocket` + `poll` +
    /// `PQconsumeInput` + `PQnotifies`). Empty when none came in time. Throws when the connection broke meanwhile
    /// (the server restarted): reconnect, which listens again, and look for what was missed — notifications sent
    /// while no session listened are lost.
    func notifications(timeout: Duration) throws(PostgresError) -> [PostgresNotification] {
        let c = try open()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            guard PQconsumeInput(c) == 1 else { throw failure(nil, "wait for notifications", sql: nil, c: c) }
            var received: [PostgresNotification] = []
            while let notice = PQnotifies(c) {
                received.append(
                    PostgresNotification(
                        channel: String(cString: notice.pointee.relname),
                        payload: notice.pointee.extra.map { String(cString: $0) } ?? "",
                        senderProcessID: notice.pointee.be_pid
                    )
                )
                PQfreemem(notice)
            }
            if !received.isEmpty { return received }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return [] }
            let (seconds, attoseconds) = remaining.components
            // Rounded up, so that a short remainder still waits rather than spinning.
            let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            if Self.waitReadable(PQsocket(c), milliseconds: Int32(clamping: millis)) == .failed {
                throw PostgresError(
                    code: PostgresError.connectionFailureCode,
                    message: "\(label): wait for notifications: poll failed (errno \(errno))"
                )
            }
        }
    }

    private enum Readiness { case ready, timedOut, failed }

    /// `poll` for input (or hang-up) on `socket`. A signal (EINTR) counts as a timeout: the caller's loop works out
    /// what is left of its deadline.
    private static func waitReadable(_ socket: Int32, milliseconds: Int32) -> Readiness {
        guard socket >= 0 else { return .failed }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let rc = poll(&descriptor, 1, milliseconds)
        if rc > 0 { return .ready }
        if rc == 0 || errno == EINTR { return .timedOut }
        return .failed
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
