import Canonical
import Crypto
import Foundation
import Gateway
import HTTPClient
import Reports
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

/// The assembled service on 127.0.0.1:0 with a real downstream receiver and a fake Apple verifyReceipt.
@Suite struct GatewayServiceTests {
    static let webhookSecret = "whsec_ZXhhbXBsZS13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5"
    static let adminToken = "test-admin-token"

    final class Running: Sendable {
        let service: GatewayService
        let port: UInt16
        let adminPort: UInt16?
        let directory: String
        init(service: GatewayService, port: UInt16, adminPort: UInt16?, directory: String) {
            (self.service, self.port, self.adminPort, self.directory) = (service, port, adminPort, directory)
        }
        func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }
        func adminURL(_ path: String) -> String { "http://127.0.0.1:\(adminPort ?? 0)\(path)" }
    }

    /// Starts a gateway trusting the test root for sandbox, delivering to `receiver`, asking `apple` for receipts.
    static func start(
        receiver: LoopbackHTTPServer,
        apple: LoopbackHTTPServer? = nil,
        now: Int64 = GatewayHarness.t + 3_600_000,
        logs: LogBox = LogBox(),
        webhookSecret: String = webhookSecret,
        configure: (inout GatewayConfig, inout GatewayService.Dependencies) -> Void = { _, _ in }
    ) throws -> Running {
        let directory = try Scratch.directory()
        let appleURL = apple?.url("") ?? "http://127.0.0.1:1"
        let json = """
            {
              "listen": "127.0.0.1:0",
              "admin": { "listen": "127.0.0.1:0", "token_env": "ADMIN_TOKEN" },
              "store": { "sqlite": "gateway.db" },
              "trust": { "extra_roots": ["\(Fixtures.url("test-pki/root.der").path())"] },
              "verify_receipt": { "production_url": "\(appleURL)/verifyReceipt", "sandbox_url": "\(appleURL)/sandbox/verifyReceipt" },
              "apps": [
                { "bundle_id": "com.example.gateway", "app_apple_id": 1234567890, "environments": ["production", "sandbox"],
                  "shared_secret_env": ["APP_SECRET"], "authority": "v2", "downstreams": ["main", "legacy"] }
              ],
              "downstreams": [
                { "name": "main", "url": "\(receiver.url("/events"))", "secret_env": "WEBHOOK_SECRET",
                  "environments": ["production", "sandbox"], "shadow": true, "max_attempts": 3 },
                { "name": "legacy", "kind": "v1_passthrough", "url": "\(receiver.url("/apple/v1"))", "environments": ["production", "sandbox"] }
              ]
            }
            """
        var config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
        var deps = GatewayService.Dependencies(
            environment: [
                "ADMIN_TOKEN": adminToken, "WEBHOOK_SECRET": webhookSecret, "APP_SECRET": GatewayHarness.v1Secret,
            ],
            transport: CurlTransport(),
            now: { now },
            jitter: { 0 },
            logSink: { line in logs.append(line) }
        )
        deps.deliveryTuning.retry.baseDelay = .zero
        deps.deliveryTuning.pollMillis = 20
        deps.receiptTuning.pollMillis = 20
        deps.verifyReceiptBaseDelay = .zero
        // V2 is authoritative for an app that also takes V1: its V2 path needs a source; none of these tests uses it.
        deps.v2PathSource = UnknownToV2()
        configure(&config, &deps)
        let service = try GatewayService(config: config, dependencies: deps)
        let (port, adminPort) = try service.start()
        return Running(service: service, port: port, adminPort: adminPort, directory: directory)
    }

    final class LogBox: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ s: String) { lines.withLock { $0.append(s) } }
        var all: [String] { lines.withLock { $0 } }
    }

    static func post(_ url: String, _ body: [UInt8], headers: [HTTPHeader] = []) async throws -> HTTPResponse {
        try await CurlTransport().send(
            HTTPRequest(method: .post, url: url, headers: headers, body: body, timeoutMillis: 10_000)
        )
    }

    static func get(_ url: String, token: String? = nil) async throws -> HTTPResponse {
        try await CurlTransport().send(
            HTTPRequest(
                method: .get,
                url: url,
                headers: token.map { [HTTPHeader("Authorization", "Bearer \($0)")] } ?? [],
                timeoutMillis: 10_000
            )
        )
    }

    @Test func acceptsDeduplicatesAndDeliversOverHTTP() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver: receiver)
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        let first = try await Self.post(g.url("/notifications"), body)
        let retry = try await Self.post(g.url("/notifications"), body)
        #expect(first.status == 200 && retry.status == 200)
        #expect(try JSONParser.parse(retry.body).objectValue?["duplicate"] == .bool(true))
        // Delivered once despite the retry: the duplicate queued nothing, and all that was queued has been delivered
        // (a fixed wait here proved nothing on a loaded machine, where a second delivery could come later).
        try await eventually("everything queued delivered") {
            try g.service.store.deliveries().filter { $0.state != .delivered }.count == 0
        }
        #expect(try g.service.store.deliveries().filter { $0.downstream == "main" }.count == 1)
        #expect(receiver.requests.filter { $0.path == "/events" }.count == 1)
        let health = try await Self.get(g.url("/healthz"))
        #expect(health.status == 200)
        let metrics = String(
            decoding: try await Self.get(g.adminURL("/metrics"), token: Self.adminToken).body,
            as: UTF8.self
        )
        // The whole line: "… 1" alone would also match 10 to 19.
        #expect(metrics.split(separator: "\n").contains("iapgw_notifications_duplicate_total{version=\"v2\"} 1"))
        #expect(metrics.contains("iapgw_request_seconds_bucket"))
        await g.service.shutdown()
    }

    @Test func forgeriesAndWrongSecretsAreRefusedAndQuarantined() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver: receiver)
        let forged = try await Self.post(
            g.url("/notifications"),
            try Fixtures.bytes("v2-synthetic/negative/tampered-payload.json")
        )
        #expect(forged.status == 403)
        let wrong = String(decoding: try Fixtures.bytes("v1-synthetic/did-renew.json"), as: UTF8.self)
            .replacingOccurrences(of: GatewayHarness.v1Secret, with: "ffffffffffffffffffffffffffffffff")
        let v1 = try await Self.post(g.url("/notifications"), Array(wrong.utf8))
        #expect(v1.status == 401)
        #expect(
            try JSONParser.parse(v1.body).objectValue?["error"]?.objectValue?["code"] == .string("bad_shared_secret")
        )
        let malformed = try await Self.post(g.url("/notifications"), Array("{not json".utf8))
        #expect(malformed.status == 400)
        let quarantine = try await Self.get(g.adminURL("/admin/quarantine"), token: Self.adminToken)
        #expect(try JSONParser.parse(quarantine.body).arrayValue?.count == 3)
        await g.service.shutdown()
    }

    @Test func oversizedBodiesGet413() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver: receiver)
        let big = try await Self.post(
            g.url("/notifications"),
            Array(repeating: UInt8(ascii: "a"), count: 1024 * 1024 + 1)
        )
        #expect(big.status == 413)
        await g.service.shutdown()
    }

    @Test func aStoreThatCannotCommitAnswers503() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver: receiver)
        g.service.store.close()  // the store can no longer commit anything
        let r = try await Self.post(g.url("/notifications"), try Fixtures.bytes("v2-synthetic/notif-did-renew.json"))
        #expect(r.status == 503)
        #expect(
            try JSONParser.parse(r.body).objectValue?["error"]?.objectValue?["code"] == .string("store_unavailable")
        )
        await g.service.shutdown()
    }

    @Test func v1GoesThroughVerifyReceiptThenToTheWebhookAndThePassthrough() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let answer = try Fixtures.bytes("v1-synthetic/did-renew.receipt.json")
        let apple = try LoopbackHTTPServer { _ in .respond(status: 200, body: answer) }
        let g = try Self.start(receiver: receiver, apple: apple)
        let body = try Fixtures.bytes("v1-synthetic/did-renew.json")
        #expect(try await Self.post(g.url("/notifications"), body).status == 200)
        await eventually("the passthrough and the event") {
            receiver.requests.contains { $0.path == "/apple/v1" } && receiver.requests.contains { $0.path == "/events" }
        }
        #expect(receiver.requests.first { $0.path == "/apple/v1" }?.body == body)
        let event = try #require(receiver.requests.first { $0.path == "/events" })
        let envelope = try #require(JSONParser.parse(event.body).objectValue)
        #expect(envelope["authoritative"] == .bool(false))  // authority is v2: the V1 event is shadow
        #expect(envelope["event"]?.objectValue?["verified"] == .bool(true))
        await g.service.shutdown()
    }

    @Test func adminAPIRequiresTheTokenAndReplaysDeadLetters() async throws {
        let up = Mutex(false)
        let receiver = try LoopbackHTTPServer { _ in up.withLock { $0 } ? .respond(status: 200) : .respond(status: 500)
        }
        let g = try Self.start(receiver: receiver)
        #expect(
            try await Self.post(g.url("/notifications"), try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status
                == 200
        )
        #expect(try await Self.get(g.adminURL("/admin/status")).status == 401)
        #expect(try await Self.get(g.adminURL("/admin/status"), token: "wrong").status == 401)
        try await eventually("one dead letter") {
            let dead = try JSONParser.parse(try g.service.operations.deadLetters().canonicalBytes()).arrayValue
            return dead?.count == 1
        }
        up.withLock { $0 = true }
        let replay = try await CurlTransport().send(
            HTTPRequest(
                method: .post,
                url: g.adminURL("/admin/replay?dead_letters=1"),
                headers: [HTTPHeader("Authorization", "Bearer \(Self.adminToken)")]
            )
        )
        #expect(try JSONParser.parse(replay.body).objectValue?["requeued"] == .number("1"))
        await eventually("four events delivered") { receiver.requests.filter { $0.path == "/events" }.count >= 4 }
        let sub = try await Self.get(g.adminURL("/admin/subscriptions/2000000900010001"), token: Self.adminToken)
        #expect(sub.status == 200)
        await g.service.shutdown()
    }

    @Test func adminAPIReportsAndCutsOverBehindTheToken() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        // As `serve` runs it: the admin API renders reports with the Reports module (table, JSON, HTML).
        let g = try Self.start(receiver: receiver) { _, deps in
            deps.reportRenderer = { report, format, nonce in
                ReportRenderer.render(report, format: format, styleNonce: nonce)
            }
        }
        let auth = [HTTPHeader("Authorization", "Bearer \(Self.adminToken)")]
        #expect(try await Self.get(g.adminURL("/admin/report")).status == 401)
        let json = try await Self.get(g.adminURL("/admin/report"), token: Self.adminToken)
        let bundles = try JSONParser.parse(json.body).objectValue?["bundles"]?.arrayValue ?? []
        #expect(json.status == 200 && bundles.count == 2)  // production and sandbox
        #expect(
            bundles.allSatisfy {
                $0.objectValue?["verdict"] == .string("not_ready") && $0.objectValue?["authority"] == .string("v2")
            }
        )
        let html = try await Self.get(
            g.adminURL("/admin/report?format=html&bundle=com.example.gateway"),
            token: Self.adminToken
        )
        #expect(html.status == 200 && html.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(String(decoding: html.body, as: UTF8.self).contains("com.example.gateway"))

        func cutover(_ query: String) async throws -> HTTPResponse {
            try await CurlTransport().send(
                HTTPRequest(method: .post, url: g.adminURL("/admin/cutover?" + query), headers: auth)
            )
        }
        // Back to V1 is always allowed; V2 again needs a ready verdict (nothing was compared) or force.
        let undo = try await cutover("bundle=com.example.gateway&environment=sandbox&to=v1&reason=rollback")
        #expect(undo.status == 200)
        let undoBody = try JSONParser.parse(undo.body).objectValue
        #expect(undoBody?["from"] == .string("v2"))
        #expect(try await cutover("bundle=com.example.gateway&environment=sandbox&to=v1").status == 409)  // unchanged
        let refused = try await cutover("bundle=com.example.gateway&environment=sandbox&to=v2")
        #expect(refused.status == 409)
        let refusedBody = try JSONParser.parse(refused.body).objectValue
        #expect(refusedBody?["error"]?.objectValue?["code"] == .string("not_ready"))
        let forced = try await cutover("bundle=com.example.gateway&environment=sandbox&to=v2&force=true&reason=drill")
        let forcedBody = try JSONParser.parse(forced.body).objectValue
        #expect(forced.status == 200 && forcedBody?["forced"] == .bool(true))
        #expect(try await cutover("bundle=nope&environment=sandbox&to=v2").status == 400)
        let log =
            try g.service.ledger.report(since: 0, until: Int64.max / 2).bundles.first { $0.environment == "sandbox" }?
            .cutovers ?? []
        #expect(log.map { "\($0.from)>\($0.to):\($0.forced)" } == ["v2>v1:false", "v1>v2:true"])
        await g.service.shutdown()
    }

    @Test func adminReportIsJSONWithoutARenderer() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver: receiver)
        let json = try await Self.get(g.adminURL("/admin/report"), token: Self.adminToken)
        #expect(json.status == 200 && json.header("Content-Type") == "application/json")
        // The service alone offers JSON: another format is answered with JSON, as an unknown one always was.
        let html = try await Self.get(g.adminURL("/admin/report?format=html"), token: Self.adminToken)
        #expect(html.status == 200 && html.header("Content-Type") == "application/json")
        #expect(html.body == json.body)
        #expect(try JSONParser.parse(html.body).objectValue?["bundles"]?.arrayValue?.count == 2)
        await g.service.shutdown()
    }

    @Test func everyNotificationIsLoggedAsOneStructuredLineWithoutSecrets() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let logs = LogBox()
        let g = try Self.start(receiver: receiver, logs: logs)
        _ = try await Self.post(g.url("/notifications"), try Fixtures.bytes("v2-synthetic/notif-did-renew.json"))
        _ = try await Self.post(g.url("/notifications"), try Fixtures.bytes("v1-synthetic/did-renew.json"))
        await g.service.shutdown()
        let lines = logs.all.filter { $0.contains("\"msg\":\"notification\"") }
        #expect(lines.count == 2)
        let v2 = try #require(lines.first { $0.contains("\"version\":\"v2\"") })
        for field in [
            "\"id\":", "\"type\":\"DID_RENEW\"", "\"bundle\":\"com.example.gateway\"", "\"environment\":\"sandbox\"",
            "\"leaf_serial\":", "\"outcome\":\"accepted\"", "\"latency_ms\":",
        ] {
            #expect(v2.contains(field), "missing \(field)")
        }
        #expect(!logs.all.joined().contains(GatewayHarness.v1Secret))
        #expect(!logs.all.joined().contains("whsec_"))
    }
}

/// `listen_tls`: the service serves HTTPS itself (libmicrohttpd with GnuTLS).
@Suite struct GatewayTLSTests {
    @Test func servesHTTPSWithTheConfiguredCertificate() async throws {
        let dir = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Int64(Date().timeIntervalSince1970)
        let key = try PrivateKey.generateP256()
        // subjectAltName IP:127.0.0.1 (curl checks the address against it).
        let san = CertificateExtension(
            oid: "2.5.29.17",
            critical: false,
            derValue: [0x30, 0x06, 0x87, 0x04, 0x7F, 0x00, 0x00, 0x01]
        )
        let cert = try CertificateBuilder.make(
            subject: CertificateSubject(commonName: "127.0.0.1"),
            issuer: nil,
            key: key,
            notBefore: now - 60,
            notAfter: now + 3600,
            isCA: false,
            extensions: [san]
        )
        try Data(cert.pem.utf8).write(to: URL(filePath: dir + "/cert.pem"))
        try Data(key.pemPKCS8.utf8).write(to: URL(filePath: dir + "/key.pem"))
        let json = """
            { "listen": "127.0.0.1:0", "listen_tls": { "cert_file": "cert.pem", "key_file": "key.pem" },
              "admin": { "listen": "127.0.0.1:0", "token_env": "UNSET_TOKEN" }, "store": { "sqlite": "gateway.db" },
              "apps": [ { "bundle_id": "com.loki-project.loki-messenger", "app_apple_id": 1470168868, "environments": ["sandbox"] } ] }
            """
        let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: dir)
        let service = try GatewayService(
            config: config,
            dependencies: .init(
                environment: [:],
                transport: CurlTransport(),
                now: { 1_759_302_600_000 },
                jitter: { 0 },
                logSink: { _ in }
            )
        )
        let (port, _) = try service.start()
        let client = CurlTransport(caBundlePath: dir + "/cert.pem")
        let r = try await client.send(
            HTTPRequest(
                method: .post,
                url: "https://127.0.0.1:\(port)/notifications",
                body: try Fixtures.bytes("v2/notif-did-renew-sandbox-2025.json")
            )
        )
        #expect(r.status == 200)
        // Plain HTTP to the TLS port does not get an answer from the application.
        let plain = try? await CurlTransport().send(
            HTTPRequest(method: .get, url: "http://127.0.0.1:\(port)/healthz", timeoutMillis: 3_000)
        )
        #expect(plain?.status != 200)
        await service.shutdown()
    }
}

/// A V2 path that knows no subscription.
struct UnknownToV2: V2PathSource {
    func status(
        bundleID: String,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        observedAt: Int64
    )
        async throws(PathFetchError) -> V2PathStatus?
    { nil }
}
