/// A failed SQLite call. `code` is SQLite's primary result code and `extendedCode` the extended one
/// (<https://sqlite.org/rescode.html>); equality uses those two only.
///
/// `message` is `sqlite3_errmsg` plus the operation that failed (and the SQL text, truncated). It never holds a
/// bound value: bodies may carry secrets.
public struct SQLiteError: Error, Hashable, CustomStringConvertible {
    public var code: Int32
    public var extendedCode: Int32
    public var message: String

    /// For wrappers and test doubles. `extendedCode` defaults to `code`.
    public init(code: Int32, extendedCode: Int32? = nil, message: String) {
        (self.code, self.extendedCode, self.message) = (code & 0xFF, extendedCode ?? code, message)
    }

    // Result codes are part of SQLite's stable ABI; spelled out here so that no C symbol is in the public API.
    public static let errorCode: Int32 = 1  // SQLITE_ERROR: SQL error, missing database, newer schema
    public static let busyCode: Int32 = 5  // SQLITE_BUSY
    public static let readOnlyCode: Int32 = 8  // SQLITE_READONLY
    public static let fullCode: Int32 = 13  // SQLITE_FULL: the disk (or max_page_count) is full
    public static let cantOpenCode: Int32 = 14  // SQLITE_CANTOPEN: the file (or its folder) cannot be created or opened
    public static let constraintCode: Int32 = 19  // SQLITE_CONSTRAINT
    public static let misuseCode: Int32 = 21  // SQLITE_MISUSE: closed database, escaped connection
    public static let rangeCode: Int32 = 25  // SQLITE_RANGE: wrong number of bindings
    static let constraintPrimaryKey: Int32 = 1555  // SQLITE_CONSTRAINT_PRIMARYKEY
    static let constraintUnique: Int32 = 2067  // SQLITE_CONSTRAINT_UNIQUE

    /// Another connection (or process) held the lock for longer than the busy timeout.
    public var isBusy: Bool { code == Self.busyCode }
    /// Any constraint: UNIQUE, PRIMARY KEY, NOT NULL, CHECK, FOREIGN KEY.
    public var isConstraintViolation: Bool { code == Self.constraintCode }
    /// A UNIQUE or PRIMARY KEY constraint: the row (an event id, an idempotency key) is already there.
    public var isUniqueViolation: Bool {
        extendedCode == Self.constraintUnique || extendedCode == Self.constraintPrimaryKey
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code && a.extendedCode == b.extendedCode }
    public func hash(into h: inout Hasher) {
        h.combine(code)
        h.combine(extendedCode)
    }
    public var description: String { "SQLiteError(\(code)/\(extendedCode)): \(message)" }
}
