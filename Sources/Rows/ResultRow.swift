/// A result row read by column name, as both database wrappers give it (the SQLite module's `SQLiteRow`, the Postgres
/// module's `PostgresRow`): the one row protocol of the gateway's own store and of the team's database, so that each
/// typed row is decoded once for both databases (docs/architecture.md, "Rows").
///
/// The requirements are lenient — nil for NULL, for a column the row does not have and for a value of another type —
/// and each database answers them by its own rules. The decoders of typed rows read through the strict accessors
/// below instead: ``requiredString(_:file:line:)`` and its kind for a column that is NOT NULL in the schema,
/// ``nullableString(_:file:line:)`` and its kind for a nullable one. Both throw ``RowError`` naming the column when
/// the row does not have it or holds a value of another type; only the nullable ones read NULL, as nil.
public protocol ResultRow {
    /// Whether the row has a column of this name, NULL or not.
    func hasColumn(_ column: String) -> Bool
    /// True for NULL, and for a column the row does not have.
    func isNull(_ column: String) -> Bool
    /// The text; nil for NULL, a missing column or a value of another type.
    func string(_ column: String) -> String?
    /// The integer; nil for NULL, a missing column or a value of another type (no conversion is attempted).
    func int64(_ column: String) -> Int64?
    /// A flag: SQLite's integer (any but 0 is true), PostgreSQL's `boolean`; nil for NULL, a missing column or a value
    /// of another type.
    func bool(_ column: String) -> Bool?
    /// The blob (SQLite) or `bytea` (PostgreSQL); nil for NULL, a missing column or a value of another type.
    func bytes(_ column: String) -> [UInt8]?
}

extension ResultRow {
    /// As ``int64(_:)``, also nil when the value does not fit an `Int`.
    public func int(_ column: String) -> Int? { int64(column).flatMap { Int(exactly: $0) } }
}

// MARK: Strict accessors

extension ResultRow {
    /// The text of a column that is NOT NULL in the schema.
    public func requiredString(_ column: String, file: String = #fileID, line: Int = #line) throws -> String {
        try required(column, "text", string, file, line)
    }

    /// The integer of a column that is NOT NULL in the schema.
    public func requiredInt64(_ column: String, file: String = #fileID, line: Int = #line) throws -> Int64 {
        try required(column, "integer", int64, file, line)
    }

    /// As ``requiredInt64(_:file:line:)``, an `Int`.
    public func requiredInt(_ column: String, file: String = #fileID, line: Int = #line) throws -> Int {
        try required(column, "integer", int, file, line)
    }

    /// The flag of a column that is NOT NULL in the schema (``bool(_:)``).
    public func requiredBool(_ column: String, file: String = #fileID, line: Int = #line) throws -> Bool {
        try required(column, "boolean", bool, file, line)
    }

    /// The bytes of a column that is NOT NULL in the schema.
    public func requiredBytes(_ column: String, file: String = #fileID, line: Int = #line) throws -> [UInt8] {
        try required(column, "bytes", bytes, file, line)
    }

    /// The value of a column that is NOT NULL in the schema and holds one of `Value`'s raw values (a state, a
    /// generation): ``RowError/Code/unknownValue`` for any other text.
    public func required<Value: RawRepresentable>(
        _ column: String,
        as _: Value.Type,
        file: String = #fileID,
        line: Int = #line
    ) throws -> Value where Value.RawValue == String {
        try known(try requiredString(column, file: file, line: line), column, Value.self, file, line)
    }

    /// The text of a nullable column; nil for NULL.
    public func nullableString(_ column: String, file: String = #fileID, line: Int = #line) throws -> String? {
        try nullable(column, "text", string, file, line)
    }

    /// The integer of a nullable column; nil for NULL.
    public func nullableInt64(_ column: String, file: String = #fileID, line: Int = #line) throws -> Int64? {
        try nullable(column, "integer", int64, file, line)
    }

    /// As ``nullableInt64(_:file:line:)``, an `Int`.
    public func nullableInt(_ column: String, file: String = #fileID, line: Int = #line) throws -> Int? {
        try nullable(column, "integer", int, file, line)
    }

    /// The flag of a nullable column (``bool(_:)``); nil for NULL.
    public func nullableBool(_ column: String, file: String = #fileID, line: Int = #line) throws -> Bool? {
        try nullable(column, "boolean", bool, file, line)
    }

    /// The bytes of a nullable column; nil for NULL.
    public func nullableBytes(_ column: String, file: String = #fileID, line: Int = #line) throws -> [UInt8]? {
        try nullable(column, "bytes", bytes, file, line)
    }

    /// As ``required(_:as:file:line:)``, for a nullable column; nil for NULL.
    public func nullable<Value: RawRepresentable>(
        _ column: String,
        as _: Value.Type,
        file: String = #fileID,
        line: Int = #line
    ) throws -> Value? where Value.RawValue == String {
        try nullableString(column, file: file, line: line).map { try known($0, column, Value.self, file, line) }
    }

    /// Throws ``RowError/Code/missingColumn`` when the row has no column of this name: what a reader of a column that
    /// may be NULL for reasons of its own (a damaged value, a join that found nothing) asks first.
    public func requireColumn(_ column: String, file: String = #fileID, line: Int = #line) throws {
        guard hasColumn(column) else {
            throw RowError(.missingColumn, column: column, "the row has no column \(column)", file: file, line: line)
        }
    }

    private func required<Value>(
        _ column: String,
        _ type: String,
        _ read: (String) -> Value?,
        _ file: String,
        _ line: Int
    ) throws -> Value {
        guard let value = try nullable(column, type, read, file, line) else {
            throw RowError(
                .nullValue,
                column: column,
                "column \(column) is NULL, expected \(type)",
                file: file,
                line: line
            )
        }
        return value
    }

    private func nullable<Value>(
        _ column: String,
        _ type: String,
        _ read: (String) -> Value?,
        _ file: String,
        _ line: Int
    ) throws -> Value? {
        if let value = read(column) { return value }
        try requireColumn(column, file: file, line: line)
        if isNull(column) { return nil }
        throw RowError(
            .wrongType,
            column: column,
            "column \(column) holds \(kind(of: column)), expected \(type)",
            file: file,
            line: line
        )
    }

    private func known<Value: RawRepresentable>(
        _ raw: String,
        _ column: String,
        _: Value.Type,
        _ file: String,
        _ line: Int
    ) throws -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: raw) else {
            throw RowError(
                .unknownValue,
                column: column,
                "column \(column) holds text that is no \(Value.self)",
                file: file,
                line: line
            )
        }
        return value
    }

    /// The type of a value that is not NULL, for messages (never the value itself).
    private func kind(of column: String) -> String {
        if string(column) != nil { return "text" }
        if int64(column) != nil { return "an integer" }
        if bytes(column) != nil { return "bytes" }
        if bool(column) != nil { return "a boolean" }
        return "a value of another type"
    }
}
