public import Rows

/// The row protocol the store and the team's database decode their rows through (docs/architecture.md, "Rows").
extension SQLiteRow: ResultRow {
    public func hasColumn(_ column: String) -> Bool { columns.contains(column) }

    /// True for NULL (and for a column the row does not have).
    public func isNull(_ column: String) -> Bool { self[column] == .null }

    /// ``blob(_:)``.
    public func bytes(_ column: String) -> [UInt8]? { blob(column) }
}
