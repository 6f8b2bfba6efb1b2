import Dispatch
import Testing

@testable import ServiceKit

/// The metrics' recording (lock-free atomics per series) and their exposition.
@Suite struct MetricsTests {
    /// Many threads counting at once, through held series and by name, lose nothing.
    @Test func concurrentRecordingSumsExactly() {
        let metrics = Metrics()
        let held = metrics.counterSeries("t_total", ["version": "v2"])
        let histogram = metrics.histogramSeries("t_seconds", ["version": "v2"], buckets: [0.5, 1])
        let threads = 8
        let perThread = 20_000
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                held.increment(by: 1)
                if i % 10 == 0 { metrics.increment("t_total", ["version": "v1"], by: 2) }
                // 0.25 and 0.75 are exact in binary: the sum is exact too, whatever order the additions run in.
                histogram.observe(i % 2 == 0 ? 0.25 : 0.75)
                if t == 0, i % 1_000 == 0 { _ = metrics.render() }  // rendering meanwhile takes nothing from them
            }
        }
        let total = Double(threads * perThread)
        #expect(metrics.counter("t_total", ["version": "v2"]) == total)
        #expect(metrics.counter("t_total", ["version": "v1"]) == Double(threads * perThread / 10 * 2))
        let text = metrics.render()
        #expect(text.contains(#"t_seconds_bucket{version="v2",le="0.5"} \#(threads * perThread / 2)"# + "\n"))
        #expect(text.contains(#"t_seconds_bucket{version="v2",le="+Inf"} \#(threads * perThread)"# + "\n"))
        #expect(text.contains(#"t_seconds_count{version="v2"} \#(threads * perThread)"# + "\n"))
        #expect(text.contains(#"t_seconds_sum{version="v2"} \#(threads * perThread / 2)"# + "\n"))
    }

    /// The exposition, byte for byte: help and type once per metric, series sorted, histograms cumulative with
    /// `+Inf`, `_sum` and `_count`; a series resolved but never recorded into is not shown.
    @Test func rendersThePrometheusTextFormat() {
        let metrics = Metrics()
        metrics.describe("a_total", type: "counter", "A things")
        _ = metrics.counterSeries("unused_total", ["version": "v1"])
        _ = metrics.histogramSeries("unused_seconds")
        metrics.increment("a_total", ["version": "v2"], by: 3)
        metrics.counterSeries("a_total", ["version": "v1"]).increment(by: 1)
        metrics.set("g", [:], 1.5)
        metrics.set("g2", ["downstream": #"a"b"#], 2)
        metrics.observe("h_seconds", ["version": "v2"], 0.25, buckets: [0.5, 1])
        metrics.histogramSeries("h_seconds", ["version": "v2"]).observe(0.75)
        metrics.observe("h_seconds", ["version": "v2"], 3, buckets: [0.5, 1])
        #expect(metrics.gauge("g") == 1.5)
        #expect(metrics.gauge("never") == nil)
        #expect(metrics.counter("unused_total", ["version": "v1"]) == 0)
        #expect(
            metrics.render() == """
                # HELP a_total A things
                # TYPE a_total counter
                a_total{version="v1"} 1
                a_total{version="v2"} 3
                # TYPE g gauge
                g 1.5
                # TYPE g2 gauge
                g2{downstream="a\\"b"} 2
                # TYPE h_seconds histogram
                h_seconds_bucket{version="v2",le="0.5"} 1
                h_seconds_bucket{version="v2",le="1"} 2
                h_seconds_bucket{version="v2",le="+Inf"} 3
                h_seconds_sum{version="v2"} 4
                h_seconds_count{version="v2"} 3

                """
        )
    }
}
