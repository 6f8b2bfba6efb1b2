internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
internal import HTTPServer
internal import ServiceKit
internal import V2Adapter
internal import WireJSON

#if canImport(Glibc)
import Glibc
internal import TestPKI
#endif

/// What every `bench` run of the whole service sets up: a temporary folder, a fresh Apple-shaped test PKI trusted for
/// sandbox only (as the simulator's is), a fake verifyReceipt that answers for the subscription a V1 body names, and
/// the real gateway in its own process (this executable's `serve`), so that its memory and CPU are its own — or several
/// gateways sharing one PostgreSQL database.
final class BenchRig {
    static let bundle = "com.example.bench"
    static let secret = "0123456789abcdef0123456789abcdef"

    let directory: String
    let now: Int64
    let signer: AppleJWSSigner
    /// The leaf certificate's serial in hex, as the gateway records it for a V2 notification.
    let leafSerial: String
    let apple: HTTPServer
    /// The `iap-gateway` executable the gateways run: this one (`/proc/self/exe`), or the built one for tests.
    let executable: String
    /// The gateways, in the order they were started (one unless ``startGateways(count:store:downstreams:appDownstreams:limits:)``
    /// asked for more); an entry stays after its process was killed.
    private(set) var gateways: [ChildProcess] = []
    private(set) var ports: [UInt16] = []
    /// The first gateway (the only one of most benchmarks).
    var gateway: ChildProcess? { gateways.first }
    var port: UInt16 { ports.first ?? 0 }

    init(label: String, executable: String = "/proc/self/exe") throws {
        self.executable = executable
        now = WallClock.wallMillis()
        directory = FileManager.default.temporaryDirectory.appending(
            path: "iapgw-\(label)-\(UInt64.random(in: 0...UInt64.max))"
        ).path()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pki = try GeneratedTestPKI.generate(
            notBefore: now / 1000 - 86_400,
            notAfter: now / 1000 + 30 * 86_400,
            name: "iap-gateway Bench"
        )
        try Data(pki.root.der).write(to: URL(filePath: directory + "/root.der"))
        leafSerial = pki.leaf.serialNumberHex
        signer = try AppleJWSSigner(
            leaf: pki.leaf,
            intermediate: pki.intermediate,
            root: pki.root,
            leafKey: pki.leafKey
        )
        var peer = HTTPServer.Configuration()
        peer.threads = 4
        apple = HTTPServer(configuration: peer) { request in .json(200, BenchRig.receiptAnswer(for: request.body)) }
        try apple.start()
    }

    /// Starts the gateway with the bench app (V1 authoritative, both generations) sending to `appDownstreams`.
    /// `downstreams`: the config's `downstreams` array (JSON); `limits`: its `limits` object (JSON) or "".
    func startGateway(downstreams: String, appDownstreams: [String], limits: String = "") throws {
        try startGateways(
            count: 1,
            store: .sqlite,
            downstreams: downstreams,
            appDownstreams: appDownstreams,
            limits: limits
        )
    }

    /// Starts `count` gateways on one config and one store, all spawned before any is waited for (so that they open
    /// the store — and, on PostgreSQL, migrate it — at the same moment), then waits for each to listen.
    func startGateways(
        count: Int,
        store: BenchStore,
        downstreams: String,
        appDownstreams: [String],
        limits: String = ""
    ) throws {
        precondition(
            gateways.isEmpty && count >= 1 && (count == 1 || store != .sqlite),
            "several gateways need a shared store"
        )
        let names = appDownstreams.map { "\"\($0)\"" }.joined(separator: ", ")
        let storeJSON: String
        var environment = ["BENCH_SECRET": Self.secret, "PATH": "/usr/bin:/bin"]
        switch store {
        case .sqlite: storeJSON = #"{ "sqlite": "gateway.db" }"#
        case .postgres(let url):
            storeJSON = #"{ "postgres": { "url_env": "IAPGW_BENCH_STORE_URL" } }"#
            environment["IAPGW_BENCH_STORE_URL"] = url
        }
        let configText = """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN_UNSET" },
              "store": \(storeJSON),
              "trust": { "extra_roots": ["root.der"] },
              "verify_receipt": { "production_url": "http://127.0.0.1:\(apple.port)/verifyReceipt",
                                  "sandbox_url": "http://127.0.0.1:\(apple.port)/sandbox/verifyReceipt" },
              "apps": [ { "bundle_id": "\(Self.bundle)", "app_apple_id": 1, "environments": ["production", "sandbox"],
                          "shared_secret_env": ["BENCH_SECRET"], "authority": "v1", "downstreams": [\(names)] } ],
              "downstreams": \(downstreams)\(limits.isEmpty ? "" : ",\n  \"limits\": \(limits)")
            }
            """
        try launch(configText: configText, environment: environment, count: count)
    }

    /// Writes `configText` as the rig's `config.json` and starts `count` gateways serving it (all spawned before any
    /// is waited for), with `environment` (plus `PATH`); then waits for each to listen.
    func launch(configText: String, environment: [String: String], count: Int = 1) throws {
        precondition(gateways.isEmpty && count >= 1, "the rig's gateways are started once")
        var environment = environment
        environment["PATH"] = environment["PATH"] ?? "/usr/bin:/bin"
        try Data(configText.utf8).write(to: URL(filePath: directory + "/config.json"))
        _ = try GatewayConfig.parse(Array(configText.utf8), baseDirectory: directory)  // a broken template fails here
        var started: [ChildProcess] = []
        for _ in 0..<count {
            started.append(
                try ChildProcess(
                    executable: executable,
                    arguments: ["serve", "--config", directory + "/config.json"],
                    environment: environment
                )
            )
        }
        var ports: [UInt16] = []
        for child in started {
            guard let port = child.listeningPort(timeout: 30) else {
                for other in started { other.terminate(signal: SIGKILL) }
                throw IngestBenchmark.Failure(description: "a gateway did not start")
            }
            ports.append(port)
        }
        gateways = started
        self.ports = ports
    }

    var notificationsURL: String { "http://127.0.0.1:\(port)/notifications" }
    /// Each gateway's `POST /notifications`, in the order they were started.
    var notificationsURLs: [String] { ports.map { "http://127.0.0.1:\($0)/notifications" } }

    /// Bytes of the database file alone.
    var databaseBytes: Int64 {
        var info = stat()
        return stat(directory + "/gateway.db", &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Bytes of the store on disk: the database file and its write-ahead log.
    var storeBytes: Int64 {
        ["gateway.db", "gateway.db-wal"].reduce(0) { total, name in
            var info = stat()
            return total + (stat(directory + "/" + name, &info) == 0 ? Int64(info.st_size) : 0)
        }
    }

    private var finished = false

    /// A run that failed half-way still stops its children and removes its folder.
    deinit { if !finished { _ = finishAll() } }

    /// Stops the gateways (SIGTERM: a graceful stop; one killed before keeps the status it died with) and the fake
    /// Apple, removes the folder; returns the first gateway's exit status and its last log line ("stopped"). Once.
    func finish() -> (status: Int32, stoppedLine: String?) {
        let all = finishAll()
        return all.first ?? (0, nil)
    }

    /// ``finish()`` for every gateway, in the order they were started.
    func finishAll() -> [(status: Int32, stoppedLine: String?)] {
        guard !finished else { return [] }
        finished = true
        // Each gets SIGTERM before any is waited for: they stop side by side.
        for child in gateways { child.signal(SIGTERM) }
        let results = gateways.map { child in
            (child.terminate(), child.keptLines.last(where: { $0.contains("\"msg\":\"stopped\"") }))
        }
        apple.stopAccepting()
        apple.stop()
        try? FileManager.default.removeItem(atPath: directory)
        return results
    }

    /// The `notificationUUID` of ``v2Body(_:)``: the id of its one event, and so its webhook id.
    static func v2NotificationUUID(_ i: Int) -> String { "bench000-0000-4000-8000-\(padded(i, 12))" }

    /// A DID_RENEW with signed transaction and renewal info, all signed by the bench leaf.
    func v2Body(_ i: Int) throws -> [UInt8] {
        let otid = "30000000\(Self.padded(i, 8))"
        let tx = try signer.sign(
            payload: Array(
                """
                {"transactionId":"\(otid)","originalTransactionId":"\(otid)","bundleId":"\(Self.bundle)","productId":"p.monthly",\
                "purchaseDate":\(now - 60_000),"originalPurchaseDate":\(now - 60_000),"expiresDate":\(now + 2_592_000_000),"quantity":1,\
                "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\(now),"environment":"Sandbox",\
                "transactionReason":"RENEWAL","price":9990,"currency":"USD"}
                """.utf8
            )
        )
        let renewal = try signer.sign(
            payload: Array(
                """
                {"originalTransactionId":"\(otid)","autoRenewProductId":"p.monthly","productId":"p.monthly","autoRenewStatus":1,\
                "signedDate":\(now),"environment":"Sandbox"}
                """.utf8
            )
        )
        let uuid = Self.v2NotificationUUID(i)
        let payload = """
            {"notificationType":"DID_RENEW","notificationUUID":"\(uuid)","data":{"appAppleId":1,"bundleId":"\(Self.bundle)",\
            "bundleVersion":"1","environment":"Sandbox","signedTransactionInfo":"\(tx)","signedRenewalInfo":"\(renewal)","status":1},\
            "version":"2.0","signedDate":\(now)}
            """
        return InboundBody.v2(signedPayload: try signer.sign(payload: Array(payload.utf8)))
    }

    /// A V1 DID_RENEW body for a distinct subscription; its receipt names the subscription for the fake verifyReceipt.
    static func v1Body(_ i: Int) -> [UInt8] {
        let otid = "40000000\(padded(i, 8))"
        return Array(
            """
            {"notification_type":"DID_RENEW","password":"\(secret)","environment":"Sandbox","bid":"\(bundle)",\
            "original_transaction_id":"\(otid)","auto_renew_status":"true","unified_receipt":{"environment":"Sandbox",\
            "latest_receipt":"bench-receipt-\(otid)","status":0,"latest_receipt_info":[{"original_transaction_id":"\(otid)",\
            "transaction_id":"\(otid)","product_id":"p.monthly","purchase_date_ms":"1","expires_date_ms":"2"}]}}
            """.utf8
        )
    }

    /// verifyReceipt's answer: the subscription the request's receipt names (`bench-receipt-OTID`), renewed a minute
    /// ago for a month; an answer without it for any other receipt.
    static func receiptAnswer(for request: [UInt8]) -> [UInt8] {
        guard case .object(let o)? = try? JSONParser.parse(request), let receipt = o["receipt-data"]?.stringValue,
            receipt.hasPrefix("bench-receipt-")
        else { return Array(#"{"status":0,"environment":"Sandbox","latest_receipt_info":[]}"#.utf8) }
        let otid = receipt.dropFirst("bench-receipt-".count)
        let now = WallClock.wallMillis()
        return Array(
            """
            {"status":0,"environment":"Sandbox","receipt":{"bundle_id":"\(bundle)"},"latest_receipt":"\(receipt)",\
            "latest_receipt_info":[{"quantity":"1","product_id":"p.monthly","transaction_id":"\(otid)",\
            "original_transaction_id":"\(otid)","purchase_date_ms":"\(now - 60_000)","original_purchase_date_ms":"\(now - 60_000)",\
            "expires_date_ms":"\(now + 2_592_000_000)","web_order_line_item_id":"\(otid)","is_trial_period":"false"}],\
            "pending_renewal_info":[{"auto_renew_product_id":"p.monthly","original_transaction_id":"\(otid)",\
            "product_id":"p.monthly","auto_renew_status":"1"}]}
            """.utf8
        )
    }

    static func padded(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}

/// Where a rig's gateways keep their store.
enum BenchStore: Sendable, Equatable {
    /// `gateway.db` in the rig's folder (WAL, synchronous=FULL): one gateway.
    case sqlite
    /// A PostgreSQL database, by a libpq connection string whose sessions use a schema of their own: one gateway or several.
    case postgres(url: String)

    var name: String {
        switch self {
        case .sqlite: "sqlite"
        case .postgres: "postgres"
        }
    }
}
