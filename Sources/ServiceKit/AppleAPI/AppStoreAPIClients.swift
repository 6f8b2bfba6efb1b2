internal import Canonical
public import Crypto
public import HTTPClient
public import V2Adapter

/// The V2 path's view of a subscription from the App Store Server API (Get All Subscription Statuses, every signed
/// item verified like a notification), one client per configured app (the token names the bundle), with the
/// team's key from `app_store_api.private_key_env`; every client takes its turns from the process's one
/// ``AppleAPIBudget`` when given one (docs/operations.md, "Apple's rate limits").
public struct AppStoreAPIClients: Sendable {
    package let clients: [String: AppStoreAPIClient]

    public init(clients: [String: AppStoreAPIClient]) { self.clients = clients }

    /// nil when `app_store_api` has no credentials; a ConfigError when they are named but unusable (the variable
    /// unset, or not a P-256 PEM key). The key itself never appears in an error.
    public static func make(
        settings: AppStoreAPISettings,
        bundleIDs: [String],
        environment: [String: String],
        transport: any HTTPTransport,
        adapter: V2Adapter,
        now: @escaping @Sendable () -> Int64,
        jitter: @escaping @Sendable () -> Double,
        budget: (any AppStoreAPIBudget)? = nil
    ) throws -> AppStoreAPIClients? {
        guard let keyID = settings.keyID, let issuerID = settings.issuerID, let variable = settings.privateKeyEnv
        else { return nil }
        let key = try privateKey(variable: variable, environment: environment)
        var clients: [String: AppStoreAPIClient] = [:]
        for bundleID in bundleIDs {
            let configuration = AppStoreAPIClient.Configuration(
                productionURL: settings.productionURL,
                sandboxURL: settings.sandboxURL,
                keyID: keyID,
                issuerID: issuerID,
                bundleID: bundleID,
                privateKey: key
            )
            clients[bundleID] = AppStoreAPIClient(
                configuration: configuration,
                transport: transport,
                adapter: adapter,
                now: now,
                jitter: jitter,
                budget: budget,
                budgetWaitMillis: settings.rateLimits.maxWaitMillis
            )
        }
        return AppStoreAPIClients(clients: clients)
    }

    /// The team's `.p8` key from the named variable.
    public static func privateKey(variable: String, environment: [String: String]) throws -> PrivateKey {
        guard let pem = environment[variable], !pem.isEmpty else {
            throw ConfigError(field: "app_store_api.private_key_env", "environment variable \(variable) is not set")
        }
        guard let key = try? PrivateKey(pem: pem), key.publicKey.isP256 else {
            throw ConfigError(
                field: "app_store_api.private_key_env",
                "\(variable) does not hold a P-256 private key in PEM (the .p8 file)"
            )
        }
        return key
    }

    public func client(for bundleID: String) -> AppStoreAPIClient? { clients[bundleID] }

    /// The same clients, each call made once: a failure (a 429 included) ends it at once, for callers that reschedule
    /// themselves (reconciliation waits out a `Retry-After` in its schedule, not in a task).
    public var oneAttemptPerCall: AppStoreAPIClients {
        AppStoreAPIClients(clients: clients.mapValues { $0.with(maxAttempts: 1) })
    }

    /// The same clients, their calls at `priority` in the budget.
    public func with(priority: AppStoreAPICallPriority) -> AppStoreAPIClients {
        AppStoreAPIClients(clients: clients.mapValues { $0.with(priority: priority) })
    }

    public func serves(bundleID: String) -> Bool { clients[bundleID] != nil }
}
