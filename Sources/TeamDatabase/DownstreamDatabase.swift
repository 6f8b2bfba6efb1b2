public import Canonical

/// A `database` downstream (docs/database-downstream.md): the team's own PostgreSQL schema or SQLite file, into which
/// each delivered event is written as a row of `events` and, when it is authoritative, folded into its row of
/// `subscriptions` (last write wins on `event_date`, ties broken by the event id). Writes are idempotent, so the
/// outbox can deliver at least once: a redelivered event changes nothing.
///
/// The connection is opened on the first write and kept; a write that fails (the database is down, the file cannot be
/// opened) throws, and the next one connects again. The public tables are created when missing and versioned in a
/// `schema_version` table; nothing else in the database is read, altered or dropped. All calls block: run them off
/// Swift's cooperative pool (the `Threads` module's `Blocking.run`).
public protocol DownstreamDatabase: Sendable, CustomStringConvertible {
    /// Writes one event: its `events` row (kept as it is when the id is already there) and, for an authoritative
    /// event about a subscription, its `subscriptions` row unless that row already holds a newer (or the same) event.
    func write(_ event: DownstreamEvent) throws(DownstreamDatabaseError) -> DownstreamWrite
    /// Everything the public tables hold, for operators and tests: events by id, subscriptions by key.
    func contents() throws(DownstreamDatabaseError) -> DownstreamContents
    /// Closes the connection; the next write opens a new one.
    func close()
}

/// One event as a database downstream receives it.
public struct DownstreamEvent: Sendable, Hashable {
    public var event: CanonicalEvent
    /// The canonical event's JSON as stored and delivered to webhooks (``CanonicalJSON/encode(_:)-(CanonicalEvent)``).
    public var json: [UInt8]
    /// Whether it is on its bundle's authoritative path; only authoritative events move `subscriptions`.
    public var authoritative: Bool
    /// When this delivery writes it (ms since the epoch): `events.delivered_at` on the first write,
    /// `subscriptions.updated_at` whenever the row changes.
    public var deliveredAt: Int64

    public init(event: CanonicalEvent, json: [UInt8], authoritative: Bool, deliveredAt: Int64) {
        (self.event, self.json, self.authoritative, self.deliveredAt) = (event, json, authoritative, deliveredAt)
    }
}

/// What one write changed.
public struct DownstreamWrite: Sendable, Hashable {
    /// False when the event's row was already there (a redelivery).
    public var eventInserted: Bool
    /// True when the subscription's row was created or replaced by this event.
    public var subscriptionUpdated: Bool

    public init(eventInserted: Bool, subscriptionUpdated: Bool) {
        (self.eventInserted, self.subscriptionUpdated) = (eventInserted, subscriptionUpdated)
    }
}

/// A failed write or read. The message names the downstream and what failed; it never holds a connection string.
public struct DownstreamDatabaseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The public tables' rows (docs/database-downstream.md).
public struct DownstreamContents: Sendable, Hashable {
    /// The highest version in `schema_version`; nil when the tables were never created.
    public var schemaVersion: Int?
    /// Ordered by id.
    public var events: [DownstreamEventRow]
    /// Ordered by original transaction id, then environment.
    public var subscriptions: [DownstreamSubscriptionRow]

    public init(schemaVersion: Int?, events: [DownstreamEventRow], subscriptions: [DownstreamSubscriptionRow]) {
        (self.schemaVersion, self.events, self.subscriptions) = (schemaVersion, events, subscriptions)
    }
}

/// One row of `events` (a subset of its columns; `event` holds the rest).
public struct DownstreamEventRow: Sendable, Hashable {
    public var id: String
    public var source: String
    public var kind: String
    public var reason: String?
    public var bundleID: String?
    public var environment: String?
    public var originalTransactionID: String?
    public var transactionID: String?
    public var productID: String?
    public var eventDate: Int64
    public var expiresDate: Int64?
    public var entitlementState: String?
    public var entitlementUntil: Int64?
    public var autoRenew: Bool?
    public var authoritative: Bool
    /// The `event` column decoded; nil when it does not decode as a canonical event.
    public var event: CanonicalEvent?
    public var deliveredAt: Int64
}

/// One row of `subscriptions`.
public struct DownstreamSubscriptionRow: Sendable, Hashable {
    public var originalTransactionID: String
    public var environment: String
    public var bundleID: String?
    public var productID: String?
    public var entitlementState: String?
    public var entitlementUntil: Int64?
    public var expiresDate: Int64?
    public var autoRenew: Bool?
    public var autoRenewProductID: String?
    public var lastEventID: String
    public var lastEventKind: String
    public var lastEventDate: Int64
    public var updatedAt: Int64
}

/// The names a database downstream's tables live under: a PostgreSQL schema, or a SQLite table-name prefix.
public enum DownstreamNames {
    /// The PostgreSQL schema when the config names none.
    public static let defaultSchema = "iap"

    /// Whether `name` may name a PostgreSQL schema or a SQLite prefix: 1 to 48 lowercase ASCII letters, digits and
    /// underscores, starting with a letter, and not `pg_…` (PostgreSQL reserves those). Lowercase only, so the name
    /// the team types in a query unquoted is the name the gateway created.
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...48).contains(bytes.count), let first = bytes.first,
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
        else {
            return false
        }
        guard !name.hasPrefix("pg_") else { return false }
        return bytes.allSatisfy { b in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
                || b == UInt8(ascii: "_")
        }
    }
}

/// A column value, whichever database it goes to.
enum DownstreamCell {
    case text(String?)
    case integer(Int64?)
    case bool(Bool?)
    /// JSON text (the `event` column).
    case json(String)
}

/// The values of one event's rows, column by column, in the order of ``DownstreamSchema``'s column lists: one place
/// for both databases, so they cannot drift apart.
enum DownstreamRows {
    static func event(_ e: DownstreamEvent) -> [DownstreamCell] {
        let c = e.event
        return [
            .text(c.id), .text(c.source.rawValue), .text(c.kind.rawValue), .text(c.reason?.rawValue), .text(c.rawType),
            .text(c.rawSubtype),
            .text(c.bundleID), .text(c.environment?.rawValue), .text(c.originalTransactionID), .text(c.transactionID),
            .text(c.productID),
            .text(c.productType?.rawValue), .integer(c.purchaseDate), .integer(c.expiresDate),
            .integer(c.revocationDate),
            .integer(c.gracePeriodExpiresDate), .integer(c.eventDate), .text(c.entitlement?.state.rawValue),
            .integer(c.entitlement?.until),
            .bool(c.autoRenew), .text(c.autoRenewProductID), .bool(c.inBillingRetry), .bool(c.verified),
            .bool(e.authoritative),
            .json(String(decoding: e.json, as: UTF8.self)), .integer(e.deliveredAt),
        ]
    }

    /// The subscription's row for an authoritative event about one; nil otherwise (only those move `subscriptions`).
    static func subscription(_ e: DownstreamEvent) -> [DownstreamCell]? {
        let c = e.event
        guard e.authoritative, let otid = c.originalTransactionID, let environment = c.environment else { return nil }
        return [
            .text(otid), .text(environment.rawValue), .text(c.bundleID), .text(c.productID),
            .text(c.entitlement?.state.rawValue),
            .integer(c.entitlement?.until), .integer(c.expiresDate), .bool(c.autoRenew), .text(c.autoRenewProductID),
            .text(c.id),
            .text(c.kind.rawValue), .integer(c.eventDate), .integer(e.deliveredAt),
        ]
    }
}
