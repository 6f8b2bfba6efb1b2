public import Canonical
internal import WireJSON

/// Compact JSON for the types the gateway stores and delivers on every notification, written directly (the same
/// bytes `JSONOutput.encode` gives, at a fraction of `JSONEncoder`'s cost; a test holds them equal). Members are
/// added in the order they are written (sorted by name), so the writer copies them out without sorting.
public enum CanonicalJSON {
    public static func encode(_ e: CanonicalEvent) -> [UInt8] {
        var w = JSONObjectWriter()
        // The keys of one kind only, and the multiseat keys, are left out when nil (CanonicalEvent's
        // `encodeIfPresent`).
        if let v = e.additionalTransactionReason { w.string("additional_transaction_reason", v) }
        if let v = e.amountMilli { w.int("amount_milli", v) }
        w.string("app_account_token", e.appAccountToken)
        w.int("app_apple_id", e.appAppleID)
        if let v = e.appTransactionID { w.string("app_transaction_id", v) }
        w.bool("auto_renew", e.autoRenew)
        w.string("auto_renew_product_id", e.autoRenewProductID)
        w.string("bundle_id", e.bundleID)
        if let v = e.consumptionRequestReason { w.string("consumption_request_reason", v) }
        w.string("currency", e.currency)
        w.raw("entitlement", e.entitlement.map(encode))
        w.string("environment", e.environment?.rawValue)
        w.int("event_date", e.eventDate)
        w.string("event_date_source", e.eventDateSource.rawValue)
        w.string("expiration_intent", e.expirationIntent)
        w.int("expires_date", e.expiresDate)
        if let v = e.externalPurchaseID { w.string("external_purchase_id", v) }
        if let v = e.externalPurchaseTokenCreationDate { w.int("external_purchase_token_creation_date", v) }
        if let v = e.externalPurchaseTokenExpirationDate { w.int("external_purchase_token_expiration_date", v) }
        if let v = e.externalPurchaseTokenType { w.string("external_purchase_token_type", v) }
        w.int("grace_period_expires_date", e.gracePeriodExpiresDate)
        if let v = e.groupSeats { w.int("group_seats", v) }
        w.string("id", e.id)
        w.bool("in_billing_retry", e.inBillingRetry)
        if let v = e.invitationManagement { w.string("invitation_management", v) }
        w.bool("is_intro", e.isIntro)
        w.bool("is_trial", e.isTrial)
        w.string("kind", e.kind.rawValue)
        w.string("offer_id", e.offerID)
        w.string("offer_type", e.offerType)
        w.int("original_purchase_date", e.originalPurchaseDate)
        w.string("original_transaction_id", e.originalTransactionID)
        w.string("ownership", e.ownership)
        w.int("price_milli", e.priceMilli)
        w.string("product_id", e.productID)
        w.string("product_type", e.productType?.rawValue)
        w.int("purchase_date", e.purchaseDate)
        w.int("quantity", e.quantity)
        w.string("raw_subtype", e.rawSubtype)
        w.string("raw_type", e.rawType)
        w.string("reason", e.reason?.rawValue)
        w.string("recovered_by", e.recoveredBy?.rawValue)
        if let v = e.renewalQuantity { w.int("renewal_quantity", v) }
        if let v = e.renewalSeatPriceTiers { w.raw("renewal_seat_price_tiers", encode(v)) }
        w.int("revocation_date", e.revocationDate)
        w.string("revocation_reason", e.revocationReason)
        if let v = e.revokedSeats { w.int("revoked_seats", v) }
        w.int("schema", e.schema)
        if let v = e.seatPriceTiers { w.raw("seat_price_tiers", encode(v)) }
        w.string("source", e.source.rawValue)
        w.string("subscription_group_id", e.subscriptionGroupID)
        w.string("transaction_id", e.transactionID)
        if let v = e.unclaimedSeatIDs { w.raw("unclaimed_seat_ids", JSONValue.array(v.map { .string($0) }).text()) }
        w.bool("verified", e.verified)
        w.string("web_order_line_item_id", e.webOrderLineItemID)
        return w.finish()
    }

    /// A multiseat purchase's price tiers: `[{"price_milli":…,"quantity":…},…]`.
    public static func encode(_ tiers: [SeatPriceTier]) -> [UInt8] {
        JSONValue.array(
            tiers.map { tier in
                .object(
                    JSONObject([
                        ("price_milli", .number(String(tier.priceMilli))), ("quantity", .number(String(tier.quantity))),
                    ])
                )
            }
        ).text()
    }

    public static func encode(_ entitlement: Entitlement) -> [UInt8] {
        var w = JSONObjectWriter()
        w.string("state", entitlement.state.rawValue)
        w.int("until", entitlement.until)
        return w.finish()
    }

    public static func encode(_ s: SubscriptionState) -> [UInt8] {
        var w = JSONObjectWriter()
        w.bool("auto_renew", s.autoRenew)
        w.raw("entitlement", s.entitlement.map(encode))
        w.int("event_date", s.eventDate)
        w.string("event_id", s.eventID)
        w.int("expires_date", s.expiresDate)
        w.string("kind", s.kind.rawValue)
        w.string("original_transaction_id", s.originalTransactionID)
        w.string("path", s.path.rawValue)
        w.string("product_id", s.productID)
        if let v = s.renewalSeats { w.int("renewal_seats", v) }
        if let v = s.seats { w.int("seats", v) }
        return w.finish()
    }
}
