public import Canonical
internal import Foundation
public import Policy
public import SQLite
public import Store
internal import TestSupport

/// The one place tests rewrite the values of an SQLite store's large columns behind its back: to make an older store
/// (plain values, zlib streams) or a damaged one.
public enum StoredValueRewriter {
    /// Every value of `table.column` on `c` in rows that match `filter` (SQL over the table's columns) replaced by what
    /// `rewrite` makes of it (from the row — its `rowid AS r`, the value as `v`, and `columns` — and the value as
    /// stored); nil leaves it as it is. Returns how many it replaced.
    @discardableResult
    public static func rewrite(
        on c: SQLiteConnection,
        table: String,
        column: String,
        columns: [String] = [],
        filter: String = "1",
        _ bindings: [SQLiteValue] = [],
        _ rewrite: (_ row: SQLiteRow, _ stored: [UInt8]) throws -> [UInt8]?
    ) throws -> Int {
        let extra = columns.map { ", \($0)" }.joined()
        var replaced = 0
        for row in try c.query(
            "SELECT rowid AS r, \(column) AS v\(extra) FROM \(table) WHERE \(column) IS NOT NULL AND (\(filter))",
            bindings
        ) {
            guard let stored = row.blob("v"), let rowid = row.int64("r"), let value = try rewrite(row, stored) else {
                continue
            }
            try c.run("UPDATE \(table) SET \(column) = ? WHERE rowid = ?", [.blob(value), .integer(rowid)])
            replaced += 1
        }
        return replaced
    }

    /// The store at `path` damaged as a hostile review did it: every event of the subscription `otid` replaced by a
    /// zstd frame of a few kilobytes that expands to an event of `plainBytes` bytes (its `product_id` that long) — a
    /// frame that says its size, under the 64 MiB a value could once expand to. Returns the ids of the events it
    /// replaced, in their order.
    @discardableResult
    public static func inflateEvents(
        atPath path: String,
        originalTransactionID otid: String,
        plainBytes: Int
    )
        throws -> [String]
    {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        var ids: [String] = []
        try db.write { c in
            try rewrite(
                on: c,
                table: "events",
                column: "json",
                columns: ["id", "bundle_id", "environment", "original_transaction_id", "event_date"],
                filter: "original_transaction_id = ?",
                [.text(otid)]
            ) { row, _ in
                var event = CanonicalEvent(
                    id: row.string("id") ?? "",
                    source: .v2,
                    kind: .renewal,
                    rawType: "DID_RENEW",
                    eventDate: row.int64("event_date") ?? 0,
                    eventDateSource: .signedDate,
                    verified: true
                )
                event.bundleID = row.string("bundle_id")
                event.environment = row.string("environment").map(AppStoreEnvironment.init(rawValue:))
                event.originalTransactionID = row.string("original_transaction_id")
                event.productID = "P"
                ids.append(event.id)
                let json = Array(try JSONEncoder().encode(event))
                return ZstdFrames.inflating(json, member: "product_id", to: plainBytes, filler: UInt8(ascii: "P"))
            }
        }
        return ids
    }
}

/// The subscription a hostile review damaged: events stored as the gateway stores them, then the first ones each
/// replaced by a small frame that expands to an event of 60 MiB (``StoredValueRewriter/inflateEvents(atPath:originalTransactionID:plainBytes:)``),
/// then intact ones after them.
public enum DamagedSubscription {
    public static let originalTransactionID = "otid-damaged"
    public static let bundleID = "com.example.gateway"

    /// An event of the subscription, as the gateway would store one.
    public static func event(_ id: String, date: Int64) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: id,
            source: .v2,
            kind: .renewal,
            rawType: "DID_RENEW",
            eventDate: date,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = bundleID
        e.environment = .sandbox
        e.originalTransactionID = originalTransactionID
        e.productID = "com.example.gateway.premium.monthly"
        e.computeEntitlement()
        return e
    }

    /// `damaged` events, then `intact` ones, in `store` (the SQLite store at `path`, open or not); the first ones
    /// damaged to expand to `plainBytes` each. Returns the damaged ones' ids, oldest first.
    @discardableResult
    public static func make(
        in store: any GatewayStore,
        path: String,
        damaged: Int = 31,
        intact: Int = 2,
        plainBytes: Int = 60 * 1_048_576
    ) throws -> (damaged: [String], intact: [String]) {
        let first = (0..<damaged).map { event("damaged-\($0)", date: 1_000_000 + Int64($0)) }
        _ = try store.write { tx in
            try tx.storeEvents(first, journalID: nil, routing: NoDeliveries.routing, now: 1, authority: nil)
        }
        let ids = try StoredValueRewriter.inflateEvents(
            atPath: path,
            originalTransactionID: originalTransactionID,
            plainBytes: plainBytes
        )
        let after = (0..<intact).map { event("intact-\($0)", date: 2_000_000 + Int64($0)) }
        _ = try store.write { tx in
            try tx.storeEvents(after, journalID: nil, routing: NoDeliveries.routing, now: 2, authority: nil)
        }
        return (ids, after.map(\.id))
    }
}

/// Routing that delivers nothing: events stored for a test to read back.
public enum NoDeliveries {
    public static let routing = Routing(downstreams: [], apps: [])
}
