internal import Postgres
internal import Canonical

/// ``StoreTransaction`` on one PostgreSQL session: every statement of the PostgreSQL store, by concern in the
/// `PostgresTransaction+*.swift` files, each the counterpart of the SQLite one of the same name. Valid only inside the
/// closure the connection was lent to. Values are always bound (`$1`, …); a parameter that may be NULL carries a
/// cast wherever its type cannot be taken from a column (`$1::text IS NULL`).
struct PostgresTransaction: StoreTransaction {
    let c: PostgresConnection
    init(_ c: PostgresConnection) { self.c = c }
}

// Typed values to and from PostgreSQL.
extension PostgresValue {
    init(_ g: Generation?) { self.init(g?.rawValue) }
    init(_ e: AppStoreEnvironment?) { self.init(e?.rawValue) }

    /// A `text[]` literal (`{"a","b"}`), for `= ANY($1::text[])`: one statement whatever the list's length.
    static func textArray(_ items: [String]) -> PostgresValue {
        let quoted = items.map { item -> String in
            var s = "\""
            for ch in item {
                if ch == "\"" || ch == "\\" { s.append("\\") }
                s.append(ch)
            }
            return s + "\""
        }
        return .text("{" + quoted.joined(separator: ",") + "}")
    }
}

/// `LIMIT $n` for a caller's count: never negative.
func pgLimit(_ n: Int) -> PostgresValue { .int64(Int64(max(0, n))) }
