internal import ServiceKit

/// The metrics of reconciliation and of the notification-history sweep.
extension Metric {
    static let reconciliation: [Metric] = [
        .reconcileCheckedTotal, .recoveredEventsTotal, .reconcileAPICallsTotal, .reconcileBudgetRemaining,
        .reconcileRateLimitedTotal, .reconcileSkippedTotal, .notificationsMissed,
    ]

    static let reconcileCheckedTotal = counter(
        "iapgw_reconcile_checked_total",
        "Subscriptions checked against Apple (reconciliation) or history notifications looked at (history), by bundle and mechanism"
    )
    static let recoveredEventsTotal = counter(
        "iapgw_recovered_events_total",
        "Events recovered that Apple's notifications did not bring, by bundle and mechanism"
    )
    static let reconcileAPICallsTotal = counter(
        "iapgw_reconcile_api_calls_total",
        "Apple requests made by recovery runs, by bundle and endpoint (subscription_statuses, notification_history, verify_receipt)"
    )
    static let reconcileBudgetRemaining = gauge(
        "iapgw_reconcile_budget_remaining",
        "Apple requests the last recovery run of a bundle and kind left unspent of its budget"
    )
    static let reconcileRateLimitedTotal = counter(
        "iapgw_reconcile_rate_limited_total",
        "Recovery runs ended by Apple's 429 (due again after its Retry-After), by bundle"
    )
    static let reconcileSkippedTotal = counter(
        "iapgw_reconcile_skipped_total",
        "History notifications the gateway cannot serve (quarantined once), skipped by the sweep, by bundle and code"
    )
    static let notificationsMissed = gauge(
        "iapgw_notifications_missed",
        "1 while recovery keeps finding notifications Apple's delivery missed (reconcile.alert_after over a day), by bundle and environment"
    )
}
