import Synchronization

/// Counters, gauges and histograms, rendered in Prometheus' text format for `GET /metrics`. Label values are our
/// own vocabulary (versions, error codes, downstream names), never request data.
///
/// Each series (a metric and its labels) is a set of atomic cells, created once and never removed. Recording is
/// lock-free: the request path holds its series (``CounterSeries``, ``HistogramSeries``), resolved at startup, and
/// adds to their cells; the lock guards only the registry of series — taken to find or create one by name and labels
/// (rare paths: workers, refusals) and to render `/metrics`.
public final class Metrics: Sendable {
    package struct Key: Hashable, Comparable {
        package let name: String
        package let labels: [String]  // "k=\"v\"" pairs, sorted
        package static func < (a: Key, b: Key) -> Bool { (a.name, a.labels.joined()) < (b.name, b.labels.joined()) }
    }

    /// One counter. Whole increments are one atomic add; a fractional one (no caller makes one today) goes to a
    /// second cell holding a `Double`, added by compare-and-exchange. Shown in `/metrics` once recorded.
    public final class CounterSeries: Sendable {
        fileprivate let whole = Atomic<UInt64>(0)
        fileprivate let fraction = Atomic<UInt64>(0)  // a Double's bit pattern
        fileprivate let recorded = Atomic<Bool>(false)

        fileprivate init() {}

        public func increment(by value: Double = 1) {
            if value >= 0, value < 1.8e19, value == value.rounded(.towardZero) {
                whole.wrappingAdd(UInt64(value), ordering: .relaxed)
            } else {
                fraction.add(value)
            }
            recorded.markSet()
        }

        public func increment(by count: Int) {
            guard count >= 0 else { return increment(by: Double(count)) }
            whole.wrappingAdd(UInt64(count), ordering: .relaxed)
            recorded.markSet()
        }

        package var value: Double {
            Double(whole.load(ordering: .relaxed)) + Double(bitPattern: fraction.load(ordering: .relaxed))
        }
    }

    /// One gauge: the last value set. Shown in `/metrics` once set.
    public final class GaugeSeries: Sendable {
        fileprivate let bits = Atomic<UInt64>(0)
        fileprivate let recorded = Atomic<Bool>(false)

        fileprivate init() {}

        public func set(_ value: Double) {
            bits.store(value.bitPattern, ordering: .relaxed)
            recorded.markSet()
        }

        package var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
    }

    /// One histogram: a count per bucket (not cumulative: one atomic add per observation; `/metrics` sums them up) and
    /// the sum of the values. The total count is the buckets' sum, so `_count` always equals the `+Inf` bucket.
    public final class HistogramSeries: Sendable {
        final class Cell: Sendable {
            let count = Atomic<UInt64>(0)
        }

        package let bounds: [Double]
        /// One per bound, then the one above the last bound.
        let cells: [Cell]
        fileprivate let sum = Atomic<UInt64>(0)  // a Double's bit pattern
        fileprivate let recorded = Atomic<Bool>(false)

        fileprivate init(bounds: [Double]) {
            self.bounds = bounds
            cells = (0...bounds.count).map { _ in Cell() }
        }

        public func observe(_ value: Double) {
            var index = 0
            while index < bounds.count, !(value <= bounds[index]) { index += 1 }
            cells[index].count.wrappingAdd(1, ordering: .relaxed)
            sum.add(value)
            recorded.markSet()
        }

        /// The cumulative counts (one per bound, then `+Inf`) and the sum.
        package func snapshot() -> (cumulative: [UInt64], sum: Double) {
            var total: UInt64 = 0
            var cumulative: [UInt64] = []
            cumulative.reserveCapacity(cells.count)
            for cell in cells {
                total &+= cell.count.load(ordering: .relaxed)
                cumulative.append(total)
            }
            return (cumulative, Double(bitPattern: sum.load(ordering: .relaxed)))
        }
    }

    private struct Registry {
        var counters: [Key: CounterSeries] = [:]
        var gauges: [Key: GaugeSeries] = [:]
        var histograms: [Key: HistogramSeries] = [:]
        var help: [String: (type: String, text: String)] = [:]
    }

    private let registry = Mutex(Registry())

    /// Latency buckets in seconds: 0.5 ms … 10 s.
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    public init() {}

    package static func key(_ name: String, _ labels: [String: String]) -> Key {
        if labels.isEmpty { return Key(name: name, labels: []) }
        if labels.count == 1, let (k, v) = labels.first {
            return Key(name: name, labels: [k + "=\"" + escape(v) + "\""])
        }
        return Key(
            name: name,
            labels: labels.sorted { $0.key < $1.key }.map { $0.key + "=\"" + escape($0.value) + "\"" }
        )
    }

    package static func escape(_ v: String) -> String {
        guard v.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }) else {
            return v
        }
        var out = ""
        for c in v {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// Declares a metric's type and help text (shown once in the exposition).
    public func describe(_ name: String, type: String, _ text: String) {
        registry.withLock { $0.help[name] = (type, text) }
    }

    // MARK: Series: found or created under the lock, then recorded into without it

    /// The counter `name` with `labels`, created (at zero, not shown until incremented) if new. Hold it to count on a
    /// hot path without the lock.
    public func counterSeries(_ name: String, _ labels: [String: String] = [:]) -> CounterSeries {
        let k = Self.key(name, labels)
        return registry.withLock { r in
            if let series = r.counters[k] { return series }
            let series = CounterSeries()
            r.counters[k] = series
            return series
        }
    }

    public func gaugeSeries(_ name: String, _ labels: [String: String] = [:]) -> GaugeSeries {
        let k = Self.key(name, labels)
        return registry.withLock { r in
            if let series = r.gauges[k] { return series }
            let series = GaugeSeries()
            r.gauges[k] = series
            return series
        }
    }

    /// The histogram `name` with `labels`; `buckets` apply when it is created (the first caller's stay).
    public func histogramSeries(
        _ name: String,
        _ labels: [String: String] = [:],
        buckets: [Double] = Metrics.latencyBuckets
    ) -> HistogramSeries {
        let k = Self.key(name, labels)
        return registry.withLock { r in
            if let series = r.histograms[k] { return series }
            let series = HistogramSeries(bounds: buckets)
            r.histograms[k] = series
            return series
        }
    }

    // MARK: Recording by name (a look-up under the lock, then the series' atomics)

    public func increment(_ name: String, _ labels: [String: String] = [:], by value: Double = 1) {
        counterSeries(name, labels).increment(by: value)
    }

    public func set(_ name: String, _ labels: [String: String] = [:], _ value: Double) {
        gaugeSeries(name, labels).set(value)
    }

    public func observe(
        _ name: String,
        _ labels: [String: String] = [:],
        _ value: Double,
        buckets: [Double] = Metrics.latencyBuckets
    ) {
        histogramSeries(name, labels, buckets: buckets).observe(value)
    }

    /// A counter's current value (tests, status endpoint).
    public func counter(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let k = Self.key(name, labels)
        return registry.withLock { $0.counters[k] }?.value ?? 0
    }

    public func gauge(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let k = Self.key(name, labels)
        guard let series = registry.withLock({ $0.gauges[k] }), series.recorded.load(ordering: .acquiring) else {
            return nil
        }
        return series.value
    }

    /// Prometheus text exposition format 0.0.4. Series created but never recorded into are left out.
    public func render() -> String {
        let (counters, gauges, histograms, help) = registry.withLock { r in
            (
                r.counters.filter { $0.value.recorded.load(ordering: .acquiring) }.sorted { $0.key < $1.key },
                r.gauges.filter { $0.value.recorded.load(ordering: .acquiring) }.sorted { $0.key < $1.key },
                r.histograms.filter { $0.value.recorded.load(ordering: .acquiring) }.sorted { $0.key < $1.key },
                r.help
            )
        }
        var out = ""
        var described: Set<String> = []
        func header(_ name: String, _ fallback: String) {
            guard described.insert(name).inserted else { return }
            if let h = help[name] {
                out += "# HELP \(name) \(h.text)\n# TYPE \(name) \(h.type)\n"
            } else {
                out += "# TYPE \(name) \(fallback)\n"
            }
        }
        func series(_ k: Key, suffix: String = "", extra: [String] = []) -> String {
            let labels = k.labels + extra
            return k.name + suffix + (labels.isEmpty ? "" : "{" + labels.joined(separator: ",") + "}")
        }
        for (k, c) in counters {
            header(k.name, "counter")
            out += "\(series(k)) \(format(c.value))\n"
        }
        for (k, g) in gauges {
            header(k.name, "gauge")
            out += "\(series(k)) \(format(g.value))\n"
        }
        for (k, h) in histograms {
            header(k.name, "histogram")
            let (cumulative, sum) = h.snapshot()
            for (i, b) in h.bounds.enumerated() {
                out += "\(series(k, suffix: "_bucket", extra: ["le=\"\(format(b))\""])) \(cumulative[i])\n"
            }
            let count = cumulative[h.bounds.count]
            out += "\(series(k, suffix: "_bucket", extra: ["le=\"+Inf\""])) \(count)\n"
            out += "\(series(k, suffix: "_sum")) \(format(sum))\n"
            out += "\(series(k, suffix: "_count")) \(count)\n"
        }
        return out
    }

    private func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }
}

extension Atomic where Value == UInt64 {
    /// Adds `value` to the `Double` whose bit pattern this holds.
    fileprivate func add(_ value: Double) {
        var old = load(ordering: .relaxed)
        while true {
            let new = (Double(bitPattern: old) + value).bitPattern
            let (exchanged, original) = weakCompareExchange(expected: old, desired: new, ordering: .relaxed)
            if exchanged { return }
            old = original
        }
    }
}

extension Atomic where Value == Bool {
    /// Sets the flag, writing only the first time (a load, not a store, on every later call).
    fileprivate func markSet() {
        if !load(ordering: .relaxed) { store(true, ordering: .releasing) }
    }
}
