internal import SQLite
internal import Canonical
internal import FoundationEssentials

/// ``StoreTransaction`` on one SQLite connection: every statement of the gateway, by concern in the
/// `SQLiteTransaction+*.swift` files. Valid only inside the closure the connection was lent to.
struct SQLiteTransaction: StoreTransaction {
    let c: SQLiteConnection
    init(_ c: SQLiteConnection) { self.c = c }
}

// Typed values to and from SQLite.
extension SQLiteValue {
    init(_ g: Generation?) { self.init(g?.rawValue) }
    init(_ e: AppStoreEnvironment?) { self.init(e?.rawValue) }
    init(_ n: Int?) { self = n.map { .integer(Int64($0)) } ?? .null }
}

extension SQLiteRow {
    func generation(_ column: String) -> Generation? { string(column).flatMap(Generation.init(rawValue:)) }
    func environment(_ column: String) -> AppStoreEnvironment? { string(column).map(AppStoreEnvironment.init(rawValue:)) }
}

/// `LIMIT ?` for a caller's count: never negative.
func limitValue(_ n: Int) -> SQLiteValue { .integer(Int64(max(0, n))) }

/// Outcome snapshots are stored as sorted-key JSON.
enum SnapshotJSON {
    static func encode(_ s: OutcomeSnapshot) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(s)).map(Array.init) ?? []
    }

    static func decode(_ bytes: [UInt8]?) -> OutcomeSnapshot? {
        guard let bytes else { return nil }
        return try? JSONDecoder().decode(OutcomeSnapshot.self, from: Data(bytes))
    }
}
