public import Rows

/// The row protocol the store and the team's database decode their rows through (docs/architecture.md, "Rows").
extension PostgresRow: ResultRow {
    public func hasColumn(_ column: String) -> Bool { columns.contains(column) }
}
