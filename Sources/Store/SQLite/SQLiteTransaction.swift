internal import Canonical
internal import SQLite

/// ``StoreTransaction`` on one SQLite connection. The operations both databases run alike are written once
/// (``SQLTransaction``, `Sources/Store/Transaction/`); the `SQLiteTransaction+*.swift` files hold only SQLite's own:
/// the claims (reads: one process owns the store), the journal's inserts (the rowid is the arrival order) and the
/// quarantine's `secure_delete`. Valid only inside the closure the connection was lent to.
struct SQLiteTransaction: SQLTransaction {
    let c: SQLiteStoreConnection
    /// `committed`: a reader's connection (``SQLiteStoreConnection/committed``).
    init(_ c: SQLiteConnection, dictionaries: BlobDictionaries, committed: Bool) {
        self.c = SQLiteStoreConnection(raw: c, dictionaries: dictionaries, committed: committed)
    }
}
