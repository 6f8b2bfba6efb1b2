/// One SQLite value: what a statement binds and what a result column holds. The five cases are SQLite's storage
/// classes; text and blobs may contain NUL bytes.
public enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// `nil` binds NULL.
    public init(_ v: Int64?) { self = v.map { .integer($0) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: Int?) { self = v.map { .integer(Int64($0)) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: Double?) { self = v.map { .real($0) } ?? .null }
    /// `nil` binds NULL.
    public init(_ v: String?) { self = v.map { .text($0) } ?? .null }
    /// Stored as the integers 0 and 1; `nil` binds NULL.
    public init(_ v: Bool?) { self = v.map { .integer($0 ? 1 : 0) } ?? .null }
    /// `nil` binds NULL; an empty array binds an empty blob, not NULL.
    public init(_ v: [UInt8]?) { self = v.map { .blob($0) } ?? .null }

    /// True for `.null`.
    public var isNull: Bool { self == .null }
}

extension SQLiteValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
    public init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue: CustomStringConvertible {
    /// For test output and debugging only: it shows the value, so never put it in an error or a log line.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let v): "\(v)"
        case .real(let v): "\(v)"
        case .text(let v): "'\(v)'"
        case .blob(let v): "blob(\(v.count) bytes)"
        }
    }
}

/// One result row. The values were copied out of SQLite, so a row outlives its statement and its connection.
public struct SQLiteRow: Sendable, Hashable {
    /// Column names as SQLite reports them (the `AS` alias when there is one), in result order.
    public let columns: [String]
    /// Values in the order of ``columns``.
    public let values: [SQLiteValue]

    public init(columns: [String], values: [SQLiteValue]) {
        precondition(columns.count == values.count, "SQLiteRow: \(columns.count) columns but \(values.count) values")
        (self.columns, self.values) = (columns, values)
    }

    /// The value of the first column with this name, or `.null` when there is no such column.
    public subscript(_ column: String) -> SQLiteValue {
        guard let i = columns.firstIndex(of: column) else { return .null }
        return values[i]
    }

    /// The value at this position, or `.null` when the index is out of range.
    public subscript(_ index: Int) -> SQLiteValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The integer, or nil for NULL, a missing column or another storage class (no conversion is attempted).
    public func int64(_ column: String) -> Int64? {
        if case .integer(let v) = self[column] { return v }
        return nil
    }

    /// As ``int64(_:)``, also nil when the value does not fit an `Int`.
    public func int(_ column: String) -> Int? { int64(column).flatMap { Int(exactly: $0) } }

    /// The real, or nil for NULL, a missing column or another storage class.
    public func double(_ column: String) -> Double? {
        if case .real(let v) = self[column] { return v }
        return nil
    }

    /// The text, or nil for NULL, a missing column or another storage class.
    public func string(_ column: String) -> String? {
        if case .text(let v) = self[column] { return v }
        return nil
    }

    /// The blob, or nil for NULL, a missing column or another storage class.
    public func blob(_ column: String) -> [UInt8]? {
        if case .blob(let v) = self[column] { return v }
        return nil
    }

    /// 0 is false, any other integer is true (SQLite's rule); nil for NULL, a missing column or a non-integer.
    public func bool(_ column: String) -> Bool? { int64(column).map { $0 != 0 } }
}
