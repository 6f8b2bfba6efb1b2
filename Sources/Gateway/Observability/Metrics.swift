import Synchronization

/// Counters, gauges and histograms, rendered in Prometheus' text format for `GET /metrics`. Label values are our
/// own vocabulary (versions, error codes, downstream names), never request data.
public final class Metrics: Sendable {
    struct Key: Hashable, Comparable {
        let name: String
        let labels: [String]  // "k=\"v\"" pairs, sorted
        static func < (a: Key, b: Key) -> Bool { (a.name, a.labels.joined()) < (b.name, b.labels.joined()) }
    }

    struct Histogram {
        var buckets: [Double]
        var counts: [Int]
        var sum: Double = 0
        var count: Int = 0

        /// Counts `value`, whose first bucket (the smallest bound ≥ value) is `index`; counts are cumulative.
        mutating func record(_ index: Int, _ value: Double) {
            var i = index
            while i < counts.count {
                counts[i] += 1
                i += 1
            }
            sum += value
            count += 1
        }
    }

    private struct State {
        var counters: [Key: Double] = [:]
        var gauges: [Key: Double] = [:]
        var histograms: [Key: Histogram] = [:]
        var help: [String: (type: String, text: String)] = [:]
    }

    private let state = Mutex(State())

    /// Latency buckets in seconds: 0.5 ms … 10 s.
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    public init() {}

    static func key(_ name: String, _ labels: [String: String]) -> Key {
        if labels.isEmpty { return Key(name: name, labels: []) }
        if labels.count == 1, let (k, v) = labels.first {
            return Key(name: name, labels: [k + "=\"" + escape(v) + "\""])
        }
        return Key(
            name: name,
            labels: labels.sorted { $0.key < $1.key }.map { $0.key + "=\"" + escape($0.value) + "\"" }
        )
    }

    static func escape(_ v: String) -> String {
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
        state.withLock { $0.help[name] = (type, text) }
    }

    public func increment(_ name: String, _ labels: [String: String] = [:], by value: Double = 1) {
        let k = Self.key(name, labels)
        state.withLock { $0.counters[k, default: 0] += value }
    }

    public func set(_ name: String, _ labels: [String: String] = [:], _ value: Double) {
        let k = Self.key(name, labels)
        state.withLock { $0.gauges[k] = value }
    }

    public func observe(
        _ name: String,
        _ labels: [String: String] = [:],
        _ value: Double,
        buckets: [Double] = Metrics.latencyBuckets
    ) {
        let k = Self.key(name, labels)
        // Only the bucket index is found under the lock's hold, and the histogram is updated in place (a copy out and
        // back would allocate while every request thread waits).
        let index = buckets.firstIndex { value <= $0 } ?? buckets.count
        state.withLock { s in
            s.histograms[k, default: Histogram(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))]
                .record(index, value)
        }
    }

    /// A counter's current value (tests, status endpoint).
    public func counter(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let k = Self.key(name, labels)
        return state.withLock { $0.counters[k] ?? 0 }
    }

    public func gauge(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let k = Self.key(name, labels)
        return state.withLock { $0.gauges[k] }
    }

    /// Prometheus text exposition format 0.0.4.
    public func render() -> String {
        state.withLock { s in
            var out = ""
            var described: Set<String> = []
            func header(_ name: String, _ fallback: String) {
                guard described.insert(name).inserted else { return }
                if let h = s.help[name] {
                    out += "# HELP \(name) \(h.text)\n# TYPE \(name) \(h.type)\n"
                } else {
                    out += "# TYPE \(name) \(fallback)\n"
                }
            }
            func series(_ k: Key, suffix: String = "", extra: [String] = []) -> String {
                let labels = k.labels + extra
                return k.name + suffix + (labels.isEmpty ? "" : "{" + labels.joined(separator: ",") + "}")
            }
            for (k, v) in s.counters.sorted(by: { $0.key < $1.key }) {
                header(k.name, "counter")
                out += "\(series(k)) \(format(v))\n"
            }
            for (k, v) in s.gauges.sorted(by: { $0.key < $1.key }) {
                header(k.name, "gauge")
                out += "\(series(k)) \(format(v))\n"
            }
            for (k, h) in s.histograms.sorted(by: { $0.key < $1.key }) {
                header(k.name, "histogram")
                for (i, b) in h.buckets.enumerated() {
                    out += "\(series(k, suffix: "_bucket", extra: ["le=\"\(format(b))\""])) \(h.counts[i])\n"
                }
                out += "\(series(k, suffix: "_bucket", extra: ["le=\"+Inf\""])) \(h.count)\n"
                out += "\(series(k, suffix: "_sum")) \(format(h.sum))\n"
                out += "\(series(k, suffix: "_count")) \(h.count)\n"
            }
            return out
        }
    }

    private func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }
}
