internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import HTTPServer
internal import ReceiptPath
internal import Receipts
internal import ServiceKit
import Synchronization
internal import WireJSON

#if canImport(Glibc)
import Glibc
internal import TestPKI
#endif

/// `iap-gateway bench receipt-scale`: the receipt path at a real app's size (docs/performance.md, "bench
/// receipt-scale"). The real service in its own process (`serve`, SQLite, the app in `api` mode for sandbox receipts,
/// default `receipts.*` but for `max_in_flight_per_address`, set to `max_in_flight` as behind the old backend's one
/// address); an App Store Server API in this process answering for any of `customers` procedurally
/// (``ProceduralAppleAPI``) under Apple's rate limits of the chosen table; `clients` old-backend clients posting
/// `/sandbox/verifyReceipt` with real signed receipts, customers drawn with a skew (``SkewedCustomers``), each `21005`
/// asked again after a second (three times at most); and V2 notifications at a steady rate meanwhile. Optionally the
/// API hangs for `hangSeconds` in the middle of the run. What it reports is measured, never asserted: the invariants
/// the receipt path should keep (no 429, Apple's rate kept, notifications unaffected) are figures of the line.
public enum ReceiptScaleBenchmark {
    /// Whose rate table the fake enforces, whatever the environment of the receipts.
    public enum AppleRate: Sendable, Equatable, CustomStringConvertible {
        case production, sandbox
        case perSecond(Int)

        /// `production`, `sandbox` or a whole number of requests per second per endpoint (1…100000).
        public init?(_ text: String) {
            switch text {
            case "production": self = .production
            case "sandbox": self = .sandbox
            default:
                guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(text), (1...100_000).contains(n)
                else { return nil }
                self = .perSecond(n)
            }
        }

        public var description: String {
            switch self {
            case .production: "production"
            case .sandbox: "sandbox"
            case .perSecond(let n): String(n)
            }
        }

        /// Get Transaction History and Get All Subscription Statuses: 50 a second in production (Apple's
        /// "Identifying rate limits"), 3600 times that an hour; a tenth of both in the sandbox.
        var allowance: ProceduralAppleAPI.Allowance {
            switch self {
            case .production: .init(perSecond: 50, perHour: 50 * 3600)
            case .sandbox: .init(perSecond: 5, perHour: 5 * 3600)
            case .perSecond(let n): .init(perSecond: n, perHour: n * 3600)
            }
        }
    }

    public struct Options: Sendable {
        public var customers = 1_000_000
        public var seconds = 60.0
        public var appleRate = AppleRate.production
        public var clients = 64
        /// Clients asking only about customers already answered once, beside the others (``warmOnly``).
        public var warmClients = 8
        public var hangSeconds = 0.0
        public var notificationsPerSecond = 20.0
        /// The share of requests that are purchases (a customer never seen).
        public var purchaseFraction = 0.01
        public var retryMillis = 1_000
        public var retries = 3
        public var seed: UInt64 = 1
        public var executable = "/proc/self/exe"
        /// PostgreSQL (a fresh schema in the database ``BenchSchema`` names, dropped afterwards) instead of SQLite, and
        /// the gateways on it: the clients alternate between them, every instance's calls count against the budget
        /// they share (docs/operations.md, "Apple's rate limits").
        public var postgres = false
        public var instances = 1

        public init() {}
    }

    /// Requests of one kind: how many, those answered status 0, their pace and latency.
    public struct Answers: Encodable, Sendable {
        public var requests: Int
        public var answered: Int
        public var answersPerSecond: Double
        public var p50Ms: Double
        public var p99Ms: Double
        public var maxMs: Double

        enum CodingKeys: String, CodingKey {
            case requests, answered
            case answersPerSecond = "answers_per_second"
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case maxMs = "max_ms"
        }
    }

    /// What the fake App Store Server API received on one endpoint.
    public struct AppleEndpoint: Encodable, Sendable {
        public var calls: Int
        public var ok: Int
        public var rateLimited: Int
        public var maxCallsPerSecond: Int
        public var limitPerSecond: Int
        public var limitPerHour: Int
        public var customers: Int
        public var callsPerCustomer: Double

        enum CodingKeys: String, CodingKey {
            case calls, ok, customers
            case rateLimited = "rate_limited"
            case maxCallsPerSecond = "max_calls_per_second"
            case limitPerSecond = "limit_per_second"
            case limitPerHour = "limit_per_hour"
            case callsPerCustomer = "calls_per_customer"
        }
    }

    public struct Notifications: Encodable, Sendable {
        public var sent: Int
        public var answered200: Int
        public var answered200Fraction: Double
        public var p50Ms: Double
        public var p99Ms: Double
        public var maxMs: Double

        enum CodingKeys: String, CodingKey {
            case sent
            case answered200 = "answered_200"
            case answered200Fraction = "answered_200_fraction"
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case maxMs = "max_ms"
        }
    }

    public struct Invariants: Encodable, Sendable {
        /// Apple answered no 429.
        public var zero429: Bool
        /// No endpoint received more calls in a second than its allowance, nor more in the run than its hour's.
        public var callsWithinBudget: Bool
        /// Every notification answered 200, p99 at most 25 ms.
        public var notificationsUnaffected: Bool

        enum CodingKeys: String, CodingKey {
            case zero429 = "zero_429"
            case callsWithinBudget = "calls_within_budget"
            case notificationsUnaffected = "notifications_unaffected"
        }
    }

    public struct Result: Encodable, Sendable {
        public var customers: Int
        public var seconds: Double
        public var appleRate: String
        public var clients: Int
        public var hangSeconds: Double
        public var elapsedSeconds: Double
        public var requests: Int
        /// Requests by the answer's verifyReceipt status (`http_<status>` when not HTTP 200, `transport` without one).
        public var answersByStatus: [String: Int]
        /// The gateway's own counts (`GET /metrics`): histories by where they came from, refusals, its Apple calls.
        public var historyByResult: [String: Int]
        public var refusedByReason: [String: Int]
        public var gatewayAppleCalls: [String: Int]
        public var warm: Answers
        public var cold: Answers
        /// The warm-only clients' requests (``Options/warmClients``), from their first: answers per second and
        /// latency of customers with a stored history while the cold ones hold the budget.
        public var warmOnly: Answers
        public var warmOnlyByStatus: [String: Int]
        public var customersAsked: Int
        public var customersAnswered: Int
        public var customersGivenUp: Int
        public var purchases: Int
        public var apple429: Int
        public var appleCallsTotal: Int
        public var appleMaxCallsPerSecond: [String: Int]
        public var appleLimitPerSecond: Int
        public var apple: [String: AppleEndpoint]
        public var callsPerCustomer: Double
        public var projectedPrefetchHours: Double
        public var notifications: Notifications
        public var servePeakRSSMB: Double
        public var receiptsSigned: Int
        public var receiptSigningMsMean: Double
        public var loadAverage: Double
        public var invariants: Invariants
        public var build: String
        public var store: String
        public var instances: Int
        /// Apple's calls a second over the run, all instances together, by endpoint; beside the gateway's budget (its
        /// rate: Apple's table times the margin) and Apple's own limit.
        public var appleCallsPerSecond: [String: Double]
        public var budgetPerSecond: Double

        enum CodingKeys: String, CodingKey {
            case customers, seconds, clients, requests, warm, cold, purchases, apple, notifications, invariants, build
            case store, instances
            case appleCallsPerSecond = "apple_calls_per_second"
            case budgetPerSecond = "budget_per_second"
            case warmOnly = "warm_only"
            case warmOnlyByStatus = "warm_only_by_status"
            case appleRate = "apple_rate"
            case hangSeconds = "hang_seconds"
            case elapsedSeconds = "elapsed_seconds"
            case answersByStatus = "answers_by_status"
            case historyByResult = "history_by_result"
            case refusedByReason = "refused_by_reason"
            case gatewayAppleCalls = "gateway_apple_calls"
            case customersAsked = "customers_asked"
            case customersAnswered = "customers_answered"
            case customersGivenUp = "customers_given_up"
            case apple429 = "apple_429"
            case appleCallsTotal = "apple_calls_total"
            case appleMaxCallsPerSecond = "apple_max_calls_per_second"
            case appleLimitPerSecond = "apple_limit_per_second"
            case callsPerCustomer = "calls_per_customer"
            case projectedPrefetchHours = "projected_prefetch_hours"
            case servePeakRSSMB = "serve_peak_rss_mb"
            case receiptsSigned = "receipts_signed"
            case receiptSigningMsMean = "receipt_signing_ms_mean"
            case loadAverage = "load_average"
        }
    }

    public static func run(
        _ options: Options,
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> Result {
        let o = options
        let schema = o.postgres ? try BenchSchema(environment: ProcessEnvironment.variables) : nil
        defer { schema?.drop() }
        let rig = try BenchRig(label: "receipt-scale", executable: o.executable)
        let receiptPKI = try GeneratedReceiptPKI.generate(
            notBefore: rig.now / 1000 - 86_400,
            notAfter: rig.now / 1000 + 86_400
        )
        try Data(receiptPKI.root.der).write(to: URL(filePath: rig.directory + "/receipt-root.der"))
        let allowance = o.appleRate.allowance
        let fake = ProceduralAppleAPI(
            signer: rig.signer,
            bundleID: BenchRig.bundle,
            baseSize: o.customers,
            allowance: allowance,
            epoch: rig.now,
            now: WallClock.wallMillis
        )
        var peer = HTTPServer.Configuration()
        peer.threads = 8
        peer.connectionsPerAddressLimit = 0
        let apple = HTTPServer(configuration: peer) { fake.handle($0) }
        try apple.start()
        defer {
            apple.stopAccepting()
            apple.stop()
        }
        let appleURL = "http://127.0.0.1:\(apple.port)"
        let apiKey = try PrivateKey.generateP256()
        let adminToken = String(UInt64.random(in: 0...UInt64.max), radix: 16) + "bench"
        // The app is a sandbox one (test roots vouch for sandbox receipts only), and the gateway's budget takes a
        // tenth of the production rate it is told for the sandbox: it is told ten times the fake's table, so that its
        // sandbox budget is the table the fake enforces, as a production app's is Apple's.
        let toldRate = allowance.perSecond * 10
        try rig.launch(
            configText: """
                {
                  "listen": "127.0.0.1:0",
                  "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN" },
                  "store": \(schema == nil ? #"{ "sqlite": "gateway.db" }"# : #"{ "postgres": { "url_env": "IAPGW_BENCH_STORE_URL" } }"#),
                  "trust": { "extra_roots": ["root.der"], "extra_receipt_roots": ["receipt-root.der"] },
                  "app_store_api": { "production_url": "\(appleURL)", "sandbox_url": "\(appleURL)",
                                     "issuer_id": "00000000-0000-4000-8000-000000000000", "key_id": "BENCHKEY01",
                                     "private_key_env": "BENCH_API_KEY",
                                     "rate_limits": { "per_second": { "transaction_history": \(toldRate),
                                                                      "subscription_statuses": \(toldRate) } } },
                  "receipts": { "max_in_flight_per_address": 64 },
                  "apps": [ { "bundle_id": "\(BenchRig.bundle)", "app_apple_id": 1, "environments": ["sandbox"],
                              "shared_secret_env": ["BENCH_SECRET"], "authority": "v2", "receipts": "api" } ]
                }
                """,
            environment: [
                "BENCH_SECRET": BenchRig.secret, "BENCH_API_KEY": apiKey.pemPKCS8, "BENCH_ADMIN_TOKEN": adminToken,
                "IAPGW_BENCH_STORE_URL": schema?.url ?? "",
            ],
            count: max(1, o.instances)
        )
        let adminPorts = rig.gateways.compactMap { $0.listeningField("admin_port").flatMap { UInt16($0) } }
        guard let gateway = rig.gateway, adminPorts.count == rig.gateways.count else {
            throw IngestBenchmark.Failure(description: "a gateway's admin listener did not start")
        }

        // Notifications signed before the run: their signing is no part of what is measured.
        let notificationCount = max(1, Int(o.seconds * o.notificationsPerSecond))
        progress("signing \(notificationCount) notifications…")
        let notificationBodies = try (0..<notificationCount).map { try rig.v2Body($0) }
        let receipts = ReceiptBodies(pki: receiptPKI, now: rig.now, baseSize: o.customers)
        let record = Record()

        progress("running \(o.seconds) s: \(o.clients) clients, \(o.customers) customers, Apple at \(o.appleRate)…")
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(o.seconds * 1000))
        if o.hangSeconds > 0 {
            let from = WallClock.wallMillis() + Int64((o.seconds - o.hangSeconds) / 2 * 1000)
            fake.hang(from: from, until: from + Int64(o.hangSeconds * 1000))
        }
        let urls = rig.ports.map { "http://127.0.0.1:\($0)/sandbox/verifyReceipt" }
        let transport = CurlTransport(maxConcurrentTransfers: o.clients)
        let clients = (0..<o.clients).map { index in
            Task.detached {
                var customers = SkewedCustomers(
                    customers: o.customers,
                    purchaseFraction: o.purchaseFraction,
                    seed: o.seed,
                    stream: index,
                    streams: o.clients
                )
                while ContinuousClock.now < deadline {
                    let url = urls[index % urls.count]
                    let (customer, purchase) = customers.next()
                    record.asked(customer, purchase: purchase)
                    guard let body = try? receipts.body(customer) else { continue }
                    var attempt = 0
                    while true {
                        let warm = record.isWarm(customer)
                        let sent = ContinuousClock.now
                        let answer = try? await transport.send(
                            HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 60_000)
                        )
                        let millis = IsolationBenchmark.millis(ContinuousClock.now - sent)
                        let status: String =
                            switch answer?.status {
                            case nil: "transport"
                            case 200?: String(ReceiptEndpoint.status(of: answer?.body ?? []))
                            case let other?: "http_\(other)"
                            }
                        record.answer(customer, warm: warm, status: status, millis: millis)
                        guard status == "21005", attempt < o.retries,
                            ContinuousClock.now + .milliseconds(o.retryMillis) < deadline
                        else {
                            if status != "0" { record.gaveUp(customer) }
                            break
                        }
                        attempt += 1
                        try? await Task.sleep(for: .milliseconds(o.retryMillis))
                    }
                }
            }
        }
        let warmOnly = warmOnlyClients(o, urls: urls, receipts: receipts, record: record, deadline: deadline)
        // Notifications at a steady pace, each on its own task: a slow answer does not slow the ones after it.
        let notificationTransport = CurlTransport(maxConcurrentTransfers: 16)
        let interval = 1.0 / o.notificationsPerSecond
        let notificationsURL = rig.notificationsURL
        var sends: [Task<Void, Never>] = []
        for (i, body) in notificationBodies.enumerated() {
            let at = started + .milliseconds(Int64(Double(i) * interval * 1000))
            guard at < deadline else { break }
            try? await Task.sleep(until: at, clock: .continuous)
            sends.append(
                Task.detached {
                    let sent = ContinuousClock.now
                    let answer = try? await notificationTransport.send(
                        HTTPRequest(method: .post, url: notificationsURL, body: body, timeoutMillis: 60_000)
                    )
                    record.notification(
                        millis: IsolationBenchmark.millis(ContinuousClock.now - sent),
                        ok: answer?.status == 200
                    )
                }
            )
        }
        for send in sends { await send.value }
        for client in clients + warmOnly { await client.value }
        let elapsed = ReceiptHistoryBenchmark.seconds(ContinuousClock.now - started)

        progress("reading the gateways' metrics…")
        // Every instance's text, one after the other: the counts sum over them.
        var metrics = ""
        for adminPort in adminPorts {
            metrics +=
                (try? await transport.send(
                    HTTPRequest(
                        method: .get,
                        url: "http://127.0.0.1:\(adminPort)/metrics",
                        headers: [HTTPHeader("Authorization", "Bearer \(adminToken)")],
                        timeoutMillis: 30_000
                    )
                )).map { String(decoding: $0.body, as: UTF8.self) + "\n" } ?? ""
        }
        let peakRSS = gateway.peakRSSMB
        let load = Self.loadAverage()
        if let status = rig.finishAll().map(\.status).first(where: { $0 != 0 }) {
            throw IngestBenchmark.Failure(description: "a gateway stopped with status \(status)")
        }
        return result(
            options: o,
            elapsed: elapsed,
            record: record.snapshot(),
            fake: fake,
            metrics: metrics,
            peakRSS: peakRSS,
            receipts: receipts,
            load: load
        )
    }

    /// The line, from what was recorded, the fake's counts and the gateway's metrics.
    static func result(
        options o: Options,
        elapsed: Double,
        record r: Record.State,
        fake: ProceduralAppleAPI,
        metrics: String,
        peakRSS: Double,
        receipts: ReceiptBodies,
        load: Double
    ) -> Result {
        func answers(_ requests: Int, _ latencies: [Double]) -> Answers {
            let sorted = latencies.sorted()
            return Answers(
                requests: requests,
                answered: sorted.count,
                answersPerSecond: elapsed > 0 ? (Double(sorted.count) / elapsed * 10).rounded() / 10 : 0,
                p50Ms: sorted.quantile(0.5, decimals: 2),
                p99Ms: sorted.quantile(0.99, decimals: 2),
                maxMs: ((sorted.last ?? 0) * 100).rounded() / 100
            )
        }
        var endpoints: [String: AppleEndpoint] = [:]
        var hours = 0.0
        var callsPerCustomer = 0.0
        var within = true
        for endpoint in ProceduralAppleAPI.Endpoint.allCases {
            let s = fake.stats(endpoint)
            let perCustomer = s.customers > 0 ? Double(s.ok) / Double(s.customers) : 0
            callsPerCustomer += perCustomer
            // The endpoints are limited apart: the slower one sets how long the whole base takes.
            hours = max(hours, Double(o.customers) * perCustomer / (Double(fake.allowance.perSecond) * 3600))
            within = within && s.maxCallsPerSecond <= fake.allowance.perSecond && s.calls <= fake.allowance.perHour
            endpoints[endpoint.rawValue] = AppleEndpoint(
                calls: s.calls,
                ok: s.ok,
                rateLimited: s.rateLimited,
                maxCallsPerSecond: s.maxCallsPerSecond,
                limitPerSecond: fake.allowance.perSecond,
                limitPerHour: fake.allowance.perHour,
                customers: s.customers,
                callsPerCustomer: (perCustomer * 100).rounded() / 100
            )
        }
        let notes = r.notificationMillis.sorted()
        let notifications = Notifications(
            sent: notes.count,
            answered200: r.notificationsOK,
            answered200Fraction: notes.isEmpty
                ? 0
                : (Double(r.notificationsOK) / Double(notes.count) * 10_000).rounded()
                    / 10_000,
            p50Ms: notes.quantile(0.5, decimals: 2),
            p99Ms: notes.quantile(0.99, decimals: 2),
            maxMs: ((notes.last ?? 0) * 100).rounded() / 100
        )
        let apple429 = endpoints.values.reduce(0) { $0 + $1.rateLimited }
        let signing = receipts.signing
        return Result(
            customers: o.customers,
            seconds: o.seconds,
            appleRate: o.appleRate.description,
            clients: o.clients,
            hangSeconds: o.hangSeconds,
            elapsedSeconds: (elapsed * 100).rounded() / 100,
            requests: r.statuses.values.reduce(0, +),
            answersByStatus: r.statuses,
            historyByResult: PrometheusText.counts(metrics, "iapgw_receipt_history_total", labels: ["result"]),
            refusedByReason: PrometheusText.counts(metrics, "iapgw_receipt_refused_total", labels: ["reason"]),
            gatewayAppleCalls: PrometheusText.counts(
                metrics,
                "iapgw_receipt_history_calls_total",
                labels: ["endpoint", "outcome"]
            ),
            warm: answers(r.warmRequests, r.warmMillis),
            cold: answers(r.coldRequests, r.coldMillis),
            warmOnly: warmOnlyAnswers(r, elapsed: elapsed),
            warmOnlyByStatus: r.warmOnly.statuses,
            customersAsked: r.asked.count,
            customersAnswered: r.warm.count,
            customersGivenUp: r.gaveUp.subtracting(r.warm).count,
            purchases: r.purchases,
            apple429: apple429,
            appleCallsTotal: endpoints.values.reduce(0) { $0 + $1.calls },
            appleMaxCallsPerSecond: endpoints.mapValues(\.maxCallsPerSecond),
            appleLimitPerSecond: fake.allowance.perSecond,
            apple: endpoints,
            callsPerCustomer: (callsPerCustomer * 100).rounded() / 100,
            projectedPrefetchHours: (hours * 100).rounded() / 100,
            notifications: notifications,
            servePeakRSSMB: (peakRSS * 10).rounded() / 10,
            receiptsSigned: signing.count,
            receiptSigningMsMean: signing.count > 0
                ? (signing.millis / Double(signing.count) * 100).rounded() / 100 : 0,
            loadAverage: load,
            invariants: Invariants(
                zero429: apple429 == 0,
                callsWithinBudget: within,
                notificationsUnaffected: notes.count > 0 && r.notificationsOK == notes.count
                    && notifications.p99Ms <= 25
            ),
            build: VerifyBenchmark.buildKind,
            store: o.postgres ? "postgres" : "sqlite",
            instances: max(1, o.instances),
            appleCallsPerSecond: endpoints.mapValues {
                elapsed > 0 ? (Double($0.calls) / elapsed * 10).rounded() / 10 : 0
            },
            budgetPerSecond: Double(fake.allowance.perSecond) * AppleRateLimitSettings().margin
        )
    }

    /// The warm-only clients: each asks, in a closed loop, about a customer drawn from those already answered once
    /// (their history is stored), while the other clients keep Apple's budget saturated with cold ones — the receipt
    /// path's promise that a customer with a stored history is answered at once whatever the cold ones wait for.
    static func warmOnlyClients(
        _ o: Options,
        urls: [String],
        receipts: ReceiptBodies,
        record: Record,
        deadline: ContinuousClock.Instant
    ) -> [Task<Void, Never>] {
        let transport = CurlTransport(maxConcurrentTransfers: max(1, o.warmClients))
        return (0..<o.warmClients).map { index in
            Task.detached {
                var random = SplitMix64(seed: o.seed, stream: o.clients + index)
                while ContinuousClock.now < deadline {
                    guard let customer = record.randomWarm(using: &random), let body = try? receipts.body(customer)
                    else {
                        try? await Task.sleep(for: .milliseconds(10))
                        continue
                    }
                    let sent = ContinuousClock.now
                    let answer = try? await transport.send(
                        HTTPRequest(method: .post, url: urls[index % urls.count], body: body, timeoutMillis: 60_000)
                    )
                    let status: String =
                        switch answer?.status {
                        case nil: "transport"
                        case 200?: String(ReceiptEndpoint.status(of: answer?.body ?? []))
                        case let other?: "http_\(other)"
                        }
                    record.warmOnly(
                        status: status,
                        millis: IsolationBenchmark.millis(ContinuousClock.now - sent),
                        at: sent
                    )
                }
            }
        }
    }

    /// The warm-only clients' figures, their pace over the time from their first request to the end.
    static func warmOnlyAnswers(_ r: Record.State, elapsed: Double) -> Answers {
        let w = r.warmOnly
        let sorted = w.millis.sorted()
        let span = w.first.map { ReceiptHistoryBenchmark.seconds(w.last - $0) } ?? 0
        return Answers(
            requests: w.statuses.values.reduce(0, +),
            answered: sorted.count,
            answersPerSecond: span > 0 ? (Double(sorted.count) / span * 10).rounded() / 10 : 0,
            p50Ms: sorted.quantile(0.5, decimals: 2),
            p99Ms: sorted.quantile(0.99, decimals: 2),
            maxMs: ((sorted.last ?? 0) * 100).rounded() / 100
        )
    }

    /// The machine's load average over the last minute (`/proc/loadavg`), 0 where there is none.
    static func loadAverage() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
            let first = text.split(separator: " ").first
        else { return 0 }
        return Double(first) ?? 0
    }

    /// What the clients and the notifications saw.
    final class Record: Sendable {
        struct State: Sendable {
            var statuses: [String: Int] = [:]
            var warmRequests = 0
            var coldRequests = 0
            var warmMillis: [Double] = []
            var coldMillis: [Double] = []
            /// Customers answered status 0 at least once: their history is in the gateway's store.
            var warm: Set<Int> = []
            var asked: Set<Int> = []
            var gaveUp: Set<Int> = []
            var purchases = 0
            var notificationMillis: [Double] = []
            var notificationsOK = 0
            /// ``warm`` in the order answered, for the warm-only clients to draw from.
            var warmList: [Int] = []
            var warmOnly = WarmOnly()
        }

        /// The warm-only clients' requests: statuses, the latencies of those answered status 0, when the first was
        /// sent and the last answered.
        struct WarmOnly: Sendable {
            var statuses: [String: Int] = [:]
            var millis: [Double] = []
            var first: ContinuousClock.Instant?
            var last = ContinuousClock.now
        }

        func randomWarm(using random: inout SplitMix64) -> Int? {
            let draw = random.next()
            return state.withLock { s in s.warmList.isEmpty ? nil : s.warmList[Int(draw % UInt64(s.warmList.count))] }
        }

        func warmOnly(status: String, millis: Double, at sent: ContinuousClock.Instant) {
            state.withLock { s in
                s.warmOnly.statuses[status, default: 0] += 1
                if status == "0" { s.warmOnly.millis.append(millis) }
                s.warmOnly.first = s.warmOnly.first ?? sent
                s.warmOnly.last = ContinuousClock.now
            }
        }

        private let state = Mutex(State())

        func asked(_ customer: Int, purchase: Bool) {
            state.withLock { s in
                s.asked.insert(customer)
                if purchase { s.purchases += 1 }
            }
        }

        func isWarm(_ customer: Int) -> Bool { state.withLock { $0.warm.contains(customer) } }

        func answer(_ customer: Int, warm: Bool, status: String, millis: Double) {
            state.withLock { s in
                s.statuses[status, default: 0] += 1
                if warm { s.warmRequests += 1 } else { s.coldRequests += 1 }
                guard status == "0" else { return }
                if warm { s.warmMillis.append(millis) } else { s.coldMillis.append(millis) }
                if s.warm.insert(customer).inserted { s.warmList.append(customer) }
            }
        }

        func gaveUp(_ customer: Int) { state.withLock { _ = $0.gaveUp.insert(customer) } }

        func notification(millis: Double, ok: Bool) {
            state.withLock { s in
                s.notificationMillis.append(millis)
                if ok { s.notificationsOK += 1 }
            }
        }

        func snapshot() -> State { state.withLock { $0 } }
    }

    /// Each customer's `POST /verifyReceipt` body — a real app receipt signed with the test receipt PKI (RSA) naming
    /// the customer's subscription — signed the first time the customer is asked about and kept: the signing is the
    /// client's work, never counted in the gateway's latency.
    final class ReceiptBodies: Sendable {
        let pki: GeneratedReceiptPKI
        let now: Int64
        let baseSize: Int
        private let bodies = Mutex<[Int: [UInt8]]>([:])
        private let cost = Mutex<(count: Int, millis: Double)>((0, 0))

        init(pki: GeneratedReceiptPKI, now: Int64, baseSize: Int) {
            (self.pki, self.now, self.baseSize) = (pki, now, baseSize)
        }

        var signing: (count: Int, millis: Double) { cost.withLock { $0 } }

        func body(_ number: Int) throws -> [UInt8] {
            if let body = bodies.withLock({ $0[number] }) { return body }
            let started = ContinuousClock.now
            let body = try Self.body(ProceduralCustomer(number: number, baseSize: baseSize), pki: pki, now: now)
            let millis = IsolationBenchmark.millis(ContinuousClock.now - started)
            cost.withLock { $0 = ($0.count + 1, $0.millis + millis) }
            bodies.withLock { $0[number] = body }
            return body
        }

        /// The body of `customer`'s receipt: its first period, bought as the subscription's original transaction.
        static func body(_ customer: ProceduralCustomer, pki: GeneratedReceiptPKI, now: Int64) throws -> [UInt8] {
            let first = customer.transactions(epoch: now)[0]
            let otid = customer.originalTransactionID
            let receipt = AppReceipt(
                receiptType: "ProductionSandbox",
                bundleID: BenchRig.bundle,
                applicationVersion: "1",
                originalApplicationVersion: "1.0",
                appItemID: 0,
                creationDate: now,
                originalPurchaseDate: first.purchase,
                inApp: [
                    ReceiptPurchase(
                        quantity: 1,
                        productID: "com.example.bench.monthly",
                        transactionID: otid,
                        originalTransactionID: otid,
                        purchaseDate: first.purchase,
                        originalPurchaseDate: first.purchase,
                        expiresDate: first.purchase + 30 * ProceduralCustomer.day,
                        webOrderLineItemID: otid + "9",
                        isTrialPeriod: false,
                        isInIntroOfferPeriod: false,
                        productType: 3
                    )
                ]
            )
            let data = ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: pki))
            return Array(#"{"receipt-data":""#.utf8) + Array(data.utf8)
                + Array(#"","password":"\#(BenchRig.secret)"}"#.utf8)
        }
    }
}

/// Counters read from the Prometheus text of `GET /metrics`.
enum PrometheusText {
    /// The samples of `metric`, keyed by the values of `labels` joined with `/` (a sample without one of them is
    /// left out), summed where other labels differ.
    static func counts(_ text: String, _ metric: String, labels: [String]) -> [String: Int] {
        var out: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix(metric + "{") {
            guard let close = line.lastIndex(of: "}"),
                let value = Double(line[line.index(after: close)...].filter { $0 != " " })
            else { continue }
            let inner = line[line.index(line.startIndex, offsetBy: metric.count + 1)..<close]
            var found: [String: String] = [:]
            for pair in inner.split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { continue }
                found[String(kv[0])] = String(kv[1].filter { $0 != "\"" })
            }
            let values = labels.compactMap { found[$0] }
            guard values.count == labels.count else { continue }
            out[values.joined(separator: "/"), default: 0] += Int(value)
        }
        return out
    }
}
