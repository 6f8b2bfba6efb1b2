package import ServiceKit

/// The metrics of the receipt path (`POST /verifyReceipt`).
extension Metric {
    package static let receiptPath: [Metric] = [
        .receiptAnswersTotal, .receiptHistoryTotal, .receiptHistoryCallsTotal, .receiptHistoryBackground,
        .receiptHistoryQueuedTotal, .receiptHistoryQueue,
        .receiptComparisonsTotal, .receiptSeconds, .receiptInFlight, .receiptRefusedTotal,
    ]

    package static let receiptAnswersTotal = counter(
        "iapgw_receipt_answers_total",
        "verifyReceipt answers, by mode (apple, shadow, api; none: not a configured app's receipt) and status"
    )
    package static let receiptHistoryTotal = counter(
        "iapgw_receipt_history_total",
        "Customer histories the receipt path needed, by result (fresh, fetched, shared, stale, background, queued, capped, failed, rate_limited, budget_exhausted)"
    )
    package static let receiptHistoryCallsTotal = counter(
        "iapgw_receipt_history_calls_total",
        "App Store Server API calls for customers' histories, by endpoint (transaction_history, subscription_statuses) and outcome (ok, failed, rate_limited; capped: not made, over receipts.customer_calls_per_hour; budget_exhausted: not made, no turn in the budget of calls to Apple in time)"
    )
    package static let receiptHistoryBackground = gauge(
        "iapgw_receipt_history_background",
        "Customers' history fetches going on after their request was answered"
    )
    package static let receiptHistoryQueuedTotal = counter(
        "iapgw_receipt_history_queued_total",
        "Customers queued for a history fetch no request waits for (their request found no turn in Apple's budget, Apple's Retry-After, a stale history's refresh, a shadow comparison skipped), by outcome (queued; dropped: receipts.fetch_queue customers waited already)"
    )
    package static let receiptHistoryQueue = gauge(
        "iapgw_receipt_history_queue",
        "Customers waiting for a history fetch no request waits for"
    )
    package static let receiptComparisonsTotal = counter(
        "iapgw_receipt_comparisons_total",
        "Shadow comparisons of Apple's verifyReceipt answers with the gateway's, by outcome"
    )
    package static let receiptSeconds = histogram(
        "iapgw_receipt_seconds",
        "Seconds to answer a verifyReceipt request, by mode"
    )
    package static let receiptInFlight = gauge("iapgw_receipt_in_flight", "verifyReceipt requests being answered now")
    package static let receiptRefusedTotal = counter(
        "iapgw_receipt_refused_total",
        "verifyReceipt requests answered 21005 (retryable) at once for want of room, by reason (busy, address_busy)"
    )
}
