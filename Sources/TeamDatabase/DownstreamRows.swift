internal import Canonical
internal import Rows
internal import WireJSON

// The public rows as both team-database writers read them back, each decoded in one place for SQLite and PostgreSQL
// alike (the columns of ``DownstreamSchema``'s selects), through the one row protocol (`ResultRow`, Sources/Rows): a
// column NOT NULL in ``DownstreamSchema`` is required — missing, NULL or of another type, it throws `RowError` naming
// it — and a nullable one reads NULL as nil.

extension DownstreamEventRow {
    /// A row of ``DownstreamSchema/selectEvents(from:eventAsText:collate:)``; `event` is nil when its JSON does not
    /// decode.
    init(row r: some ResultRow) throws {
        let json = try r.requiredString("event")
        self.init(
            id: try r.requiredString("id"),
            source: try r.requiredString("source"),
            kind: try r.requiredString("kind"),
            reason: try r.nullableString("reason"),
            bundleID: try r.nullableString("bundle_id"),
            environment: try r.nullableString("environment"),
            originalTransactionID: try r.nullableString("original_transaction_id"),
            transactionID: try r.nullableString("transaction_id"),
            productID: try r.nullableString("product_id"),
            eventDate: try r.requiredInt64("event_date"),
            expiresDate: try r.nullableInt64("expires_date"),
            entitlementState: try r.nullableString("entitlement_state"),
            entitlementUntil: try r.nullableInt64("entitlement_until"),
            autoRenew: try r.nullableBool("auto_renew"),
            authoritative: try r.requiredBool("authoritative"),
            event: try? JSONValueDecoder().decode(CanonicalEvent.self, from: Array(json.utf8)),
            deliveredAt: try r.requiredInt64("delivered_at")
        )
    }
}

extension DownstreamSubscriptionRow {
    /// A row of ``DownstreamSchema/selectSubscriptions(from:collate:)``.
    init(row r: some ResultRow) throws {
        self.init(
            originalTransactionID: try r.requiredString("original_transaction_id"),
            environment: try r.requiredString("environment"),
            bundleID: try r.nullableString("bundle_id"),
            productID: try r.nullableString("product_id"),
            entitlementState: try r.nullableString("entitlement_state"),
            entitlementUntil: try r.nullableInt64("entitlement_until"),
            expiresDate: try r.nullableInt64("expires_date"),
            autoRenew: try r.nullableBool("auto_renew"),
            autoRenewProductID: try r.nullableString("auto_renew_product_id"),
            lastEventID: try r.requiredString("last_event_id"),
            lastEventKind: try r.requiredString("last_event_kind"),
            lastEventDate: try r.requiredInt64("last_event_date"),
            updatedAt: try r.requiredInt64("updated_at")
        )
    }
}
