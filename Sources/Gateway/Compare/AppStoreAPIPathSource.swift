public import Canonical
public import Crypto
public import HTTPClient
public import V2Adapter

/// The V2 path's view of a subscription from the App Store Server API (Get All Subscription Statuses, every signed
/// item verified like a notification), one client per configured app (the token names the bundle), with the
/// team's key from `app_store_api.private_key_env`; every client takes its turns from the process's one
/// ``AppleAPIBudget`` when given one (docs/operations.md, "Apple's rate limits").
public struct AppStoreAPIPathSource: V2PathSource, NotificationHistorySource {
    let clients: [String: AppStoreAPIClient]

    public init(clients: [String: AppStoreAPIClient]) { self.clients = clients }

    /// nil when `app_store_api` has no credentials; a ConfigError when they are named but unusable (the variable
    /// unset, or not a P-256 PEM key). The key itself never appears in an error.
    public static func make(
        config: GatewayConfig,
        environment: [String: String],
        transport: any HTTPTransport,
        adapter: V2Adapter,
        now: @escaping @Sendable () -> Int64,
        jitter: @escaping @Sendable () -> Double,
        budget: (any AppStoreAPIBudget)? = nil
    ) throws -> AppStoreAPIPathSource? {
        guard config.hasAppStoreAPICredentials, let keyID = config.appStoreAPI.keyID,
            let issuerID = config.appStoreAPI.issuerID,
            let variable = config.appStoreAPI.privateKeyEnv
        else { return nil }
        let key = try privateKey(variable: variable, environment: environment)
        var clients: [String: AppStoreAPIClient] = [:]
        for app in config.apps {
            let configuration = AppStoreAPIClient.Configuration(
                productionURL: config.appStoreAPI.productionURL,
                sandboxURL: config.appStoreAPI.sandboxURL,
                keyID: keyID,
                issuerID: issuerID,
                bundleID: app.bundleID,
                privateKey: key
            )
            clients[app.bundleID] = AppStoreAPIClient(
                configuration: configuration,
                transport: transport,
                adapter: adapter,
                now: now,
                jitter: jitter,
                budget: budget,
                budgetWaitMillis: config.appStoreAPI.rateLimits.maxWaitMillis
            )
        }
        return AppStoreAPIPathSource(clients: clients)
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
    public var oneAttemptPerCall: AppStoreAPIPathSource {
        AppStoreAPIPathSource(clients: clients.mapValues { $0.with(maxAttempts: 1) })
    }

    /// The same clients, their calls at `priority` in the budget.
    public func with(priority: AppStoreAPICallPriority) -> AppStoreAPIPathSource {
        AppStoreAPIPathSource(clients: clients.mapValues { $0.with(priority: priority) })
    }

    public func serves(bundleID: String) -> Bool { clients[bundleID] != nil }

    public func notificationHistoryPage(
        bundleID: String,
        environment: AppStoreEnvironment,
        startDate: Int64,
        endDate: Int64,
        paginationToken: String?
    ) async throws(PathFetchError) -> NotificationHistorySlice {
        guard let client = clients[bundleID] else {
            throw PathFetchError(
                code: "no_app_store_api",
                message: "no App Store Server API client for \(bundleID)",
                retryable: false
            )
        }
        do {
            let page = try await client.notificationHistory(
                NotificationHistoryRequest(startDate: startDate, endDate: endDate),
                environment: environment,
                paginationToken: paginationToken
            )
            return NotificationHistorySlice(
                signedPayloads: page.items.map(\.signedPayload),
                nextPaginationToken: page.nextPaginationToken,
                byteCount: page.byteCount
            )
        } catch {
            throw PathFetchError(error)
        }
    }

    public func status(
        bundleID: String,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        observedAt: Int64
    )
        async throws(PathFetchError) -> V2PathStatus?
    {
        guard let client = clients[bundleID] else {
            throw PathFetchError(
                code: "no_app_store_api",
                message: "no App Store Server API client for \(bundleID)",
                retryable: false
            )
        }
        let statuses: AppStoreAPIClient.SubscriptionStatuses
        do {
            statuses = try await client.subscriptionStatuses(
                transactionID: originalTransactionID,
                environment: environment
            )
        } catch {
            if error.code == .notFound { return nil }
            throw PathFetchError(error)
        }
        guard let item = statuses.items.first(where: { $0.originalTransactionID == originalTransactionID }) else {
            return nil
        }
        return V2PathStatus(
            snapshot: item.snapshot(observedAt: observedAt, bundleID: bundleID, environment: environment),
            transaction: item.transaction.payload,
            renewal: item.renewalInfo?.payload
        )
    }
}

extension PathFetchError {
    /// An App Store Server API failure: retryable when Apple is rate limiting or unavailable or the budget had no
    /// turn in time, with the wait a `Retry-After` (or the budget) asked for.
    init(_ error: AppStoreAPIError) {
        self.init(
            code: error.code.rawValue,
            message: error.message,
            retryable: [.rateLimited, .appleUnavailable, .budgetExhausted].contains(error.code)
        )
        retryAfterMillis = error.retryAfter.map { $0.components.seconds.clampedMultiplied(by: 1000) }
    }
}
