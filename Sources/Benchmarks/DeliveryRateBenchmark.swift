internal import FoundationEssentials
internal import HTTPClient
internal import HTTPServer
import Synchronization

/// `iap-gateway bench delivery-rate`: `downstreams[].max_per_second` held after an outage. The real service (its own
/// process) takes a backlog of V2 notifications while its downstream is down (503 to everything) for
/// `outageSeconds`, retrying every second or two; then the downstream answers 200, and the deliveries it accepts are
/// counted per second for `seconds`. With `max_per_second: rate` they arrive at `rate` per second, not as fast as
/// `concurrency` would allow (docs/operations.md, "Pacing a receiver after an outage").
public enum DeliveryRateBenchmark {
    public struct Result: Encodable, Sendable {
        public var maxPerSecond: Int
        public var concurrency: Int
        public var outageSeconds: Double
        public var backlog: Int
        public var measuredSeconds: Double
        /// Deliveries the downstream accepted in the measured window.
        public var delivered: Int
        public var ratePerSecond: Double
        /// `ratePerSecond / maxPerSecond`.
        public var ratio: Double
        /// Accepted deliveries in each second of the window.
        public var perSecond: [Int]
        public var withinTenPercent: Bool
        public var build: String

        enum CodingKeys: String, CodingKey {
            case backlog, concurrency, delivered, ratio, build
            case maxPerSecond = "max_per_second"
            case outageSeconds = "outage_seconds"
            case measuredSeconds = "measured_seconds"
            case ratePerSecond = "rate_per_second"
            case perSecond = "per_second"
            case withinTenPercent = "within_10_percent"
        }
    }

    /// The downstream: 503 until it is up, then 200, noting when it accepted each delivery.
    final class Downstream: Sendable {
        private let up = Atomic<Bool>(false)
        private let accepted = Mutex<[ContinuousClock.Instant]>([])
        func comeUp() { up.store(true, ordering: .sequentiallyConsistent) }
        func handle(_ request: ServerRequest) -> ServerResponse {
            guard up.load(ordering: .sequentiallyConsistent) else {
                return .json(503, Array(#"{"error":"down"}"#.utf8))
            }
            accepted.withLock { $0.append(.now) }
            return .json(200, Array(#"{"ok":true}"#.utf8))
        }
        func accepted(from start: ContinuousClock.Instant, seconds: Int) -> [Int] {
            let times = accepted.withLock { $0 }
            var counts = Array(repeating: 0, count: seconds)
            for t in times where t >= start {
                let second = Int((t - start) / .seconds(1))
                if second < seconds { counts[second] += 1 }
            }
            return counts
        }
    }

    public static func run(rate: Int = 50, outageSeconds: Double = 60, seconds: Int = 10) async throws -> Result {
        let concurrency = 16
        let rig = try BenchRig(label: "delivery-rate")
        let downstream = Downstream()
        var peer = HTTPServer.Configuration()
        peer.threads = 8
        let server = HTTPServer(configuration: peer) { downstream.handle($0) }
        try server.start()
        defer {
            server.stopAccepting()
            server.stop()
        }
        try rig.startGateway(
            downstreams: """
                [ { "name": "main", "url": "http://127.0.0.1:\(server.port)/events", "environments": ["production", "sandbox"],
                    "shadow": true, "concurrency": \(concurrency), "max_per_second": \(rate), "max_attempts": 1000,
                    "retry_delay": "1s", "max_retry_delay": "2s" } ]
                """,
            appDownstreams: ["main"]
        )
        // More than the window can take at the rate, so the limit, not the backlog, sets the pace.
        let backlog = rate * (seconds + 5)
        let transport = CurlTransport(maxConcurrentTransfers: 16)
        let url = rig.notificationsURL
        let started = ContinuousClock.now
        var accepted = 0
        for first in stride(from: 0, to: backlog, by: 16) {
            let bodies = try (first..<min(backlog, first + 16)).map { try rig.v2Body($0) }
            accepted += await withTaskGroup(of: Int.self) { group in
                for body in bodies {
                    group.addTask {
                        let r = try? await transport.send(HTTPRequest(method: .post, url: url, body: body))
                        return r?.status == 200 ? 1 : 0
                    }
                }
                return await group.reduce(0, +)
            }
        }
        let outageLeft = outageSeconds - (ContinuousClock.now - started) / .seconds(1)
        if outageLeft > 0 { try await Task.sleep(for: .milliseconds(Int64(outageLeft * 1000))) }
        downstream.comeUp()
        let up = ContinuousClock.now
        try await Task.sleep(until: up + .seconds(seconds), clock: .continuous)
        let perSecond = downstream.accepted(from: up, seconds: seconds)
        let status = rig.finish().status
        guard status == 0 else {
            throw IngestBenchmark.Failure(description: "the gateway stopped with status \(status)")
        }
        let delivered = perSecond.reduce(0, +)
        let measured = Double(delivered) / Double(seconds)
        let ratio = measured / Double(rate)
        return Result(
            maxPerSecond: rate,
            concurrency: concurrency,
            outageSeconds: outageSeconds,
            backlog: accepted,
            measuredSeconds: Double(seconds),
            delivered: delivered,
            ratePerSecond: (measured * 10).rounded() / 10,
            ratio: (ratio * 1000).rounded() / 1000,
            perSecond: perSecond,
            withinTenPercent: abs(ratio - 1) <= 0.1,
            build: VerifyBenchmark.buildKind
        )
    }
}
