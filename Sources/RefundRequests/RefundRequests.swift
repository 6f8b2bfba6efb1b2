public import HTTPClient
public import ServiceKit

/// Answering Apple's refund requests (CONSUMPTION_REQUEST, docs/operations.md "Refund requests"): the feature's
/// entry point. The service hands it each app's `consumption` section and the kernel's parts; it builds the
/// responder (a background service) when an app answers, or nothing.
public enum RefundRequests {
    /// One app's `consumption` section, with the app's place in the config file (errors name `apps[i]…`).
    public struct App: Sendable {
        public var index: Int
        public var bundleID: String
        public var settings: ConsumptionSettings
        public init(index: Int, bundleID: String, settings: ConsumptionSettings) {
            (self.index, self.bundleID, self.settings) = (index, bundleID, settings)
        }
    }

    /// The responder, when an app answers refund requests (`consumption.respond`); nil when none does. Answering needs
    /// the App Store Server API (`sender`) to send the answers, and each app that asks its team (`ask_url`) the
    /// signing secrets its `ask_secret_env` names; either missing is a ``ConfigError`` naming the field.
    public static func make(
        apps: [App],
        environment: [String: String],
        context: WorkerContext,
        sender: (any ConsumptionSender)?,
        transport: any HTTPTransport,
        alerts: AlertWebhook?,
        tuning: ConsumptionResponder.Tuning
    ) throws(ConfigError) -> ConsumptionResponder? {
        let answering = apps.filter(\.settings.respond)
        var signers: [String: WebhookSigner] = [:]
        for app in answering where app.settings.askURL != nil {
            signers[app.bundleID] = try WebhookSigner.fromEnvironment(
                app.settings.askSecretEnv,
                field: "apps[\(app.index)].consumption.ask_secret_env",
                environment: environment
            )
        }
        if sender == nil, let app = answering.first {
            throw ConfigError(
                field: "apps[\(app.index)].consumption.respond",
                "answering refund requests needs the App Store Server API: configure app_store_api (issuer_id, key_id, private_key_env)"
            )
        }
        guard !answering.isEmpty else { return nil }
        return ConsumptionResponder(
            context: context,
            apps: Dictionary(answering.map { ($0.bundleID, $0.settings) }, uniquingKeysWith: { first, _ in first }),
            signers: signers,
            sender: sender,
            transport: transport,
            alerts: alerts,
            tuning: tuning
        )
    }
}
