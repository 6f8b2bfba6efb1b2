public import Canonical
internal import FoundationEssentials
public import HTTPClient
internal import HTTPServer
public import Policy
public import ReceiptPath
public import RefundRequests
internal import ReportModel
public import ServiceKit
internal import Store
internal import TeamDatabase
public import V1Adapter
internal import V2Adapter
internal import WireJSON

/// The gateway's configuration file (JSON; docs/architecture.md, "Command line"). Secrets are never inline: the file names environment
/// variables. Relative paths are resolved against the file's folder. Every problem is reported with its field.
public struct GatewayConfig: Sendable {
    public struct App: Sendable, Hashable {
        public var bundleID: String
        public var appAppleID: Int64?
        public var environments: Set<AppStoreEnvironment>
        public var sharedSecretEnv: [String]
        /// The authority the config seeds (a cutover stored in the database wins over it).
        public var authority: Authority
        /// Per-environment exceptions to ``authority`` (`"authority": {"production": "v1", "sandbox": "v2"}`).
        public var authorityByEnvironment: [AppStoreEnvironment: Authority] = [:]
        public var compare: Bool
        public var verifyReceipt: Bool
        public var downstreams: [String]
        /// `notification_url`: per environment, the URL App Store Connect must send this app's notifications to
        /// (this gateway's public `/notifications`); the switch refuses to move Apple while Apple's URL differs.
        public var notificationURL: [AppStoreEnvironment: String] = [:]
        /// How `POST /verifyReceipt` is answered for this app's receipts, as the config seeds it (a cutover stored in
        /// the database wins over it): `receipts` in the file, a string or per environment.
        public var receipts: ReceiptMode = .apple
        public var receiptsByEnvironment: [AppStoreEnvironment: ReceiptMode] = [:]
        /// `legacy_transaction_receipts`: the iOS 6 transaction receipt is taken at all (then, like an app receipt,
        /// only when its signature chains to Apple's receipt root; docs/threat-model.md).
        public var legacyTransactionReceipts = false
        /// `consumption`: how Apple's refund requests are answered; nil: they are not (docs/operations.md, "Refund
        /// requests").
        public var consumption: ConsumptionSettings?
        /// `v1_assigned_ownership`: what V1 bodies and verifyReceipt answers built from V2 say for a group member's
        /// (`ASSIGNED`) transaction — `FAMILY_SHARED` or `PURCHASED` (docs/configuration.md).
        public var v1AssignedOwnership = V1App.defaultAssignedOwnership

        public func authority(for environment: AppStoreEnvironment) -> Authority {
            authorityByEnvironment[environment] ?? authority
        }

        public func receipts(for environment: AppStoreEnvironment) -> ReceiptMode {
            receiptsByEnvironment[environment] ?? receipts
        }
        /// Whether Apple may send this app V1 notifications (a shared secret is configured).
        public var acceptsV1: Bool { !sharedSecretEnv.isEmpty }
    }

    /// `compare` (top level): how the two paths are compared and when a bundle counts as ready (docs/architecture.md, "Authority and comparison").
    public typealias CompareSettings = Gateway.CompareSettings

    /// The generation whose events are authoritative.
    public typealias Authority = Generation

    public struct Downstream: Sendable, Hashable {
        /// What it receives: the notification rule's own kinds.
        public typealias Kind = DeliveryKind
        /// Where a `database` downstream writes.
        public enum Database: Sendable, Hashable {
            /// The team's PostgreSQL: the connection string is in the environment variable `urlEnv`, the tables in `schema`.
            case postgres(urlEnv: String, schema: String)
            /// A SQLite file (an absolute path); the tables' names start with `prefix` + `_` when it is not empty.
            case sqlite(path: String, prefix: String)
        }
        public var name: String
        public var kind: Kind
        /// Where webhooks and pass-through deliveries are POSTed; empty for a `database` downstream.
        public var url: String
        /// The target of a `database` downstream; nil for the other kinds.
        public var database: Database? = nil
        public var secretEnv: [String]
        public var environments: Set<AppStoreEnvironment>
        public var shadow: Bool
        public var includeRaw: Bool
        public var maxAttempts: Int
        /// Deliveries in flight to this downstream.
        public var concurrency: Int = 4
        /// The wait between attempts: `retry_delay` doubling per attempt up to `max_retry_delay` (with jitter); nil: the
        /// delivery policy's (5 s and 6 h). A downstream's `Retry-After` is honoured up to `max_retry_delay`.
        public var retryDelayMillis: Int64? = nil
        public var maxRetryDelayMillis: Int64? = nil
        /// `filter`: the events (for `v2_passthrough`, the notifications whose events) it takes of those its apps and
        /// environments give it; empty: all.
        public var filter = EventFilter()
        /// `max_per_second`: at most this many deliveries started per second (a token bucket holding one second's
        /// worth), whatever the backlog; nil: no limit beyond `concurrency`.
        public var maxPerSecond: Int? = nil
    }

    /// Operational bounds (`limits` in the file).
    public struct Limits: Sendable, Hashable {
        /// Quarantine lanes, in rows and in bytes (body plus the text stored beside it): the untrusted lane drops
        /// its oldest rows beyond either; the genuine lane refuses (503, nothing stored, an alert) instead.
        public var untrustedQuarantine = 1_000
        public var untrustedQuarantineBytes: Int64 = 16 * 1_048_576
        public var genuineQuarantine = 10_000
        public var genuineQuarantineBytes: Int64 = 256 * 1_048_576
        public var httpThreads = 64
        public var verifyReceiptConcurrency = 4
        /// The public HTTP server's connection limits, request deadline and body buffer budget (see
        /// `HTTPServer.Configuration` and docs/reverse-proxy.md).
        public var connections = 1_024
        public var connectionsPerAddress = 128
        public var requestDeadlineSeconds = 30
        public var bodyBufferBytes = 64 << 20
        /// `limits.body_buffer_per_address_bytes`: one client address's share of ``bodyBufferBytes``; 0: no share.
        /// nil: ``defaultBodyBufferPerAddressBytes``.
        public var bodyBufferPerAddressBytes: Int? = nil

        /// The share when the file sets none: an eighth of the budget (as 128 connections are of 1,024), and never less
        /// than one body of the largest size (docs/reverse-proxy.md).
        public var defaultBodyBufferPerAddressBytes: Int { max(Self.maxBodyBytes, bodyBufferBytes / 8) }

        /// The share the public listener keeps (0: none).
        public var effectiveBodyBufferPerAddressBytes: Int {
            bodyBufferPerAddressBytes ?? defaultBodyBufferPerAddressBytes
        }

        /// The public listener's largest request body (not in the file).
        static var maxBodyBytes: Int { HTTPServer.Configuration().maxBodyBytes }
        /// `limits.job_lease`: how long a background job (a delivery, a verifyReceipt call, a comparison fetch) claimed
        /// by one instance of a shared (PostgreSQL) store stays its own before another instance may take it over; renewed
        /// while the job runs (``JobScheduler/renewLeases(_:)``).
        public var jobLeaseMillis: Int64 = 300_000
    }

    /// `app_store_connect`: the App Store Connect API team key the switch (`iap-gateway migrate`) uses to read and
    /// set which notification version Apple sends each app. Not the In-App Purchase key of ``AppStoreAPI``.
    public struct AppStoreConnect: Sendable, Hashable {
        public var issuerID: String
        public var keyID: String
        /// The environment variable holding the key's PEM text (the `.p8` file).
        public var privateKeyEnv: String
        /// The API's base URL.
        public var url: String

        public static let defaultURL = "https://api.appstoreconnect.apple.com"

        public init(issuerID: String, keyID: String, privateKeyEnv: String, url: String = Self.defaultURL) {
            (self.issuerID, self.keyID, self.privateKeyEnv, self.url) = (issuerID, keyID, privateKeyEnv, url)
        }
    }

    /// `app_store_api`: the team's key and Apple's URLs for every App Store Server API client.
    public typealias AppStoreAPI = AppStoreAPISettings

    public var listen: String = "127.0.0.1:8080"
    public var adminListen: String = "127.0.0.1:8081"
    public var adminTokenEnv: String = "IAPGW_ADMIN_TOKEN"
    public var sqlitePath: String = "data/gateway.db"
    /// `store.postgres.url_env`: the environment variable holding a libpq connection string. Set: the store is
    /// PostgreSQL (several instances may share it) and ``sqlitePath`` is not used.
    public var postgresURLEnv: String?
    /// Extra roots (absolute paths), trusted for sandbox payloads only.
    public var extraRoots: [String] = []
    /// `trust.extra_receipt_roots`: extra roots of app receipts (absolute paths, DER), trusted for sandbox receipts only.
    public var extraReceiptRoots: [String] = []
    /// `receipts`: the verifyReceipt endpoint's settings.
    public var receiptSettings = ReceiptSettings()
    public var verifyReceiptProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public var verifyReceiptSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
    public var apps: [App] = []
    public var downstreams: [Downstream] = []
    /// `alerts.webhook`: where one signed JSON per dead letter (and per start that dead-lettered the deliveries of
    /// downstreams no longer configured) is POSTed; nil: none.
    public var alertWebhook: AlertWebhookSettings? = nil

    /// `alerts`: the operational events' webhook and the variables holding its signing secrets.
    public struct AlertWebhookSettings: Sendable, Hashable {
        public var url: String
        public var secretEnv: [String]
    }
    public var appStoreAPI = AppStoreAPISettings()
    /// nil when the file has no `app_store_connect`: the switch cannot move Apple then.
    public var appStoreConnect: AppStoreConnect?
    public var compareSettings = CompareSettings()
    /// `reconcile`: recovery of what Apple's notifications did not bring (docs/operations.md, "Reconciliation").
    public var reconcile = ReconcileSettings()
    /// The authoritative path silent this long while the other path is not → a log line and a metric.
    public var silenceAlertMillis: Int64 = 6 * 3_600_000
    public var maxNotificationAgeMillis: Int64 = 10 * 86_400_000
    /// Raw bodies are dropped after this long (events and delivery history stay).
    public var rawBodyRetentionMillis: Int64 = 180 * 86_400_000
    /// `listen_tls`: serve HTTPS with these PEM files.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    public var limits = Limits()

    public init() {}

    /// Reads and validates the file at `path`.
    public static func load(path: String) throws(ConfigError) -> GatewayConfig {
        let bytes: [UInt8]
        do { bytes = Array(try Data(contentsOf: URL(filePath: path))) } catch {
            throw ConfigError(field: "", "cannot read config file \(path)")
        }
        let base = URL(filePath: path).deletingLastPathComponent().path()
        return try parse(bytes, baseDirectory: base)
    }

    /// Parses config JSON; relative paths are resolved against `baseDirectory`. One function per section, called in
    /// the order the checks have always run (so that a file with several mistakes names the same one first).
    public static func parse(_ bytes: [UInt8], baseDirectory: String) throws(ConfigError) -> GatewayConfig {
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch {
            throw ConfigError(field: "", "config is not valid JSON: \(error)")
        }
        let r = try ConfigReader(root, path: "")
        try r.rejectUnknown(allowed: Keys.root)
        var c = GatewayConfig()
        try parseListeners(r, into: &c)
        try parseStore(r, base: baseDirectory, into: &c)
        try parseAppleEndpoints(r, base: baseDirectory, into: &c)
        c.appStoreConnect = try r.section(AppStoreConnect.self)
        try parseAges(r, into: &c)
        c.compareSettings = try r.section(CompareSettings.self) ?? c.compareSettings
        c.reconcile = try r.section(ReconcileSettings.self) ?? c.reconcile
        try parseSilenceAlert(r, into: &c)
        try parseTLS(r, base: baseDirectory, into: &c)
        c.limits = try r.section(Limits.self) ?? c.limits
        try parseDownstreams(r, base: baseDirectory, into: &c)
        try parseApps(r, into: &c)
        try checkFilterBundles(r, c)
        c.alertWebhook = try r.section(AlertWebhookSettings.self)
        return c
    }

    /// `listen` and `admin`.
    private static func parseListeners(_ r: ConfigReader, into c: inout GatewayConfig) throws(ConfigError) {
        c.listen = try r.string("listen") ?? c.listen
        if let admin = try r.object("admin") {
            try admin.rejectUnknown(allowed: Keys.admin)
            c.adminListen = try admin.string("listen") ?? c.adminListen
            c.adminTokenEnv = try admin.string("token_env") ?? c.adminTokenEnv
        }
    }

    /// `store`: a SQLite file (the default, resolved against `base`) or PostgreSQL, not both.
    private static func parseStore(_ r: ConfigReader, base: String, into c: inout GatewayConfig) throws(ConfigError) {
        guard let store = try r.object("store") else {
            c.sqlitePath = resolve(c.sqlitePath, base: base)
            return
        }
        try store.rejectUnknown(allowed: Keys.store)
        c.sqlitePath = resolve(try store.string("sqlite") ?? c.sqlitePath, base: base)
        if let postgres = try store.object("postgres") {
            try postgres.rejectUnknown(allowed: Keys.storePostgres)
            guard try store.string("sqlite") == nil else {
                throw ConfigError(
                    field: store.field("postgres"),
                    "give either store.sqlite or store.postgres, not both"
                )
            }
            c.postgresURLEnv = try postgres.requiredString("url_env")
        }
    }

    /// Apple's side: `trust`, `verify_receipt` and `app_store_api`.
    private static func parseAppleEndpoints(
        _ r: ConfigReader,
        base: String,
        into c: inout GatewayConfig
    ) throws(ConfigError) {
        if let trust = try r.object("trust") {
            try trust.rejectUnknown(allowed: Keys.trust)
            c.extraRoots = (try trust.strings("extra_roots") ?? []).map { resolve($0, base: base) }
            c.extraReceiptRoots = (try trust.strings("extra_receipt_roots") ?? []).map { resolve($0, base: base) }
        }
        c.receiptSettings = try r.section(ReceiptSettings.self) ?? c.receiptSettings
        if let vr = try r.object("verify_receipt") {
            try vr.rejectUnknown(allowed: Keys.verifyReceipt)
            c.verifyReceiptProductionURL = try url(vr, "production_url") ?? c.verifyReceiptProductionURL
            c.verifyReceiptSandboxURL = try url(vr, "sandbox_url") ?? c.verifyReceiptSandboxURL
        }
        c.appStoreAPI = try r.section(AppStoreAPISettings.self) ?? c.appStoreAPI
    }

    /// `max_notification_age` and `raw_body_retention`.
    private static func parseAges(_ r: ConfigReader, into c: inout GatewayConfig) throws(ConfigError) {
        if let age = try r.string("max_notification_age") {
            guard let ms = configDuration(age) else {
                throw ConfigError(
                    field: "max_notification_age",
                    "must be a duration such as 10d or 12h (at most 100 years)"
                )
            }
            c.maxNotificationAgeMillis = ms
        }
        if let retention = try r.string("raw_body_retention") {
            guard let ms = configDuration(retention) else {
                throw ConfigError(field: "raw_body_retention", "must be a duration such as 180d")
            }
            c.rawBodyRetentionMillis = ms
        }
    }

    /// `silence_alert`.
    private static func parseSilenceAlert(_ r: ConfigReader, into c: inout GatewayConfig) throws(ConfigError) {
        guard let silence = try r.string("silence_alert") else { return }
        guard let ms = configDuration(silence) else {
            throw ConfigError(field: "silence_alert", "must be a duration such as 6h")
        }
        c.silenceAlertMillis = ms
    }

    /// `listen_tls`: both files, resolved against `base`.
    private static func parseTLS(_ r: ConfigReader, base: String, into c: inout GatewayConfig) throws(ConfigError) {
        guard let tls = try r.object("listen_tls") else { return }
        try tls.rejectUnknown(allowed: Keys.listenTLS)
        c.tlsCertificateFile = resolve(try tls.requiredString("cert_file"), base: base)
        c.tlsKeyFile = resolve(try tls.requiredString("key_file"), base: base)
    }

    /// `downstreams`, each with a name of its own; read after the store (a database downstream must not be it).
    private static func parseDownstreams(
        _ r: ConfigReader,
        base: String,
        into c: inout GatewayConfig
    ) throws(ConfigError) {
        for d in try r.objects("downstreams") ?? [] {
            c.downstreams.append(try downstream(d, base: base, config: c))
        }
    }

    /// One element of `downstreams`: its kind and target (a URL, or a database's tables), its delivery settings.
    /// `config`: everything read so far (the store, the downstreams before this one).
    private static func downstream(
        _ d: ConfigReader,
        base: String,
        config c: GatewayConfig
    ) throws(ConfigError) -> Downstream {
        try d.rejectUnknown(allowed: Keys.downstream)
        let name = try d.requiredString("name")
        guard !c.downstreams.contains(where: { $0.name == name }) else {
            throw ConfigError(field: d.field("name"), "duplicate downstream name \"\(name)\"")
        }
        let kindText = try d.string("kind") ?? "webhook"
        guard let kind = Downstream.Kind(rawValue: kindText) else {
            throw ConfigError(
                field: d.field("kind"),
                "must be \"webhook\", \"v1_passthrough\", \"v2_passthrough\" or \"database\""
            )
        }
        var url = ""
        var database: Downstream.Database?
        if kind == .database {
            database = try databaseTarget(
                d,
                base: base,
                storePath: c.postgresURLEnv == nil ? c.sqlitePath : nil,
                others: c.downstreams
            )
        } else {
            for key in ["url_env", "sqlite", "schema"] where d.object[key].map({ !$0.isNull }) ?? false {
                throw ConfigError(field: d.field(key), "applies only to a downstream of kind \"database\"")
            }
            guard let u = try self.url(d, "url") else { throw ConfigError(field: d.field("url"), "is required") }
            url = u
        }
        let attempts = try d.int64("max_attempts") ?? 12
        guard (1...1000).contains(attempts) else { throw ConfigError(field: d.field("max_attempts"), "must be 1…1000") }
        let concurrency = try d.int64("concurrency") ?? 4
        guard (1...256).contains(concurrency) else { throw ConfigError(field: d.field("concurrency"), "must be 1…256") }
        let (retryDelay, maxRetryDelay) = try retryDelays(d)
        let filter = try eventFilter(d, kind: kind)
        let maxPerSecond = try d.int64("max_per_second")
        if let maxPerSecond, !(1...100_000).contains(maxPerSecond) {
            throw ConfigError(field: d.field("max_per_second"), "must be 1…100000")
        }
        var downstream = Downstream(
            name: name,
            kind: kind,
            url: url,
            database: database,
            secretEnv: try d.strings("secret_env") ?? [],
            environments: try environments(d, default: [.production]),
            shadow: try d.bool("shadow") ?? false,
            includeRaw: try d.bool("include_raw") ?? false,
            maxAttempts: Int(attempts),
            concurrency: Int(concurrency),
            retryDelayMillis: retryDelay,
            maxRetryDelayMillis: maxRetryDelay
        )
        downstream.filter = filter
        downstream.maxPerSecond = maxPerSecond.map(Int.init)
        return downstream
    }

    /// A downstream's `filter`: `kinds` (canonical kinds), `types` (Apple's notification types, `TYPE` or
    /// `TYPE/SUBTYPE`), `bundles`, `authoritative` (true: authoritative events only; false: shadow only). A
    /// `v1_passthrough` downstream takes no filter: a V1 body's event is known only after verifyReceipt.
    private static func eventFilter(_ d: ConfigReader, kind: Downstream.Kind) throws(ConfigError) -> EventFilter {
        guard let f = try d.object("filter") else { return EventFilter() }
        guard kind != .v1Passthrough else {
            throw ConfigError(field: d.field("filter"), "applies to webhook, database and v2_passthrough downstreams")
        }
        try f.rejectUnknown(allowed: Keys.filter)
        let kinds = try f.strings("kinds") ?? []
        for (i, k) in kinds.enumerated() where !EventKind.all.contains(EventKind(rawValue: k)) {
            throw ConfigError(
                field: "\(f.field("kinds"))[\(i)]",
                "unknown kind \"\(k)\"; one of \(EventKind.all.map(\.rawValue).joined(separator: ", "))"
            )
        }
        let types = try f.strings("types") ?? []
        for (i, t) in types.enumerated() {
            try checkNotificationType(t, field: "\(f.field("types"))[\(i)]")
        }
        let filter = EventFilter(
            kinds: Set(kinds.map(EventKind.init(rawValue:))),
            types: Set(types),
            bundles: Set(try f.strings("bundles") ?? []),
            authoritative: try f.bool("authoritative")
        )
        guard !filter.takesEverything else {
            throw ConfigError(
                field: d.field("filter"),
                "names nothing to filter on: kinds, types, bundles or authoritative"
            )
        }
        return filter
    }

    /// One element of `filter.types`: one of Apple's notification types (V1's or V2's, ``NotificationTypeV1``,
    /// ``NotificationTypeV2``), or a V2 type, `/` and one of Apple's subtypes. Anything else would never match an event:
    /// the downstream would silently receive nothing.
    private static func checkNotificationType(_ text: String, field: String) throws(ConfigError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let types = NotificationTypeV2.all.union(NotificationTypeV1.all)
        guard (1...2).contains(parts.count), types.contains(parts[0]) else {
            throw ConfigError(
                field: field,
                "unknown notification type \"\(text)\"; one of Apple's: \(types.sorted().joined(separator: ", ")),"
                    + " optionally with /SUBTYPE (DID_RENEW/BILLING_RECOVERY)"
            )
        }
        guard parts.count == 2 else { return }
        guard NotificationTypeV2.all.contains(parts[0]) else {
            throw ConfigError(field: field, "\(parts[0]) is a V1 type, and V1 notifications have no subtype")
        }
        guard NotificationTypeV2.subtypes.contains(parts[1]) else {
            throw ConfigError(
                field: field,
                "unknown subtype \"\(parts[1])\"; one of Apple's: "
                    + NotificationTypeV2.subtypes.sorted().joined(separator: ", ")
            )
        }
    }

    /// Each downstream's `filter.bundles`, once the apps are read: every bundle must be an app of `apps` that sends to
    /// the downstream (its `downstreams` names it, or names none). Any other never reaches the downstream, which would
    /// silently receive nothing of it.
    private static func checkFilterBundles(_ r: ConfigReader, _ c: GatewayConfig) throws(ConfigError) {
        for (i, d) in (try r.objects("downstreams") ?? []).enumerated() {
            guard let f = try d.object("filter") else { continue }
            let name = c.downstreams[i].name
            for (j, bundle) in (try f.strings("bundles") ?? []).enumerated() {
                let field = "\(f.field("bundles"))[\(j)]"
                guard let app = c.apps.first(where: { $0.bundleID == bundle }) else {
                    throw ConfigError(field: field, "no app in apps has bundle_id \"\(bundle)\"")
                }
                guard app.downstreams.isEmpty || app.downstreams.contains(name) else {
                    throw ConfigError(
                        field: field,
                        "app \"\(bundle)\" does not send to downstream \"\(name)\" (its downstreams do not name it)"
                    )
                }
            }
        }
    }

    /// A downstream's `retry_delay` and `max_retry_delay` (nil: the policy's), the first not longer than the second.
    private static func retryDelays(_ d: ConfigReader) throws(ConfigError) -> (Int64?, Int64?) {
        func delay(_ key: String) throws(ConfigError) -> Int64? {
            guard let text = try d.string(key) else { return nil }
            guard let ms = configDuration(text) else {
                throw ConfigError(field: d.field(key), "must be a duration such as 5s or 6h")
            }
            return ms
        }
        let retryDelay = try delay("retry_delay")
        let maxRetryDelay = try delay("max_retry_delay")
        if let retryDelay, let maxRetryDelay, retryDelay > maxRetryDelay {
            throw ConfigError(field: d.field("retry_delay"), "must not be longer than max_retry_delay")
        }
        return (retryDelay, maxRetryDelay)
    }

    /// `apps`, each bundle once; read after `downstreams`, which they name.
    private static func parseApps(_ r: ConfigReader, into c: inout GatewayConfig) throws(ConfigError) {
        for a in try r.objects("apps") ?? [] {
            c.apps.append(try app(a, config: c))
        }
    }

    /// One element of `apps`. `config`: everything read so far (the downstreams, the apps before this one).
    private static func app(_ a: ConfigReader, config c: GatewayConfig) throws(ConfigError) -> App {
        try a.rejectUnknown(allowed: Keys.app)
        let bundle = try a.requiredString("bundle_id")
        guard !c.apps.contains(where: { $0.bundleID == bundle }) else {
            throw ConfigError(field: a.field("bundle_id"), "duplicate app \"\(bundle)\"")
        }
        let envs = try environments(a, default: [.production, .sandbox])
        let appleID = try a.int64("app_apple_id")
        if envs.contains(.production), appleID == nil {
            throw ConfigError(
                field: a.field("app_apple_id"),
                "is required when the app accepts production notifications"
            )
        }
        let (authority, byEnvironment) = try appAuthority(a)
        let names = try a.strings("downstreams") ?? []
        for (i, n) in names.enumerated() where !c.downstreams.contains(where: { $0.name == n }) {
            throw ConfigError(field: "\(a.field("downstreams"))[\(i)]", "no downstream is named \"\(n)\"")
        }
        let notificationURL = try notificationURLs(a, environments: envs)
        var app = App(
            bundleID: bundle,
            appAppleID: appleID,
            environments: envs,
            sharedSecretEnv: try a.strings("shared_secret_env") ?? [],
            authority: authority,
            authorityByEnvironment: byEnvironment,
            compare: try a.bool("compare") ?? false,
            verifyReceipt: try a.bool("verify_receipt") ?? true,
            downstreams: names,
            notificationURL: notificationURL
        )
        (app.receipts, app.receiptsByEnvironment) = try appReceipts(a)
        app.legacyTransactionReceipts = try a.bool("legacy_transaction_receipts") ?? false
        if let ownership = try a.string("v1_assigned_ownership") {
            guard V1App.assignedOwnershipValues.contains(ownership) else {
                throw ConfigError(
                    field: a.field("v1_assigned_ownership"),
                    "must be one of V1's values: \(V1App.assignedOwnershipValues.sorted().joined(separator: ", "))"
                )
            }
            app.v1AssignedOwnership = ownership
        }
        if let consumption = try a.object("consumption") {
            app.consumption = try a.section(ConsumptionSettings.self)
            if app.consumption?.respond == true, !envs.contains(.production) && !envs.contains(.sandbox) {
                throw ConfigError(
                    field: consumption.field("respond"),
                    "Apple asks about refunds in production and sandbox only"
                )
            }
        }
        return app
    }

    /// An app's `receipts`: `"api"`, or per environment: `{"production": "apple", "sandbox": "api"}` (unnamed ones:
    /// apple).
    private static func appReceipts(
        _ a: ConfigReader
    ) throws(ConfigError) -> (ReceiptMode, [AppStoreEnvironment: ReceiptMode]) {
        let allowed = "\"apple\", \"shadow\" or \"api\""
        guard case .object? = a.object["receipts"] else {
            let text = try a.string("receipts") ?? ReceiptMode.apple.rawValue
            guard let mode = ReceiptMode(rawValue: text) else {
                throw ConfigError(field: a.field("receipts"), "must be \(allowed) (or an object per environment)")
            }
            return (mode, [:])
        }
        let per = try a.object("receipts")!
        try per.rejectUnknown(allowed: Keys.appReceipts)
        var byEnvironment: [AppStoreEnvironment: ReceiptMode] = [:]
        for env in ["production", "sandbox"] {
            guard let text = try per.string(env) else { continue }
            guard let mode = ReceiptMode(rawValue: text) else {
                throw ConfigError(field: per.field(env), "must be \(allowed)")
            }
            byEnvironment[AppStoreEnvironment(rawValue: env)] = mode
        }
        return (.apple, byEnvironment)
    }

    /// An app's `authority`: `"v2"`, or per environment: `{"production": "v1", "sandbox": "v2"}` (unnamed ones: v1).
    private static func appAuthority(
        _ a: ConfigReader
    ) throws(ConfigError) -> (Authority, [AppStoreEnvironment: Authority]) {
        var byEnvironment: [AppStoreEnvironment: Authority] = [:]
        guard case .object? = a.object["authority"] else {
            let authorityText = try a.string("authority") ?? Authority.v1.rawValue
            guard let value = Authority(rawValue: authorityText) else {
                throw ConfigError(
                    field: a.field("authority"),
                    "must be \"v1\" or \"v2\" (or an object per environment)"
                )
            }
            return (value, byEnvironment)
        }
        let per = try a.object("authority")!
        try per.rejectUnknown(allowed: Keys.appAuthority)
        for env in ["production", "sandbox"] {
            guard let text = try per.string(env) else { continue }
            guard let value = Authority(rawValue: text) else {
                throw ConfigError(field: per.field(env), "must be \"v1\" or \"v2\"")
            }
            byEnvironment[AppStoreEnvironment(rawValue: env)] = value
        }
        return (.v1, byEnvironment)
    }

    /// An app's `notification_url`: `{"production": URL, "sandbox": URL}`, each for an environment the app accepts.
    private static func notificationURLs(
        _ a: ConfigReader,
        environments envs: Set<AppStoreEnvironment>
    ) throws(ConfigError)
        -> [AppStoreEnvironment: String]
    {
        var notificationURL: [AppStoreEnvironment: String] = [:]
        guard let urls = try a.object("notification_url") else { return notificationURL }
        try urls.rejectUnknown(allowed: Keys.appNotificationURL)
        for env in ["production", "sandbox"] {
            guard let u = try url(urls, env) else { continue }
            let environment = AppStoreEnvironment(rawValue: env)
            guard envs.contains(environment) else {
                throw ConfigError(
                    field: urls.field(env),
                    "the app does not accept \(env) notifications (apps[].environments)"
                )
            }
            notificationURL[environment] = u
        }
        return notificationURL
    }

    /// The members each object of the file may have. The parser hands exactly these sets to
    /// `rejectUnknown(allowed:)`, and ``knownKeys`` is built from them, so the parser and the reference in
    /// docs/configuration.md (compared by ConfigurationReferenceTests) cannot drift apart unnoticed.
    enum Keys {
        static let root: Set<String> = [
            "listen", "admin", "store", "trust", "verify_receipt", "apps", "downstreams", "app_store_api",
            "max_notification_age", "raw_body_retention", "listen_tls", "limits", "compare", "silence_alert",
            "$comment",
            "reconcile", "app_store_connect", "receipts", "alerts",
        ]
        static let admin: Set<String> = ["listen", "token_env"]
        static let store: Set<String> = ["sqlite", "postgres"]
        static let storePostgres: Set<String> = ["url_env"]
        static let trust: Set<String> = ["extra_roots", "extra_receipt_roots"]
        static let verifyReceipt: Set<String> = ["production_url", "sandbox_url"]
        static let listenTLS: Set<String> = ["cert_file", "key_file"]
        static let downstream: Set<String> = [
            "name", "kind", "url", "secret_env", "environments", "shadow", "include_raw", "max_attempts", "concurrency",
            "retry_delay", "max_retry_delay", "url_env", "sqlite", "schema", "filter", "max_per_second",
        ]
        static let filter: Set<String> = ["kinds", "types", "bundles", "authoritative"]
        static let app: Set<String> = [
            "bundle_id", "app_apple_id", "environments", "shared_secret_env", "authority", "compare", "verify_receipt",
            "downstreams",
            "notification_url", "receipts", "legacy_transaction_receipts", "consumption", "v1_assigned_ownership",
        ]
        /// `apps[].receipts` when it is an object (per environment).
        static let appReceipts: Set<String> = ["production", "sandbox"]
        /// `apps[].authority` when it is an object (per environment).
        static let appAuthority: Set<String> = ["production", "sandbox"]
        /// `apps[].notification_url`.
        static let appNotificationURL: Set<String> = ["production", "sandbox"]

        /// Where each set applies: the object's dotted path (`[]`: each element of a list) and its members.
        static let objects: [(path: String, members: Set<String>)] =
            [
                ("", root), ("admin", admin), ("store", store), ("store.postgres", storePostgres), ("trust", trust),
                ("verify_receipt", verifyReceipt),
                ("listen_tls", listenTLS),
                ("downstreams[]", downstream), ("downstreams[].filter", filter), ("apps[]", app),
                ("apps[].authority", appAuthority),
                ("apps[].notification_url", appNotificationURL), ("apps[].receipts", appReceipts),
            ] + sections.flatMap { $0.objects }

        /// The sections the parts own, each read by its own type.
        static let sections: [any ConfigSection.Type] = [
            ReceiptSettings.self, AppStoreAPISettings.self, AppStoreConnect.self, CompareSettings.self,
            ReconcileSettings.self, Limits.self, AlertWebhookSettings.self, ConsumptionSettings.self,
        ]
    }

    /// Every key the parser accepts, as sorted dotted paths: `listen`, `limits`, `limits.connections`,
    /// `downstreams[].url`, `apps[].authority.production` (an object's own key is listed as well as its members).
    public static let knownKeys: [String] = Keys.objects.flatMap { object in
        object.members.map { object.path.isEmpty ? $0 : "\(object.path).\($0)" }
    }.sorted()

    /// Whether the App Store Server API can be called (issuer, key id and the key's variable are configured).
    public var hasAppStoreAPICredentials: Bool { appStoreAPI.hasCredentials }

    /// Settings that cannot produce what they promise (docs/architecture.md, "Authority and comparison"), found before anything starts: a bundle that
    /// may receive V1 with V2 authoritative needs the App Store Server API for its V2 path, and comparing needs it
    /// for the V2 side of V1 traffic. `authority` is the effective one per (bundle, environment), a stored cutover
    /// included; `v2PathAvailable` says whether the App Store Server API (or a stand-in) is there.
    public func authorityProblems(
        effective authority: [(bundle: String, environment: String, authority: Generation)],
        v2PathAvailable: Bool
    )
        -> [ConfigError]
    {
        var problems: [ConfigError] = []
        for app in apps where app.acceptsV1 && !v2PathAvailable {
            if app.compare {
                problems.append(
                    ConfigError(
                        field: "apps[\(app.bundleID)].compare",
                        "comparing V1 traffic needs the V2 path: configure app_store_api (issuer_id, key_id, private_key_env)"
                    )
                )
            }
            for row in authority where row.bundle == app.bundleID && row.authority == .v2 {
                problems.append(
                    ConfigError(
                        field: "apps[\(app.bundleID)].authority",
                        "V2 is authoritative in \(row.environment) while Apple may still send V1: its V2 path comes from the App Store "
                            + "Server API, so app_store_api (issuer_id, key_id, private_key_env) must be configured"
                    )
                )
            }
        }
        return problems
    }

    /// The longest duration a setting may hold (``ConfigReader/maxDurationMillis``).
    public static let maxDurationMillis = ConfigReader.maxDurationMillis

    static func configDuration(_ text: String) -> Int64? { ConfigReader.duration(text) }

    private static func environments(
        _ r: ConfigReader,
        default value: Set<AppStoreEnvironment>
    ) throws(ConfigError)
        -> Set<AppStoreEnvironment>
    {
        guard let list = try r.strings("environments") else { return value }
        var out: Set<AppStoreEnvironment> = []
        for (i, name) in list.enumerated() {
            guard name == "production" || name == "sandbox" else {
                throw ConfigError(field: "\(r.field("environments"))[\(i)]", "must be \"production\" or \"sandbox\"")
            }
            out.insert(AppStoreEnvironment(rawValue: name))
        }
        guard !out.isEmpty else { throw ConfigError(field: r.field("environments"), "must not be empty") }
        return out
    }

    /// A `database` downstream's target: exactly one of `url_env` (PostgreSQL, `schema` defaulting to `iap`) and
    /// `sqlite` (a path relative to the config file; `schema`, when given, prefixes the table names). `url`,
    /// `secret_env` and `include_raw` do not apply. Two database downstreams may not write the same tables.
    private static func databaseTarget(
        _ d: ConfigReader,
        base: String,
        storePath: String?,
        others: [Downstream]
    ) throws(ConfigError)
        -> Downstream.Database
    {
        for key in ["url", "secret_env", "include_raw"] where d.object[key].map({ !$0.isNull }) ?? false {
            throw ConfigError(field: d.field(key), "does not apply to a database downstream")
        }
        let urlEnv = try d.string("url_env")
        let sqlite = try d.string("sqlite")
        let schema = try d.string("schema")
        if let schema, !DownstreamNames.isValid(schema) {
            throw ConfigError(
                field: d.field("schema"),
                "must be 1 to 48 lowercase letters, digits and underscores, starting with a letter (not pg_…)"
            )
        }
        let target: Downstream.Database
        switch (urlEnv, sqlite) {
        case (let variable?, nil):
            guard !variable.isEmpty else {
                throw ConfigError(field: d.field("url_env"), "must name an environment variable")
            }
            target = .postgres(urlEnv: variable, schema: schema ?? DownstreamNames.defaultSchema)
        case (nil, let path?):
            guard !path.isEmpty else { throw ConfigError(field: d.field("sqlite"), "must be a file path") }
            let resolved = resolve(path, base: base)
            // By the file, not the text: a path through `..`, a symbolic link or a hard link must not make the store's
            // own file a downstream's (the files may not exist yet: the config is read before the store is opened).
            if let storePath, SQLiteStore.sameFile(resolved, storePath) {
                throw ConfigError(
                    field: d.field("sqlite"),
                    "is the gateway's own store; a database downstream needs a file of its own"
                )
            }
            target = .sqlite(path: resolved, prefix: schema ?? "")
        default:
            throw ConfigError(
                field: d.field("url_env"),
                "a database downstream needs exactly one of url_env (PostgreSQL) and sqlite (a file)"
            )
        }
        if let other = others.first(where: { $0.database.map { sameTables($0, target) } ?? false }) {
            throw ConfigError(
                field: d.field(urlEnv != nil ? "url_env" : "sqlite"),
                "downstream \"\(other.name)\" already writes these tables"
            )
        }
        return target
    }

    /// Whether two database targets write the same tables: the same PostgreSQL variable and schema, or the same prefix
    /// in one SQLite file (compared by the file, like the store's).
    private static func sameTables(_ a: Downstream.Database, _ b: Downstream.Database) -> Bool {
        switch (a, b) {
        case (.sqlite(let first, let prefix), .sqlite(let second, let otherPrefix)):
            return prefix == otherPrefix && SQLiteStore.sameFile(first, second)
        default:
            return a == b
        }
    }

    private static func url(_ r: ConfigReader, _ key: String) throws(ConfigError) -> String? { try r.url(key) }

    /// The apps as the V1 adapter sees them, their shared secrets read from `environment`; secrets whose variable is
    /// unset are returned separately (the caller decides whether that is fatal).
    public func v1Apps(
        environment: [String: String]
    ) -> (apps: [V1App], unresolved: [(bundle: String, variable: String)]) {
        var unresolved: [(bundle: String, variable: String)] = []
        let apps = self.apps.map { app in
            let secrets = app.sharedSecretEnv.compactMap { name -> SharedSecret? in
                guard let value = environment[name], !value.isEmpty else {
                    unresolved.append((app.bundleID, name))
                    return nil
                }
                return SharedSecret(name: name, value: value)
            }
            return V1App(
                bundleID: app.bundleID,
                environments: app.environments,
                sharedSecrets: secrets,
                verifyReceipt: app.verifyReceipt,
                assignedOwnership: app.v1AssignedOwnership
            )
        }
        return (apps, unresolved)
    }

    /// A verifyReceipt client for the configured URLs.
    public func verifyReceiptClient(transport: any HTTPTransport) -> VerifyReceiptClient {
        VerifyReceiptClient(
            transport: transport,
            configuration: .init(productionURL: verifyReceiptProductionURL, sandboxURL: verifyReceiptSandboxURL)
        )
    }

    static func resolve(_ path: String, base: String) -> String {
        if path.hasPrefix("/") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }
}

extension GatewayConfig.Limits: ConfigSection {
    package static let key = "limits"
    package static let members: [(path: String, members: Set<String>)] = [
        (
            "",
            [
                "untrusted_quarantine", "genuine_quarantine", "untrusted_quarantine_bytes", "genuine_quarantine_bytes",
                "http_threads",
                "verify_receipt_concurrency", "connections", "connections_per_address", "request_deadline_seconds",
                "body_buffer_bytes", "body_buffer_per_address_bytes",
                "job_lease",
            ]
        )
    ]

    /// `limits`: quarantine caps, threads, connections, deadlines, buffers, the job lease.
    package static func parse(_ limits: ConfigReader) throws(ConfigError) -> Self {
        var c = Self()
        c.untrustedQuarantine = try limits.int(
            "untrusted_quarantine",
            1...1_000_000,
            c.untrustedQuarantine
        )
        c.genuineQuarantine = try limits.int("genuine_quarantine", 1...10_000_000, c.genuineQuarantine)
        // A lane must hold at least one body of the endpoint's 1 MiB limit (plus its row).
        let mebibyte: Int64 = 1_048_576
        c.untrustedQuarantineBytes = try limits.size(
            "untrusted_quarantine_bytes",
            2 * mebibyte...1024 * 1024 * mebibyte,
            c.untrustedQuarantineBytes
        )
        c.genuineQuarantineBytes = try limits.size(
            "genuine_quarantine_bytes",
            2 * mebibyte...1024 * 1024 * mebibyte,
            c.genuineQuarantineBytes
        )
        c.httpThreads = try limits.int("http_threads", 1...256, c.httpThreads)
        c.verifyReceiptConcurrency = try limits.int(
            "verify_receipt_concurrency",
            1...64,
            c.verifyReceiptConcurrency
        )
        c.connections = try limits.int("connections", 1...100_000, c.connections)
        c.connectionsPerAddress = try limits.int(
            "connections_per_address",
            0...100_000,
            c.connectionsPerAddress
        )
        c.requestDeadlineSeconds = try limits.int(
            "request_deadline_seconds",
            1...3_600,
            c.requestDeadlineSeconds
        )
        c.bodyBufferBytes = Int(
            try limits.size("body_buffer_bytes", mebibyte...(1 << 34), Int64(c.bodyBufferBytes))
        )
        // -1: not in the file (the share stays derived from the budget, whatever order the keys come in).
        let share = try limits.size("body_buffer_per_address_bytes", 0...(1 << 34), -1)
        if share >= 0 {
            // 0 switches the share off; any other value must hold one body of the largest size.
            guard share == 0 || share >= mebibyte else {
                throw ConfigError(
                    field: limits.field("body_buffer_per_address_bytes"),
                    "must be 0 (no share) or 1048576…\(1 << 34) bytes"
                )
            }
            c.bodyBufferPerAddressBytes = Int(share)
        }
        if let lease = try limits.string("job_lease") {
            guard let ms = ConfigReader.duration(lease), ms >= 1_000, ms <= 86_400_000 else {
                throw ConfigError(field: limits.field("job_lease"), "must be a duration from 1s to 1d, such as 5m")
            }
            c.jobLeaseMillis = ms
        }
        return c
    }
}

extension GatewayConfig.AlertWebhookSettings: ConfigSection {
    package static let key = "alerts"
    package static let members: [(path: String, members: Set<String>)] = [("", ["webhook", "secret_env"])]

    /// `alerts`: `webhook` (required in the object) and `secret_env`, as a webhook downstream's.
    package static func parse(_ a: ConfigReader) throws(ConfigError) -> Self {
        guard let url = try a.url("webhook") else { throw ConfigError(field: a.field("webhook"), "is required") }
        return Self(url: url, secretEnv: try a.strings("secret_env") ?? [])
    }
}

extension GatewayConfig.AppStoreConnect: ConfigSection {
    package static let key = "app_store_connect"
    package static let members: [(path: String, members: Set<String>)] = [
        ("", ["issuer_id", "key_id", "private_key_env", "url"])
    ]

    /// `app_store_connect`: all three credentials or none.
    package static func parse(_ asc: ConfigReader) throws(ConfigError) -> Self {
        Self(
            issuerID: try asc.requiredString("issuer_id"),
            keyID: try asc.requiredString("key_id"),
            privateKeyEnv: try asc.requiredString("private_key_env"),
            url: try asc.url("url") ?? defaultURL
        )
    }
}
