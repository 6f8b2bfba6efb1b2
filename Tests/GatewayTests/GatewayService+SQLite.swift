import Gateway
import Store
import Testing

extension GatewayService {
    /// The service's store as the SQLite store `serve` opens (for its maintenance calls: a full disk, a checkpoint).
    var sqliteStore: SQLiteStore {
        get throws { try #require(store as? SQLiteStore) }
    }
}
