internal import Canonical
internal import Postgres
internal import SQLite
internal import WireJSON

/// A result row as both team-database writers read it back, so that each public row is decoded in one place for
/// SQLite and PostgreSQL alike (the columns of ``DownstreamSchema``'s selects).
protocol DownstreamRow {
    func string(_ column: String) -> String?
    func int64(_ column: String) -> Int64?
    /// SQLite: an integer other than 0; PostgreSQL: a `boolean`.
    func bool(_ column: String) -> Bool?
}

extension SQLiteRow: DownstreamRow {}
extension PostgresRow: DownstreamRow {}

extension DownstreamEventRow {
    /// A row of ``DownstreamSchema/selectEvents(from:eventAsText:collate:)``; `event` is nil when its JSON does not
    /// decode.
    init(row r: some DownstreamRow) {
        self.init(
            id: r.string("id") ?? "",
            source: r.string("source") ?? "",
            kind: r.string("kind") ?? "",
            reason: r.string("reason"),
            bundleID: r.string("bundle_id"),
            environment: r.string("environment"),
            originalTransactionID: r.string("original_transaction_id"),
            transactionID: r.string("transaction_id"),
            productID: r.string("product_id"),
            eventDate: r.int64("event_date") ?? 0,
            expiresDate: r.int64("expires_date"),
            entitlementState: r.string("entitlement_state"),
            entitlementUntil: r.int64("entitlement_until"),
            autoRenew: r.bool("auto_renew"),
            authoritative: r.bool("authoritative") ?? false,
            event: r.string("event").flatMap {
                try? JSONValueDecoder().decode(CanonicalEvent.self, from: Array($0.utf8))
            },
            deliveredAt: r.int64("delivered_at") ?? 0
        )
    }
}

extension DownstreamSubscriptionRow {
    /// A row of ``DownstreamSchema/selectSubscriptions(from:collate:)``.
    init(row r: some DownstreamRow) {
        self.init(
            originalTransactionID: r.string("original_transaction_id") ?? "",
            environment: r.string("environment") ?? "",
            bundleID: r.string("bundle_id"),
            productID: r.string("product_id"),
            entitlementState: r.string("entitlement_state"),
            entitlementUntil: r.int64("entitlement_until"),
            expiresDate: r.int64("expires_date"),
            autoRenew: r.bool("auto_renew"),
            autoRenewProductID: r.string("auto_renew_product_id"),
            lastEventID: r.string("last_event_id") ?? "",
            lastEventKind: r.string("last_event_kind") ?? "",
            lastEventDate: r.int64("last_event_date") ?? 0,
            updatedAt: r.int64("updated_at") ?? 0
        )
    }
}
