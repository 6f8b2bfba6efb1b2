/// A delivery due to be sent: one outbox row, as the delivery worker claims it.
public struct DeliveryJob: Sendable, Hashable {
    public var id: Int64
    public var downstream: String
    public var attempts: Int
    /// A canonical event (webhooks), or
    public var eventID: String?
    /// a journaled V1 body (pass-through).
    public var journalID: Int64?
    public var createdAt: Int64
    /// What a webhook or database delivery of the event sends, read with the claim when it asked for it (nil for a
    /// pass-through delivery, or when the event is no longer stored).
    public var payload: DeliveryPayload? = nil
}

/// What a claim of deliveries reads besides the outbox rows (``StoreTransaction/claimDueDeliveries(downstream:at:limit:lease:payload:)``).
public enum PayloadRead: Sendable, Hashable {
    /// The rows alone (pass-through deliveries: their body is the journaled V1 notification).
    case none
    /// Each event's ``DeliveryPayload`` without the notification's body.
    case event
    /// With the body, for a downstream that wants the raw notification.
    case eventAndBody

    var wantsEvent: Bool { self != .none }
    var wantsBody: Bool { self == .eventAndBody }
}

/// One outbox row, as an operator (or a test) looks at it.
public struct Delivery: Sendable, Hashable {
    public var id: Int64
    public var downstream: String
    public var eventID: String?
    public var journalID: Int64?
    public var state: DeliveryState
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var createdAt: Int64
    public var deliveredAt: Int64?
    public var lastStatus: Int?
    public var lastError: String?
}

/// What one attempt of a delivery ended in.
public struct DeliveryOutcome: Sendable, Hashable {
    public var state: DeliveryState
    /// Attempts made, this one included.
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var deliveredAt: Int64?
    public var status: Int?
    public var error: String?
    public init(
        state: DeliveryState,
        attempts: Int,
        nextAttemptAt: Int64,
        deliveredAt: Int64?,
        status: Int?,
        error: String?
    ) {
        (self.state, self.attempts, self.nextAttemptAt, self.deliveredAt, self.status, self.error) =
            (state, attempts, nextAttemptAt, deliveredAt, status, error)
    }
}

/// What a webhook delivery of an event sends, as stored: the event's JSON, whether it is authoritative, the
/// subscription's state on the authoritative path, and the notification's raw body.
public struct DeliveryPayload: Sendable, Hashable {
    public var eventJSON: [UInt8]
    public var authoritative: Bool
    public var stateJSON: [UInt8]?
    public var rawBody: [UInt8]?
}

/// Which deliveries an operator's replay re-arms.
public enum RedeliverySelection: Sendable, Hashable {
    /// One event's deliveries (and its notification's pass-through ones).
    case eventID(String)
    /// Deliveries created in [since, until) (ms).
    case range(since: Int64, until: Int64)
    case deadLetters
}

/// A downstream's pending deliveries: how many, and since when the oldest waits.
public struct PendingDeliveries: Sendable, Hashable {
    public var downstream: String
    public var count: Int
    public var oldestCreatedAt: Int64
}

/// The journal's, the events' and the outbox's sizes as `/admin/status` shows them, read in constant time whatever the
/// store holds: those rows are never deleted, so each table's newest id counts them, and only the few pending and
/// dead deliveries are counted (on their index). Exact on SQLite, where a rowid is only ever taken by a committed
/// row; on PostgreSQL a bound from above, as a sequence value is also used up by an insert that met a duplicate.
public struct StatusCounts: Sendable, Hashable {
    public var journal: Int
    public var events: Int
    public var deliveries: [DeliveryState: Int]
    /// False where the figures are bounds from above (PostgreSQL).
    public var exact: Bool
    public init(journal: Int, events: Int, deliveries: [DeliveryState: Int], exact: Bool) {
        (self.journal, self.events, self.deliveries, self.exact) = (journal, events, deliveries, exact)
    }
}
