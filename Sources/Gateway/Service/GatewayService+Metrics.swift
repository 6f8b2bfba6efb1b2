internal import ServiceKit

extension GatewayService {
    /// Every metric the gateway exports, declared (`# HELP`, `# TYPE`) in `/metrics` and documented in
    /// docs/operations.md, "Metrics": each part's list, declared beside the code that records them. A new part adds
    /// its list here.
    static let metricCatalogue: [Metric] =
        Metric.kernel + Metric.notifications + Metric.delivery + Metric.comparison + Metric.reconciliation
        + Metric.receiptPath + Metric.refundRequests + Metric.appleAPI
}
