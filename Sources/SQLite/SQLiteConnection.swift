internal import CSQLite

/// The connection a ``SQLiteDatabase/write(_:)``, ``SQLiteDatabase/read(_:)`` or
/// ``SQLiteDatabase/readTransaction(_:)`` body works with.
///
/// It is valid only inside the closure it is passed to: never store it, return it or hand it to another thread. A
/// fresh object is made for every closure and invalidated when the closure returns, so a use after that throws
/// `SQLITE_MISUSE` instead of touching a handle another thread may own by then.
///
/// Statements are prepared once per connection and cached by SQL text, so use `?` placeholders rather than
/// interpolating values into the SQL.
public final class SQLiteConnection {
    private let handle: SQLiteHandle
    private var valid = true

    init(_ handle: SQLiteHandle) { self.handle = handle }

    /// Ends this object's validity; called by the database when the closure returns.
    func invalidate() { valid = false }

    private func checked() throws(SQLiteError) -> SQLiteHandle {
        guard valid else {
            throw SQLiteError(
                code: SQLiteError.misuseCode,
                message: "SQLiteConnection used outside the closure it was passed to"
            )
        }
        return handle
    }

    /// Runs one or more `;`-separated statements that take no bindings (DDL, pragmas); results are discarded.
    public func execute(_ sql: String) throws(SQLiteError) {
        try checked().execute(sql)
    }

    /// Runs one statement to completion and returns the number of rows it changed (`sqlite3_changes`).
    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        try checked().run(sql, bindings)
    }

    /// Runs one statement and returns all its rows.
    public func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        try checked().query(sql, bindings, limit: nil)
    }

    /// Runs one statement and returns its first row, or nil when it returned none.
    public func queryOne(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteRow? {
        try checked().query(sql, bindings, limit: 1).first
    }

    /// The rowid of the most recent successful INSERT on this connection; 0 when there was none (or when the
    /// connection is no longer valid).
    public var lastInsertRowID: Int64 {
        guard valid else { return 0 }
        return handle.lastInsertRowID
    }
}

/// Never Sendable: the handle behind it belongs to the thread running the closure.
@available(*, unavailable)
extension SQLiteConnection: Sendable {}

/// Owns one `sqlite3*` (opened NOMUTEX, so never used by two threads at once) and its cached statements. Not
/// Sendable: ``ConnectionSlot`` is the one place that shares it between threads, behind a mutex.
final class SQLiteHandle {
    /// "writer", "reader 1", …: which connection an error came from.
    let label: String
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// Enough for the gateway's fixed statement set; past it the cache is emptied (callers building SQL
    /// dynamically would otherwise grow it without bound).
    private static let statementCacheLimit = 256
    private static let sqlInMessagesLimit = 160

    init(path: String, readOnly: Bool, busyTimeoutMillis: Int32, label: String) throws(SQLiteError) {
        self.label = label
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            let extended = db.map { sqlite3_extended_errcode($0) } ?? rc
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, extendedCode: extended, message: "\(label): open \(path): \(message)")
        }
        self.db = db
        sqlite3_extended_result_codes(db, 1)
        let timeoutRC = sqlite3_busy_timeout(db, busyTimeoutMillis)
        guard timeoutRC == SQLITE_OK else {
            let error = failure(timeoutRC, "busy_timeout", db: db)
            close()
            throw error
        }
    }

    deinit { close() }

    var isOpen: Bool { db != nil }

    /// True while an explicit transaction is open.
    var inTransaction: Bool {
        guard let db else { return false }
        return sqlite3_get_autocommit(db) == 0
    }

    var lastInsertRowID: Int64 {
        guard let db else { return 0 }
        return sqlite3_last_insert_rowid(db)
    }

    /// Finalizes every cached statement and closes the handle; later calls throw `SQLITE_MISUSE`. Idempotent.
    /// With `checkpoint`, first copies the WAL back into the database file (PASSIVE: never waits for others).
    func close(checkpoint: Bool = false) {
        guard let db else { return }
        if checkpoint { sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) }
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        sqlite3_close_v2(db)
        self.db = nil
    }

    /// The handle, or `SQLITE_MISUSE` once closed.
    @discardableResult
    func open() throws(SQLiteError) -> OpaquePointer {
        guard let db else { throw SQLiteError(code: SQLiteError.misuseCode, message: "\(label): database is closed") }
        return db
    }

    private func failure(_ rc: Int32, _ operation: String, db: OpaquePointer, sql: String? = nil) -> SQLiteError {
        var text = "\(label): \(operation)"
        if let sql {
            let shown = sql.count > Self.sqlInMessagesLimit ? "\(sql.prefix(Self.sqlInMessagesLimit))…" : sql
            text += " `\(shown)`"
        }
        // sqlite3_errmsg describes the most recent failed call on this handle: the one that returned `rc`.
        text += ": \(String(cString: sqlite3_errmsg(db)))"
        return SQLiteError(code: rc & 0xFF, extendedCode: rc, message: text)
    }

    func execute(_ sql: String) throws(SQLiteError) {
        let db = try open()
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc, "execute", db: db, sql: sql) }
    }

    func run(_ sql: String, _ bindings: [SQLiteValue]) throws(SQLiteError) -> Int {
        let db = try open()
        let statement = try prepared(sql, db: db)
        defer { finish(statement) }
        try bind(bindings, to: statement, sql: sql, db: db)
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            if rc != SQLITE_ROW { throw failure(rc, "step", db: db, sql: sql) }
        }
        return Int(sqlite3_changes64(db))
    }

    func query(_ sql: String, _ bindings: [SQLiteValue], limit: Int?) throws(SQLiteError) -> [SQLiteRow] {
        let db = try open()
        let statement = try prepared(sql, db: db)
        defer { finish(statement) }
        try bind(bindings, to: statement, sql: sql, db: db)
        let count = sqlite3_column_count(statement)
        let columns = (0..<count).map { sqlite3_column_name(statement, $0).map { String(cString: $0) } ?? "" }
        var rows: [SQLiteRow] = []
        while limit.map({ rows.count < $0 }) ?? true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw failure(rc, "step", db: db, sql: sql) }
            rows.append(SQLiteRow(columns: columns, values: (0..<count).map { column(statement, $0) }))
        }
        return rows
    }

    /// The cached statement for `sql`, preparing it on first use. Rejects SQL holding more than one statement:
    /// the rest would silently not run.
    private func prepared(_ sql: String, db: OpaquePointer) throws(SQLiteError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        var extra = false
        let rc = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(db, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            guard rc == SQLITE_OK, let tail, tail.pointee != 0 else { return rc }
            // Whitespace, `;` and comments prepare to no statement; anything else is a second statement.
            var next: OpaquePointer?
            let tailRC = sqlite3_prepare_v2(db, tail, -1, &next, nil)
            extra = tailRC != SQLITE_OK || next != nil
            sqlite3_finalize(next)
            return SQLITE_OK
        }
        guard rc == SQLITE_OK else { throw failure(rc, "prepare", db: db, sql: sql) }
        guard let statement else {
            throw SQLiteError(code: SQLiteError.misuseCode, message: "\(label): prepare: the SQL holds no statement")
        }
        guard !extra else {
            sqlite3_finalize(statement)
            throw SQLiteError(
                code: SQLiteError.misuseCode,
                message: "\(label): prepare `\(sql.prefix(Self.sqlInMessagesLimit))`: more than one statement; "
                    + "run and query take one, execute takes several"
            )
        }
        if statements.count >= Self.statementCacheLimit {
            for old in statements.values { sqlite3_finalize(old) }
            statements = [:]
        }
        statements[sql] = statement
        return statement
    }

    /// Leaves a cached statement ready for its next use; releases the values bound to it.
    private func finish(_ statement: OpaquePointer) {
        sqlite3_reset(statement)  // returns the step's error again, which was already thrown
        sqlite3_clear_bindings(statement)
    }

    private func bind(
        _ values: [SQLiteValue],
        to statement: OpaquePointer,
        sql: String,
        db: OpaquePointer
    )
        throws(SQLiteError)
    {
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard values.count == expected else {
            throw SQLiteError(
                code: SQLiteError.rangeCode,
                message: "\(label): bind `\(sql.prefix(Self.sqlInMessagesLimit))`: "
                    + "the statement takes \(expected) bindings, \(values.count) given"
            )
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(statement, index)
            case .integer(let v):
                rc = sqlite3_bind_int64(statement, index, v)
            case .real(let v):
                rc = sqlite3_bind_double(statement, index, v)
            case .text(var v):
                rc = v.withUTF8 { bytes in
                    // An empty buffer may have no base address, and a NULL pointer would bind SQL NULL.
                    guard let base = bytes.baseAddress, !bytes.isEmpty else {
                        return sqlite3_bind_text(statement, index, "", 0, gateway_sqlite_transient())
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text64(
                            statement,
                            index,
                            $0,
                            UInt64(bytes.count),
                            gateway_sqlite_transient(),
                            UInt8(SQLITE_UTF8)
                        )
                    }
                }
            case .blob(let v):
                rc = v.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress, !bytes.isEmpty else {
                        return sqlite3_bind_zeroblob(statement, index, 0)
                    }
                    return sqlite3_bind_blob64(statement, index, base, UInt64(bytes.count), gateway_sqlite_transient())
                }
            }
            // The parameter index only, never the value.
            guard rc == SQLITE_OK else { throw failure(rc, "bind parameter \(index)", db: db, sql: sql) }
        }
    }

    private func column(_ statement: OpaquePointer, _ index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            // Pointer first, then the byte count (the order sqlite.org documents); text may contain NULs.
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let blob = sqlite3_column_blob(statement, index) else { return .blob([]) }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default:
            return .null
        }
    }
}
