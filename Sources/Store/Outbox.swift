public import WireJSON

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
    /// The attempt's timing and the head of the downstream's answer, logged with the outcome in the delivery log
    /// (`delivery_attempts`, its status and error being the outcome's); nil logs nothing.
    public var attempt: DeliveryAttempt?
    public init(
        state: DeliveryState,
        attempts: Int,
        nextAttemptAt: Int64,
        deliveredAt: Int64?,
        status: Int?,
        error: String?,
        attempt: DeliveryAttempt? = nil
    ) {
        (self.state, self.attempts, self.nextAttemptAt, self.deliveredAt, self.status, self.error) =
            (state, attempts, nextAttemptAt, deliveredAt, status, error)
        self.attempt = attempt
    }
}

/// One attempt of a delivery as the worker timed it: when it started and how long it took (the injected clock, ms),
/// and the first ``maxResponseHead`` bytes of the downstream's answer as received, redacted — never anything of the
/// request. A downstream that echoes its request (an error page quoting it) would otherwise put the shared secret a
/// pass-through restored, or the request's signatures, in the log (docs/operations.md, "The delivery log").
public struct DeliveryAttempt: Sendable, Hashable {
    /// The most of a response body the log keeps.
    public static let maxResponseHead = 1_024
    /// How many attempts the log keeps per delivery: the newest.
    public static let keptPerDelivery = 20

    public var startedAt: Int64
    public var latencyMillis: Int64
    /// At most ``maxResponseHead`` bytes, redacted (``redactedHead(_:_:)``): done here, whatever the caller hands
    /// over.
    public private(set) var responseHead: [UInt8]

    /// An attempt that got no answer.
    public init(startedAt: Int64, latencyMillis: Int64) {
        (self.startedAt, self.latencyMillis) = (startedAt, max(0, latencyMillis))
        responseHead = []
    }

    /// An attempt answered with `responseHead` (the whole body, or its start), kept as ``redactedHead(_:_:)`` makes
    /// it with `redactor`: the configured secrets, and the request's own signatures (``SecretRedactor/adding(_:)``).
    public init(
        startedAt: Int64,
        latencyMillis: Int64,
        responseHead: [UInt8],
        redactor: SecretRedactor
    ) {
        self.init(startedAt: startedAt, latencyMillis: latencyMillis)
        self.responseHead = Self.redactedHead(responseHead, redactor)
    }

    /// The first ``maxResponseHead`` bytes of `body` as the log keeps them: every secret of `redactor` replaced
    /// (whole, also one the cut would halve: ``SecretRedactor/redactedPrefix(_:maxLength:)``), then any Standard
    /// Webhooks signature (``SecretRedactor/redactingWebhookSignatures(_:)``). The start's scrub of rows logged
    /// before heads were redacted makes them so too (``GatewayStore/scrubDeliveryLog(_:batch:)``).
    public static func redactedHead(_ body: [UInt8], _ redactor: SecretRedactor) -> [UInt8] {
        let head = redactor.redactedPrefix(body, maxLength: maxResponseHead)
        return Array(SecretRedactor.redactingWebhookSignatures(head).prefix(maxResponseHead))
    }
}

/// One attempt as the delivery log holds it (``OutboxTransaction/deliveryLog(eventID:)``).
public struct LoggedAttempt: Sendable, Hashable {
    /// The delivery's attempt count after it (a replay starts counting again at 1).
    public var attempt: Int
    public var startedAt: Int64
    public var latencyMillis: Int64
    /// The HTTP status, nil when none arrived (a transport error, a database downstream).
    public var status: Int?
    /// `HTTP <status>`, a transport error code, the database downstream's error, or nil when delivered.
    public var error: String?
    /// The first bytes of the answer as received: outside input, to be escaped wherever it is shown.
    public var responseHead: [UInt8]
    /// Made after an operator's replay of the delivery.
    public var replay: Bool
}

/// One delivery (outbox row) with its newest attempts, newest first.
public struct DeliveryLogEntry: Sendable, Hashable {
    public var delivery: Delivery
    public var attempts: [LoggedAttempt]
}

/// Where a page of one downstream's deliveries starts: after the delivery created at `createdAt` with `id`, in
/// creation order (``OutboxTransaction/deliveryPage(downstream:state:after:limit:)``).
public struct DeliveryCursor: Sendable, Hashable {
    public var createdAt: Int64
    public var id: Int64
    public init(createdAt: Int64, id: Int64) { (self.createdAt, self.id) = (createdAt, id) }
    /// The first page of deliveries created at `since` or later.
    public static func since(_ time: Int64) -> DeliveryCursor { DeliveryCursor(createdAt: time, id: Int64.min) }
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
