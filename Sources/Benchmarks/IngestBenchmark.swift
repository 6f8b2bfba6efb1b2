internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import HTTPServer
internal import ServiceKit
import Synchronization
internal import Threads
internal import V2Adapter
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway bench ingest`: a self-contained run of the real service — a generated Apple-shaped test PKI, a
/// temporary SQLite store (WAL, synchronous=FULL) or a fresh schema in a PostgreSQL database (one gateway or several
/// sharing it), a local downstream and a local fake verifyReceipt — driven over loopback with V2 and V1 bodies signed
/// before the timed runs, sent to the gateways in turn. Reports durable ingest throughput (closed loop), latency at a
/// fixed offered rate (open loop) and each gateway process's peak RSS.
public enum IngestBenchmark {
    public struct Result: Encodable, Sendable {
        public var notificationsPerSecond: Double
        /// The same closed loop against a bare libmicrohttpd server answering 200, in the same run.
        public var httpBaselinePerSecond: Double
        /// `notificationsPerSecond / httpBaselinePerSecond`: how much of what loopback HTTP allows right now the
        /// durable ingest keeps — the figure to compare across runs on a noisy machine.
        public var fractionOfHTTPBaseline: Double
        /// The gateway process's CPU time (all threads, user + system) from the closed loop's start until every
        /// notification it accepted was delivered, per notification accepted: ingest, its deliveries and verifyReceipt
        /// calls. Steadier than throughput on a machine shared with noisy neighbours.
        public var gatewayCPUMsPerNotification: Double
        public var p50Ms: Double
        public var p99Ms: Double
        public var offeredRatePerSecond: Int
        public var latencySamples: Int
        public var failures: Int
        /// The failures by answer: an HTTP status, or `transport` (no answer).
        public var failuresByAnswer: [String: Int]
        /// The largest peak RSS of the gateway processes.
        public var peakRSSMB: Double
        /// Each gateway process's peak RSS, in the order they were started.
        public var peakRSSMBPerInstance: [Double]
        /// Journal writes per store transaction (one fsync each), across the gateways: the group commit at work.
        public var writesPerCommit: Double
        public var concurrency: Int
        public var v1Share: Double
        /// Whether the events were delivered (`--no-delivery` turns it off).
        public var delivery: Bool
        public var seconds: Double
        public var build: String
        /// `sqlite` or `postgres`.
        public var store: String
        /// Gateway processes sharing the store; the load alternates between them.
        public var instances: Int
        /// How long the closed loop's deliveries took to reach the downstream after it ended: the open loop waits for
        /// them, so that its latencies are those of the offered rate alone.
        public var drainSecondsBeforeOpenLoop: Double
        /// The gateway processes' CPU time during the open loop per notification answered: ingest with its
        /// deliveries (and verifyReceipt calls) at the offered rate.
        public var openLoopGatewayCPUMsPerNotification: Double
        /// Share of the machine's cores busy during the open loop (the store's server too, when it runs here): near 1,
        /// the latencies measure a saturated machine.
        public var openLoopMachineBusy: Double
        /// Share of the machine's CPU time the hypervisor gave to others during the open loop.
        public var openLoopMachineSteal: Double
        /// A small write made durable (8 KiB and `fdatasync`, every 50 ms in the bench's folder) during the open loop:
        /// the median and the worst, in ms. Every commit of a durable store waits for one; a p99 near the worst
        /// fsync was set by the disk.
        public var openLoopFsyncP50Ms: Double
        public var openLoopFsyncMaxMs: Double
        /// `gateway_cpu_ms_per_notification` (closed loop) and its open-loop twin, by the gateway's threads:
        /// `handlers` (verification, mapping, answers), `writer` (the store's transactions and commits), `http`
        /// (libmicrohttpd's I/O threads) and `other` (deliveries, verifyReceipt calls, the rest).
        public var gatewayCPUMsPerNotificationByThread: ThreadCPU
        public var openLoopGatewayCPUMsPerNotificationByThread: ThreadCPU
        /// libcrypto's own P-256 signature check (one verify over a precomputed digest, its context reused: the loop
        /// `openssl speed ecdsap256` times), measured in this run just before each loop, in ms. On a shared machine the
        /// CPU's speed drifts between runs; the gateway's CPU per notification in units of this verify drifts less.
        public var p256VerifyMs: Double
        /// `gateway_cpu_ms_per_notification` / `p256_verify_ms`, and the same for the open loop.
        public var gatewayCPUPerNotificationInP256Verifies: Double
        public var openLoopGatewayCPUPerNotificationInP256Verifies: Double
        /// Every process's CPU time on the machine over the same span, per notification answered: the gateways, the
        /// bench's client and downstream, and a PostgreSQL server. Where the machine is saturated, its throughput is
        /// about the cores' time divided by this.
        public var machineCPUMsPerNotification: Double

        enum CodingKeys: String, CodingKey {
            case notificationsPerSecond = "notifications_per_second"
            case httpBaselinePerSecond = "http_baseline_per_second"
            case fractionOfHTTPBaseline = "fraction_of_http_baseline"
            case gatewayCPUMsPerNotification = "gateway_cpu_ms_per_notification"
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case offeredRatePerSecond = "offered_rate_per_second"
            case latencySamples = "latency_samples"
            case failures
            case failuresByAnswer = "failures_by_answer"
            case peakRSSMB = "peak_rss_mb"
            case peakRSSMBPerInstance = "peak_rss_mb_per_instance"
            case writesPerCommit = "writes_per_commit"
            case concurrency
            case v1Share = "v1_share"
            case seconds, build, delivery, store, instances
            case drainSecondsBeforeOpenLoop = "drain_seconds_before_open_loop"
            case openLoopGatewayCPUMsPerNotification = "open_loop_gateway_cpu_ms_per_notification"
            case openLoopMachineBusy = "open_loop_machine_busy"
            case openLoopMachineSteal = "open_loop_machine_steal"
            case openLoopFsyncP50Ms = "open_loop_fsync_p50_ms"
            case openLoopFsyncMaxMs = "open_loop_fsync_max_ms"
            case gatewayCPUMsPerNotificationByThread = "gateway_cpu_ms_per_notification_by_thread"
            case openLoopGatewayCPUMsPerNotificationByThread = "open_loop_gateway_cpu_ms_per_notification_by_thread"
            case p256VerifyMs = "p256_verify_ms"
            case gatewayCPUPerNotificationInP256Verifies = "gateway_cpu_per_notification_in_p256_verifies"
            case openLoopGatewayCPUPerNotificationInP256Verifies =
                "open_loop_gateway_cpu_per_notification_in_p256_verifies"
            case machineCPUMsPerNotification = "machine_cpu_ms_per_notification"
        }
    }

    /// A share of the gateways' CPU time per notification, in ms, by thread.
    public struct ThreadCPU: Codable, Sendable, Equatable {
        public var handlers: Double
        public var writer: Double
        public var http: Double
        public var other: Double

        /// The gateways' threads' CPU seconds between two readings, per notification: a thread named by the gateway
        /// counts under its name; everything else — threads of other names, and those that ended between the
        /// readings — is `other` (the process's total less the named ones).
        static func between(
            _ before: [(total: Double, threads: [String: Double])],
            _ after: [(total: Double, threads: [String: Double])],
            notifications: Int
        ) -> ThreadCPU {
            guard notifications > 0 else { return ThreadCPU(handlers: 0, writer: 0, http: 0, other: 0) }
            var (total, handlers, writer, http) = (0.0, 0.0, 0.0, 0.0)
            for (b, a) in zip(before, after) {
                func delta(_ name: String) -> Double { (a.threads[name] ?? 0) - (b.threads[name] ?? 0) }
                total += a.total - b.total
                handlers += delta(ThreadName.handler)
                writer += delta(ThreadName.writer)
                http += delta(ThreadName.http)
            }
            func ms(_ seconds: Double) -> Double { (seconds / Double(notifications) * 1_000_000).rounded() / 1000 }
            return ThreadCPU(
                handlers: ms(handlers),
                writer: ms(writer),
                http: ms(http),
                other: ms(max(0, total - handlers - writer - http))
            )
        }
    }

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    /// With `deliver: false` the app has no downstream for the bench's (sandbox) events: ingest alone, so the two runs'
    /// `gateway_cpu_ms_per_notification` tell what delivery costs.
    /// `postgres`: the store is a fresh schema in the database ``BenchSchema`` names, dropped afterwards, shared by
    /// `instances` gateways.
    public static func run(
        seconds: Double,
        concurrency: Int = 64,
        rate: Int = 500,
        deliver: Bool = true,
        postgres: Bool = false,
        instances: Int = 1
    ) async throws -> Result {
        let schema = postgres ? try BenchSchema(environment: ProcessEnvironment.variables) : nil
        defer { schema?.drop() }
        let rig = try BenchRig(label: "bench")
        // The local downstream.
        var peerConfig = HTTPServer.Configuration()
        peerConfig.threads = 4
        let received = SoakBenchmark.Downstream(failureRate: 0)
        let downstream = HTTPServer(configuration: peerConfig) { received.handle($0) }
        try downstream.start()
        defer {
            downstream.stopAccepting()
            downstream.stop()
        }
        try rig.startGateways(
            count: instances,
            store: schema.map { .postgres(url: $0.url) } ?? .sqlite,
            downstreams: """
                [ { "name": "production-only", "url": "http://127.0.0.1:\(downstream.port)/events", "environments": ["production"] },
                  { "name": "main", "url": "http://127.0.0.1:\(downstream.port)/events",
                    "environments": ["production", "sandbox"], "shadow": true, "concurrency": 8 } ]
                """,
            appDownstreams: [deliver ? "main" : "production-only"]
        )
        let gateways = rig.gateways
        guard !gateways.isEmpty else { throw Failure(description: "the gateway did not start") }
        let urls = rig.notificationsURLs

        // Bodies signed before the runs: 4 V2 for every V1.
        let throughputCount = Int(seconds * 4_000)
        let latencyCount = Int(seconds * Double(rate))
        var bodies: [[UInt8]] = []
        bodies.reserveCapacity(throughputCount + latencyCount)
        for i in 0..<(throughputCount + latencyCount) {
            bodies.append(i % 5 == 4 ? BenchRig.v1Body(i) : try rig.v2Body(i))
        }

        let transport = CurlTransport(maxConcurrentTransfers: concurrency)
        let throughputBodies = Array(bodies.prefix(throughputCount))
        // The baseline, in the same run: the same client, bodies and time against a libmicrohttpd server (the gateway's
        // own wrapper and thread count) that answers 200 at once — what this machine's loopback HTTP can do right now.
        var echoConfig = HTTPServer.Configuration()
        echoConfig.threads = GatewayConfig().limits.httpThreads
        let echo = HTTPServer(configuration: echoConfig) { _ in .json(200, Array(#"{"ok":true}"#.utf8)) }
        try echo.start()
        let baseline = await closedLoop(
            urls: ["http://127.0.0.1:\(echo.port)/notifications"],
            bodies: throughputBodies,
            seconds: seconds,
            concurrency: concurrency,
            transport: transport
        )
        echo.stopAccepting()
        echo.stop()
        // One reading of the gateways' CPU serves both the totals and the split by thread.
        func cpuReading() -> [(total: Double, threads: [String: Double])] {
            gateways.map { ($0.cpuSeconds, $0.cpuSecondsByThreadName) }
        }
        func total(_ reading: [(total: Double, threads: [String: Double])]) -> Double {
            reading.reduce(0) { $0 + $1.total }
        }
        let verify = try P256VerifyBaseline()
        var verifyMs = [verify.measure(seconds: 0.5)]
        let (closedBefore, machineClosedBefore) = (cpuReading(), MachineCPU.now())
        let measured = await closedLoop(
            urls: urls,
            bodies: throughputBodies,
            seconds: seconds,
            concurrency: concurrency,
            transport: transport
        )
        let throughput = measured.perSecond
        let failures = measured.failures
        let clock = ContinuousClock()

        // The closed loop leaves deliveries (and verifyReceipt jobs) queued behind it. Its CPU is read once every
        // notification it accepted reached the downstream — what each one cost, deliveries included, and not less the
        // faster the loop ran ahead of them — and the open loop starts then, so that it measures the gateway at `rate`,
        // not at `rate` plus the previous phase's backlog.
        let drainStart = clock.now
        if deliver {
            while received.counts.deliveries < measured.accepted, clock.now - drainStart < .seconds(300) {
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let drained = clock.now - drainStart
        let closedAfter = cpuReading()
        let cpuPerNotification =
            measured.accepted > 0
            ? (total(closedAfter) - total(closedBefore)) / Double(measured.accepted) * 1000 : 0
        let closedThreads = ThreadCPU.between(closedBefore, closedAfter, notifications: measured.accepted)
        let machineClosed = MachineCPU.now().busy - machineClosedBefore.busy
        let machinePerNotification =
            measured.accepted > 0 ? (machineClosed / 100 / Double(measured.accepted) * 1_000_000).rounded() / 1000 : 0

        // Open loop: one request every 1/rate s, each timed from its scheduled send to its answer.
        let latencies = Samples()
        let latencyBodies = Array(bodies.suffix(latencyCount))
        verifyMs.append(verify.measure(seconds: 0.5))
        let (openBefore, machineBefore) = (cpuReading(), MachineCPU.now())
        let probe = FsyncProbe(directory: rig.directory)
        await openLoop(
            urls: urls,
            bodies: latencyBodies,
            rate: rate,
            transport: transport,
            latencies: latencies,
            failures: failures
        )
        let machine = MachineCPU.now().since(machineBefore)
        let fsync = probe?.finish() ?? (p50: 0, max: 0)
        let openAfter = cpuReading()
        let openCPU =
            latencies.count > 0 ? (total(openAfter) - total(openBefore)) / Double(latencies.count) * 1000 : 0
        let openThreads = ThreadCPU.between(openBefore, openAfter, notifications: latencies.count)
        let p256 = verifyMs.reduce(0, +) / Double(verifyMs.count)
        func inVerifies(_ ms: Double) -> Double { p256 > 0 ? (ms / p256 * 100).rounded() / 100 : 0 }
        let rssPerInstance = gateways.map(\.peakRSSMB)
        let stopped = rig.finishAll()
        if let failed = stopped.first(where: { $0.status != 0 }) {
            throw Failure(description: "a gateway exited with status \(failed.status)")
        }
        var (transactions, writes): (Int64, Int64) = (0, 0)
        for line in stopped.compactMap(\.stoppedLine) {
            if case .object(let o)? = try? JSONParser.parse(Array(line.utf8)), let tx = o["transactions"]?.int64Value,
                let w = o["writes"]?.int64Value
            {
                transactions += tx
                writes += w
            }
        }
        let writesPerTransaction = transactions > 0 ? (Double(writes) / Double(transactions) * 10).rounded() / 10 : 0

        let sorted = latencies.all.sorted()
        return Result(
            notificationsPerSecond: (throughput * 10).rounded() / 10,
            httpBaselinePerSecond: (baseline.perSecond * 10).rounded() / 10,
            fractionOfHTTPBaseline: baseline.perSecond > 0
                ? (throughput / baseline.perSecond * 1000).rounded() / 1000 : 0,
            gatewayCPUMsPerNotification: (cpuPerNotification * 1000).rounded() / 1000,
            p50Ms: sorted.quantile(0.5, decimals: 2),
            p99Ms: sorted.quantile(0.99, decimals: 2),
            offeredRatePerSecond: rate,
            latencySamples: sorted.count,
            failures: failures.value,
            failuresByAnswer: failures.byAnswer,
            peakRSSMB: rssPerInstance.max() ?? 0,
            peakRSSMBPerInstance: rssPerInstance,
            writesPerCommit: writesPerTransaction,
            concurrency: concurrency,
            v1Share: 0.2,
            delivery: deliver,
            seconds: seconds,
            build: VerifyBenchmark.buildKind,
            store: postgres ? "postgres" : "sqlite",
            instances: gateways.count,
            drainSecondsBeforeOpenLoop: (Double(drained.components.seconds) * 10 + Double(
                drained.components.attoseconds
            ) / 1e17).rounded() / 10,
            openLoopGatewayCPUMsPerNotification: (openCPU * 1000).rounded() / 1000,
            openLoopMachineBusy: machine.busy,
            openLoopMachineSteal: machine.steal,
            openLoopFsyncP50Ms: fsync.p50,
            openLoopFsyncMaxMs: fsync.max,
            gatewayCPUMsPerNotificationByThread: closedThreads,
            openLoopGatewayCPUMsPerNotificationByThread: openThreads,
            p256VerifyMs: (p256 * 10_000).rounded() / 10_000,
            gatewayCPUPerNotificationInP256Verifies: inVerifies(cpuPerNotification),
            openLoopGatewayCPUPerNotificationInP256Verifies: inVerifies(openCPU),
            machineCPUMsPerNotification: machinePerNotification
        )
    }

    /// Open loop: body i sent to `urls[i % urls.count]` at i/rate s, each timed from its scheduled send to its answer
    /// (a 200 adds its latency in ms to `latencies`, anything else counts in `failures`).
    static func openLoop(
        urls: [String],
        bodies: [[UInt8]],
        rate: Int,
        transport: CurlTransport,
        latencies: Samples,
        failures: FailureTally,
        judge: @escaping @Sendable (HTTPResponse) -> String? = FailureTally.httpStatus
    ) async {
        let clock = ContinuousClock()
        let openStart = clock.now
        await withTaskGroup(of: Void.self) { group in
            for (i, body) in bodies.enumerated() {
                let scheduled = openStart.advanced(by: .microseconds(Int64(i) * 1_000_000 / Int64(rate)))
                try? await Task.sleep(until: scheduled, clock: clock)
                let url = urls[i % urls.count]
                group.addTask {
                    let r = try? await transport.send(
                        HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 10_000)
                    )
                    let d = clock.now - scheduled
                    if let failure = r.map(judge) ?? "transport" {
                        failures.add(failure)
                    } else {
                        latencies.append(d.milliseconds)
                    }
                }
            }
        }
    }

    /// Closed loop: `concurrency` clients send `bodies` as fast as they are answered, body i to `urls[i % urls.count]`,
    /// for `seconds` (or until the bodies run out). Returns the answers `judge` accepts (by default: 200s) per second
    /// and the tally of anything else.
    static func closedLoop(
        urls: [String],
        bodies: [[UInt8]],
        seconds: Double,
        concurrency: Int,
        transport: CurlTransport,
        judge: @escaping @Sendable (HTTPResponse) -> String? = FailureTally.httpStatus
    ) async
        -> (perSecond: Double, accepted: Int, failures: FailureTally)
    {
        let next = Counter()
        let ok = Counter()
        let failures = FailureTally()
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start.advanced(by: .milliseconds(Int64(seconds * 1000)))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while clock.now < deadline {
                        let i = next.add(1) - 1
                        guard i < bodies.count else { return }
                        let r = try? await transport.send(
                            HTTPRequest(
                                method: .post,
                                url: urls[i % urls.count],
                                body: bodies[i],
                                timeoutMillis: 10_000
                            )
                        )
                        if let failure = r.map(judge) ?? "transport" { failures.add(failure) } else { ok.add(1) }
                    }
                }
            }
        }
        let elapsed = clock.now - start
        return (
            Double(ok.value) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18),
            ok.value,
            failures
        )
    }

}

/// Thread-safe latency samples.
final class Samples: Sendable {
    private let values = Mutex<[Double]>([])
    func append(_ v: Double) { values.withLock { $0.append(v) } }
    var all: [Double] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }
}

/// Requests answered with anything but a 200, by answer: the status (`"503"`), or `"transport"` when none came
/// (refused, reset, timed out).
final class FailureTally: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    func add(_ response: HTTPResponse?) { add(response.map { String($0.status) } ?? "transport") }

    func add(_ answer: String) { counts.withLock { $0[answer, default: 0] += 1 } }

    /// The loops' default judgement: anything but a 200 is a failure, named by its status.
    @Sendable static func httpStatus(_ response: HTTPResponse) -> String? {
        response.status == 200 ? nil : String(response.status)
    }

    var value: Int { counts.withLock { $0.values.reduce(0, +) } }
    var byAnswer: [String: Int] { counts.withLock { $0 } }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let n = Mutex(0)
    @discardableResult func add(_ k: Int) -> Int {
        n.withLock {
            $0 += k
            return $0
        }
    }
    var value: Int { n.withLock { $0 } }
}
