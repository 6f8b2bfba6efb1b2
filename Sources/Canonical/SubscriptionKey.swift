/// One subscription of one app in one environment: the key of its state, its comparison snapshots and ledger rows,
/// and of the fetches of either path's view of it.
public struct SubscriptionKey: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var originalTransactionID: String
    public init(bundleID: String, environment: AppStoreEnvironment, originalTransactionID: String) {
        (self.bundleID, self.environment, self.originalTransactionID) = (bundleID, environment, originalTransactionID)
    }
}
