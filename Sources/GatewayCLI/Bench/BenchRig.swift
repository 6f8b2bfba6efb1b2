internal import Gateway
internal import HTTPServer
internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import HTTPClient
internal import V2Adapter
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// What every `bench` run of the whole service sets up: a temporary folder, a fresh Apple-shaped test PKI trusted for
/// sandbox only (as the simulator's is), a fake verifyReceipt that answers for the subscription a V1 body names, and
/// the real gateway in its own process (this executable's `serve`), so that its memory and CPU are its own.
final class BenchRig {
    static let bundle = "com.example.bench"
    static let secret = "0123456789abcdef0123456789abcdef"

    let directory: String
    let now: Int64
    let signer: AppleJWSSigner
    let apple: HTTPServer
    private(set) var gateway: ChildProcess?
    private(set) var port: UInt16 = 0

    init(label: String) throws {
        now = WallClock.wallMillis()
        directory = FileManager.default.temporaryDirectory.appending(path: "iapgw-\(label)-\(UInt64.random(in: 0...UInt64.max))").path()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pki = try GeneratedTestPKI.generate(notBefore: now / 1000 - 86_400, notAfter: now / 1000 + 30 * 86_400, name: "iap-gateway Bench")
        try Data(pki.root.der).write(to: URL(filePath: directory + "/root.der"))
        signer = try AppleJWSSigner(leaf: pki.leaf, intermediate: pki.intermediate, root: pki.root, leafKey: pki.leafKey)
        var peer = HTTPServer.Configuration()
        peer.threads = 4
        apple = HTTPServer(configuration: peer) { request in .json(200, BenchRig.receiptAnswer(for: request.body)) }
        try apple.start()
    }

    /// Starts the gateway with the bench app (V1 authoritative, both generations) sending to `appDownstreams`.
    /// `downstreams`: the config's `downstreams` array (JSON); `limits`: its `limits` object (JSON) or "".
    func startGateway(downstreams: String, appDownstreams: [String], limits: String = "") throws {
        let names = appDownstreams.map { "\"\($0)\"" }.joined(separator: ", ")
        let configText = """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "BENCH_ADMIN_TOKEN_UNSET" },
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_roots": ["root.der"] },
              "verify_receipt": { "production_url": "http://127.0.0.1:\(apple.port)/verifyReceipt",
                                  "sandbox_url": "http://127.0.0.1:\(apple.port)/sandbox/verifyReceipt" },
              "apps": [ { "bundle_id": "\(Self.bundle)", "app_apple_id": 1, "environments": ["production", "sandbox"],
                          "shared_secret_env": ["BENCH_SECRET"], "authority": "v1", "downstreams": [\(names)] } ],
              "downstreams": \(downstreams)\(limits.isEmpty ? "" : ",\n  \"limits\": \(limits)")
            }
            """
        try Data(configText.utf8).write(to: URL(filePath: directory + "/config.json"))
        _ = try GatewayConfig.parse(Array(configText.utf8), baseDirectory: directory)  // a broken template fails here
        let child = try ChildProcess(
            executable: "/proc/self/exe", arguments: ["serve", "--config", directory + "/config.json"],
            environment: ["BENCH_SECRET": Self.secret, "PATH": "/usr/bin:/bin"])
        guard let port = child.listeningPort(timeout: 20) else {
            child.terminate(signal: SIGKILL)
            throw IngestBenchmark.Failure(description: "the gateway did not start")
        }
        gateway = child
        self.port = port
    }

    var notificationsURL: String { "http://127.0.0.1:\(port)/notifications" }

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

    /// A run that failed half-way still stops its child and removes its folder.
    deinit { if !finished { _ = finish() } }

    /// Stops the gateway (SIGTERM: a graceful stop) and the fake Apple, removes the folder; returns the gateway's exit
    /// status and its last log line ("stopped"). Once.
    func finish() -> (status: Int32, stoppedLine: String?) {
        guard !finished else { return (0, nil) }
        finished = true
        let status = gateway?.terminate() ?? 0
        let line = gateway?.keptLines.last(where: { $0.contains("\"msg\":\"stopped\"") })
        apple.stopAccepting()
        apple.stop()
        try? FileManager.default.removeItem(atPath: directory)
        return (status, line)
    }

    /// A DID_RENEW with signed transaction and renewal info, all signed by the bench leaf.
    func v2Body(_ i: Int) throws -> [UInt8] {
        let otid = "30000000\(Self.padded(i, 8))"
        let tx = try signer.sign(payload: Array("""
            {"transactionId":"\(otid)","originalTransactionId":"\(otid)","bundleId":"\(Self.bundle)","productId":"p.monthly",\
            "purchaseDate":\(now - 60_000),"originalPurchaseDate":\(now - 60_000),"expiresDate":\(now + 2_592_000_000),"quantity":1,\
            "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\(now),"environment":"Sandbox",\
            "transactionReason":"RENEWAL","price":9990,"currency":"USD"}
            """.utf8))
        let renewal = try signer.sign(payload: Array("""
            {"originalTransactionId":"\(otid)","autoRenewProductId":"p.monthly","productId":"p.monthly","autoRenewStatus":1,\
            "signedDate":\(now),"environment":"Sandbox"}
            """.utf8))
        let uuid = "bench000-0000-4000-8000-\(Self.padded(i, 12))"
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
        return Array("""
            {"notification_type":"DID_RENEW","password":"\(secret)","environment":"Sandbox","bid":"\(bundle)",\
            "original_transaction_id":"\(otid)","auto_renew_status":"true","unified_receipt":{"environment":"Sandbox",\
            "latest_receipt":"bench-receipt-\(otid)","status":0,"latest_receipt_info":[{"original_transaction_id":"\(otid)",\
            "transaction_id":"\(otid)","product_id":"p.monthly","purchase_date_ms":"1","expires_date_ms":"2"}]}}
            """.utf8)
    }

    /// verifyReceipt's answer: the subscription the request's receipt names (`bench-receipt-OTID`), renewed a minute
    /// ago for a month; an answer without it for any other receipt.
    static func receiptAnswer(for request: [UInt8]) -> [UInt8] {
        guard case .object(let o)? = try? JSONParser.parse(request), let receipt = o["receipt-data"]?.stringValue,
            receipt.hasPrefix("bench-receipt-")
        else { return Array(#"{"status":0,"environment":"Sandbox","latest_receipt_info":[]}"#.utf8) }
        let otid = receipt.dropFirst("bench-receipt-".count)
        let now = WallClock.wallMillis()
        return Array("""
            {"status":0,"environment":"Sandbox","receipt":{"bundle_id":"\(bundle)"},"latest_receipt":"\(receipt)",\
            "latest_receipt_info":[{"quantity":"1","product_id":"p.monthly","transaction_id":"\(otid)",\
            "original_transaction_id":"\(otid)","purchase_date_ms":"\(now - 60_000)","original_purchase_date_ms":"\(now - 60_000)",\
            "expires_date_ms":"\(now + 2_592_000_000)","web_order_line_item_id":"\(otid)","is_trial_period":"false"}],\
            "pending_renewal_info":[{"auto_renew_product_id":"p.monthly","original_transaction_id":"\(otid)",\
            "product_id":"p.monthly","auto_renew_status":"1"}]}
            """.utf8)
    }

    static func padded(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
