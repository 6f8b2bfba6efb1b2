internal import HTTPServer
public import Store
internal import Canonical
internal import Crypto
internal import FoundationEssentials
public import HTTPClient
public import V1Adapter
internal import V2Adapter
internal import WireJSON
import Synchronization

/// `iap-gateway serve`: the whole service assembled from a config — the notification endpoint, `/healthz`,
/// `/metrics`, the admin API on its own listener, the verifyReceipt stage, delivery, retention — and its graceful
/// stop (stop accepting, finish in-flight, flush).
public final class GatewayService: Sendable {
    public struct Dependencies: Sendable {
        public var environment: [String: String]
        public var transport: any HTTPTransport
        public var now: @Sendable () -> Int64
        public var jitter: @Sendable () -> Double
        public var logSink: (@Sendable (String) -> Void)?
        public var deliveryPolicy = DeliveryPolicy()
        public var receiptPolicy = ReceiptWorker.Policy()
        public var verifyReceiptBaseDelay: Duration = RetryPolicy.verifyReceiptClient.baseDelay
        public var comparePolicy = CompareWorker.Policy()
        /// The V2 path's view of subscriptions; nil: the App Store Server API from `app_store_api` (when configured).
        public var v2PathSource: (any V2PathSource)? = nil
        /// The store; nil: the SQLite file of the config, opened with ``sqliteOptions``.
        public var store: (any GatewayStore)? = nil
        /// How the SQLite store is opened (tests inject storage faults here: a full disk).
        public var sqliteOptions = SQLiteStore.Options()
        /// `serve --demo-verify-time` (see ``NotificationIngest/Limits/demoSandboxVerifyTime``); nil in production.
        public var demoSandboxVerifyTime: Int64? = nil
        /// Renders `GET /admin/report?format=…`: the content type and bytes, or nil for a format it does not offer
        /// (answered with JSON, the API's default). This default offers JSON alone; `serve` passes the Reports
        /// module's renderer (table, JSON, HTML).
        public var reportRenderer: @Sendable (CompareReport, _ format: String) -> (contentType: String, body: [UInt8])? = { report, format in
            format == "json" ? ("application/json", JSONOutput.encode(report)) : nil
        }

        public init(environment: [String: String], transport: any HTTPTransport, now: @escaping @Sendable () -> Int64,
                    jitter: @escaping @Sendable () -> Double, logSink: (@Sendable (String) -> Void)? = nil) {
            self.environment = environment
            self.transport = transport
            self.now = now
            self.jitter = jitter
            self.logSink = logSink
        }

        /// The real process: its environment, libcurl, the wall clock, system randomness, stdout.
        public static func live() -> Dependencies {
            Dependencies(environment: ProcessEnvironment.variables, transport: CurlTransport(), now: WallClock.wallMillis,
                         jitter: { Double.random(in: 0..<1) })
        }

        /// The same for a one-shot command (`quarantine replay`, `backfill`): its log goes to standard error, so that
        /// standard output holds the command's result alone.
        public static func command() -> Dependencies {
            var d = live()
            d.logSink = { line in FileHandleOutput.stderr(line + "\n") }
            return d
        }
    }

    public let config: GatewayConfig
    public let metrics = Metrics()
    public let log: Log
    public let store: any GatewayStore
    public let ingest: NotificationIngest
    public let operations: Operations
    let delivery: DeliveryWorker
    let receipts: ReceiptWorker
    let compare: CompareWorker
    /// The report and cutover (CLI and admin API).
    public let ledger: CompareLedger
    /// The App Store Server API clients, when `app_store_api` is configured.
    public var appStoreAPI: AppStoreAPIPathSource? { compare.v2Source as? AppStoreAPIPathSource }
    let servers: Servers
    let adminToken: [UInt8]?
    let v1Secrets: [SharedSecret]
    /// The configured V1 secrets, for `quarantine replay` (matched by fingerprint, never printed).
    public var v1SecretsForReplay: [SharedSecret] { v1Secrets }
    let now: @Sendable () -> Int64
    let reportRenderer: @Sendable (CompareReport, String) -> (contentType: String, body: [UInt8])?
    private let tasks = Mutex<[Task<Void, Never>]>([])

    /// The HTTP listeners: owned here, started and stopped only by the service's start/shutdown.
    final class Servers: @unchecked Sendable {
        // @unchecked: `HTTPServer` is a non-Sendable owner type; this box is only touched from start() and
        // shutdown(), which the caller runs in sequence (documented on both).
        var main: HTTPServer?
        var admin: HTTPServer?
    }

    /// Builds everything; fails with a `ConfigError` naming the field when the config or its environment variables
    /// cannot produce a working gateway. Nothing is listening yet.
    public init(config: GatewayConfig, dependencies: Dependencies) throws {
        self.config = config
        self.now = dependencies.now
        self.reportRenderer = dependencies.reportRenderer
        self.log = Log(now: dependencies.now, sink: dependencies.logSink)
        let env = dependencies.environment

        let (v1Apps, unresolved) = config.v1Apps(environment: env)
        if let missing = unresolved.first {
            let index = config.apps.firstIndex { $0.bundleID == missing.bundle } ?? 0
            throw ConfigError(field: "apps[\(index)].shared_secret_env", "environment variable \(missing.variable) is not set")
        }
        v1Secrets = v1Apps.flatMap(\.sharedSecrets)
        var signers: [String: WebhookSigner] = [:]
        for (i, d) in config.downstreams.enumerated() where d.kind == .webhook {
            var secrets: [WebhookSigner.Secret] = []
            for name in d.secretEnv {
                guard let text = env[name], !text.isEmpty else {
                    throw ConfigError(field: "downstreams[\(i)].secret_env", "environment variable \(name) is not set")
                }
                guard let secret = WebhookSigner.Secret(name: name, text: text) else {
                    throw ConfigError(field: "downstreams[\(i)].secret_env", "\(name) is not a whsec_ secret (base64 of at least 16 bytes)")
                }
                secrets.append(secret)
            }
            signers[d.name] = WebhookSigner(secrets: secrets)
        }
        if let tokenText = env[config.adminTokenEnv], !tokenText.isEmpty {
            adminToken = Array(tokenText.utf8)
        } else {
            adminToken = nil
        }

        let anchors = try TrustAnchorLoader.anchors(extraRootPaths: config.extraRoots)
        let v2 = V2Adapter(
            verifier: AppleJWSVerifier(anchors: anchors),
            apps: config.apps.map { V2App(bundleID: $0.bundleID, appAppleID: $0.appAppleID, environments: $0.environments) })
        let v1 = V1Adapter(apps: v1Apps)
        store = try dependencies.store ?? SQLiteStore(path: config.sqlitePath, options: dependencies.sqliteOptions)
        let router = Router(config: config)
        var limits = NotificationIngest.Limits()
        limits.untrustedQuarantineCap = config.limits.untrustedQuarantine
        limits.genuineQuarantineCap = config.limits.genuineQuarantine
        limits.untrustedQuarantineBytes = config.limits.untrustedQuarantineBytes
        limits.genuineQuarantineBytes = config.limits.genuineQuarantineBytes
        limits.maxNotificationAgeMillis = config.maxNotificationAgeMillis
        limits.demoSandboxVerifyTime = dependencies.demoSandboxVerifyTime
        ingest = NotificationIngest(v1: v1, v2: v2, store: store, router: router, limits: limits, metrics: metrics, now: dependencies.now)
        operations = Operations(store: store, now: dependencies.now)
        let deliveryPolicy = dependencies.deliveryPolicy
        let workers = WorkerContext(store: store, router: router, metrics: metrics, log: log, now: dependencies.now,
                                    jitter: dependencies.jitter)
        delivery = DeliveryWorker(
            context: workers, transport: dependencies.transport, signers: signers, passthroughSecrets: v1Secrets, policy: deliveryPolicy)
        var receiptPolicy = dependencies.receiptPolicy
        receiptPolicy.concurrency = config.limits.verifyReceiptConcurrency
        let verifyReceipt = VerifyReceiptClient(
            transport: dependencies.transport,
            configuration: .init(productionURL: config.verifyReceiptProductionURL, sandboxURL: config.verifyReceiptSandboxURL,
                                 baseDelay: dependencies.verifyReceiptBaseDelay),
            jitter: dependencies.jitter)
        receipts = ReceiptWorker(context: workers, client: verifyReceipt, apps: v1Apps, policy: receiptPolicy)
        let v2Source = try dependencies.v2PathSource
            ?? AppStoreAPIPathSource.make(config: config, environment: env, transport: dependencies.transport, adapter: v2,
                                          now: dependencies.now, jitter: dependencies.jitter)
        ledger = CompareLedger(store: store, config: config, v2PathAvailable: v2Source != nil)
        compare = CompareWorker(
            context: workers, settings: config.compareSettings, silenceAlertMillis: config.silenceAlertMillis, v2Source: v2Source,
            receiptClient: verifyReceipt, apps: v1Apps, policy: dependencies.comparePolicy)
        servers = Servers()
        Self.describeMetrics(metrics)
    }

    /// The store and operator actions alone, for CLI commands that need no secrets (`replay`, `subscription`).
    public static func maintenance(config: GatewayConfig, now: @escaping @Sendable () -> Int64) throws -> (Operations, any GatewayStore) {
        let store = try SQLiteStore(path: config.sqlitePath)
        return (Operations(store: store, now: now), store)
    }

    /// Seeds authority, starts the workers and both listeners. Returns the bound (public, admin) ports.
    /// Call once; not concurrently with `shutdown()`.
    @discardableResult
    public func start() throws -> (port: UInt16, adminPort: UInt16?) {
        let time = now()
        let config = self.config
        if let demo = ingest.limits.demoSandboxVerifyTime {
            log.warn("DEMO: sandbox notifications are judged fresh as of a fixed time, not the clock (--demo-verify-time)",
                     ["verify_time": .string(TimeText.iso8601(demo))])
        }
        let wanted = config.apps.flatMap { app in
            app.environments.map { AuthorityEntry(bundleID: app.bundleID, environment: $0, authority: app.authority(for: $0), origin: .config) }
        }
        let effective = try store.write { tx in try tx.seedAuthority(wanted, now: time) }
        for row in effective {
            log.info("authority", ["bundle": .string(row.bundleID), "environment": .string(row.environment.rawValue),
                                   "authority": .string(row.authority.rawValue), "origin": .string(row.origin.rawValue)])
        }
        if let problem = config.authorityProblems(
            effective: effective.map { ($0.bundleID, $0.environment.rawValue, $0.authority) }, v2PathAvailable: compare.v2Source != nil
        ).first {
            throw problem
        }
        let delivery = self.delivery
        let receipts = self.receipts
        let compare = self.compare
        tasks.withLock { t in
            t.append(Task.detached { await delivery.run() })
            t.append(Task.detached { await receipts.run() })
            t.append(Task.detached { await compare.run() })
            t.append(Task.detached { [self] in await self.retentionLoop() })
        }

        var main = HTTPServer.Configuration()
        (main.host, main.port) = try Self.address(config.listen, field: "listen")
        main.threads = config.limits.httpThreads
        (main.connectionLimit, main.connectionsPerAddressLimit) = (UInt32(config.limits.connections), UInt32(config.limits.connectionsPerAddress))
        (main.requestDeadlineSeconds, main.bodyBufferBudgetBytes) = (UInt32(config.limits.requestDeadlineSeconds), config.limits.bodyBufferBytes)
        if let certFile = config.tlsCertificateFile, let keyFile = config.tlsKeyFile {
            guard let cert = try? String(decoding: Data(contentsOf: URL(filePath: certFile)), as: UTF8.self),
                let key = try? String(decoding: Data(contentsOf: URL(filePath: keyFile)), as: UTF8.self)
            else { throw ConfigError(field: "listen_tls", "cannot read the certificate or key file") }
            main.tls = HTTPServer.TLS(certificatePEM: cert, privateKeyPEM: key)
        }
        let server = HTTPServer(configuration: main) { [self] request in handlePublic(request) }
        do { try server.start() } catch { throw ConfigError(field: "listen", "cannot listen on \(config.listen): \(error)") }
        servers.main = server
        var adminPort: UInt16?
        if adminToken != nil {
            var admin = HTTPServer.Configuration()
            (admin.host, admin.port) = try Self.address(config.adminListen, field: "admin.listen")
            admin.threads = 2
            let adminServer = HTTPServer(configuration: admin) { [self] request in handleAdmin(request) }
            do { try adminServer.start() } catch {
                throw ConfigError(field: "admin.listen", "cannot listen on \(config.adminListen): \(error)")
            }
            servers.admin = adminServer
            adminPort = adminServer.port
        } else {
            log.warn("admin API disabled: its bearer token variable is not set", ["variable": .string(config.adminTokenEnv)])
        }
        log.info("listening", ["port": .int(Int64(server.port)), "admin_port": adminPort.map { .int(Int64($0)) },
                               "store": .string(config.sqlitePath)])
        return (server.port, adminPort)
    }

    /// Graceful stop: no new connections, in-flight requests finish, workers finish their current work, the writer
    /// commits what is queued, the store is closed. Not concurrently with `start()`.
    public func shutdown() async {
        servers.main?.stopAccepting()
        servers.admin?.stopAccepting()
        servers.main?.stop()
        servers.admin?.stop()
        servers.main = nil
        servers.admin = nil
        delivery.stop()
        receipts.stop()
        compare.stop()
        let running = tasks.withLock { t in
            defer { t.removeAll() }
            return t
        }
        for task in running {
            task.cancel()
            await task.value
        }
        store.close()
        if let stats = (store as? SQLiteStore)?.commitStatistics {
            log.info("stopped", ["transactions": .int(Int64(stats.batches)), "writes": .int(Int64(stats.items))])
        } else {
            log.info("stopped")
        }
    }

    // MARK: Routes

    func handlePublic(_ request: ServerRequest) -> ServerResponse {
        let started = ContinuousClock.now
        switch (request.method, request.path) {
        case ("POST", "/notifications"):
            let r = ingest.handle(request.body)
            let latency = ContinuousClock.now - started
            let seconds = Double(latency.components.seconds) + Double(latency.components.attoseconds) / 1e18
            record(r, seconds: seconds)
            return .json(r.status, r.body)
        case ("GET", "/healthz"):
            return .json(200, Array(#"{"ok":true}"#.utf8))
        // `/metrics` is served on the admin listener only: it names downstreams and shows queue depths.
        case (_, "/notifications"), (_, "/healthz"):
            return Self.answer(GatewayError(.methodNotAllowed, "method not allowed"))
        default:
            return Self.answer(GatewayError(.notFound, "no such endpoint"))
        }
    }

    private func record(_ r: NotificationIngest.Result, seconds: Double) {
        let version = r.version?.rawValue ?? "unknown"
        metrics.increment("iapgw_notifications_received_total", ["version": version])
        metrics.observe("iapgw_request_seconds", ["version": version], seconds)
        let outcome: String
        if r.status == 200 {
            outcome = r.duplicate ? "duplicate" : "accepted"
            metrics.increment(r.duplicate ? "iapgw_notifications_duplicate_total" : "iapgw_notifications_accepted_total", ["version": version])
        } else {
            outcome = "rejected"
            metrics.increment("iapgw_notifications_rejected_total", ["version": version, "code": r.code ?? "unknown"])
        }
        if case .notStored(let lane)? = r.quarantine {
            log.warn("quarantine lane full: refused body not stored", ["lane": .string(lane.rawValue), "code": r.code.map { .string($0) }])
        }
        log.info("notification", [
            "id": r.id.map { .string($0) }, "version": .string(version), "type": r.notificationType.map { .string($0) },
            "subtype": r.subtype.map { .string($0) }, "bundle": r.bundleID.map { .string($0) },
            "environment": r.environment.map { .string($0) }, "leaf_serial": r.leafSerial.map { .string($0) },
            "outcome": .string(outcome), "status": .int(Int64(r.status)), "code": r.code.map { .string($0) },
            "latency_ms": .double((seconds * 1e6).rounded() / 1e3),
        ])
    }

    func handleAdmin(_ request: ServerRequest) -> ServerResponse {
        guard let token = adminToken, let header = request.header("Authorization"), header.hasPrefix("Bearer "),
            Bytes.constantTimeEqual(Array(header.utf8.dropFirst(7)), token)
        else {
            return ServerResponse(status: 401, headers: [("Content-Type", "application/json"), ("WWW-Authenticate", "Bearer")],
                                  body: NotificationIngest.errorBody(GatewayError(.unauthorized, "a valid bearer token is required")))
        }
        do {
            let segments = request.path.split(separator: "/").map(String.init)
            switch (request.method, segments) {
            case ("GET", ["metrics"]), ("GET", ["admin", "metrics"]):
                return ServerResponse(
                    status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")], body: Array(metrics.render().utf8))
            case ("GET", ["admin", "status"]):
                return .json(200, try operations.status().canonicalBytes())
            case ("GET", ["admin", "dead-letters"]):
                return .json(200, try operations.deadLetters(limit: Self.limit(request.query["limit"])).canonicalBytes())
            case ("POST", ["admin", "replay"]):
                let selection: Operations.ReplaySelection
                if let id = request.query["id"] {
                    selection = .eventID(id)
                } else if request.query["dead_letters"] != nil {
                    selection = .deadLetters
                } else if let sinceText = request.query["since"] {
                    let time = now()
                    guard let since = TimeText.milliseconds(sinceText, now: time) else {
                        return Self.answer(GatewayError(.badRequest, "since is not a time (ISO-8601, 7d, 12h or epoch ms)"))
                    }
                    var until = Int64.max
                    if let untilText = request.query["until"] {
                        guard let u = TimeText.milliseconds(untilText, now: time) else {
                            return Self.answer(GatewayError(.badRequest, "until is not a time (ISO-8601, 7d, 12h or epoch ms)"))
                        }
                        until = u
                    }
                    selection = .range(since: since, until: until)
                } else {
                    return Self.answer(GatewayError(.badRequest, "give id, since[/until] or dead_letters"))
                }
                let n = try operations.replay(selection)
                return .json(200, Array("{\"requeued\":\(n)}".utf8))
            case ("GET", ["admin", "quarantine"]):
                var lane: QuarantineRecord.Lane?
                if let text = request.query["lane"] {
                    guard let l = QuarantineRecord.Lane(rawValue: text) else {
                        return Self.answer(GatewayError(.badRequest, "lane is untrusted or genuine"))
                    }
                    lane = l
                }
                return .json(200, try operations.quarantineList(lane: lane, limit: Self.limit(request.query["limit"])).canonicalBytes())
            case ("POST", ["admin", "quarantine", "replay"]):
                var selection = Operations.QuarantineSelection()
                if let text = request.query["lane"] {
                    guard let lane = QuarantineRecord.Lane(rawValue: text) else {
                        return Self.answer(GatewayError(.badRequest, "lane is untrusted or genuine"))
                    }
                    selection.lane = lane
                }
                if let text = request.query["id"] {
                    guard let id = Int64(text) else { return Self.answer(GatewayError(.badRequest, "id is a row id")) }
                    selection.id = id
                }
                return .json(200, try operations.quarantineReplay(ingest: ingest, secrets: v1Secrets, selection: selection).canonicalBytes())
            case ("GET", let s) where s.count == 3 && s[0] == "admin" && s[1] == "subscriptions":
                return .json(200, try operations.subscription(s[2]).canonicalBytes())
            case ("GET", ["admin", "report"]):
                let time = now()
                let since = request.query["since"].flatMap { TimeText.milliseconds($0, now: time) } ?? time - config.compareSettings.rule.windowMillis
                let report = try ledger.report(bundleID: request.query["bundle"], since: since, until: time)
                // Unknown formats get JSON, the API's default.
                guard let rendered = reportRenderer(report, request.query["format"] ?? "json") else {
                    return .json(200, JSONOutput.encode(report))
                }
                return ServerResponse(status: 200, headers: [("Content-Type", rendered.contentType)], body: rendered.body)
            case ("POST", ["admin", "cutover"]):
                guard let bundle = request.query["bundle"], let env = request.query["environment"], let to = request.query["to"] else {
                    return Self.answer(GatewayError(.badRequest, "give bundle, environment and to (v1 or v2)"))
                }
                do {
                    let record = try ledger.cutover(
                        bundleID: bundle, environment: env, to: to, who: "admin-api (\(config.adminTokenEnv))", reason: request.query["reason"],
                        force: request.query["force"] == "true", now: now())
                    log.warn("authority changed", ["bundle": .string(bundle), "environment": .string(env), "from": .string(record.from),
                                                   "to": .string(record.to), "forced": .bool(record.forced)])
                    return .json(200, JSONOutput.encode(record))
                } catch let error as CutoverError {
                    return .json(error.code.status, NotificationIngest.errorBody(code: error.code.rawValue, message: error.description))
                }
            default:
                return Self.answer(GatewayError(.notFound, "no such admin endpoint"))
            }
        } catch {
            return Self.answer(GatewayError(.storeUnavailable, "the store could not answer"))
        }
    }

    // MARK: Helpers

    /// An error answer: its status from ``Disposition``, the one mapping of codes to statuses.
    static func answer(_ error: GatewayError) -> ServerResponse {
        .json(Disposition(error).status, NotificationIngest.errorBody(error))
    }

    private func retentionLoop() async {
        while !Task.isCancelled {
            let time = now()
            let cutoff = time - config.rawBodyRetentionMillis
            if let purged = try? await store.write({ tx in try tx.purgeBodies(olderThan: cutoff, now: time) }), purged > 0 {
                log.info("raw bodies purged", ["count": .int(Int64(purged))])
            }
            let week = time - 7 * 86_400_000
            _ = try? await store.write { tx in try tx.purgeFinishedFetches(olderThan: week) }
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    /// A `limit` query parameter: 100 when absent or not a number, clamped to 1…10,000.
    static func limit(_ text: String?) -> Int {
        guard let text, let n = Int(text) else { return 100 }
        return min(max(n, 1), 10_000)
    }

    /// `HOST:PORT` (`listen`, `admin.listen`, a command's `--listen`) as host and port; `field` names it in the error.
    public static func address(_ text: String, field: String) throws(ConfigError) -> (String, UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw ConfigError(field: field, "must be HOST:PORT, e.g. 127.0.0.1:8080")
        }
        return (String(text[..<colon]), port)
    }

    static func describeMetrics(_ m: Metrics) {
        m.describe("iapgw_notifications_received_total", type: "counter", "Notifications received, by version")
        m.describe("iapgw_notifications_accepted_total", type: "counter", "Notifications journaled, by version")
        m.describe("iapgw_notifications_rejected_total", type: "counter", "Notifications refused, by version and error code")
        m.describe("iapgw_notifications_duplicate_total", type: "counter", "Apple retries of already journaled notifications")
        m.describe("iapgw_quarantined_total", type: "counter", "Bodies quarantined, by lane")
        m.describe("iapgw_quarantine_dropped_total", type: "counter", "Quarantined bodies evicted (oldest first) by the untrusted lane's caps")
        m.describe("iapgw_store_failures_total", type: "counter",
                   "Writes the store refused (a full disk), by operation: journal (answered 503) or job_outcome (retried)")
        m.describe("iapgw_quarantine_full_total", type: "counter", "Refused bodies not stored because their lane was full, by lane")
        m.describe("iapgw_quarantine_lane_full", type: "gauge", "1 while a lane refuses new rows (the genuine lane never evicts)")
        m.describe("iapgw_quarantine_store_failures_total", type: "counter", "Refused bodies that could not be stored, by lane")
        m.describe("iapgw_delivery_attempts_total", type: "counter", "Delivery attempts, by downstream")
        m.describe("iapgw_delivery_failures_total", type: "counter", "Failed delivery attempts, by downstream")
        m.describe("iapgw_delivery_dead_total", type: "counter", "Deliveries dead-lettered, by downstream")
        m.describe("iapgw_delivery_queue_depth", type: "gauge", "Deliveries waiting, by downstream")
        m.describe("iapgw_delivery_oldest_age_seconds", type: "gauge", "Age of the oldest waiting delivery, by downstream")
        m.describe("iapgw_receipt_jobs_pending", type: "gauge", "V1 notifications waiting for verifyReceipt")
        m.describe("iapgw_verify_receipt_total", type: "counter", "verifyReceipt outcomes")
        m.describe("iapgw_compare_fetches_total", type: "counter", "Fetches of one path's view for a comparison, by path")
        m.describe("iapgw_compare_fetch_failures_total", type: "counter", "Failed comparison fetches, by path and code")
        m.describe("iapgw_compare_comparisons_total", type: "counter",
                   "Comparisons, by result: agree, disagree, unconfirmed (refetching to confirm), stale (refetching the older side)")
        m.describe("iapgw_compare_one_sided_total", type: "counter", "Subscriptions one path did not know after the grace window, by side")
        m.describe("iapgw_compare_jobs_pending", type: "gauge", "Comparison fetches waiting")
        m.describe("iapgw_authority_silent", type: "gauge", "1 while the authoritative path is silent and the other is not")
        m.describe("iapgw_verify_seconds", type: "histogram", "V2 verification time")
        m.describe("iapgw_request_seconds", type: "histogram", "POST /notifications handling time, journaling included")
    }
}
