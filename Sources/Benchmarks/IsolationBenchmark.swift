internal import Crypto
internal import FoundationEssentials
internal import HTTPClient
internal import HTTPServer
internal import Receipts
import Synchronization
internal import TestPKI

/// `iap-gateway bench isolation`: what a hanging peer of one purpose does to the others (docs/performance.md,
/// "Isolation"). The real service (its own process) with the bench app's receipts answered in `apple` mode by an
/// Apple verifyReceipt that never answers, a healthy webhook and a second downstream that can be turned dead, with an
/// alert webhook that never answers. Each figure is measured in the same run as its baseline, the same service quiet:
///
/// - a V2 notification's latency (`POST /notifications`, one at a time) while `flood` clients from one address loop
///   on `/sandbox/verifyReceipt` with signed receipts that Apple (hanging) never answers;
/// - a delivery's latency (from the notification's POST to the webhook's receipt of its event) under the same flood,
///   and while every notification also dead-letters at the other downstream, whose alerts hang.
public enum IsolationBenchmark {
    public struct Phase: Encodable, Sendable {
        public var p50Ms: Double
        public var p99Ms: Double
        public var maxMs: Double
        public var samples: Int
        public var failures: Int

        enum CodingKeys: String, CodingKey {
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case maxMs = "max_ms"
            case samples, failures
        }
    }

    public struct Result: Encodable, Sendable {
        public var floodClients: Int
        public var notificationQuiet: Phase
        public var notificationUnderFlood: Phase
        /// p99 under the flood / p99 quiet.
        public var notificationP99Ratio: Double
        public var deliveryQuiet: Phase
        public var deliveryUnderFlood: Phase
        public var deliveryP99RatioUnderFlood: Double
        public var deadLettersBefore: Int
        public var deliveryWithAlertsHanging: Phase
        public var deliveryP99RatioWithAlertsHanging: Double
        /// Receipts forwarded to Apple (which never answered) during the flood, and answered `21005` at once.
        public var receiptsForwarded: Int
        public var receiptsRefusedAtOnce: Int
        /// Every notification of every phase answered 200 and its event delivered.
        public var allAnsweredAndDelivered: Bool
        public var build: String

        enum CodingKeys: String, CodingKey {
            case floodClients = "flood_clients"
            case notificationQuiet = "notification_quiet"
            case notificationUnderFlood = "notification_under_flood"
            case notificationP99Ratio = "notification_p99_ratio"
            case deliveryQuiet = "delivery_quiet"
            case deliveryUnderFlood = "delivery_under_flood"
            case deliveryP99RatioUnderFlood = "delivery_p99_ratio_under_flood"
            case deadLettersBefore = "dead_letters_before"
            case deliveryWithAlertsHanging = "delivery_with_alerts_hanging"
            case deliveryP99RatioWithAlertsHanging = "delivery_p99_ratio_with_alerts_hanging"
            case receiptsForwarded = "receipts_forwarded"
            case receiptsRefusedAtOnce = "receipts_refused_at_once"
            case allAnsweredAndDelivered = "all_answered_and_delivered"
            case build
        }
    }

    /// The peers: Apple's verifyReceipt and the alert webhook hang (until released), the webhook answers and notes
    /// when each event came, the other downstream answers 200 until it is turned dead (410).
    final class Peers: Sendable {
        private let released = Atomic<Bool>(false)
        private let dead = Atomic<Bool>(false)
        private let forwarded = Atomic<Int>(0)
        private let arrivals = Mutex<[String: ContinuousClock.Instant]>([:])

        func handle(_ request: ServerRequest) -> ServerResponse {
            switch request.path {
            case "/verifyReceipt", "/sandbox/verifyReceipt", "/alerts":
                if request.path != "/alerts" { forwarded.add(1, ordering: .relaxed) }
                return .later { [self] in
                    while !released.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(20)) }
                    return .json(503, [])
                }
            case "/dead":
                return dead.load(ordering: .acquiring) ? .json(410, []) : .json(200, [])
            default:
                if let id = request.header("webhook-id") {
                    let now = ContinuousClock.now
                    arrivals.withLock { $0[id] = $0[id] ?? now }
                }
                return .json(200, [])
            }
        }

        func release() { released.store(true, ordering: .releasing) }
        func turnDead() { dead.store(true, ordering: .releasing) }
        var forwardedCount: Int { forwarded.load(ordering: .relaxed) }
        func arrival(_ id: String) -> ContinuousClock.Instant? { arrivals.withLock { $0[id] } }
    }

    public static func run(count: Int = 100, flood: Int = 70) async throws -> Result {
        let rig = try BenchRig(label: "isolation")
        let peers = Peers()
        var peerConfig = HTTPServer.Configuration()
        peerConfig.threads = 8
        peerConfig.connectionsPerAddressLimit = 0
        let server = HTTPServer(configuration: peerConfig) { peers.handle($0) }
        try server.start()
        defer {
            peers.release()
            server.stopAccepting()
            server.stop()
        }
        let peer = "http://127.0.0.1:\(server.port)"

        // Receipts signed by a generated receipt chain the gateway trusts for sandbox receipts: Apple's, to it.
        let pki = try GeneratedReceiptPKI.generate(
            notBefore: rig.now / 1000 - 86_400,
            notAfter: rig.now / 1000 + 86_400
        )
        try Data(pki.root.der).write(to: URL(filePath: rig.directory + "/receipt-root.der"))
        let receipt = AppReceipt(
            receiptType: "ProductionSandbox",
            bundleID: BenchRig.bundle,
            applicationVersion: "1",
            originalApplicationVersion: "1.0",
            appItemID: 0,
            creationDate: rig.now,
            originalPurchaseDate: rig.now - 86_400_000,
            inApp: []
        )
        let receiptData = ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: pki))
        let receiptBody = Array(#"{"receipt-data":"\#(receiptData)","password":"\#(BenchRig.secret)"}"#.utf8)

        try rig.launch(
            configText: """
                {
                  "listen": "127.0.0.1:0",
                  "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN_UNSET" },
                  "store": { "sqlite": "gateway.db" },
                  "trust": { "extra_roots": ["root.der"], "extra_receipt_roots": ["receipt-root.der"] },
                  "verify_receipt": { "production_url": "\(peer)/verifyReceipt", "sandbox_url": "\(peer)/sandbox/verifyReceipt" },
                  "alerts": { "webhook": "\(peer)/alerts" },
                  "apps": [ { "bundle_id": "\(BenchRig.bundle)", "app_apple_id": 1, "environments": ["sandbox"],
                              "shared_secret_env": ["BENCH_SECRET"], "authority": "v1", "receipts": "apple",
                              "downstreams": ["main", "other"] } ],
                  "downstreams": [
                    { "name": "main", "url": "\(peer)/events", "environments": ["sandbox"], "shadow": true },
                    { "name": "other", "url": "\(peer)/dead", "environments": ["sandbox"], "shadow": true, "max_attempts": 1 } ]
                }
                """,
            environment: ["BENCH_SECRET": BenchRig.secret]
        )
        let transport = CurlTransport(maxConcurrentTransfers: 8)
        var next = 0
        /// `count` notifications, one at a time: their answer latencies, and their events' arrivals at `main`.
        func phase() async throws -> (notification: Phase, delivery: Phase) {
            var answers: [Double] = []
            var deliveries: [Double] = []
            var failures = 0
            for _ in 0..<count {
                let i = next
                next += 1
                let body = try rig.v2Body(i)
                let started = ContinuousClock.now
                let r = try? await transport.send(
                    HTTPRequest(method: .post, url: rig.notificationsURL, body: body, timeoutMillis: 60_000)
                )
                answers.append(Self.millis(ContinuousClock.now - started))
                guard r?.status == 200 else {
                    failures += 1
                    continue
                }
                let id = BenchRig.v2NotificationUUID(i)
                let deadline = started + .seconds(60)
                while peers.arrival(id) == nil, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(1))
                }
                guard let arrived = peers.arrival(id) else {
                    failures += 1
                    continue
                }
                deliveries.append(Self.millis(arrived - started))
            }
            return (Self.phase(answers, failures: failures), Self.phase(deliveries, failures: failures))
        }

        // Warm (first requests open the store's caches and connections), then the quiet baseline.
        _ = try await phase()
        let quiet = try await phase()

        // The flood: `flood` clients of one address, each posting the receipt again as soon as it is answered.
        let state = FloodState()
        let url = "http://127.0.0.1:\(rig.port)/sandbox/verifyReceipt"
        let floodTransport = CurlTransport(maxConcurrentTransfers: flood)
        let clients = (0..<flood).map { _ in
            Task.detached {
                while !state.stopped {
                    let started = ContinuousClock.now
                    _ = try? await floodTransport.send(
                        HTTPRequest(method: .post, url: url, body: receiptBody, timeoutMillis: 60_000)
                    )
                    // Answered at once: refused for want of room (a client told to retry tries again at once).
                    if ContinuousClock.now - started < .milliseconds(500) { state.countRefused() }
                }
            }
        }
        // Established once Apple holds as many forwarded receipts as the gateway takes.
        let established = ContinuousClock.now + .seconds(30)
        while peers.forwardedCount < min(flood, 32), ContinuousClock.now < established {
            try await Task.sleep(for: .milliseconds(10))
        }
        let flooded = try await phase()
        state.stop()
        let forwarded = peers.forwardedCount
        for client in clients { await client.value }

        // The other downstream dead: every notification from here dead-letters there and raises an alert, which hangs.
        peers.turnDead()
        let before = count
        _ = try await phase()
        let alerting = try await phase()

        let status = rig.finish().status
        guard status == 0 else {
            throw IngestBenchmark.Failure(description: "the gateway stopped with status \(status)")
        }
        func ratio(_ a: Phase, _ b: Phase) -> Double { b.p99Ms > 0 ? (a.p99Ms / b.p99Ms * 100).rounded() / 100 : 0 }
        return Result(
            floodClients: flood,
            notificationQuiet: quiet.notification,
            notificationUnderFlood: flooded.notification,
            notificationP99Ratio: ratio(flooded.notification, quiet.notification),
            deliveryQuiet: quiet.delivery,
            deliveryUnderFlood: flooded.delivery,
            deliveryP99RatioUnderFlood: ratio(flooded.delivery, quiet.delivery),
            deadLettersBefore: before,
            deliveryWithAlertsHanging: alerting.delivery,
            deliveryP99RatioWithAlertsHanging: ratio(alerting.delivery, quiet.delivery),
            receiptsForwarded: forwarded,
            receiptsRefusedAtOnce: state.refused,
            allAnsweredAndDelivered: [quiet, flooded, alerting].allSatisfy {
                $0.notification.failures == 0 && $0.delivery.failures == 0
            },
            build: VerifyBenchmark.buildKind
        )
    }

    /// The flood's clients' shared state.
    final class FloodState: Sendable {
        private let stopping = Atomic<Bool>(false)
        private let refusals = Atomic<Int>(0)
        var stopped: Bool { stopping.load(ordering: .relaxed) }
        func stop() { stopping.store(true, ordering: .relaxed) }
        func countRefused() { refusals.add(1, ordering: .relaxed) }
        var refused: Int { refusals.load(ordering: .relaxed) }
    }

    static func millis(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    static func phase(_ values: [Double], failures: Int) -> Phase {
        let sorted = values.sorted()
        return Phase(
            p50Ms: sorted.quantile(0.5, decimals: 2),
            p99Ms: sorted.quantile(0.99, decimals: 2),
            maxMs: ((sorted.last ?? 0) * 100).rounded() / 100,
            samples: sorted.count,
            failures: failures
        )
    }
}
