public import Canonical
public import V2Adapter
internal import WireJSON

/// `app_store_api.rate_limits`: the gateway's own budget of calls to the App Store Server API (docs/operations.md,
/// "Apple's rate limits"), per app × endpoint × environment: Apple's published rate per second (its table, or
/// `per_second`), a tenth of it in the sandbox, times `margin`.
public struct AppleRateLimitSettings: Sendable, Hashable {
    /// The share of Apple's rate the gateway spends (0.05…1).
    public var margin: Double = 0.8
    /// Apple's production rate per second of an endpoint, where Apple's table (``AppStoreAPIEndpoint/productionPerSecond``)
    /// is to be overridden.
    public var perSecond: [AppStoreAPIEndpoint: Double] = [:]
    /// How long a call not made for a waiting client request (reconciliation, sweeps, comparison, backfill, refund
    /// answers) waits for its turn before it fails `budget_exhausted`.
    public var maxWaitMillis: Int64 = 60_000

    public init() {}

    /// Apple's sandbox rates are a tenth of production's.
    public static let sandboxShare = 0.1

    package static let keys: Set<String> = ["margin", "per_second", "max_wait"]
    package static let endpointKeys: Set<String> = Set(AppStoreAPIEndpoint.productionPerSecond.keys.map(\.rawValue))

    /// Apple's published rate per second of `endpoint` in `environment` (the configured one, else Apple's table; an
    /// endpoint outside the table counts as the strictest, 1 per second).
    public func published(_ endpoint: AppStoreAPIEndpoint, _ environment: AppStoreEnvironment) -> Double {
        let production = perSecond[endpoint] ?? AppStoreAPIEndpoint.productionPerSecond[endpoint] ?? 1
        return environment == .production ? production : production * Self.sandboxShare
    }

    /// The rate per second the gateway spends of `endpoint` in `environment`.
    public func rate(_ endpoint: AppStoreAPIEndpoint, _ environment: AppStoreEnvironment) -> Double {
        published(endpoint, environment) * margin
    }

    /// The most calls that may go at once after a quiet spell: what is left of Apple's rate above the gateway's (at
    /// least 1), so that no whole second ever holds more than Apple's rate (a second holds at most the burst plus a
    /// second of the gateway's rate).
    public func burst(_ endpoint: AppStoreAPIEndpoint, _ environment: AppStoreEnvironment) -> Double {
        max(1, (published(endpoint, environment) - rate(endpoint, environment)).rounded(.down))
    }

    /// How long turns leased from the budget every instance on a PostgreSQL store shares may wait to be spent
    /// (``AppleAPIBudget``): what an interval holds is at most what the shared bucket gave over it and this long before.
    public static let leaseMillis: Int64 = 100

    /// Most turns one lease takes from the shared budget: what gathers in ``leaseMillis`` (at least 1).
    public func leaseTurns(_ endpoint: AppStoreAPIEndpoint, _ environment: AppStoreEnvironment) -> Int {
        max(1, Int((rate(endpoint, environment) * Double(Self.leaseMillis) / 1000).rounded(.down)))
    }

    /// The shared bucket's burst: ``burst(_:_:)`` less what gathers in ``leaseMillis`` (at least 1), so that a second
    /// holds at most the burst, a second of the gateway's rate and the turns leased just before it, all instances
    /// together — no more than Apple's rate.
    public func sharedBurst(_ endpoint: AppStoreAPIEndpoint, _ environment: AppStoreEnvironment) -> Double {
        let leased = rate(endpoint, environment) * Double(Self.leaseMillis) / 1000
        return max(1, (burst(endpoint, environment) - leased).rounded(.down))
    }

    package static func parse(_ r: ConfigReader) throws(ConfigError) -> AppleRateLimitSettings {
        try r.rejectUnknown(allowed: keys)
        var s = AppleRateLimitSettings()
        if let margin = try number(r, "margin") {
            guard margin >= 0.05, margin <= 1 else { throw ConfigError(field: r.field("margin"), "must be 0.05…1") }
            s.margin = margin
        }
        if let rates = try r.object("per_second") {
            try rates.rejectUnknown(allowed: endpointKeys)
            for key in rates.object.keys.sorted() {
                guard let rate = try number(rates, key), rate >= 0.1, rate <= 100_000 else {
                    throw ConfigError(field: rates.field(key), "must be a number of requests per second, 0.1…100000")
                }
                s.perSecond[AppStoreAPIEndpoint(rawValue: key)] = rate
            }
        }
        s.maxWaitMillis = try r.duration("max_wait", s.maxWaitMillis, example: "1m")
        guard (1_000...3_600_000).contains(s.maxWaitMillis) else {
            throw ConfigError(field: r.field("max_wait"), "must be 1s…1h")
        }
        return s
    }

    private static func number(_ r: ConfigReader, _ key: String) throws(ConfigError) -> Double? {
        guard let v = r.object[key], !v.isNull else { return nil }
        guard case .number(let text) = v, let n = Double(text), n.isFinite else {
            throw ConfigError(field: r.field(key), "must be a number")
        }
        return n
    }
}
