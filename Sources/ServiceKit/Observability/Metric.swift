/// A metric the gateway exports: its name, its type, its help text (the `# HELP` and `# TYPE` lines of `/metrics`)
/// and a histogram's buckets. Each part of the gateway declares the metrics it records beside its code —
/// `extension Metric { static let … }` and the list of them (`Metric.receiptPath`) — and the composition root
/// (`Service/`) joins the lists into the one catalogue `/metrics` declares (docs/operations.md, "Metrics", documents
/// each). Code counts through these constants (`metrics.increment(.quarantinedTotal, ["lane": …])`), never through a
/// name spelled out.
package struct Metric: Hashable, Sendable {
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// The exported name: `iapgw_…`, a counter's ending in `_total`.
    package let name: String
    package let kind: Kind
    /// The `# HELP` text: what is counted, and by which labels.
    package let help: String
    /// A histogram's bucket bounds; empty for counters and gauges.
    package let buckets: [Double]

    package static func counter(_ name: String, _ help: String) -> Metric {
        Metric(name: name, kind: .counter, help: help, buckets: [])
    }

    package static func gauge(_ name: String, _ help: String) -> Metric {
        Metric(name: name, kind: .gauge, help: help, buckets: [])
    }

    package static func histogram(_ name: String, _ help: String, buckets: [Double] = Metrics.latencyBuckets) -> Metric
    {
        Metric(name: name, kind: .histogram, help: help, buckets: buckets)
    }
}

/// Counting through the catalogue (debug builds check the metric's type).
extension Metrics {
    /// Declares each metric's type and help text.
    package func describe(_ catalogue: [Metric]) {
        for metric in catalogue {
            describe(metric.name, type: metric.kind.rawValue, metric.help)
        }
    }

    /// A series to hold and count into without the registry's lock (the request path resolves its own at startup).
    package func counterSeries(_ metric: Metric, _ labels: [String: String] = [:]) -> CounterSeries {
        assert(metric.kind == .counter, "\(metric.name) is not a counter")
        return counterSeries(metric.name, labels)
    }

    package func histogramSeries(_ metric: Metric, _ labels: [String: String] = [:]) -> HistogramSeries {
        assert(metric.kind == .histogram, "\(metric.name) is not a histogram")
        return histogramSeries(metric.name, labels, buckets: metric.buckets)
    }

    package func increment(_ metric: Metric, _ labels: [String: String] = [:], by value: Double = 1) {
        assert(metric.kind == .counter, "\(metric.name) is not a counter")
        increment(metric.name, labels, by: value)
    }

    package func set(_ metric: Metric, _ labels: [String: String] = [:], _ value: Double) {
        assert(metric.kind == .gauge, "\(metric.name) is not a gauge")
        set(metric.name, labels, value)
    }

    package func observe(_ metric: Metric, _ labels: [String: String] = [:], _ value: Double) {
        assert(metric.kind == .histogram, "\(metric.name) is not a histogram")
        observe(metric.name, labels, value, buckets: metric.buckets)
    }
}
