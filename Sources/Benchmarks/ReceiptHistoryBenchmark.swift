internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import HTTPServer
internal import ReceiptPath
internal import Receipts
internal import ServiceKit
internal import Synchronization
internal import V2Adapter
internal import WireJSON

#if canImport(Glibc)
import Glibc
internal import TestPKI
#endif

/// The long-history part of `iap-gateway bench receipts`: a customer of 1,200 transactions asked through
/// `POST /sandbox/verifyReceipt` of the real service (`serve`, a child process, `api` mode, default `receipts.*`), the
/// App Store Server API a local fake that takes `latencyMillis` per call (Get Transaction History in pages of 20 with
/// Apple's `productType` filter, Get All Subscription Statuses; every transaction signed under a generated test PKI
/// the gateway trusts for sandbox), and the old backend retrying every `retryMillis` as long as it is answered `21005`
/// with `is-retryable`. Measured per customer: the calls to Apple, the requests and the time until status 0, and the
/// calls made by the retries after it. The baseline, in the same run against the same fake: the walk the receipt path
/// made before pages were kept (every page of an unfiltered Get Transaction History, then the statuses, raced against
/// `receipts.fetch_timeout` and cancelled at it, nothing kept), asked `baselineRequests` times.
public enum ReceiptHistoryBenchmark {
    public struct Result: Encodable, Sendable {
        public var customers: [Customer]
        public var latencyMs: Int
        public var fetchTimeoutMs: Int
        public var retryMs: Int

        enum CodingKeys: String, CodingKey {
            case customers
            case latencyMs = "apple_latency_ms"
            case fetchTimeoutMs = "fetch_timeout_ms"
            case retryMs = "retry_ms"
        }
    }

    public struct Customer: Encodable, Sendable {
        public var name: String
        public var transactions: Int
        public var consumables: Int
        /// Before: Apple calls of each request, and whether any was answered (status 0).
        public var baselineCallsPerRequest: [Int]
        public var baselineAnswered: Bool
        /// Now: the old backend's requests until status 0 (the last one answered), their Apple calls, the time.
        public var requestsUntilAnswered: Int
        public var callsUntilAnswered: Int
        public var secondsUntilAnswered: Double
        public var firstStatus: Int
        public var firstAnswerSeconds: Double
        public var transactionsAnswered: Int
        /// Requests made after the answer (each answered from the store), and the Apple calls they made.
        public var retriesAfter: Int
        public var callsByRetriesAfter: Int
        public var statusesAfter: [Int]

        enum CodingKeys: String, CodingKey {
            case name, transactions, consumables
            case baselineCallsPerRequest = "baseline_calls_per_request"
            case baselineAnswered = "baseline_answered"
            case requestsUntilAnswered = "requests_until_answered"
            case callsUntilAnswered = "calls_until_answered"
            case secondsUntilAnswered = "seconds_until_answered"
            case firstStatus = "first_status"
            case firstAnswerSeconds = "first_answer_seconds"
            case transactionsAnswered = "transactions_answered"
            case retriesAfter = "retries_after"
            case callsByRetriesAfter = "calls_by_retries_after"
            case statusesAfter = "statuses_after"
        }
    }

    static let bundle = "com.example.bench"
    static let secret = "0123456789abcdef0123456789abcdef"

    /// The App Store Server API of the benchmark: pre-signed transactions per customer, `latency` per call.
    final class FakeAPI: Sendable {
        struct Stored: Sendable {
            /// Each transaction's JWS and Apple's `productType` for it.
            var transactions: [(jws: String, type: String)]
            var status: String
        }
        let customers: [String: Stored]
        let latencyMicros: UInt32
        private let calls = Mutex<[String: Int]>([:])

        init(customers: [String: Stored], latencyMillis: Int) {
            (self.customers, self.latencyMicros) = (customers, UInt32(latencyMillis * 1_000))
        }

        func calls(_ customer: String) -> Int { calls.withLock { $0[customer] ?? 0 } }

        func handle(_ request: ServerRequest) -> ServerResponse {
            let parts = request.path.split(separator: "/").map(String.init)
            guard parts.count == 4, let customer = customers[parts[3]] else {
                return .json(404, Array(#"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#.utf8))
            }
            calls.withLock { $0[parts[3], default: 0] += 1 }
            usleep(latencyMicros)
            if parts[1] == "v1", parts[2] == "subscriptions" { return .json(200, Array(customer.status.utf8)) }
            let types = Set(request.queryItems.filter { $0.name == "productType" }.map(\.value))
            let matching = customer.transactions.filter { types.isEmpty || types.contains($0.type) }
            let offset = Int(request.queryItems.first { $0.name == "revision" }?.value ?? "0") ?? 0
            let page = matching.dropFirst(offset).prefix(20)
            let next = offset + page.count
            let signed = page.map { "\"\($0.jws)\"" }.joined(separator: ",")
            return .json(
                200,
                Array(
                    """
                    {"revision":"\(next)","hasMore":\(next < matching.count),"bundleId":"\(ReceiptHistoryBenchmark.bundle)",\
                    "appAppleId":1,"environment":"Sandbox","signedTransactions":[\(signed)]}
                    """.utf8
                )
            )
        }
    }

    public static func run(
        latencyMillis: Int = 250,
        retryMillis: Int = 1_000,
        baselineRequests: Int = 3,
        retriesAfter: Int = 10,
        executable: String = "/proc/self/exe"
    ) async throws -> Result {
        let now = WallClock.wallMillis()
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "iapgw-bench-history-\(UInt64.random(in: 0...UInt64.max))"
        ).path()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try GeneratedTestPKI.generate(
            notBefore: now / 1000 - 86_400,
            notAfter: now / 1000 + 30 * 86_400,
            name: "iap-gateway Bench"
        )
        try Data(pki.root.der).write(to: URL(filePath: directory + "/root.der"))
        let signer = try AppleJWSSigner(
            leaf: pki.leaf,
            intermediate: pki.intermediate,
            root: pki.root,
            leafKey: pki.leafKey
        )
        let receiptPKI = try GeneratedReceiptPKI.generate(notBefore: now / 1000 - 86_400, notAfter: now / 1000 + 86_400)
        try Data(receiptPKI.root.der).write(to: URL(filePath: directory + "/receipt-root.der"))

        // The review's customer (1,200 transactions a verifyReceipt answer lists: 600 monthly periods, 600
        // non-consumables) and one whose 1,200 are half consumables (the filter's pages saved).
        let plans = [
            (name: "1200_listed", customer: "3000000000000001", subscription: 600, nonConsumable: 600, consumable: 0),
            (
                name: "1200_half_consumables", customer: "3000000000100001", subscription: 300, nonConsumable: 300,
                consumable: 600
            ),
        ]
        var stored: [String: FakeAPI.Stored] = [:]
        var bodies: [String: [UInt8]] = [:]
        for plan in plans {
            let (customers, body) = try customer(
                plan.customer,
                subscription: plan.subscription,
                nonConsumable: plan.nonConsumable,
                consumable: plan.consumable,
                now: now,
                signer: signer,
                receiptPKI: receiptPKI
            )
            stored[plan.customer] = customers
            bodies[plan.customer] = body
        }
        let fake = FakeAPI(customers: stored, latencyMillis: latencyMillis)
        var peer = HTTPServer.Configuration()
        peer.threads = 8
        let apple = HTTPServer(configuration: peer) { fake.handle($0) }
        try apple.start()
        defer {
            apple.stopAccepting()
            apple.stop()
        }
        let appleURL = "http://127.0.0.1:\(apple.port)"
        let apiKey = try PrivateKey.generateP256()
        let config = """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN_UNSET" },
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_roots": ["root.der"], "extra_receipt_roots": ["receipt-root.der"] },
              "app_store_api": { "production_url": "\(appleURL)", "sandbox_url": "\(appleURL)",
                                 "issuer_id": "00000000-0000-4000-8000-000000000000", "key_id": "BENCHKEY01",
                                 "private_key_env": "BENCH_API_KEY" },
              "apps": [ { "bundle_id": "\(bundle)", "app_apple_id": 1, "environments": ["sandbox"],
                          "shared_secret_env": ["BENCH_SECRET"], "authority": "v2", "receipts": "api" } ]
            }
            """
        try Data(config.utf8).write(to: URL(filePath: directory + "/config.json"))
        let parsed = try GatewayConfig.parse(Array(config.utf8), baseDirectory: directory)
        let fetchTimeout = Int(parsed.receiptSettings.fetchTimeoutMillis)
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
        let transport = CurlTransport()

        // The walk as it was, in this process, against the same fake.
        let client = AppStoreAPIClient(
            configuration: .init(
                productionURL: appleURL,
                sandboxURL: appleURL,
                keyID: "BENCHKEY01",
                issuerID: "00000000-0000-4000-8000-000000000000",
                bundleID: bundle,
                privateKey: apiKey,
                maxAttempts: 1
            ),
            transport: transport,
            adapter: V2Adapter(
                verifier: AppleJWSVerifier(
                    anchors: try TrustAnchors(
                        appleRoots: [TrustAnchors.appleRootCAG3],
                        sandboxOnlyRoots: [pki.root.der]
                    )
                ),
                apps: nil
            ),
            now: WallClock.wallMillis
        )

        var results: [Customer] = []
        for plan in plans {
            let customer = plan.customer
            var baseline: [Int] = []
            var baselineAnswered = false
            for _ in 0..<baselineRequests {
                let before = fake.calls(customer)
                baselineAnswered = await oldWalk(client, customer, timeoutMillis: fetchTimeout) || baselineAnswered
                // The cancelled call's answer still arrives at the fake; wait for it to be counted.
                try await Task.sleep(for: .milliseconds(latencyMillis + 50))
                baseline.append(fake.calls(customer) - before)
            }
            let body = bodies[customer] ?? []
            let callsBefore = fake.calls(customer)
            let started = ContinuousClock.now
            var requests = 0
            var firstStatus = -1
            var firstSeconds = 0.0
            var answered: [UInt8]?
            // The old backend: retries as told, for at most 60 requests or five minutes.
            while requests < 60, ContinuousClock.now - started < .seconds(300) {
                requests += 1
                let response = try await transport.send(
                    HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 60_000)
                )
                let status = ReceiptEndpoint.status(of: response.body)
                if requests == 1 { (firstStatus, firstSeconds) = (status, seconds(ContinuousClock.now - started)) }
                if status == 0 {
                    answered = response.body
                    break
                }
                guard status == 21005 else {
                    throw IngestBenchmark.Failure(
                        description:
                            "the gateway answered \(String(decoding: response.body.prefix(200), as: UTF8.self))"
                    )
                }
                try await Task.sleep(for: .milliseconds(retryMillis))
            }
            let untilAnswered = seconds(ContinuousClock.now - started)
            let callsUntilAnswered = fake.calls(customer) - callsBefore
            let callsAfterBefore = fake.calls(customer)
            var statusesAfter: [Int] = []
            for _ in 0..<retriesAfter {
                let response = try await transport.send(
                    HTTPRequest(method: .post, url: url, body: body, timeoutMillis: 60_000)
                )
                statusesAfter.append(ReceiptEndpoint.status(of: response.body))
            }
            let listed = answered.flatMap { try? JSONParser.parse($0).objectValue?["latest_receipt_info"]?.arrayValue }
            results.append(
                Customer(
                    name: plan.name,
                    transactions: plan.subscription + plan.nonConsumable + plan.consumable,
                    consumables: plan.consumable,
                    baselineCallsPerRequest: baseline,
                    baselineAnswered: baselineAnswered,
                    requestsUntilAnswered: answered == nil ? 0 : requests,
                    callsUntilAnswered: callsUntilAnswered,
                    secondsUntilAnswered: answered == nil ? 0 : (untilAnswered * 100).rounded() / 100,
                    firstStatus: firstStatus,
                    firstAnswerSeconds: (firstSeconds * 100).rounded() / 100,
                    transactionsAnswered: listed?.count ?? 0,
                    retriesAfter: retriesAfter,
                    callsByRetriesAfter: fake.calls(customer) - callsAfterBefore,
                    statusesAfter: Array(Set(statusesAfter)).sorted()
                )
            )
        }
        return Result(customers: results, latencyMs: latencyMillis, fetchTimeoutMs: fetchTimeout, retryMs: retryMillis)
    }

    /// The receipt path's walk before pages were kept: Get Transaction History (every page, every product type) and
    /// Get All Subscription Statuses, cancelled at the deadline; true when it finished within it.
    static func oldWalk(_ client: AppStoreAPIClient, _ customer: String, timeoutMillis: Int) async -> Bool {
        await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                guard (try? await client.transactionHistory(transactionID: customer, environment: .sandbox)) != nil,
                    (try? await client.subscriptionStatuses(transactionID: customer, environment: .sandbox)) != nil
                else { return false }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(timeoutMillis))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? false
        }
    }

    /// A customer's transactions, signed, with Apple's `productType` each, its statuses answer, and the request body
    /// of its app receipt.
    static func customer(
        _ otid: String,
        subscription: Int,
        nonConsumable: Int,
        consumable: Int,
        now: Int64,
        signer: AppleJWSSigner,
        receiptPKI: GeneratedReceiptPKI
    ) throws -> (FakeAPI.Stored, [UInt8]) {
        let day: Int64 = 86_400_000
        let base = Int64(otid) ?? 0
        var transactions: [(jws: String, type: String)] = []
        func sign(
            _ id: Int64,
            otid: String,
            product: String,
            type: String,
            purchase: Int64,
            expires: Int64?
        ) throws
            -> String
        {
            let expiry =
                expires.map {
                    #","expiresDate":\#($0),"webOrderLineItemId":"\#(id + 500_000)","subscriptionGroupIdentifier":"21000001""#
                } ?? ""
            return try signer.sign(
                payload: Array(
                    """
                    {"transactionId":"\(id)","originalTransactionId":"\(otid)","bundleId":"\(bundle)","productId":"\(product)",\
                    "purchaseDate":\(purchase),"originalPurchaseDate":\(purchase),"quantity":1,"type":"\(type)",\
                    "inAppOwnershipType":"PURCHASED","signedDate":\(now),"environment":"Sandbox"\(expiry)}
                    """.utf8
                )
            )
        }
        // Apple's order is by when it last changed them, oldest first: here the kinds interleaved.
        let total = subscription + nonConsumable + consumable
        for k in 0..<max(subscription, nonConsumable, consumable) {
            if k < subscription {
                let start = now - Int64(subscription - k) * 30 * day
                let id = k == 0 ? base : base + 1_000_000 + Int64(k)
                transactions.append(
                    (
                        try sign(
                            id,
                            otid: otid,
                            product: "com.example.bench.monthly",
                            type: "Auto-Renewable Subscription",
                            purchase: start,
                            expires: start + 30 * day
                        ), "AUTO_RENEWABLE"
                    )
                )
            }
            if k < nonConsumable {
                let id = base + 2_000_000 + Int64(k)
                transactions.append(
                    (
                        try sign(
                            id,
                            otid: String(id),
                            product: "com.example.bench.pack\(k)",
                            type: "Non-Consumable",
                            purchase: now - Int64(nonConsumable - k) * day,
                            expires: nil
                        ), "NON_CONSUMABLE"
                    )
                )
            }
            if k < consumable {
                let id = base + 3_000_000 + Int64(k)
                transactions.append(
                    (
                        try sign(
                            id,
                            otid: String(id),
                            product: "com.example.bench.coins",
                            type: "Consumable",
                            purchase: now - Int64(consumable - k) * day,
                            expires: nil
                        ), "CONSUMABLE"
                    )
                )
            }
        }
        let latest = try sign(
            base + 1_000_000 + Int64(subscription),
            otid: otid,
            product: "com.example.bench.monthly",
            type: "Auto-Renewable Subscription",
            purchase: now - 29 * day,
            expires: now + day
        )
        let renewal = try signer.sign(
            payload: Array(
                """
                {"originalTransactionId":"\(otid)","autoRenewProductId":"com.example.bench.monthly",\
                "productId":"com.example.bench.monthly","autoRenewStatus":1,"signedDate":\(now),"environment":"Sandbox"}
                """.utf8
            )
        )
        let status = """
            {"environment":"Sandbox","bundleId":"\(bundle)","appAppleId":1,"data":[{"subscriptionGroupIdentifier":"21000001",\
            "lastTransactions":[{"status":1,"originalTransactionId":"\(otid)","signedTransactionInfo":"\(latest)",\
            "signedRenewalInfo":"\(renewal)"}]}]}
            """
        let receipt = AppReceipt(
            receiptType: "ProductionSandbox",
            bundleID: bundle,
            applicationVersion: "1",
            originalApplicationVersion: "1.0",
            appItemID: 0,
            creationDate: now,
            originalPurchaseDate: now - Int64(total) * day,
            inApp: [
                ReceiptPurchase(
                    quantity: 1,
                    productID: "com.example.bench.monthly",
                    transactionID: otid,
                    originalTransactionID: otid,
                    purchaseDate: now - Int64(subscription) * 30 * day,
                    originalPurchaseDate: now - Int64(subscription) * 30 * day,
                    expiresDate: now - Int64(subscription - 1) * 30 * day,
                    webOrderLineItemID: String(base + 500_000),
                    isTrialPeriod: false,
                    isInIntroOfferPeriod: false,
                    productType: 3
                )
            ]
        )
        let data = ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: receiptPKI))
        let body = Array(#"{"receipt-data":""#.utf8) + Array(data.utf8) + Array(#"","password":"\#(secret)"}"#.utf8)
        return (FakeAPI.Stored(transactions: transactions, status: status), body)
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
