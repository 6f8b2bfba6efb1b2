/// Apple's V1 `notification_type` values (docs/architecture.md, "The canonical event"): V1 is deprecated and gets no
/// new ones. A V1 notification has no subtype. For what must name one of Apple's values to mean anything: a
/// downstream's `filter.types` (docs/configuration.md).
public enum NotificationTypeV1 {
    /// Every `notification_type`, `RENEWAL` (no longer sent) included.
    public static let all: Set<String> = [
        "INITIAL_BUY", "DID_RENEW", "DID_RECOVER", "RENEWAL", "INTERACTIVE_RENEWAL", "DID_CHANGE_RENEWAL_PREF",
        "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "CANCEL", "REFUND", "REVOKE", "PRICE_INCREASE_CONSENT",
        "CONSUMPTION_REQUEST",
    ]
}
