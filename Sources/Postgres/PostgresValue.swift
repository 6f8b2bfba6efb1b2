/// One value a statement binds, or a result column holds.
///
/// Bound: `int64` as `int8`, `bool` as `bool`, `double` as `float8`, `bytea` as `bytea` (sent in binary, so any
/// bytes round-trip), and `text` and `null` as parameters of unknown type, so the server takes their type from where
/// they are used (a `jsonb`, `timestamptz` or `uuid` column accepts text as it would accept a literal). Text cannot
/// hold a NUL byte in PostgreSQL: binding one throws `22021` rather than cutting the text short.
///
/// Read back by the column's type: `bool` → `.bool`; `int2`, `int4`, `int8`, `oid` → `.int64`; `float4`, `float8` →
/// `.double`; `bytea` → `.bytea`; every other type (numeric, timestamps, json, uuid, …) → `.text` in PostgreSQL's
/// text form.
public enum PostgresValue: Sendable, Hashable {
    case null
    case int64(Int64)
    case text(String)
    case bytea([UInt8])
    case bool(Bool)
    case double(Double)

    /// `nil` binds NULL.
    public init(_ v: Int64?) { self = v.map { .int64($0) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: Int?) { self = v.map { .int64(Int64($0)) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: Double?) { self = v.map { .double($0) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: String?) { self = v.map { .text($0) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: Bool?) { self = v.map { .bool($0) } ?? .null }
    /// `nil` binds NULL; an empty array binds an empty bytea, not NULL.
    public init(_ v: [UInt8]?) { self = v.map { .bytea($0) } ?? .null }

    /// True for `.null`.
    public var isNull: Bool { self == .null }
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension PostgresValue: CustomStringConvertible {
    /// For test output and debugging only: it shows the value, so never put it in an error or a log line.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .int64(let v): "\(v)"
        case .text(let v): "'\(v)'"
        case .bytea(let v): "bytea(\(v.count) bytes)"
        case .bool(let v): v ? "true" : "false"
        case .double(let v): "\(v)"
        }
    }
}

/// One result row. The values were copied out of libpq's result, so a row outlives its statement and connection.
public struct PostgresRow: Sendable, Hashable {
    /// Column names as the server reports them (the `AS` alias when there is one), in result order.
    public let columns: [String]
    /// Values in the order of ``columns``.
    public let values: [PostgresValue]

    public init(columns: [String], values: [PostgresValue]) {
        precondition(columns.count == values.count, "PostgresRow: \(columns.count) columns but \(values.count) values")
        (self.columns, self.values) = (columns, values)
    }

    /// The value of the first column with this name, or `.null` when there is no such column.
    public subscript(_ column: String) -> PostgresValue {
        guard let i = columns.firstIndex(of: column) else { return .null }
        return values[i]
    }

    /// The value at this position, or `.null` when the index is out of range.
    public subscript(_ index: Int) -> PostgresValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// True for NULL (and for a column the row does not have).
    public func isNull(_ column: String) -> Bool { self[column] == .null }

    /// The integer, or nil for NULL, a missing column or another type (no conversion is attempted: a `numeric` or
    /// text column reads as text).
    public func int64(_ column: String) -> Int64? {
        if case .int64(let v) = self[column] { return v }
        return nil
    }

    /// As ``int64(_:)``, also nil when the value does not fit an `Int`.
    public func int(_ column: String) -> Int? { int64(column).flatMap { Int(exactly: $0) } }

    /// The `float4`/`float8`, or nil for NULL, a missing column or another type.
    public func double(_ column: String) -> Double? {
        if case .double(let v) = self[column] { return v }
        return nil
    }

    /// The text, or nil for NULL, a missing column or a column read as another case (see ``PostgresValue``).
    public func string(_ column: String) -> String? {
        if case .text(let v) = self[column] { return v }
        return nil
    }

    /// The bytea, or nil for NULL, a missing column or another type.
    public func bytes(_ column: String) -> [UInt8]? {
        if case .bytea(let v) = self[column] { return v }
        return nil
    }

    /// The bool, or nil for NULL, a missing column or another type.
    public func bool(_ column: String) -> Bool? {
        if case .bool(let v) = self[column] { return v }
        return nil
    }
}

/// One `NOTIFY` received by a connection that `LISTEN`s on its channel.
public struct PostgresNotification: Sendable, Hashable {
    /// The channel, as given to `LISTEN` / `pg_notify` (case kept).
    public var channel: String
    /// The payload ("" when none was given).
    public var payload: String
    /// The server process that sent it (``PostgresConnection/serverProcessID`` of the sender).
    public var senderProcessID: Int32

    public init(channel: String, payload: String, senderProcessID: Int32) {
        (self.channel, self.payload, self.senderProcessID) = (channel, payload, senderProcessID)
    }
}
