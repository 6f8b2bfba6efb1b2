/// The outbox: each event's and pass-through body's delivery to each downstream. One slice of ``StoreTransaction``.
public protocol OutboxTransaction {
    /// At most `limit` deliveries of `downstream` due at `time`, in the order they should start, claimed for `lease`
    /// where the store is shared by instances (a job claimed by another instance whose lease has not run out is not
    /// due; settling a job ends its claim); each with what it sends (``DeliveryJob/payload``) as `payload` asks, read
    /// in the same statement — the payload's own read was a round trip per delivery.
    func claimDueDeliveries(
        downstream: String,
        at time: Int64,
        limit: Int,
        lease: Lease,
        payload: PayloadRead
    ) throws -> [DeliveryJob]
    /// What a webhook delivery of `eventID` sends — its notification's body only `withBody` (a downstream that wants
    /// the raw notification): bodies are the largest thing stored; nil when the event is no longer stored.
    func deliveryPayload(eventID: String, withBody: Bool) throws -> DeliveryPayload?
    /// Records an attempt's outcome; a row no longer pending (replayed or dead-lettered meanwhile) is left alone.
    func settleDelivery(id: Int64, _ outcome: DeliveryOutcome) throws
    /// Dead-letters pending deliveries to downstreams not in `configured`; returns how many.
    func deadLetterDeliveries(notTo configured: [String], error: String) throws -> Int
    /// Re-arms the selected deliveries (attempts reset, due at `now`, their next attempts logged as replays);
    /// returns how many.
    func redeliver(_ selection: RedeliverySelection, now: Int64) throws -> Int
    /// Re-arms the event's delivery (or its notification's pass-through delivery) to `downstream` alone, as
    /// ``redeliver(_:now:)`` does; returns how many (0 or 1).
    func redeliver(eventID: String, downstream: String, now: Int64) throws -> Int
    /// Every delivery of the event — and of its notification's body to pass-through downstreams — each with its
    /// logged attempts, newest first (at most ``DeliveryAttempt/keptPerDelivery``); nil when no such event is stored.
    func deliveryLog(eventID: String) throws -> [DeliveryLogEntry]?
    /// A page of `downstream`'s deliveries in `state` after `cursor`, in creation order (created_at, id), each with
    /// its newest logged attempt: at most `limit` rows, read off `outbox_downstream_state` whatever the outbox holds.
    func deliveryPage(
        downstream: String,
        state: DeliveryState,
        after cursor: DeliveryCursor,
        limit: Int
    ) throws -> [DeliveryLogEntry]
    /// Re-arms up to `limit` deliveries created in [since, until) after `after`, in creation order (created_at,
    /// id): how many, and where the page ended (nil: nothing is left).
    func redeliverPage(
        since: Int64,
        until: Int64,
        after: (createdAt: Int64, id: Int64),
        limit: Int,
        now: Int64
    ) throws -> (count: Int, last: (createdAt: Int64, id: Int64)?)
    /// Re-arms up to `limit` dead letters, oldest first; returns how many.
    func redeliverDeadLetters(limit: Int, now: Int64) throws -> Int
    /// Outbox rows, oldest first, optionally of one state, downstream or event.
    func deliveries(state: DeliveryState?, downstream: String?, eventID: String?, limit: Int) throws -> [Delivery]
    /// Pending deliveries per downstream.
    func pendingDeliveries() throws -> [PendingDeliveries]
    /// Outbox rows per state.
    func deliveryCounts() throws -> [DeliveryState: Int]
    /// Up to `limit` logged attempts stored before answer heads were redacted whose head could hold a secret (16
    /// bytes or more), oldest first: each one's id and head.
    func unredactedAttemptHeads(limit: Int) throws -> [(id: Int64, head: [UInt8])]
    /// Marks the logged attempts `ids` redacted, each one in `rewritten` (by id) with that head in place of its own.
    func markAttemptHeadsRedacted(_ ids: [Int64], rewritten: [Int64: [UInt8]]) throws
}
