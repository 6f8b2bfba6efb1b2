/// Apple's V1 `notification_type` values (responseBodyV1). The V1 adapter proper — wire models, the shared-secret
/// check, verifyReceipt and the mapping to canonical events — arrives with its own issue; the gateway already
/// recognises V1 bodies by this member.
public enum V1NotificationType {
    /// Every value Apple documents, including RENEWAL (retired in 2021, the old name of DID_RECOVER).
    public static let all: [String] = [
        "INITIAL_BUY", "DID_RENEW", "DID_RECOVER", "RENEWAL", "INTERACTIVE_RENEWAL", "DID_CHANGE_RENEWAL_PREF",
        "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "CANCEL", "REFUND", "REVOKE", "PRICE_INCREASE_CONSENT",
        "CONSUMPTION_REQUEST",
    ]
}
