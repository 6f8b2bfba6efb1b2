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

extension AppStoreAPISettings: ConfigSection {
    package static let key = "app_store_api"
    package static let members: [(path: String, members: Set<String>)] = [
        ("", ["production_url", "sandbox_url", "issuer_id", "key_id", "private_key_env", "rate_limits"]),
        ("rate_limits", AppleRateLimitSettings.keys), ("rate_limits.per_second", AppleRateLimitSettings.endpointKeys),
    ]

    package static func parse(_ r: ConfigReader) throws(ConfigError) -> AppStoreAPISettings {
        var s = AppStoreAPISettings()
        s.productionURL = try r.url("production_url") ?? s.productionURL
        s.sandboxURL = try r.url("sandbox_url") ?? s.sandboxURL
        s.issuerID = try r.string("issuer_id")
        s.keyID = try r.string("key_id")
        s.privateKeyEnv = try r.string("private_key_env")
        if let limits = try r.object("rate_limits") { s.rateLimits = try AppleRateLimitSettings.parse(limits) }
        return s
    }
}
