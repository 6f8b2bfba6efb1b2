public import Canonical
public import WireJSON

/// What a webhook downstream receives (DESIGN ch. 6), written by ``CanonicalJSON/envelope(authoritative:eventJSON:stateJSON:raw:)``:
/// `{"type": "subscription.event", "authoritative", "event", "state", "raw"?}` — the canonical event, whether it
/// comes from the bundle's authoritative generation, the subscription's current state on the authoritative path
/// (last-write-wins by event date: what downstream should act on when events arrive out of order; null for events
/// about no subscription), and Apple's body when the downstream asked for `include_raw`.
public enum Envelope {
    /// `raw` for a stored body: V2 as is, V1 with the `password` member removed.
    public static func rawBody(_ bytes: [UInt8]) -> JSONValue? {
        guard case .object(let o)? = try? JSONParser.parse(bytes) else { return nil }
        return .object(JSONObject(o.members.filter { $0.key != "password" }))
    }
}

/// One subscription's latest state on one path.
public struct SubscriptionState: Sendable, Hashable, Codable {
    public var path: String
    public var originalTransactionID: String
    public var eventID: String
    public var eventDate: Int64
    public var kind: EventKind
    public var productID: String?
    public var expiresDate: Int64?
    public var autoRenew: Bool?
    public var entitlement: Entitlement?

    public init(path: String, event: CanonicalEvent) {
        self.path = path
        self.originalTransactionID = event.originalTransactionID ?? ""
        self.eventID = event.id
        self.eventDate = event.eventDate
        self.kind = event.kind
        self.productID = event.productID
        self.expiresDate = event.expiresDate
        self.autoRenew = event.autoRenew
        self.entitlement = event.entitlement
    }

    enum CodingKeys: String, CodingKey {
        case path
        case originalTransactionID = "original_transaction_id"
        case eventID = "event_id"
        case eventDate = "event_date"
        case kind
        case productID = "product_id"
        case expiresDate = "expires_date"
        case autoRenew = "auto_renew"
        case entitlement
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(originalTransactionID, forKey: .originalTransactionID)
        try c.encode(eventID, forKey: .eventID)
        try c.encode(eventDate, forKey: .eventDate)
        try c.encode(kind, forKey: .kind)
        try c.encode(productID, forKey: .productID)
        try c.encode(expiresDate, forKey: .expiresDate)
        try c.encode(autoRenew, forKey: .autoRenew)
        try c.encode(entitlement, forKey: .entitlement)
    }
}
