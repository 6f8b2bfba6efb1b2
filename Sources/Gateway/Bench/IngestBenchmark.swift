internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import HTTPClient
internal import V2Adapter
internal import WireJSON
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway bench ingest`: a self-contained run of the real service — a generated Apple-shaped test PKI, a
/// temporary SQLite store (WAL, synchronous=FULL), a local downstream and a local fake verifyReceipt — driven over
/// loopback with V2 and V1 bodies signed before the timed runs. Reports durable ingest throughput (closed loop),
/// latency at a fixed offered rate (open loop) and the process's peak RSS.
public enum IngestBenchmark {
    public struct Result: Encodable, Sendable {
        public var notificationsPerSecond: Double
        /// The same closed loop against a bare libmicrohttpd server answering 200, in the same run.
        public var httpBaselinePerSecond: Double
        /// `notificationsPerSecond / httpBaselinePerSecond`: how much of what loopback HTTP allows right now the
        /// durable ingest keeps — the figure to compare across runs on a noisy machine.
        public var fractionOfHTTPBaseline: Double
        /// The gateway process's CPU time (all threads, user + system) during the closed loop, per notification
        /// accepted: ingest and the deliveries and verifyReceipt calls running meanwhile. Steadier than throughput on a
        /// machine shared with noisy neighbours.
        public var gatewayCPUMsPerNotification: Double
        public var p50Ms: Double
        public var p99Ms: Double
        public var offeredRatePerSecond: Int
        public var latencySamples: Int
        public var failures: Int
        public var peakRSSMB: Double
        /// Journal writes per SQLite transaction (one fsync each): the group commit at work.
        public var writesPerCommit: Double
        public var concurrency: Int
        public var v1Share: Double
        /// Whether the events were delivered (`--no-delivery` turns it off).
        public var delivery: Bool
        public var seconds: Double
        public var build: String

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
            case peakRSSMB = "peak_rss_mb"
            case writesPerCommit = "writes_per_commit"
            case concurrency
            case v1Share = "v1_share"
            case seconds, build, delivery
        }
    }

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    static let bundle = "com.example.bench"
    static let secret = "0123456789abcdef0123456789abcdef"

    /// With `deliver: false` the app has no downstream for the bench's (sandbox) events: ingest alone, so the two runs'
    /// `gateway_cpu_ms_per_notification` tell what delivery costs.
    public static func run(seconds: Double, concurrency: Int = 64, rate: Int = 500, deliver: Bool = true) async throws -> Result {
        let now = WallClock.wallMillis()
        let dir = FileManager.default.temporaryDirectory.appending(path: "iapgw-bench-\(UInt64.random(in: 0...UInt64.max))").path()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }

        // A fresh test PKI, trusted for sandbox only (as the simulator's is).
        let pki = try GeneratedTestPKI.generate(notBefore: now / 1000 - 86_400, notAfter: now / 1000 + 30 * 86_400, name: "iap-gateway Bench")
        try Data(pki.root.der).write(to: URL(filePath: dir + "/root.der"))
        let signer = try AppleJWSSigner(leaf: pki.leaf, intermediate: pki.intermediate, root: pki.root, leafKey: pki.leafKey)

        // Local peers: the downstream and Apple's verifyReceipt (status 0 with the notification's subscription).
        let delivered = Counter()
        var peerConfig = HTTPServer.Configuration()
        peerConfig.threads = 4
        let downstream = HTTPServer(configuration: peerConfig) { _ in
            delivered.add(1)
            return .json(200, Array(#"{"ok":true}"#.utf8))
        }
        try downstream.start()
        let apple = HTTPServer(configuration: peerConfig) { request in
            .json(200, Self.receiptAnswer(for: request.body))
        }
        try apple.start()
        defer {
            downstream.stopAccepting()
            apple.stopAccepting()
            downstream.stop()
            apple.stop()
        }

        let configText = """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN_UNSET" },
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_roots": ["root.der"] },
              "verify_receipt": { "production_url": "http://127.0.0.1:\(apple.port)/verifyReceipt",
                                  "sandbox_url": "http://127.0.0.1:\(apple.port)/sandbox/verifyReceipt" },
              "apps": [ { "bundle_id": "\(bundle)", "app_apple_id": 1, "environments": ["production", "sandbox"],
                          "shared_secret_env": ["BENCH_SECRET"], "authority": "v1", "downstreams": ["\(deliver ? "main" : "production-only")"] } ],
              "downstreams": [ { "name": "production-only", "url": "http://127.0.0.1:\(downstream.port)/events", "environments": ["production"] },
                               { "name": "main", "url": "http://127.0.0.1:\(downstream.port)/events",
                                 "environments": ["production", "sandbox"], "shadow": true, "concurrency": 8 } ]
            }
            """
        try Data(configText.utf8).write(to: URL(filePath: dir + "/config.json"))
        let config = try GatewayConfig.parse(Array(configText.utf8), baseDirectory: dir)
        _ = config  // validated here so a broken template fails before anything is spawned
        // The gateway runs in its own process (this executable's `serve`), so its memory and CPU are its own.
        let gateway = try ChildProcess(
            executable: "/proc/self/exe", arguments: ["serve", "--config", dir + "/config.json"],
            environment: ["BENCH_SECRET": secret, "PATH": "/usr/bin:/bin"])
        guard let port = gateway.listeningPort(timeout: 20) else {
            gateway.terminate(signal: SIGKILL)
            throw Failure(description: "the gateway did not start")
        }
        let url = "http://127.0.0.1:\(port)/notifications"

        // Bodies signed before the runs: 4 V2 for every V1.
        let throughputCount = Int(seconds * 4_000)
        let latencyCount = Int(seconds * Double(rate))
        var bodies: [[UInt8]] = []
        bodies.reserveCapacity(throughputCount + latencyCount)
        for i in 0..<(throughputCount + latencyCount) {
            bodies.append(i % 5 == 4 ? v1Body(i) : try v2Body(i, signer: signer, now: now))
        }

        let transport = CurlTransport(maxConcurrentTransfers: concurrency)
        let throughputBodies = Array(bodies.prefix(throughputCount))
        // The baseline, in the same run: the same client, bodies and time against a libmicrohttpd server (the gateway's
        // own wrapper and thread count) that answers 200 at once — what this machine's loopback HTTP can do right now.
        var echoConfig = HTTPServer.Configuration()
        echoConfig.threads = GatewayConfig.Limits().httpThreads
        let echo = HTTPServer(configuration: echoConfig) { _ in .json(200, Array(#"{"ok":true}"#.utf8)) }
        try echo.start()
        let baseline = await closedLoop(
            url: "http://127.0.0.1:\(echo.port)/notifications", bodies: throughputBodies, seconds: seconds, concurrency: concurrency,
            transport: transport)
        echo.stopAccepting()
        echo.stop()
        let cpuBefore = gateway.cpuSeconds
        let measured = await closedLoop(url: url, bodies: throughputBodies, seconds: seconds, concurrency: concurrency, transport: transport)
        let cpuPerNotification = measured.accepted > 0 ? (gateway.cpuSeconds - cpuBefore) / Double(measured.accepted) * 1000 : 0
        let throughput = measured.perSecond
        let failures = Counter()
        failures.add(measured.failures)
        let clock = ContinuousClock()

        // Open loop: one request every 1/rate s, each timed from its scheduled send to its answer.
        let latencies = Samples()
        let latencyBodies = Array(bodies.suffix(latencyCount))
        let openStart = clock.now
        await withTaskGroup(of: Void.self) { group in
            for (i, body) in latencyBodies.enumerated() {
                let scheduled = openStart.advanced(by: .microseconds(Int64(i) * 1_000_000 / Int64(rate)))
                try? await Task.sleep(until: scheduled, clock: clock)
                group.addTask {
                    let r = try? await transport.send(HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 10_000))
                    let d = clock.now - scheduled
                    if r?.status == 200 {
                        latencies.append(Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
                    } else {
                        failures.add(1)
                    }
                }
            }
        }
        let rss = gateway.peakRSSMB
        let status = gateway.terminate()
        guard status == 0 else { throw Failure(description: "the gateway exited with status \(status)") }
        var writesPerTransaction = 0.0
        if let line = gateway.keptLines.last(where: { $0.contains("\"msg\":\"stopped\"") }),
           case .object(let o)? = try? JSONParser.parse(Array(line.utf8)),
           let tx = o["transactions"]?.int64Value, let writes = o["writes"]?.int64Value, tx > 0 {
            writesPerTransaction = (Double(writes) / Double(tx) * 10).rounded() / 10
        }

        let sorted = latencies.all.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let v = sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))]
            return (v * 100).rounded() / 100
        }
        return Result(
            notificationsPerSecond: (throughput * 10).rounded() / 10, httpBaselinePerSecond: (baseline.perSecond * 10).rounded() / 10,
            fractionOfHTTPBaseline: baseline.perSecond > 0 ? (throughput / baseline.perSecond * 1000).rounded() / 1000 : 0,
            gatewayCPUMsPerNotification: (cpuPerNotification * 1000).rounded() / 1000, p50Ms: percentile(0.5), p99Ms: percentile(0.99),
            offeredRatePerSecond: rate, latencySamples: sorted.count, failures: failures.value,
            peakRSSMB: rss, writesPerCommit: writesPerTransaction, concurrency: concurrency, v1Share: 0.2, delivery: deliver, seconds: seconds, build: VerifyBenchmark.buildKind)
    }

    /// Closed loop: `concurrency` clients send `bodies` to `url` as fast as it answers, for `seconds` (or until the
    /// bodies run out). Returns the 200s per second and the count of anything else.
    static func closedLoop(url: String, bodies: [[UInt8]], seconds: Double, concurrency: Int, transport: CurlTransport) async
        -> (perSecond: Double, accepted: Int, failures: Int)
    {
        let next = Counter()
        let ok = Counter()
        let failures = Counter()
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start.advanced(by: .milliseconds(Int64(seconds * 1000)))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while clock.now < deadline {
                        let i = next.add(1) - 1
                        guard i < bodies.count else { return }
                        let r = try? await transport.send(HTTPRequest(method: .post, url: url, body: bodies[i], timeoutMillis: 10_000))
                        if r?.status == 200 { ok.add(1) } else { failures.add(1) }
                    }
                }
            }
        }
        let elapsed = clock.now - start
        return (Double(ok.value) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18), ok.value,
                failures.value)
    }

    /// A DID_RENEW with signed transaction and renewal info, all signed by the bench leaf.
    static func v2Body(_ i: Int, signer: AppleJWSSigner, now: Int64) throws -> [UInt8] {
        let otid = "30000000\(padded(i, 8))"
        let tx = try signer.sign(payload: Array("""
            {"transactionId":"\(otid)","originalTransactionId":"\(otid)","bundleId":"\(bundle)","productId":"p.monthly",\
            "purchaseDate":\(now - 60_000),"originalPurchaseDate":\(now - 60_000),"expiresDate":\(now + 2_592_000_000),"quantity":1,\
            "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\(now),"environment":"Sandbox",\
            "transactionReason":"RENEWAL","price":9990,"currency":"USD"}
            """.utf8))
        let renewal = try signer.sign(payload: Array("""
            {"originalTransactionId":"\(otid)","autoRenewProductId":"p.monthly","productId":"p.monthly","autoRenewStatus":1,\
            "signedDate":\(now),"environment":"Sandbox"}
            """.utf8))
        let uuid = "bench000-0000-4000-8000-\(padded(i, 12))"
        let payload = """
            {"notificationType":"DID_RENEW","notificationUUID":"\(uuid)","data":{"appAppleId":1,"bundleId":"\(bundle)",\
            "bundleVersion":"1","environment":"Sandbox","signedTransactionInfo":"\(tx)","signedRenewalInfo":"\(renewal)","status":1},\
            "version":"2.0","signedDate":\(now)}
            """
        return InboundBody.v2(signedPayload: try signer.sign(payload: Array(payload.utf8)))
    }

    /// A V1 DID_RENEW body for a distinct subscription.
    static func v1Body(_ i: Int) -> [UInt8] {
        let otid = "40000000\(padded(i, 8))"
        return Array("""
            {"notification_type":"DID_RENEW","password":"\(secret)","environment":"Sandbox","bid":"\(bundle)",\
            "original_transaction_id":"\(otid)","auto_renew_status":"true","unified_receipt":{"environment":"Sandbox",\
            "latest_receipt":"YmVuY2gtcmVjZWlwdC0\(i)","status":0,"latest_receipt_info":[{"original_transaction_id":"\(otid)",\
            "transaction_id":"\(otid)","product_id":"p.monthly","purchase_date_ms":"1","expires_date_ms":"2"}]}}
            """.utf8)
    }

    /// verifyReceipt's answer naming the subscription of the request's receipt (the fake does not parse receipts).
    static func receiptAnswer(for request: [UInt8]) -> [UInt8] {
        Array(#"{"status":0,"environment":"Sandbox","latest_receipt_info":[]}"#.utf8)
    }

    static func padded(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

}

/// Thread-safe latency samples.
final class Samples: Sendable {
    private let values = Mutex<[Double]>([])
    func append(_ v: Double) { values.withLock { $0.append(v) } }
    var all: [Double] { values.withLock { $0 } }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let n = Mutex(0)
    @discardableResult func add(_ k: Int) -> Int { n.withLock { $0 += k; return $0 } }
    var value: Int { n.withLock { $0 } }
}
