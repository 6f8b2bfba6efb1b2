/// The metrics of what every part is built on: the store's refused writes (a worker's outcome, the notification
/// endpoint's journal) and the alerts channel (``AlertWebhook``).
extension Metric {
    package static let kernel: [Metric] = [.storeFailuresTotal, .alertsTotal]

    package static let storeFailuresTotal = counter(
        "iapgw_store_failures_total",
        "Writes the store refused (a full disk), by operation: journal (answered 503) or job_outcome (retried)"
    )
    package static let alertsTotal = counter(
        "iapgw_alerts_total",
        "Alerts to alerts.webhook, by outcome (sent, failed after retries, dropped)"
    )
}
