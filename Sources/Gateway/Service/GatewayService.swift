internal import AppStoreConnect
internal import Canonical
internal import Crypto
public import HTTPClient
internal import HTTPServer
public import ReceiptPath
public import RefundRequests
public import ReportModel
public import ServiceKit
public import Store
import Synchronization
public import V1Adapter
public import V2Adapter
internal import WireJSON

/// `iap-gateway serve`: the whole service assembled from a config — the notification endpoint and `/healthz`
/// (``PublicRoutes``), the admin API and `/metrics` on their own listener (``AdminAPI``), the verifyReceipt stage,
/// delivery, comparison, retention (``RetentionWorker``) — and its graceful stop (stop accepting, finish in-flight,
/// flush). It only builds and wires these parts; each does its own work.
public final class GatewayService: Sendable {
    public struct Dependencies: Sendable {
        public var environment: [String: String]
        public var transport: any HTTPTransport
        public var now: @Sendable () -> Int64
        public var jitter: @Sendable () -> Double
        public var logSink: (@Sendable (String) -> Void)?
        public var deliveryTuning = DeliveryTuning()
        public var receiptTuning = V1VerificationWorker.Tuning()
        public var verifyReceiptBaseDelay: Duration = RetryPolicy.verifyReceiptClient.baseDelay
        public var compareTuning = CompareWorker.Tuning()
        /// The V2 path's view of subscriptions; nil: the App Store Server API from `app_store_api` (when configured).
        public var v2PathSource: (any V2PathSource)? = nil
        /// Apple's notification history for the sweep; nil: the App Store Server API from `app_store_api` (when configured).
        public var historySource: (any NotificationHistorySource)? = nil
        public var reconcileTuning = ReconcileWorker.Tuning()
        /// The store; nil: the one the config names (``GatewayService/openStore(config:environment:sqliteOptions:)``).
        public var store: (any GatewayStore)? = nil
        /// How the SQLite store is opened (tests inject storage faults here: a full disk).
        public var sqliteOptions = SQLiteStore.Options()
        /// This instance's name in the claims of background jobs when the store is shared by instances; nil: the host
        /// name and process id (or `local` for a store one process owns).
        public var instanceID: String? = nil
        /// The roots V2 notifications must chain to; nil: Apple Root CA - G3 plus the config's `trust.extra_roots`
        /// (sandbox only). Set in code only, never from a file: tests trust their own PKI's root like Apple's.
        public var trustAnchors: TrustAnchors? = nil
        /// App Store Connect for the switch (`migrate`); nil: the one `app_store_connect` configures (when it does).
        public var appleSettings: (any AppleNotificationSettings)? = nil
        /// The switch's proof that Apple sends V2; nil: the App Store Server API's test notification (`app_store_api`).
        public var testNotificationProbe: (any TestNotificationProbe)? = nil
        /// Where the receipt path gets customers' histories; nil: the App Store Server API from `app_store_api`.
        public var receiptHistorySource: (any ReceiptHistorySource)? = nil
        /// Reads `receipt-data` for the receipt path; nil: the receipt reader with Apple's receipt root and the
        /// config's `trust.extra_receipt_roots` (sandbox only).
        public var receiptReader: (@Sendable ([UInt8]) -> ReceiptReading)? = nil
        /// Where refund requests' answers are sent; nil: the App Store Server API from `app_store_api`.
        public var consumptionSender: (any ConsumptionSender)? = nil
        public var consumptionTuning = ConsumptionResponder.Tuning()
        /// How the budget of App Store Server API calls waits for a turn (ms): the wall clock's `Task.sleep` unless
        /// a test moves a clock of its own (with ``now``).
        public var appleBudgetSleep: @Sendable (Int64) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) }
        /// `serve --demo-verify-time` (see ``NotificationIngest/Limits/demoSandboxVerifyTime``); nil in production.
        public var demoSandboxVerifyTime: Int64? = nil
        /// Renders `GET /admin/report?format=…`: the content type and bytes, or nil for a format it does not offer
        /// (answered with JSON, the API's default). An HTML page must give its inline styles the `styleNonce` (a fresh
        /// one per response, which the answer's Content-Security-Policy names) and have no script. This default offers
        /// JSON alone; `serve` passes the Reports module's renderer (table, JSON, HTML).
        public var reportRenderer:
            @Sendable (CompareReport, _ format: String, _ styleNonce: String)
                -> (contentType: String, body: [UInt8])? = { report, format, _ in
                    format == "json" ? ("application/json", JSONOutput.encode(report)) : nil
                }
        /// Cryptographically secure random bytes: the admin report page's nonce. Tests inject their own.
        public var randomBytes: @Sendable (Int) -> [UInt8] = { Bytes.random(count: $0) }

        public init(
            environment: [String: String],
            transport: any HTTPTransport,
            now: @escaping @Sendable () -> Int64,
            jitter: @escaping @Sendable () -> Double,
            logSink: (@Sendable (String) -> Void)? = nil
        ) {
            self.environment = environment
            self.transport = transport
            self.now = now
            self.jitter = jitter
            self.logSink = logSink
        }

        /// The real process: its environment, libcurl, the wall clock, system randomness, stdout.
        public static func live() -> Dependencies {
            Dependencies(
                environment: ProcessEnvironment.variables,
                transport: liveTransport(),
                now: WallClock.wallMillis,
                jitter: { Double.random(in: 0..<1) }
            )
        }

        /// libcurl, for every purpose at once: the service gives each purpose slots of its own over it
        /// (``OutgoingTransports``), so its own limit is only a last bound, well above their sum.
        public static func liveTransport() -> any HTTPTransport {
            CurlTransport(maxConcurrentTransfers: 4_096)
        }

        /// The same for a one-shot command (`quarantine replay`, `backfill`): its log goes to standard error, so that
        /// standard output holds the command's result alone, and its store must exist (a mistyped path is refused, not
        /// created empty).
        public static func command() -> Dependencies {
            var d = live()
            d.logSink = { line in FileHandleOutput.stderr(line + "\n") }
            d.sqliteOptions.createsMissing = false
            return d
        }
    }

    public let config: GatewayConfig
    public let metrics = Metrics()
    public let log: Log
    public let store: any GatewayStore
    public let ingest: NotificationIngest
    public let operations: Operations
    /// Who receives what, from the config.
    public let router: Router
    let delivery: DeliveryWorker
    let v1Verification: V1VerificationWorker
    let compare: CompareWorker
    /// The recovery runs (`iap-gateway reconcile` runs them now).
    public let reconcile: ReconcileWorker
    /// Apple's refund requests answered; nil when no app answers them.
    let consumption: ConsumptionResponder?
    /// The report and cutover (CLI and admin API).
    public let ledger: CompareLedger
    /// Switching Apple's notification version (`migrate`, CLI and admin API).
    public let switcher: AppleSwitcher
    /// `POST /verifyReceipt` and `POST /sandbox/verifyReceipt`.
    public let receiptEndpoint: ReceiptEndpoint
    /// The outgoing transfers' slots, by purpose.
    public let transports: OutgoingTransports
    /// The App Store Server API clients, when `app_store_api` is configured.
    public var appStoreAPI: AppStoreAPIClients? { compare.v2Source as? AppStoreAPIClients }
    /// `POST /notifications` and `/healthz`.
    let publicRoutes: PublicRoutes
    /// The admin API and `/metrics`; nil when the admin token variable is unset (the admin listener is then off).
    let adminAPI: AdminAPI?
    let v1Secrets: [SharedSecret]
    /// The configured V1 secrets, for `quarantine replay` (matched by fingerprint, never printed).
    public var v1SecretsForReplay: [SharedSecret] { v1Secrets }
    let now: @Sendable () -> Int64
    /// What runs behind the listeners, in the order shutdown stops it: the receipt path (its fetches ended, its shadow
    /// comparisons awaited), then the workers, retention and the hourly read of App Store Connect.
    let phases: [[any BackgroundService]]
    /// The listeners and ``phases``, once ``start()`` has run.
    let running = Mutex<ServiceGroup?>(nil)

    /// Builds everything; fails with a `ConfigError` naming the field when the config or its environment variables
    /// cannot produce a working gateway. Nothing is listening yet. Each part is built by one builder
    /// (`GatewayService+Build.swift`); this only hands each what it needs.
    public init(config: GatewayConfig, dependencies: Dependencies) throws {
        self.config = config
        self.now = dependencies.now
        self.log = Log(now: dependencies.now, sink: dependencies.logSink)
        let parts = try Assembly(config: config, dependencies: dependencies, metrics: metrics, log: log)
        (store, router, transports, v1Secrets) = (parts.store, parts.router, parts.transports, parts.secrets.v1Secrets)
        ingest = parts.ingest()
        operations = parts.operations()
        delivery = parts.delivery()
        consumption = try parts.refundRequests()
        v1Verification = parts.v1Verification()
        ledger = CompareLedger(store: store, config: config, v2PathAvailable: parts.apple.v2Source != nil)
        switcher = AppleSwitcher(
            store: store,
            config: config,
            ledger: ledger,
            settings: parts.apple.settings,
            probe: parts.apple.probe,
            now: dependencies.now
        )
        compare = parts.compare()
        reconcile = parts.reconcile(ingest: ingest)
        receiptEndpoint = try parts.receiptEndpoint()
        publicRoutes = PublicRoutes(ingest: ingest, receipts: receiptEndpoint, metrics: metrics, log: log)
        adminAPI = parts.secrets.adminToken.map {
            [metrics, operations, ledger, switcher, ingest, v1Secrets, log] token in
            AdminAPI(
                token: token,
                tokenEnv: config.adminTokenEnv,
                reportWindowMillis: config.compareSettings.rule.windowMillis,
                metrics: metrics,
                operations: operations,
                ledger: ledger,
                switcher: switcher,
                ingest: ingest,
                v1Secrets: v1Secrets,
                log: log,
                now: dependencies.now,
                reportRenderer: dependencies.reportRenderer,
                randomBytes: dependencies.randomBytes
            )
        }
        phases = [
            [ShutdownStep { [receiptEndpoint] in await receiptEndpoint.stop() }],
            [AppleSettingsReader(switcher: switcher, log: log), delivery, v1Verification, compare, reconcile]
                + [parts.retention()]
                + (consumption.map { [$0] } ?? []),
        ]
        metrics.describe(Self.metricCatalogue)
    }

    /// The store and operator actions alone, for CLI commands that need no other secret (`replay`, `subscription`):
    /// an existing store (``StoreNotFound`` otherwise).
    public static func maintenance(
        config: GatewayConfig,
        now: @escaping @Sendable () -> Int64
    ) throws -> (Operations, any GatewayStore) {
        var existing = SQLiteStore.Options()
        existing.createsMissing = false
        let store = try openStore(config: config, environment: ProcessEnvironment.variables, sqliteOptions: existing)
        return (Operations(store: store, now: now, downstreams: config.downstreams.map(\.name)), store)
    }

    /// The store the config names: its SQLite file, or the PostgreSQL database whose connection string is in the
    /// variable `store.postgres.url_env` names (never logged, never in an error).
    public static func openStore(
        config: GatewayConfig,
        environment: [String: String],
        sqliteOptions: SQLiteStore.Options = .init()
    )
        throws -> any GatewayStore
    {
        guard let variable = config.postgresURLEnv else {
            return try SQLiteStore(path: config.sqlitePath, options: sqliteOptions)
        }
        guard let url = environment[variable], !url.isEmpty else {
            throw ConfigError(field: "store.postgres.url_env", "environment variable \(variable) is not set")
        }
        return try PostgresStore(url: url)
    }

    /// Where the store is, for the log: the SQLite file, or `postgres` (the connection string is a secret).
    var storeDescription: String {
        config.postgresURLEnv == nil ? config.sqlitePath : "postgres (\(config.postgresURLEnv ?? ""))"
    }

    /// Seeds authority, starts the workers and both listeners. Returns the bound (public, admin) ports.
    /// Call once; not concurrently with `shutdown()`.
    @discardableResult
    public func start() throws -> (port: UInt16, adminPort: UInt16?) {
        if let demo = ingest.limits.demoSandboxVerifyTime {
            log.warn(
                "DEMO: sandbox notifications are judged fresh as of a fixed time, not the clock (--demo-verify-time)",
                ["verify_time": .string(TimeText.iso8601(demo))]
            )
        }
        warnAboutStorePermissions()
        try seedAuthority()
        try reconcile.schedule()
        let publicRoutes = self.publicRoutes
        let main = try ListenerSettings.main(config).listen { request in publicRoutes.handle(request) }
        let admin = try adminAPI.map { adminAPI throws(ConfigError) in
            try ListenerSettings.admin(config).listen { request in adminAPI.handle(request) }
        }
        if admin == nil {
            log.warn(
                "admin API disabled: its bearer token variable is not set",
                ["variable": .string(config.adminTokenEnv)]
            )
        }
        let group = ServiceGroup(phases: [[main] + (admin.map { [$0] } ?? [])] + phases)
        group.start()
        running.withLock { $0 = group }
        log.info(
            "listening",
            [
                "port": .int(Int64(main.port)), "admin_port": admin.map { .int(Int64($0.port)) },
                "store": .string(storeDescription), "instance": .string(delivery.context.instance),
            ]
        )
        return (main.port, admin?.port)
    }

    /// One warning per file or folder of an SQLite store that its owner's group or anyone else can read (they hold every
    /// notification body and subscription). A store the gateway creates is owner-only; this finds one made before, or by
    /// hand. Never fatal: the operator decides.
    func warnAboutStorePermissions() {
        guard let sqlite = store as? SQLiteStore else { return }
        for (path, mode) in SQLiteStore.readableByOthers(path: sqlite.path) {
            let isFolder = !path.hasPrefix(sqlite.path)  // the database, -wal and -shm start with its path
            log.warn(
                "store readable by others",
                [
                    "path": .string(path), "mode": .string("0" + String(mode, radix: 8)),
                    "fix": .string("chmod \(isFolder ? "700" : "600") \(path)"),
                ]
            )
        }
    }

    /// Seeds the store's authority from the config (a cutover's row wins over the config), logs the effective
    /// authority per bundle and environment, and refuses an authority the config cannot serve. `start()` does this
    /// first; a service used without listeners (tests, one-shot commands) can do it alone.
    public func seedAuthority() throws {
        let effective = try seed(AppSettings.authority, field: "authority", logsDefaults: true) {
            $0.authority(for: $1)
        }
        if let problem = config.authorityProblems(
            effective: effective.map { ($0.bundleID, $0.environment.rawValue, $0.authority) },
            v2PathAvailable: compare.v2Source != nil
        ).first {
            throw problem
        }
        try seedReceiptModes()
    }

    /// Seeds each app and environment's receipt mode from the config (a cutover stored in the database wins) and logs
    /// the mode in force where it is not the default; a mode that needs the App Store Server API without it is refused.
    func seedReceiptModes() throws {
        let effective = try seed(AppSettings.receiptMode, field: "mode", logsDefaults: false) { $0.receipts(for: $1) }
        if receiptEndpoint.histories == nil,
            let row = effective.first(where: { !$0.mode.asksApple || $0.mode == .shadow })
        {
            throw ConfigError(
                field: "apps[\(row.bundleID)].receipts",
                "\(row.mode.rawValue) answers receipts from the App Store Server API: configure app_store_api "
                    + "(issuer_id, key_id, private_key_env)"
            )
        }
    }

    /// Seeds `setting` from the config's value per app and environment and logs each effective row (`msg` the
    /// setting's name, the value under `field`); with `logsDefaults` false, rows at the fallback that the config set
    /// are not logged.
    private func seed<V>(
        _ setting: AppSetting<V>,
        field: String,
        logsDefaults: Bool,
        _ configured: (GatewayConfig.App, AppStoreEnvironment) -> V
    ) throws -> [AppSettingEntry<V>] {
        let time = now()
        let wanted = config.apps.flatMap { app in
            app.environments.map {
                AppSettingEntry(bundleID: app.bundleID, environment: $0, value: configured(app, $0), origin: .config)
            }
        }
        let effective = try store.write { tx in try tx.seed(setting, wanted, now: time) }
        for row in effective where logsDefaults || row.value != setting.fallback || row.origin != .config {
            log.info(
                setting.name,
                [
                    "bundle": .string(row.bundleID), "environment": .string(row.environment.rawValue),
                    field: .string(row.value.rawValue), "origin": .string(row.origin.rawValue),
                ]
            )
        }
        return effective
    }

    /// Graceful stop, phase after phase: no new connections and the requests in flight finished, then the receipt
    /// path's fetches ended and its shadow comparisons awaited, then the workers' current work finished; then the
    /// writer commits what is queued and the store is closed. Not concurrently with `start()`.
    public func shutdown() async {
        if let group = running.withLock({ $0.take() }) {
            await group.stop()
        } else {
            await receiptEndpoint.stop()
        }
        store.close()
        let stats = store.commitStatistics
        log.info("stopped", ["transactions": .int(Int64(stats.batches)), "writes": .int(Int64(stats.items))])
    }
}
