internal import AppStoreConnect
internal import Canonical
internal import HTTPClient
internal import ReceiptPath
internal import RefundRequests
internal import ServiceKit
internal import Store
internal import V1Adapter
internal import V2Adapter
internal import WireJSON

/// The builders ``GatewayService/init(config:dependencies:)`` calls, one per part that takes more than handing over
/// what it needs: the adapters, the store, the ingest limits, the delivery worker and Apple's clients.
extension GatewayService {
    /// The V1 adapter (shared secrets) and the V2 adapter (the roots V2 notifications must chain to: Apple Root CA -
    /// G3 plus `trust.extra_roots`, sandbox only; or the dependencies' own).
    static func adapters(
        config: GatewayConfig,
        v1Apps: [V1App],
        dependencies: Dependencies
    ) throws -> (V1Adapter, V2Adapter) {
        let anchors = try dependencies.trustAnchors ?? TrustAnchorLoader.anchors(extraRootPaths: config.extraRoots)
        let v2 = V2Adapter(
            verifier: AppleJWSVerifier(anchors: anchors),
            apps: config.apps.map {
                V2App(bundleID: $0.bundleID, appAppleID: $0.appAppleID, environments: $0.environments)
            }
        )
        return (V1Adapter(apps: v1Apps), v2)
    }

    /// The store (the dependencies' own, or the one the config names), its quarantine rows stored before bodies were
    /// redacted and its delivery attempts logged before answer heads were scrubbed once, before anything else reads
    /// them.
    static func store(
        config: GatewayConfig,
        redactor: SecretRedactor,
        dependencies: Dependencies,
        log: Log
    ) throws -> any GatewayStore {
        let store =
            try dependencies.store
            ?? openStore(
                config: config,
                environment: dependencies.environment,
                sqliteOptions: dependencies.sqliteOptions
            )
        let scrub = try store.scrubQuarantine(redactor)
        if scrub.changed > 0 {
            log.warn(
                "quarantined bodies stored before redaction held a secret or a password: replaced (rotate that secret)",
                [
                    "rows_examined": .int(Int64(scrub.examined)), "rows_changed": .int(Int64(scrub.changed)),
                ]
            )
        }
        let attempts = try store.scrubDeliveryLog(redactor)
        if attempts.changed > 0 {
            log.warn(
                "delivery log answers stored before redaction held a secret or a signature: replaced (rotate that secret)",
                [
                    "rows_examined": .int(Int64(attempts.examined)), "rows_changed": .int(Int64(attempts.changed)),
                ]
            )
        }
        return store
    }

    static func ingestLimits(config: GatewayConfig, dependencies: Dependencies) -> NotificationIngest.Limits {
        var limits = NotificationIngest.Limits()
        limits.untrustedQuarantineCap = config.limits.untrustedQuarantine
        limits.genuineQuarantineCap = config.limits.genuineQuarantine
        limits.untrustedQuarantineBytes = config.limits.untrustedQuarantineBytes
        limits.genuineQuarantineBytes = config.limits.genuineQuarantineBytes
        limits.maxNotificationAgeMillis = config.maxNotificationAgeMillis
        limits.demoSandboxVerifyTime = dependencies.demoSandboxVerifyTime
        return limits
    }

    /// What every worker is given: the store, metrics, log, clock, jitter, its instance's name (the process's when
    /// several share the store) and the job lease.
    static func workerContext(
        config: GatewayConfig,
        store: any GatewayStore,
        metrics: Metrics,
        log: Log,
        dependencies: Dependencies
    ) -> WorkerContext {
        WorkerContext(
            store: store,
            metrics: metrics,
            log: log,
            now: dependencies.now,
            jitter: dependencies.jitter,
            instance: dependencies.instanceID ?? (store.sharedByInstances ? ProcessEnvironment.instanceName : "local"),
            leaseMillis: config.limits.jobLeaseMillis
        )
    }

    /// `alerts.webhook`, when configured: one sender for every part that alerts.
    static func alerts(
        config: GatewayConfig,
        secrets: ServiceSecrets,
        metrics: Metrics,
        transports: OutgoingTransports,
        dependencies: Dependencies
    ) -> AlertWebhook? {
        zip(config.alertWebhook, secrets.alertSigner).map { settings, signer in
            AlertWebhook(
                url: settings.url,
                signer: signer,
                transport: transports.alerts,
                now: dependencies.now,
                metrics: metrics
            )
        }
    }

    /// What the builders draw on, built first and in this order (so that a config with several mistakes names the
    /// same one first): the secrets, the adapters, the store, the router, the workers' context, the outgoing transfers,
    /// Apple's clients and the alerts' sender. Each builder below makes one part from them.
    struct Assembly {
        let config: GatewayConfig
        let dependencies: Dependencies
        let secrets: ServiceSecrets
        let v1: V1Adapter
        let v2: V2Adapter
        let store: any GatewayStore
        let router: Router
        let context: WorkerContext
        let transports: OutgoingTransports
        let apple: AppleClients
        let alerts: AlertWebhook?

        init(config: GatewayConfig, dependencies: Dependencies, metrics: Metrics, log: Log) throws {
            (self.config, self.dependencies) = (config, dependencies)
            secrets = try ServiceSecrets(config: config, environment: dependencies.environment)
            (v1, v2) = try GatewayService.adapters(config: config, v1Apps: secrets.v1Apps, dependencies: dependencies)
            store = try GatewayService.store(
                config: config,
                redactor: secrets.redactor,
                dependencies: dependencies,
                log: log
            )
            router = Router(config: config)
            context = GatewayService.workerContext(
                config: config,
                store: store,
                metrics: metrics,
                log: log,
                dependencies: dependencies
            )
            transports = OutgoingTransports(base: dependencies.transport, config: config)
            apple = try AppleClients(
                config: config,
                v2: v2,
                transports: transports,
                dependencies: dependencies,
                metrics: metrics,
                store: store,
                log: log
            )
            alerts = GatewayService.alerts(
                config: config,
                secrets: secrets,
                metrics: metrics,
                transports: transports,
                dependencies: dependencies
            )
        }

        func ingest() -> NotificationIngest {
            NotificationIngest(
                v1: v1,
                v2: v2,
                store: store,
                router: router,
                limits: GatewayService.ingestLimits(config: config, dependencies: dependencies),
                metrics: context.metrics,
                redactor: secrets.redactor,
                now: dependencies.now
            )
        }

        func operations() -> Operations {
            Operations(
                store: store,
                now: dependencies.now,
                downstreams: router.downstreamNames,
                downstreamSettings: config.downstreams
            )
        }

        func delivery() -> DeliveryWorker {
            DeliveryWorker(
                context: context,
                router: router,
                transport: dependencies.transport,
                downstreamTransports: transports.deliveries,
                signers: secrets.signers,
                passthroughSecrets: secrets.v1Secrets,
                redactor: secrets.redactor,
                v1Apps: secrets.v1Apps,
                databases: DatabaseDownstreams.make(
                    config: config,
                    connectionStrings: secrets.databaseURLs,
                    timeoutMillis: dependencies.deliveryTuning.timeoutMillis
                ),
                tuning: dependencies.deliveryTuning,
                alerts: alerts
            )
        }

        /// The refund requests' responder, from each app's `consumption` section (nil when no app answers).
        func refundRequests() throws(ConfigError) -> ConsumptionResponder? {
            try RefundRequests.make(
                apps: config.apps.enumerated().compactMap { i, app in
                    app.consumption.map { RefundRequests.App(index: i, bundleID: app.bundleID, settings: $0) }
                },
                environment: dependencies.environment,
                context: context,
                sender: apple.consumptionSender,
                transport: transports.asks,
                alerts: alerts,
                tuning: dependencies.consumptionTuning
            )
        }

        /// verifyReceipt for V1 notifications, as many at once as `limits.verify_receipt_concurrency`.
        func v1Verification() -> V1VerificationWorker {
            var tuning = dependencies.receiptTuning
            tuning.concurrency = config.limits.verifyReceiptConcurrency
            return V1VerificationWorker(
                context: context,
                router: router,
                client: apple.verifyReceipt,
                apps: secrets.v1Apps,
                tuning: tuning
            )
        }

        func compare() -> CompareWorker {
            CompareWorker(
                context: context,
                router: router,
                settings: config.compareSettings,
                silenceAlertMillis: config.silenceAlertMillis,
                v2Source: apple.v2Source,
                receiptClient: apple.verifyReceipt,
                apps: secrets.v1Apps,
                tuning: dependencies.compareTuning
            )
        }

        func reconcile(ingest: NotificationIngest) -> ReconcileWorker {
            ReconcileWorker(
                context: context,
                router: router,
                settings: config.reconcile,
                apps: config.apps,
                statusSource: apple.recoveryStatusSource,
                historySource: apple.historySource,
                receiptClient: apple.verifyReceipt,
                v1Apps: secrets.v1Apps,
                ingest: ingest,
                tuning: dependencies.reconcileTuning
            )
        }

        /// The verifyReceipt endpoint: its receipt reader (Apple's receipt roots and `trust.extra_receipt_roots`),
        /// the customers' histories when the App Store Server API is there, Apple's verifyReceipt over the receipt
        /// path's own slots, and each app's shared secrets.
        func receiptEndpoint() throws -> ReceiptEndpoint {
            ReceiptEndpoint(
                settings: config.receiptSettings,
                verifyReceipt: VerifyReceiptURLs(
                    production: config.verifyReceiptProductionURL,
                    sandbox: config.verifyReceiptSandboxURL
                ),
                apps: config.apps.map(\.receiptPath),
                store: store,
                read: try dependencies.receiptReader
                    ?? ReceiptReaderLoader.reader(extraReceiptRoots: config.extraReceiptRoots),
                histories: apple.receiptHistorySource.map { [store, context, config, dependencies] source in
                    ReceiptHistories(
                        store: store,
                        source: source,
                        settings: config.receiptSettings,
                        now: dependencies.now,
                        owner: context.instance,
                        metrics: context.metrics
                    )
                },
                apple: transports.receipts,
                secrets: Dictionary(secrets.v1Apps.map { ($0.bundleID, $0.sharedSecrets) }, uniquingKeysWith: +),
                metrics: context.metrics,
                log: context.log,
                now: dependencies.now
            )
        }

        func retention() -> RetentionWorker {
            RetentionWorker(
                store: store,
                log: context.log,
                now: dependencies.now,
                rawBodyRetentionMillis: config.rawBodyRetentionMillis
            )
        }
    }

    /// Apple's services as the gateway's parts use them: verifyReceipt; the V2 path's view of subscriptions (the App
    /// Store Server API from `app_store_api`, or the dependencies' own); the recovery runs' and the receipt path's
    /// clients of it, which make one attempt per call (they reschedule themselves on a 429); App Store Connect and
    /// the test-notification probe for the switch.
    struct AppleClients {
        let verifyReceipt: VerifyReceiptClient
        let v2Source: (any V2PathSource)?
        let recoveryStatusSource: (any V2PathSource)?
        let historySource: (any NotificationHistorySource)?
        let receiptHistorySource: (any ReceiptHistorySource)?
        /// Send Consumption Information, one attempt per call (the responder reschedules itself).
        let consumptionSender: (any ConsumptionSender)?
        let settings: (any AppleNotificationSettings)?
        let probe: (any TestNotificationProbe)?

        /// The one budget every client of the App Store Server API takes its turns from (shared with the other
        /// instances on a PostgreSQL store).
        let budget: AppleAPIBudget

        init(
            config: GatewayConfig,
            v2: V2Adapter,
            transports: OutgoingTransports,
            dependencies: Dependencies,
            metrics: Metrics,
            store: any GatewayStore,
            log: Log
        ) throws {
            // Instances on one PostgreSQL store share the budget (its ledger); an SQLite store's one process keeps it.
            budget = AppleAPIBudget(
                settings: config.appStoreAPI.rateLimits,
                now: dependencies.now,
                sleep: dependencies.appleBudgetSleep,
                metrics: metrics,
                ledger: StoreAPIBudgetLedger.of(store),
                log: log
            )
            verifyReceipt = VerifyReceiptClient(
                transport: transports.apple,
                configuration: .init(
                    productionURL: config.verifyReceiptProductionURL,
                    sandboxURL: config.verifyReceiptSandboxURL,
                    baseDelay: dependencies.verifyReceiptBaseDelay
                ),
                jitter: dependencies.jitter
            )
            let v2Source =
                try dependencies.v2PathSource
                ?? AppStoreAPIClients.make(
                    settings: config.appStoreAPI,
                    bundleIDs: config.apps.map(\.bundleID),
                    environment: dependencies.environment,
                    transport: transports.apple,
                    adapter: v2,
                    now: dependencies.now,
                    jitter: dependencies.jitter,
                    budget: budget
                )
            self.v2Source = v2Source
            let api = v2Source as? AppStoreAPIClients
            let recovery = dependencies.v2PathSource == nil ? api?.oneAttemptPerCall : nil
            recoveryStatusSource = recovery ?? v2Source
            historySource = dependencies.historySource ?? recovery
            // The receipt path's calls wait on a public request: the same clients over the receipt path's slots, first
            // in the budget (a fetch its request no longer waits for says so per call: ReceiptHistories).
            receiptHistorySource =
                try dependencies.receiptHistorySource
                ?? (api == nil
                    ? nil
                    : AppStoreAPIClients.make(
                        settings: config.appStoreAPI,
                        bundleIDs: config.apps.map(\.bundleID),
                        environment: dependencies.environment,
                        transport: transports.receipts,
                        adapter: v2,
                        now: dependencies.now,
                        jitter: dependencies.jitter,
                        budget: budget
                    )?
                    .oneAttemptPerCall.with(priority: .request))
            consumptionSender = dependencies.consumptionSender ?? api?.oneAttemptPerCall
            probe = dependencies.testNotificationProbe ?? api.map(AppStoreAPITestNotifications.init(source:))
            settings =
                try dependencies.appleSettings
                ?? AppStoreConnectClient.make(
                    config: config,
                    environment: dependencies.environment,
                    transport: transports.apple,
                    now: dependencies.now
                )
                .map(AppStoreConnectSettings.init(client:))
        }
    }
}

/// Both values, when both are there.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}

extension GatewayConfig.App {
    /// The app as the receipt path knows it.
    var receiptPath: ReceiptPathApp {
        ReceiptPathApp(
            bundleID: bundleID,
            environments: environments,
            receipts: receipts,
            receiptsByEnvironment: receiptsByEnvironment,
            legacyTransactionReceipts: legacyTransactionReceipts,
            v1AssignedOwnership: v1AssignedOwnership
        )
    }
}
