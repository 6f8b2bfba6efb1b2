internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import HTTPServer
internal import ReceiptPath
internal import Receipts
internal import ServiceKit
internal import Store
internal import V2Adapter

#if canImport(Glibc)
import Glibc
internal import TestPKI
#endif

/// The `/verifyReceipt` part of `iap-gateway bench receipts`: the real service (`serve`, a child process, SQLite)
/// answering `POST /sandbox/verifyReceipt` in `api` mode from a fresh store — every customer's history stored less than
/// `receipts.history_max_age` ago, so no answer asks Apple — over loopback: answers per second (closed loop), p50 and
/// p99 at an offered rate (open loop), and the process's peak RSS. Each receipt is a signed app receipt of
/// `purchases` purchases under a generated receipt chain the gateway trusts for sandbox receipts. Apps send one
/// receipt again and again, which the gateway reads once; so the main figures ask each customer's receipt many times,
/// and a second closed loop sends `firstReads` receipts the gateway has never seen (the same customers' receipts
/// made at other moments), each once: every one of those is read and its signature judged.
public enum ReceiptAnswerBenchmark {
    public struct Result: Encodable, Sendable {
        public var answersPerSecond: Double
        /// The same closed loop against a bare libmicrohttpd server answering 200, in the same run.
        public var httpBaselinePerSecond: Double
        public var fractionOfHTTPBaseline: Double
        public var offeredRatePerSecond: Int
        public var p50Ms: Double
        public var p99Ms: Double
        public var latencySamples: Int
        public var failures: Int
        public var failuresByAnswer: [String: Int]
        /// `serve`'s peak RSS over the whole run.
        public var peakRSSMB: Double
        /// `serve`'s CPU time per answer in the closed loop.
        public var cpuMsPerAnswer: Double
        /// The closed loop over receipts each sent once: read, judged and answered.
        public var firstReadAnswersPerSecond: Double
        public var firstReadCPUMsPerAnswer: Double
        public var firstReads: Int
        public var customers: Int
        public var receiptBytes: Int
        public var concurrency: Int
        public var seconds: Double
        /// At least 1,000 answers a second, p99 at most 20 ms at the offered rate, `serve` at most 100 MB.
        public var meetsTarget: Bool

        enum CodingKeys: String, CodingKey {
            case answersPerSecond = "answers_per_second"
            case httpBaselinePerSecond = "http_baseline_per_second"
            case fractionOfHTTPBaseline = "fraction_of_http_baseline"
            case offeredRatePerSecond = "offered_rate_per_second"
            case p50Ms = "p50_ms"
            case p99Ms = "p99_ms"
            case latencySamples = "latency_samples"
            case failures
            case failuresByAnswer = "failures_by_answer"
            case peakRSSMB = "peak_rss_mb"
            case cpuMsPerAnswer = "cpu_ms_per_answer"
            case firstReadAnswersPerSecond = "first_read_answers_per_second"
            case firstReadCPUMsPerAnswer = "first_read_cpu_ms_per_answer"
            case firstReads = "first_reads"
            case customers
            case receiptBytes = "receipt_bytes"
            case concurrency, seconds
            case meetsTarget = "meets_target"
        }
    }

    static let bundle = "com.example.bench"
    static let secret = "0123456789abcdef0123456789abcdef"

    public static func run(
        seconds: Double,
        rate: Int = 1_000,
        customers: Int = 200,
        purchases: Int = 24,
        concurrency: Int = 16,
        firstReads: Int = 2_000,
        executable: String = "/proc/self/exe"
    ) async throws -> Result {
        let now = WallClock.wallMillis()
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "iapgw-bench-receipts-\(UInt64.random(in: 0...UInt64.max))"
        ).path()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try GeneratedReceiptPKI.generate(notBefore: now / 1000 - 86_400, notAfter: now / 1000 + 86_400)
        try Data(pki.root.der).write(to: URL(filePath: directory + "/receipt-root.der"))

        // Each customer: a receipt of `purchases` monthly periods, and the history the store holds for it.
        var bodies: [[UInt8]] = []
        var receiptBytes = 0
        var firstReadBodies: [[UInt8]] = []
        func body(_ receipt: AppReceipt) throws -> [UInt8] {
            let data = ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: pki))
            receiptBytes = max(receiptBytes, data.utf8.count)
            return Array(#"{"receipt-data":""#.utf8) + Array(data.utf8) + Array(#"","password":"\#(secret)"}"#.utf8)
        }
        let store = try SQLiteStore(path: directory + "/gateway.db")
        for c in 0..<customers {
            let otid = String(3_000_000_000_000_000 + c * 1_000)
            let month: Int64 = 30 * 86_400_000
            let start = now - Int64(purchases) * month
            var inApp: [ReceiptPurchase] = []
            var transactions: [TransactionPayload] = []
            for p in 0..<purchases {
                let id = String(3_000_000_000_000_000 + c * 1_000 + p)
                let purchase = start + Int64(p) * month
                inApp.append(
                    ReceiptPurchase(
                        quantity: 1,
                        productID: "com.example.bench.monthly",
                        transactionID: id,
                        originalTransactionID: otid,
                        purchaseDate: purchase,
                        originalPurchaseDate: start,
                        expiresDate: purchase + month,
                        webOrderLineItemID: String(4_000_000_000_000_000 + c * 1_000 + p),
                        isTrialPeriod: false,
                        isInIntroOfferPeriod: false,
                        productType: 3
                    )
                )
                var tx = TransactionPayload()
                (tx.transactionID, tx.originalTransactionID, tx.productID, tx.bundleID) = (
                    id, otid, "com.example.bench.monthly", bundle
                )
                (tx.purchaseDate, tx.originalPurchaseDate, tx.expiresDate, tx.quantity) = (
                    purchase, start, purchase + month, 1
                )
                (tx.type, tx.signedDate, tx.inAppOwnershipType) = ("Auto-Renewable Subscription", now, "PURCHASED")
                (tx.webOrderLineItemID, tx.subscriptionGroupIdentifier) = (
                    String(4_000_000_000_000_000 + c * 1_000 + p), "21000001"
                )
                transactions.append(tx)
            }
            var renewal = RenewalInfoPayload()
            (renewal.originalTransactionID, renewal.productID, renewal.autoRenewProductID) = (
                otid, "com.example.bench.monthly", "com.example.bench.monthly"
            )
            (renewal.autoRenewStatus, renewal.signedDate) = (1, now)
            let receipt = AppReceipt(
                receiptType: "ProductionSandbox",
                bundleID: bundle,
                applicationVersion: "1",
                originalApplicationVersion: "1.0",
                appItemID: 0,
                creationDate: now,
                originalPurchaseDate: start,
                inApp: inApp
            )
            bodies.append(try body(receipt))
            // The same customer's receipt as the app had it at earlier moments: other bytes, the same purchases.
            for k in 0..<(firstReads / max(1, customers) + (c < firstReads % max(1, customers) ? 1 : 0)) {
                var earlier = receipt
                earlier.creationDate = now - Int64(k + 1) * 1_000
                firstReadBodies.append(try body(earlier))
            }
            let history = CustomerHistory(fetchedAt: now, transactions: transactions, renewals: [renewal]).encoded()
            let key = ReceiptHistoryKey(bundleID: bundle, environment: .sandbox, customer: otid)
            _ = try await store.write { tx in
                _ = try tx.claimReceiptHistory(key, owner: "bench", until: now, now: now, freshSince: 0)
                try tx.settleReceiptHistory(key, json: history, fetchedAt: now, owner: "bench")
            }
        }
        store.close()

        // The gateway: api mode, a fresh store; the App Store Server API configured (api mode needs it) but never
        // reached — every history is fresh.
        let apiKey = try PrivateKey.generateP256()
        let config = """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN_UNSET" },
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_receipt_roots": ["receipt-root.der"] },
              "app_store_api": { "production_url": "http://127.0.0.1:1", "sandbox_url": "http://127.0.0.1:1",
                                 "issuer_id": "00000000-0000-4000-8000-000000000000", "key_id": "BENCHKEY01",
                                 "private_key_env": "BENCH_API_KEY" },
              "apps": [ { "bundle_id": "\(bundle)", "environments": ["sandbox"], "shared_secret_env": ["BENCH_SECRET"],
                          "authority": "v2", "receipts": "api" } ],
              "receipts": { "history_max_age": "24h" }
            }
            """
        try Data(config.utf8).write(to: URL(filePath: directory + "/config.json"))
        let gateway = try ChildProcess(
            executable: executable,
            arguments: ["serve", "--config", directory + "/config.json"],
            environment: ["BENCH_SECRET": secret, "BENCH_API_KEY": apiKey.pemPKCS8, "PATH": "/usr/bin:/bin"]
        )
        defer { _ = gateway.terminate() }
        guard let port = gateway.listeningPort(timeout: 30) else {
            throw IngestBenchmark.Failure(description: "the gateway did not start")
        }
        let url = "http://127.0.0.1:\(port)/sandbox/verifyReceipt"
        let transport = CurlTransport(maxConcurrentTransfers: concurrency)

        // Warm: every customer once (and a check that the answers are answers).
        let check = try await transport.send(
            HTTPRequest(method: .post, url: url, body: bodies[0], timeoutMillis: 10_000)
        )
        // Every answer must be an answer (status 0): a 21002 is an HTTP 200 too.
        let judge: @Sendable (HTTPResponse) -> String? = { r in
            guard r.status == 200 else { return String(r.status) }
            let status = ReceiptEndpoint.status(of: r.body)
            return status == 0 ? nil : "status \(status)"
        }
        guard judge(check) == nil else {
            throw IngestBenchmark.Failure(
                description: "the gateway answered \(String(decoding: check.body.prefix(200), as: UTF8.self))"
            )
        }
        let many = (0..<200_000).map { bodies[$0 % bodies.count] }
        _ = await IngestBenchmark.closedLoop(
            urls: [url],
            bodies: Array(many.prefix(customers)),
            seconds: 60,
            concurrency: concurrency,
            transport: transport,
            judge: judge
        )
        // The baseline, in the same run: the same client and bodies against a libmicrohttpd server (the gateway's own
        // wrapper and thread count) that answers at once.
        var echoConfig = HTTPServer.Configuration()
        echoConfig.threads = GatewayConfig().limits.httpThreads
        let echo = HTTPServer(configuration: echoConfig) { _ in .json(200, Array(#"{"status":0}"#.utf8)) }
        try echo.start()
        let baseline = await IngestBenchmark.closedLoop(
            urls: ["http://127.0.0.1:\(echo.port)/sandbox/verifyReceipt"],
            bodies: many,
            seconds: seconds,
            concurrency: concurrency,
            transport: transport
        ).perSecond
        echo.stopAccepting()
        echo.stop()
        let cpuBefore = gateway.cpuSeconds
        let closed = await IngestBenchmark.closedLoop(
            urls: [url],
            bodies: many,
            seconds: seconds,
            concurrency: concurrency,
            transport: transport,
            judge: judge
        )
        let cpu = gateway.cpuSeconds - cpuBefore
        let latencies = Samples()
        let failures = FailureTally()
        await IngestBenchmark.openLoop(
            urls: [url],
            bodies: Array(many.prefix(max(1, Int(Double(rate) * seconds)))),
            rate: rate,
            transport: transport,
            latencies: latencies,
            failures: failures,
            judge: judge
        )
        // Last: the receipts never seen, which push the repeated ones out of the gateway's cache of receipts read.
        let firstCPUBefore = gateway.cpuSeconds
        let first = await IngestBenchmark.closedLoop(
            urls: [url],
            bodies: firstReadBodies,
            seconds: 600,
            concurrency: concurrency,
            transport: transport,
            judge: judge
        )
        let firstCPU = gateway.cpuSeconds - firstCPUBefore
        let sorted = latencies.all.sorted()
        func quantile(_ q: Double) -> Double {
            sorted.isEmpty ? 0 : (sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] * 100).rounded() / 100
        }
        var byAnswer = closed.failures.byAnswer
        for (answer, n) in failures.byAnswer.merging(first.failures.byAnswer, uniquingKeysWith: +) {
            byAnswer[answer, default: 0] += n
        }
        return Result(
            answersPerSecond: closed.perSecond.rounded(),
            httpBaselinePerSecond: baseline.rounded(),
            fractionOfHTTPBaseline: baseline > 0 ? (closed.perSecond / baseline * 1000).rounded() / 1000 : 0,
            offeredRatePerSecond: rate,
            p50Ms: quantile(0.5),
            p99Ms: quantile(0.99),
            latencySamples: sorted.count,
            failures: closed.failures.value + failures.value + first.failures.value,
            failuresByAnswer: byAnswer,
            peakRSSMB: (gateway.peakRSSMB * 10).rounded() / 10,
            cpuMsPerAnswer: closed.accepted > 0 ? (cpu * 1000 / Double(closed.accepted) * 1000).rounded() / 1000 : 0,
            firstReadAnswersPerSecond: first.perSecond.rounded(),
            firstReadCPUMsPerAnswer: first.accepted > 0
                ? (firstCPU * 1000 / Double(first.accepted) * 1000).rounded() / 1000 : 0,
            firstReads: firstReadBodies.count,
            customers: customers,
            receiptBytes: receiptBytes,
            concurrency: concurrency,
            seconds: seconds,
            meetsTarget: closed.perSecond >= 1_000 && quantile(0.99) <= 20 && gateway.peakRSSMB <= 100
                && closed.failures.value + failures.value + first.failures.value == 0
        )
    }
}
