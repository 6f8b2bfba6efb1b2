public import Canonical
public import Policy

/// A notification ready to be journaled, with everything that must be committed in the same transaction.
public struct JournalItem: Sendable {
    /// The dedupe key: V2's notificationUUID, V1's `v1:` + SHA-256 of the body.
    public var key: String
    public var version: Generation
    public var receivedAt: Int64
    public var origin: JournalOrigin = .live
    public var bundleID: String?
    public var environment: AppStoreEnvironment?
    public var notificationType: String?
    public var subtype: String?
    /// V1: the name of the configured secret that matched (never its value).
    public var secretName: String?
    /// V2: the outer token's leaf certificate serial.
    public var leafSerial: String?
    /// As received; V1 with the password replaced by a marker.
    public var body: [UInt8]
    /// Events known now (V2; V1 of bundles that skip verifyReceipt).
    public var events: [CanonicalEvent] = []
    /// V1 waiting for verifyReceipt.
    public var needsReceipt = false
    /// V2: the V1 `notification_type` of its V1 shape, nil when V1 has no counterpart (docs/architecture.md, "The V1
    /// shape of a V2 notification"). Such a notification is passed to `v1_passthrough` downstreams as a V1 body and,
    /// under V1 authority, yields the V1 path's event, where it stands alone (``StoreTransaction/standsAlone(_:bundleID:environment:now:)``).
    public var v1NotificationType: String?

    public init(key: String, version: Generation, receivedAt: Int64, body: [UInt8]) {
        (self.key, self.version, self.receivedAt, self.body) = (key, version, receivedAt, body)
    }

    /// What the notification rule reads of it (``NotificationPolicy/journal(_:authority:routing:)``).
    public var policyFacts: NotificationPolicy.Notification {
        NotificationPolicy.Notification(
            version: version,
            bundleID: bundleID,
            environment: environment,
            events: events,
            needsReceipt: needsReceipt,
            v1NotificationType: v1NotificationType
        )
    }
}

public enum JournalOutcome: Sendable, Equatable {
    case accepted(journalID: Int64)
    /// Apple sent it again: the first one's row.
    case duplicate(journalID: Int64)
}

/// A journaled notification, as an operator (or a test) looks at it.
public struct JournalEntry: Sendable, Hashable {
    public var id: Int64
    public var key: String
    public var version: Generation
    public var receivedAt: Int64
    public var origin: JournalOrigin
    public var bundleID: String?
    public var environment: AppStoreEnvironment?
    public var secretName: String?
    /// The authority in force when it arrived: the path its events are authoritative on.
    public var authority: Generation?
    /// nil once past the raw-body retention.
    public var body: [UInt8]?
}

/// A stored canonical event with where it sits.
public struct StoredEvent: Sendable, Hashable {
    public var event: CanonicalEvent
    /// The event exactly as stored and delivered.
    public var json: [UInt8]
    public var path: Generation
    public var authoritative: Bool
    public var journalID: Int64?
    public var createdAt: Int64
}

/// One subscription's latest state on one path.
public struct SubscriptionState: Sendable, Hashable, Codable {
    public var path: Generation
    public var originalTransactionID: String
    public var eventID: String
    public var eventDate: Int64
    public var kind: EventKind
    public var productID: String?
    public var expiresDate: Int64?
    public var autoRenew: Bool?
    public var entitlement: Entitlement?
    /// A group (multiseat) subscription: its seats in the current period, and at the next renewal (docs/architecture.md,
    /// "Group subscriptions"); left out of the JSON for every other subscription.
    public var seats: Int?
    public var renewalSeats: Int?

    public init(path: Generation, event: CanonicalEvent) {
        self.path = path
        self.originalTransactionID = event.originalTransactionID ?? ""
        self.eventID = event.id
        self.eventDate = event.eventDate
        self.kind = event.kind
        self.productID = event.productID
        self.expiresDate = event.expiresDate
        self.autoRenew = event.autoRenew
        self.entitlement = event.entitlement
        self.seats = event.groupSeats
        self.renewalSeats = event.groupSeats == nil ? nil : event.renewalQuantity
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
        case entitlement, seats
        case renewalSeats = "renewal_seats"
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
        try c.encodeIfPresent(seats, forKey: .seats)
        try c.encodeIfPresent(renewalSeats, forKey: .renewalSeats)
    }
}

/// A subscription's state on one path, as stored, with whether that path is the bundle's authority now.
public struct StoredSubscriptionState: Sendable, Hashable {
    public var path: Generation
    public var environment: AppStoreEnvironment
    public var bundleID: String?
    public var eventID: String
    /// ``SubscriptionState`` as stored and delivered; empty when the stored value reads as damaged.
    public var json: [UInt8]
    public var authoritative: Bool
    public var updatedAt: Int64
    /// How the stored JSON is damaged (``StoredValueDamage``); nil when it was read.
    public var damage: StoredValueDamage? = nil
}

/// One subscription's states and events as ``StoreTransaction/subscriptionHistory(originalTransactionID:maxEvents:maxBytes:)``
/// reads them for an operator (`subscription`, `GET /admin/subscriptions/{id}`): within a number of events and a
/// byte budget, each row an event or a damaged value, and why the history stops short when it does.
public struct SubscriptionHistory: Sendable, Hashable {
    /// What makes an operator's answer stop short of a subscription's whole history (docs/commands.md,
    /// "subscription"): `max_events` rows, or `max_bytes` of stored JSON read.
    public enum Cap: String, Sendable, Hashable {
        case maxEvents = "max_events"
        case maxBytes = "max_bytes"
    }

    /// A subscription's events, about a kilobyte each: thousands of years of monthly renewals on both paths.
    public static let defaultMaxEvents = 100_000
    /// 8 MiB of the JSON of states and events: about eight thousand events. With the caps of each value
    /// (``StoredColumn``), what one answer makes stays within a few times this, whatever the store holds.
    public static let defaultMaxBytes = 8 * 1_048_576
    /// What each row counts beside its JSON: a damaged row has none, and is still a line of the answer.
    public static let rowBytes = 256

    /// The state on each path and environment (at most four rows, all read), damaged ones with their
    /// ``StoredSubscriptionState/damage``.
    public var states: [StoredSubscriptionState] = []
    /// The events in event-date order, then arrival: as many as the caps allowed.
    public var events: [Row] = []
    /// The cap that left events unread; nil when the history is whole.
    public var stoppedBy: Cap?
    /// The bytes counted against the budget: each row's JSON plus ``rowBytes``.
    public var bytes = 0

    public init() {}

    /// An event row: the event, or how its stored JSON is damaged (``StoredValueDamage``) with the row's own columns.
    public struct Row: Sendable, Hashable {
        public var id: String
        public var path: Generation
        public var authoritative: Bool
        public var createdAt: Int64
        /// nil when ``damage`` is set.
        public var event: StoredEvent?
        public var damage: StoredValueDamage?
    }
}
