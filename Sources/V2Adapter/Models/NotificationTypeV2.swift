/// Apple's V2 `notificationType` and `subtype` values this build knows, the newest included (docs/architecture.md,
/// "The canonical event"). The wire models keep Apple's raw strings, so a value Apple adds later still passes through
/// and is journaled and delivered (as kind `other`); these lists are for what must name one of Apple's values to mean
/// anything: a downstream's `filter.types` (docs/configuration.md). One list in the product: add Apple's new values
/// here.
public enum NotificationTypeV2 {
    /// Every `notificationType`.
    public static let all: Set<String> = [
        "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW", "EXPIRED",
        "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "TEST", "EXTERNAL_PURCHASE_TOKEN",
        "ONE_TIME_CHARGE", "RESCIND_CONSENT",
        // The Advanced Commerce API's.
        "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
        // Multiseat subscriptions: seat claims the App Store released (developer-hosted invitations).
        "UNCLAIM_SEATS",
    ]

    /// Every `subtype`, whichever type it comes with.
    public static let subtypes: Set<String> = [
        "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY",
        "BILLING_RETRY", "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY",
        "PRODUCT_NOT_FOR_SALE", "SUMMARY", "FAILURE", "UNREPORTED", "ACTIVE_TOKEN_REMINDER", "CREATED",
        // Multiseat subscriptions: a seat-based refund (REFUND), the number of seats changed.
        "SEATS", "INCREASE_QUANTITY", "DECREASE_QUANTITY",
    ]
}
