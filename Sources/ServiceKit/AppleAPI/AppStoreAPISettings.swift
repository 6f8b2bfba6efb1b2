/// `app_store_api`: Apple's URLs, the team's key (by the name of the variable holding it) and the budget every
/// App Store Server API client shares (docs/configuration.md).
public struct AppStoreAPISettings: Sendable, Hashable {
    public var productionURL = "https://api.storekit.apple.com"
    public var sandboxURL = "https://api.storekit-sandbox.apple.com"
    public var issuerID: String?
    public var keyID: String?
    public var privateKeyEnv: String?
    /// `app_store_api.rate_limits`: the budget every call to the API shares (docs/operations.md, "Apple's rate
    /// limits").
    public var rateLimits = AppleRateLimitSettings()

    public init() {}

    /// Whether the team's key is named: without it no client is built.
    public var hasCredentials: Bool { issuerID != nil && keyID != nil && privateKeyEnv != nil }
}
