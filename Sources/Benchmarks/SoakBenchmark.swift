internal import FoundationEssentials
internal import HTTPClient
internal import HTTPServer
import Synchronization
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway bench soak --minutes N`: the real service (its own process) at a steady offered rate for N minutes,
/// V2 and V1 notifications (4:1, V1 through a fake verifyReceipt), delivering to a downstream that fails a fifth of
/// its requests and is down (connections refused) for a minute in the middle (its backoff: 1 s doubling up to 30 s, so
/// the backlog drains within a minute of the load's end). Reports the gateway's resident memory
/// over time (it must stay flat), that every accepted notification was delivered (at least once: each accepted id
/// reaches the downstream), how long the backlog took to drain after the load, and the latency of the answers.
public enum SoakBenchmark {
    public struct Result: Encodable, Sendable {
        public struct Sample: Encodable, Sendable {
            public var second: Int
            public var rssMB: Double
            public var pendingDeliveries: Int
            enum CodingKeys: String, CodingKey {
                case second
                case rssMB = "rss_mb"
                case pendingDeliveries = "accepted_not_yet_delivered"
            }
        }
        public var minutes: Double
        public var offeredRatePerSecond: Int
        public var sent: Int
        public var accepted: Int
        public var refused: Int
        /// Accepted notifications whose event reached the downstream (each counted once).
        public var delivered: Int
        /// Accepted but never delivered, after the drain.
        public var lost: Int
        /// Deliveries beyond the first per event (at-least-once redeliveries after a failure the downstream saw).
        public var redeliveries: Int
        public var downstreamFailuresInjected: Int
        public var outageStartSecond: Int
        public var outageSeconds: Int
        /// From the end of the load until the last accepted notification was delivered.
        public var drainSeconds: Double
        public var p50Ms: Double
        public var p99Ms: Double
        public var rssStartMB: Double
        public var rssEndMB: Double
        public var rssMaxMB: Double
        /// Least-squares slope of the resident memory over the run after its first fifth (warm-up), MB per minute.
        public var rssSlopeMBPerMinute: Double
        public var samples: [Sample]
        public var build: String

        enum CodingKeys: String, CodingKey {
            case minutes, sent, accepted, refused, delivered, lost, redeliveries, samples, build
            case offeredRatePerSecond = "offered_rate_per_second"
            case downstreamFailuresInjected = "downstream_failures_injected"
            case outageStartSecond = "outage_start_second"
            case outageSeconds = "outage_seconds"
            case drainSeconds = "drain_seconds"
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case rssStartMB = "rss_start_mb"
            case rssEndMB = "rss_end_mb"
            case rssMaxMB = "rss_max_mb"
            case rssSlopeMBPerMinute = "rss_slope_mb_per_minute"
        }
    }

    /// The downstream: fails `failureRate` of its requests (a seeded generator, so runs are comparable) and records
    /// every event id it accepted.
    final class Downstream: Sendable {
        private struct State {
            var random: UInt64 = 0x9E37_79B9_7F4A_7C15
            var delivered: Set<String> = []
            var deliveries = 0
            var injected = 0
        }
        private let state = Mutex(State())
        let failureRate: Double
        init(failureRate: Double) { self.failureRate = failureRate }

        func handle(_ request: ServerRequest) -> ServerResponse {
            let fail = state.withLock { s -> Bool in
                // SplitMix64.
                s.random &+= 0x9E37_79B9_7F4A_7C15
                var z = s.random
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                let fail = Double(z >> 11) / Double(1 << 53) < failureRate
                if fail {
                    s.injected += 1
                } else if let id = request.header("webhook-id") {
                    s.deliveries += 1
                    s.delivered.insert(id)
                }
                return fail
            }
            return fail ? .json(500, Array(#"{"error":"injected"}"#.utf8)) : .json(200, Array(#"{"ok":true}"#.utf8))
        }

        var delivered: Set<String> { state.withLock { $0.delivered } }
        var counts: (deliveries: Int, injected: Int) { state.withLock { ($0.deliveries, $0.injected) } }
    }

    public static func run(
        minutes: Double,
        rate: Int = 200,
        failureRate: Double = 0.2,
        outageSeconds: Int = 60,
        drainTimeoutSeconds: Int = 900,
        progress: (@Sendable (String) -> Void)? = nil
    ) async throws -> Result {
        let rig = try BenchRig(label: "soak")
        let downstream = Downstream(failureRate: failureRate)
        var peerConfig = HTTPServer.Configuration()
        peerConfig.threads = 8
        var server: HTTPServer? = HTTPServer(configuration: peerConfig) { downstream.handle($0) }
        try server?.start()
        let downstreamPort = server?.port ?? 0
        defer {
            server?.stopAccepting()
            server?.stop()
        }
        try rig.startGateway(
            downstreams: """
                [ { "name": "main", "url": "http://127.0.0.1:\(downstreamPort)/events", "environments": ["production", "sandbox"],
                    "shadow": true, "concurrency": 8, "max_attempts": 30, "retry_delay": "1s", "max_retry_delay": "30s" } ]
                """,
            appDownstreams: ["main"]
        )
        guard let gateway = rig.gateway else { throw IngestBenchmark.Failure(description: "the gateway did not start") }
        let url = rig.notificationsURL

        let total = max(1, Int(minutes * 60 * Double(rate)))
        let runSeconds = Double(total) / Double(rate)
        let outageLength = min(outageSeconds, max(1, Int(runSeconds / 3)))
        let outageStart = max(0, Int(runSeconds / 2) - outageLength / 2)
        let accepted = Accepted()
        let refused = Counter()
        let latencies = Samples()
        let samples = Mutex<[Result.Sample]>([])
        let transport = CurlTransport(maxConcurrentTransfers: 64)
        let clock = ContinuousClock()
        let start = clock.now
        func elapsed() -> Double {
            let d = clock.now - start
            return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        }
        func sample() {
            let delivered = downstream.delivered
            let waiting = accepted.all.lazy.filter { !delivered.contains($0) }.count
            let s = Result.Sample(second: Int(elapsed()), rssMB: gateway.rssMB, pendingDeliveries: waiting)
            samples.withLock { $0.append(s) }
            progress?("t=\(s.second)s rss=\(s.rssMB)MB accepted=\(accepted.count) waiting=\(waiting)")
        }

        // The load: one notification every 1/rate s, each timed from its scheduled send to its answer. Bodies are signed
        // as they are sent (a run of minutes would not fit in memory pre-signed).
        let sampleEvery = max(5.0, runSeconds / 60)
        var nextSample = 0.0
        var outage: (begun: Bool, ended: Bool) = (false, false)
        await withDiscardingTaskGroup { group in
            for i in 0..<total {
                let scheduled = start.advanced(by: .microseconds(Int64(i) * 1_000_000 / Int64(rate)))
                try? await Task.sleep(until: scheduled, clock: clock)
                let now = elapsed()
                if now >= nextSample {
                    sample()
                    nextSample += sampleEvery
                }
                // The downstream goes down for a minute in the middle: its port refuses connections.
                if !outage.begun, now >= Double(outageStart) {
                    outage.begun = true
                    server?.stopAccepting()
                    server?.stop()
                    server = nil
                    progress?("downstream down at t=\(Int(now))s")
                } else if outage.begun, !outage.ended, now >= Double(outageStart + outageLength) {
                    outage.ended = true
                    var config = peerConfig
                    config.port = downstreamPort
                    let restarted = HTTPServer(configuration: config) { downstream.handle($0) }
                    try? restarted.start()
                    server = restarted
                    progress?("downstream up again at t=\(Int(now))s")
                }
                guard let body = i % 5 == 4 ? BenchRig.v1Body(i) : try? rig.v2Body(i) else { continue }
                group.addTask {
                    let r = try? await transport.send(
                        HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 10_000)
                    )
                    let d = clock.now - scheduled
                    if let r, r.status == 200, case .object(let o)? = try? JSONParser.parse(r.body),
                        let id = o["id"]?.stringValue
                    {
                        accepted.append(id)
                        latencies.append(d.milliseconds)
                    } else {
                        refused.add(1)
                    }
                }
            }
        }
        if !outage.ended {  // a run too short to reach the end of the outage
            var config = peerConfig
            config.port = downstreamPort
            let restarted = HTTPServer(configuration: config) { downstream.handle($0) }
            try restarted.start()
            server = restarted
        }

        // The drain: until every accepted notification reached the downstream (or the timeout).
        let loadEnded = elapsed()
        let ids = Set(accepted.all)
        var lastSample = loadEnded
        while elapsed() - loadEnded < Double(drainTimeoutSeconds), !downstream.delivered.isSuperset(of: ids) {
            if elapsed() - lastSample >= sampleEvery {
                sample()
                lastSample = elapsed()
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
        let drain = elapsed() - loadEnded
        sample()
        let (status, _) = rig.finish()
        guard status == 0 else {
            throw IngestBenchmark.Failure(description: "the gateway exited with status \(status)")
        }

        let delivered = downstream.delivered.intersection(ids).count
        let counts = downstream.counts
        let all = samples.withLock { $0 }
        let warm = all.filter { Double($0.second) >= runSeconds / 5 && Double($0.second) <= loadEnded }
        let sorted = latencies.all.sorted()
        return Result(
            minutes: minutes,
            offeredRatePerSecond: rate,
            sent: total,
            accepted: ids.count,
            refused: refused.value,
            delivered: delivered,
            lost: ids.count - delivered,
            redeliveries: counts.deliveries - downstream.delivered.count,
            downstreamFailuresInjected: counts.injected,
            outageStartSecond: outageStart,
            outageSeconds: outageLength,
            drainSeconds: (drain * 10).rounded() / 10,
            p50Ms: sorted.quantile(0.5, decimals: 2),
            p99Ms: sorted.quantile(0.99, decimals: 2),
            rssStartMB: warm.first?.rssMB ?? 0,
            rssEndMB: warm.last?.rssMB ?? 0,
            rssMaxMB: all.map(\.rssMB).max() ?? 0,
            rssSlopeMBPerMinute: slope(warm.map { (Double($0.second) / 60, $0.rssMB) }),
            samples: all,
            build: VerifyBenchmark.buildKind
        )
    }

    /// The ids of accepted notifications, from the load's tasks.
    final class Accepted: Sendable {
        private let ids = Mutex<[String]>([])
        func append(_ id: String) { ids.withLock { $0.append(id) } }
        var all: [String] { ids.withLock { $0 } }
        var count: Int { ids.withLock { $0.count } }
    }

    /// Least-squares slope of y over x (0 for fewer than two points).
    static func slope(_ points: [(Double, Double)]) -> Double {
        guard points.count >= 2 else { return 0 }
        let n = Double(points.count)
        let mx = points.reduce(0) { $0 + $1.0 } / n
        let my = points.reduce(0) { $0 + $1.1 } / n
        let sxx = points.reduce(0) { $0 + ($1.0 - mx) * ($1.0 - mx) }
        let sxy = points.reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
        return sxx > 0 ? ((sxy / sxx) * 100).rounded() / 100 : 0
    }
}
