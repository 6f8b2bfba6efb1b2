public import Canonical

/// A fetch of one path's view of a subscription, to queue (docs/architecture.md, "Authority and comparison"):
/// verifyReceipt for the V1 path, the App Store Server API for the V2 path.
public struct FetchRequest: Sendable, Hashable {
    public var subscription: SubscriptionKey
    /// The path asked.
    public var fetch: Generation
    /// When V2 is authoritative for a bundle Apple still sends V1 for: the V1 event the V2 path's answer stands in for.
    public var v1EventID: String?
    /// The authority the notification behind the fetch arrived under.
    public var authority: Generation?
    /// The bundle is compared: the answer becomes a snapshot and, with the other path's, a ledger row.
    public var compare: Bool
    /// Refetches made to confirm a disagreement before this one.
    public var confirms: Int
    public init(
        subscription: SubscriptionKey,
        fetch: Generation,
        v1EventID: String? = nil,
        authority: Generation? = nil,
        compare: Bool,
        confirms: Int = 0
    ) {
        (self.subscription, self.fetch, self.v1EventID, self.authority, self.compare, self.confirms) =
            (subscription, fetch, v1EventID, authority, compare, confirms)
    }
}
