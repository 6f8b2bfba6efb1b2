/// A result row that does not hold what its reader needs: a column the statement does not select, NULL in a column
/// the schema declares NOT NULL, or a value of another type or not one of the column's values (docs/architecture.md,
/// "Rows"). The reason names the column and the types, never the value.
public struct RowError: Error, Hashable, CustomStringConvertible, Sendable {
    public struct Code: Hashable, Sendable {
        public let rawValue: String
        /// The row has no column of that name: the statement does not select it, or the table's column was renamed.
        public static let missingColumn = Self(rawValue: "missing_column")
        /// NULL in a column that is NOT NULL in the schema.
        public static let nullValue = Self(rawValue: "null_value")
        /// A value of another type than the column's (text in an integer column, say).
        public static let wrongType = Self(rawValue: "wrong_type")
        /// Text that is none of the values the column holds (a generation other than v1 and v2, say).
        public static let unknownValue = Self(rawValue: "unknown_value")
    }

    public var code: Code
    /// The column, as the statement names it.
    public var column: String
    public var reason: String
    public var location: String

    public init(_ code: Code, column: String, _ reason: String, file: String = #fileID, line: Int = #line) {
        (self.code, self.column, self.reason, self.location) = (code, column, reason, "\(file):\(line)")
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "RowError.\(code.rawValue): \(reason) (\(location))" }
}
