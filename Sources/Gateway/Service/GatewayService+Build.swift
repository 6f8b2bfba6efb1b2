internal import AppStoreConnect
internal import Canonical
internal import HTTPClient
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

    static func delivery(
        config: GatewayConfig,
        secrets: ServiceSecrets,
        context: WorkerContext,
        router: Router,
        alerts: AlertWebhook?,
        transports: OutgoingTransports,
        dependencies: Dependencies
    ) -> DeliveryWorker {
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

    /// The consumption responder, when an app answers refund requests (`consumption.respond`); it needs the App
    /// Store Server API (`app_store_api`) to send the answers.
    static func consumption(
        config: GatewayConfig,
        secrets: ServiceSecrets,
        context: WorkerContext,
        sender: (any ConsumptionSender)?,
        alerts: AlertWebhook?,
        transports: OutgoingTransports,
        dependencies: Dependencies
    ) throws(ConfigError) -> ConsumptionResponder? {
        var apps: [String: ConsumptionSettings] = [:]
        for (i, app) in config.apps.enumerated() {
            guard let c = app.consumption, c.respond else { continue }
            guard sender != nil else {
                throw ConfigError(
                    field: "apps[\(i)].consumption.respond",
                    "answering refund requests needs the App Store Server API: configure app_store_api (issuer_id, key_id, private_key_env)"
                )
            }
            apps[app.bundleID] = c
        }
        guard !apps.isEmpty else { return nil }
        return ConsumptionResponder(
            context: context,
            apps: apps,
            signers: secrets.consumptionSigners,
            sender: sender,
            transport: transports.asks,
            alerts: alerts,
            tuning: dependencies.consumptionTuning
        )
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
                ?? AppStoreAPIPathSource.make(
                    config: config,
                    environment: dependencies.environment,
                    transport: transports.apple,
                    adapter: v2,
                    now: dependencies.now,
                    jitter: dependencies.jitter,
                    budget: budget
                )
            self.v2Source = v2Source
            let api = v2Source as? AppStoreAPIPathSource
            let recovery = dependencies.v2PathSource == nil ? api?.oneAttemptPerCall : nil
            recoveryStatusSource = recovery ?? v2Source
            historySource = dependencies.historySource ?? recovery
            // The receipt path's calls wait on a public request: the same clients over the receipt path's slots, first
            // in the budget (a fetch its request no longer waits for says so per call: ReceiptHistories).
            receiptHistorySource =
                try dependencies.receiptHistorySource
                ?? (api == nil
                    ? nil
                    : AppStoreAPIPathSource.make(
                        config: config,
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
