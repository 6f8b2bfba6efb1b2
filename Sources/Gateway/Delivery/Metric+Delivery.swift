internal import ServiceKit

/// The metrics of delivery to the downstreams.
extension Metric {
    static let delivery: [Metric] = [
        .deliveryAttemptsTotal, .deliveryFailuresTotal, .deliveryDeadTotal, .deliveryFilteredTotal,
        .deliveryQueueDepth, .deliveryOldestAgeSeconds,
    ]

    static let deliveryAttemptsTotal = counter("iapgw_delivery_attempts_total", "Delivery attempts, by downstream")
    static let deliveryFailuresTotal = counter(
        "iapgw_delivery_failures_total",
        "Failed delivery attempts, by downstream"
    )
    static let deliveryDeadTotal = counter("iapgw_delivery_dead_total", "Deliveries dead-lettered, by downstream")
    static let deliveryFilteredTotal = counter(
        "iapgw_delivery_filtered_total",
        "Events (v2_passthrough: notifications) a downstream's filter kept from being queued, by downstream"
    )
    static let deliveryQueueDepth = gauge("iapgw_delivery_queue_depth", "Deliveries waiting, by downstream")
    static let deliveryOldestAgeSeconds = gauge(
        "iapgw_delivery_oldest_age_seconds",
        "Age of the oldest waiting delivery, by downstream"
    )
}
