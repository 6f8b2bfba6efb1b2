internal import Store

/// The metrics catalogue: every metric the gateway exports, in one place — its name (the raw value), its type and
/// its help text (docs/operations.md, "Metrics", documents each). Code counts through these cases
/// (`metrics.increment(.quarantinedTotal, ["lane": …])`), never through a name spelled out, and the `switch` below is
/// exhaustive: a metric cannot be added without its type and help.
enum Metric: String, CaseIterable, Sendable {
    // `POST /notifications` and the quarantine
    case notificationsReceivedTotal = "iapgw_notifications_received_total"
    case notificationsAcceptedTotal = "iapgw_notifications_accepted_total"
    case notificationsRejectedTotal = "iapgw_notifications_rejected_total"
    case notificationsDuplicateTotal = "iapgw_notifications_duplicate_total"
    case quarantinedTotal = "iapgw_quarantined_total"
    case quarantineDroppedTotal = "iapgw_quarantine_dropped_total"
    case storeFailuresTotal = "iapgw_store_failures_total"
    case quarantineFullTotal = "iapgw_quarantine_full_total"
    case quarantineLaneFull = "iapgw_quarantine_lane_full"
    case quarantineStoreFailuresTotal = "iapgw_quarantine_store_failures_total"
    // Delivery
    case deliveryAttemptsTotal = "iapgw_delivery_attempts_total"
    case deliveryFailuresTotal = "iapgw_delivery_failures_total"
    case deliveryDeadTotal = "iapgw_delivery_dead_total"
    case deliveryFilteredTotal = "iapgw_delivery_filtered_total"
    case alertsTotal = "iapgw_alerts_total"
    case deliveryQueueDepth = "iapgw_delivery_queue_depth"
    case deliveryOldestAgeSeconds = "iapgw_delivery_oldest_age_seconds"
    // verifyReceipt
    case receiptJobsPending = "iapgw_receipt_jobs_pending"
    case verifyReceiptTotal = "iapgw_verify_receipt_total"
    // Comparison and authority
    case compareFetchesTotal = "iapgw_compare_fetches_total"
    case compareFetchFailuresTotal = "iapgw_compare_fetch_failures_total"
    case compareComparisonsTotal = "iapgw_compare_comparisons_total"
    case compareOneSidedTotal = "iapgw_compare_one_sided_total"
    case compareJobsPending = "iapgw_compare_jobs_pending"
    case authoritySilent = "iapgw_authority_silent"
    // Reconciliation and the notification-history sweep
    case reconcileCheckedTotal = "iapgw_reconcile_checked_total"
    case recoveredEventsTotal = "iapgw_recovered_events_total"
    case reconcileAPICallsTotal = "iapgw_reconcile_api_calls_total"
    case reconcileBudgetRemaining = "iapgw_reconcile_budget_remaining"
    case reconcileRateLimitedTotal = "iapgw_reconcile_rate_limited_total"
    case reconcileSkippedTotal = "iapgw_reconcile_skipped_total"
    case notificationsMissed = "iapgw_notifications_missed"
    // The V1 side of V2 notifications
    case v1ShapesTotal = "iapgw_v1_shapes_total"
    case v1ShapesUnsentTotal = "iapgw_v1_shapes_unsent_total"
    // The receipt path (`POST /verifyReceipt`)
    case receiptAnswersTotal = "iapgw_receipt_answers_total"
    case receiptHistoryTotal = "iapgw_receipt_history_total"
    case receiptHistoryCallsTotal = "iapgw_receipt_history_calls_total"
    case receiptHistoryBackground = "iapgw_receipt_history_background"
    case receiptComparisonsTotal = "iapgw_receipt_comparisons_total"
    case receiptSeconds = "iapgw_receipt_seconds"
    case receiptInFlight = "iapgw_receipt_in_flight"
    case receiptRefusedTotal = "iapgw_receipt_refused_total"
    // The consumption responder (Apple's refund requests)
    case consumptionRequestsTotal = "iapgw_consumption_requests_total"
    case consumptionAsksTotal = "iapgw_consumption_asks_total"
    case consumptionSendsTotal = "iapgw_consumption_sends_total"
    case consumptionDeadTotal = "iapgw_consumption_dead_total"
    case consumptionJobsPending = "iapgw_consumption_jobs_pending"
    // Latency
    case verifySeconds = "iapgw_verify_seconds"
    case requestSeconds = "iapgw_request_seconds"

    enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// The type and help text (`# TYPE`, `# HELP`).
    var declaration: (kind: Kind, help: String) {
        switch self {
        case .notificationsReceivedTotal: (.counter, "Notifications received, by version")
        case .notificationsAcceptedTotal: (.counter, "Notifications journaled, by version")
        case .notificationsRejectedTotal: (.counter, "Notifications refused, by version and error code")
        case .notificationsDuplicateTotal: (.counter, "Apple retries of already journaled notifications")
        case .quarantinedTotal: (.counter, "Bodies quarantined, by lane")
        case .quarantineDroppedTotal:
            (.counter, "Quarantined bodies evicted (oldest first) by the untrusted lane's caps")
        case .storeFailuresTotal:
            (
                .counter,
                "Writes the store refused (a full disk), by operation: journal (answered 503) or job_outcome (retried)"
            )
        case .quarantineFullTotal: (.counter, "Refused bodies not stored because their lane was full, by lane")
        case .quarantineLaneFull: (.gauge, "1 while a lane refuses new rows (the genuine lane never evicts)")
        case .quarantineStoreFailuresTotal: (.counter, "Refused bodies that could not be stored, by lane")
        case .deliveryAttemptsTotal: (.counter, "Delivery attempts, by downstream")
        case .deliveryFailuresTotal: (.counter, "Failed delivery attempts, by downstream")
        case .deliveryDeadTotal: (.counter, "Deliveries dead-lettered, by downstream")
        case .alertsTotal: (.counter, "Alerts to alerts.webhook, by outcome (sent, failed after retries, dropped)")
        case .deliveryFilteredTotal:
            (
                .counter,
                "Events (v2_passthrough: notifications) a downstream's filter kept from being queued, by downstream"
            )
        case .deliveryQueueDepth: (.gauge, "Deliveries waiting, by downstream")
        case .deliveryOldestAgeSeconds: (.gauge, "Age of the oldest waiting delivery, by downstream")
        case .receiptJobsPending: (.gauge, "V1 notifications waiting for verifyReceipt")
        case .verifyReceiptTotal: (.counter, "verifyReceipt outcomes")
        case .compareFetchesTotal: (.counter, "Fetches of one path's view for a comparison, by path")
        case .compareFetchFailuresTotal: (.counter, "Failed comparison fetches, by path and code")
        case .compareComparisonsTotal:
            (
                .counter,
                "Comparisons, by result: agree, disagree, unconfirmed (refetching to confirm), stale (refetching the older side)"
            )
        case .compareOneSidedTotal: (.counter, "Subscriptions one path did not know after the grace window, by side")
        case .compareJobsPending: (.gauge, "Comparison fetches waiting")
        case .authoritySilent: (.gauge, "1 while the authoritative path is silent and the other is not")
        case .reconcileCheckedTotal:
            (
                .counter,
                "Subscriptions checked against Apple (reconciliation) or history notifications looked at (history), by bundle and mechanism"
            )
        case .recoveredEventsTotal:
            (.counter, "Events recovered that Apple's notifications did not bring, by bundle and mechanism")
        case .reconcileAPICallsTotal:
            (
                .counter,
                "Apple requests made by recovery runs, by bundle and endpoint (subscription_statuses, notification_history, verify_receipt)"
            )
        case .reconcileBudgetRemaining:
            (.gauge, "Apple requests the last recovery run of a bundle and kind left unspent of its budget")
        case .reconcileRateLimitedTotal:
            (.counter, "Recovery runs ended by Apple's 429 (due again after its Retry-After), by bundle")
        case .reconcileSkippedTotal:
            (
                .counter,
                "History notifications the gateway cannot serve (quarantined once), skipped by the sweep, by bundle and code"
            )
        case .v1ShapesTotal:
            (
                .counter,
                "V1 shapes built from V2 notifications, by use (passthrough: sent to a v1_passthrough downstream; event: the V1 path's event) and V1 type"
            )
        case .v1ShapesUnsentTotal:
            (.counter, "V2 notifications a v1_passthrough downstream did not get: V1 has no counterpart, by V2 type")
        case .notificationsMissed:
            (
                .gauge,
                "1 while recovery keeps finding notifications Apple's delivery missed (reconcile.alert_after over a day), by bundle and environment"
            )
        case .receiptAnswersTotal:
            (
                .counter,
                "verifyReceipt answers, by mode (apple, shadow, api; none: not a configured app's receipt) and status"
            )
        case .receiptHistoryTotal:
            (
                .counter,
                "Customer histories the receipt path needed, by result (fresh, fetched, shared, stale, background, capped, failed, rate_limited)"
            )
        case .receiptHistoryCallsTotal:
            (
                .counter,
                "App Store Server API calls for customers' histories, by endpoint (transaction_history, subscription_statuses) and outcome (ok, failed, rate_limited; capped: not made, over receipts.customer_calls_per_hour)"
            )
        case .receiptHistoryBackground:
            (.gauge, "Customers' history fetches going on after their request was answered")
        case .receiptComparisonsTotal:
            (.counter, "Shadow comparisons of Apple's verifyReceipt answers with the gateway's, by outcome")
        case .receiptSeconds: (.histogram, "Seconds to answer a verifyReceipt request, by mode")
        case .receiptInFlight: (.gauge, "verifyReceipt requests being answered now")
        case .receiptRefusedTotal:
            (
                .counter,
                "verifyReceipt requests answered 21005 (retryable) at once for want of room, by reason (busy, address_busy)"
            )
        case .consumptionRequestsTotal:
            (
                .counter,
                "Refund requests settled, by bundle and state (sent, declined, no_consent, unanswered, rejected, gateway_refused, dead, expired)"
            )
        case .consumptionAsksTotal:
            (.counter, "Asks to the team's service for a refund request's answer, by bundle and outcome")
        case .consumptionSendsTotal:
            (
                .counter,
                "Send Consumption Information calls to Apple, by bundle and outcome (accepted, retry, rejected, gateway_refused)"
            )
        case .consumptionDeadTotal:
            (
                .counter,
                "Refund requests left unanswered against the team's wish (rejected by Apple, refused by the gateway, past the deadline), by bundle and reason: alert on any"
            )
        case .consumptionJobsPending: (.gauge, "Refund requests waiting for an answer to be asked or sent")
        case .verifySeconds: (.histogram, "V2 verification time")
        case .requestSeconds: (.histogram, "POST /notifications handling time, journaling included")
        }
    }

    /// Declares every metric's type and help text in `metrics`.
    static func describeAll(in metrics: Metrics) {
        for metric in allCases {
            metrics.describe(metric.rawValue, type: metric.declaration.kind.rawValue, metric.declaration.help)
        }
    }
}

/// Counting through the catalogue (debug builds check the metric's type).
extension Metrics {
    /// A series to hold and count into without the registry's lock (the request path resolves its own at startup).
    func counterSeries(_ metric: Metric, _ labels: [String: String] = [:]) -> CounterSeries {
        assert(metric.declaration.kind == .counter, "\(metric.rawValue) is not a counter")
        return counterSeries(metric.rawValue, labels)
    }

    func histogramSeries(_ metric: Metric, _ labels: [String: String] = [:]) -> HistogramSeries {
        assert(metric.declaration.kind == .histogram, "\(metric.rawValue) is not a histogram")
        return histogramSeries(metric.rawValue, labels)
    }

    func increment(_ metric: Metric, _ labels: [String: String] = [:], by value: Double = 1) {
        assert(metric.declaration.kind == .counter, "\(metric.rawValue) is not a counter")
        increment(metric.rawValue, labels, by: value)
    }

    /// Counts what downstreams' filters kept from being queued when a plan was carried out, and group members' refund
    /// requests it kept final.
    func countFiltered(_ done: PlanOutcome) {
        for (downstream, n) in done.filtered {
            increment(.deliveryFilteredTotal, ["downstream": downstream], by: Double(n))
        }
        for (bundle, n) in done.assignedRefundRequests {
            increment(.consumptionRequestsTotal, ["bundle": bundle, "state": "assigned"], by: Double(n))
        }
    }

    func set(_ metric: Metric, _ labels: [String: String] = [:], _ value: Double) {
        assert(metric.declaration.kind == .gauge, "\(metric.rawValue) is not a gauge")
        set(metric.rawValue, labels, value)
    }

    func observe(_ metric: Metric, _ labels: [String: String] = [:], _ value: Double) {
        assert(metric.declaration.kind == .histogram, "\(metric.rawValue) is not a histogram")
        observe(metric.rawValue, labels, value)
    }
}
