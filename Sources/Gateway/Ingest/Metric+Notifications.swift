internal import ServiceKit

/// The metrics of `POST /notifications`: the endpoint, the quarantine, the verifyReceipt stage of V1 notifications
/// and the V1 shapes of V2 notifications.
extension Metric {
    static let notifications: [Metric] = [
        .notificationsReceivedTotal, .notificationsAcceptedTotal, .notificationsRejectedTotal,
        .notificationsDuplicateTotal, .quarantinedTotal, .quarantineDroppedTotal, .quarantineFullTotal,
        .quarantineLaneFull, .quarantineStoreFailuresTotal, .receiptJobsPending, .verifyReceiptTotal, .v1ShapesTotal,
        .v1ShapesUnsentTotal, .verifySeconds, .requestSeconds,
    ]

    // The endpoint and the quarantine
    static let notificationsReceivedTotal = counter(
        "iapgw_notifications_received_total",
        "Notifications received, by version"
    )
    static let notificationsAcceptedTotal = counter(
        "iapgw_notifications_accepted_total",
        "Notifications journaled, by version"
    )
    static let notificationsRejectedTotal = counter(
        "iapgw_notifications_rejected_total",
        "Notifications refused, by version and error code"
    )
    static let notificationsDuplicateTotal = counter(
        "iapgw_notifications_duplicate_total",
        "Apple retries of already journaled notifications"
    )
    static let quarantinedTotal = counter("iapgw_quarantined_total", "Bodies quarantined, by lane")
    static let quarantineDroppedTotal = counter(
        "iapgw_quarantine_dropped_total",
        "Quarantined bodies evicted (oldest first) by the untrusted lane's caps"
    )
    static let quarantineFullTotal = counter(
        "iapgw_quarantine_full_total",
        "Refused bodies not stored because their lane was full, by lane"
    )
    static let quarantineLaneFull = gauge(
        "iapgw_quarantine_lane_full",
        "1 while a lane refuses new rows (the genuine lane never evicts)"
    )
    static let quarantineStoreFailuresTotal = counter(
        "iapgw_quarantine_store_failures_total",
        "Refused bodies that could not be stored, by lane"
    )

    // verifyReceipt for V1 notifications
    static let receiptJobsPending = gauge("iapgw_receipt_jobs_pending", "V1 notifications waiting for verifyReceipt")
    static let verifyReceiptTotal = counter("iapgw_verify_receipt_total", "verifyReceipt outcomes")

    // The V1 side of V2 notifications
    static let v1ShapesTotal = counter(
        "iapgw_v1_shapes_total",
        "V1 shapes built from V2 notifications, by use (passthrough: sent to a v1_passthrough downstream; event: the V1 path's event) and V1 type"
    )
    static let v1ShapesUnsentTotal = counter(
        "iapgw_v1_shapes_unsent_total",
        "V2 notifications a v1_passthrough downstream did not get: V1 has no counterpart, by V2 type"
    )

    // Latency
    static let verifySeconds = histogram("iapgw_verify_seconds", "V2 verification time")
    static let requestSeconds = histogram(
        "iapgw_request_seconds",
        "POST /notifications handling time, journaling included"
    )
}
