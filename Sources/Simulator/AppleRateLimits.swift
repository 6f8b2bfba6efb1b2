internal import Canonical
import Synchronization
internal import WireJSON

/// Apple's own rate limits of the App Store Server API, as the fake enforces them (``SimWorld/appleRateLimits``,
/// docs/simulator.md, "Apple's rate limits"): per app, endpoint and environment, the endpoint's rate per second of
/// Apple's table — at most that many requests in any second of the clock and that rate × 3600 in any hour of it,
/// a tenth of both in the sandbox. Beyond them, HTTP 429 with Apple's `RateLimitExceededError` and a `Retry-After`
/// that is, as Apple's is, the UNIX time in milliseconds from which the next request fits.
public struct AppleRateLimits: Sendable, Codable, Hashable, CustomStringConvertible {
    /// Whose table: Apple's production rates, or its sandbox's (10 % of them).
    public enum Table: String, Sendable, Codable, Hashable {
        case production, sandbox
    }

    /// Apple's table in that environment; nil with ``perSecond``.
    public var table: Table?
    /// Every endpoint at this many requests per second (and 3600 times that per hour), whatever Apple's table says.
    public var perSecond: Int?

    public init(table: Table) { (self.table, self.perSecond) = (table, nil) }
    public init(perSecond: Int) { (self.table, self.perSecond) = (nil, perSecond) }

    public static let production = Self(table: .production)
    public static let sandbox = Self(table: .sandbox)

    /// `production`, `sandbox`, a whole number of requests per second (1…100000), or `off` (an outer nil: no limit);
    /// nil when it is none of those.
    public static func setting(_ text: String) -> AppleRateLimits?? {
        switch text {
        case "off": return .some(nil)
        case "production": return .some(.production)
        case "sandbox": return .some(.sandbox)
        default:
            guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(text), (1...100_000).contains(n)
            else { return nil }
            return .some(Self(perSecond: n))
        }
    }

    /// What ``setting(_:)`` reads back.
    public var description: String { table?.rawValue ?? perSecond.map(String.init) ?? "off" }

    /// The environment whose counters a request is counted in: the table's; the fake's own (sandbox) otherwise.
    var environment: String { table?.rawValue ?? "sandbox" }

    /// The endpoint's allowance: requests per second and per hour. A sandbox rate below one per second (Apple's
    /// 1 per second endpoints) still lets one request through in a second, and a tenth of the hour's.
    func allowance(_ endpoint: AppleAPIEndpoint) -> (perSecond: Int, perHour: Int) {
        // A hand-edited state file may hold any number: clamped, so no product overflows.
        if let n = perSecond.map({ min(max($0, 0), 1_000_000) }) { return (n, n * 3600) }
        let rate = endpoint.productionPerSecond
        return table == .sandbox ? (max(1, rate / 10), rate * 360) : (rate, rate * 3600)
    }
}

/// An App Store Server API endpoint of Apple's rate-limit table ("Identifying rate limits"), told from the request's
/// method and path, with its production rate per second.
public struct AppleAPIEndpoint: Sendable, Hashable {
    /// Apple's name of the endpoint.
    public var name: String
    public var productionPerSecond: Int

    init(_ name: String, _ productionPerSecond: Int) {
        (self.name, self.productionPerSecond) = (name, productionPerSecond)
    }

    static let transactionInfo = Self("Get Transaction Info", 50)
    static let transactionHistory = Self("Get Transaction History", 50)
    static let transactionHistoryV1 = Self("Get Transaction History V1", 50)
    static let subscriptionStatuses = Self("Get All Subscription Statuses", 50)
    static let sendConsumption = Self("Send Consumption Information", 50)
    static let sendConsumptionV1 = Self("Send Consumption Information V1", 50)
    static let notificationHistory = Self("Get Notification History", 50)
    static let extendRenewalDate = Self("Extend a Subscription Renewal Date", 20)
    static let lookUpOrderID = Self("Look Up Order ID", 10)
    static let refundHistory = Self("Get Refund History", 10)
    static let refundHistoryV1 = Self("Get Refund History V1", 10)
    static let massExtendRenewalDates = Self("Extend Subscription Renewal Dates for All Active Subscribers", 1)
    static let requestTestNotification = Self("Request a Test Notification", 1)
    static let testNotificationStatus = Self("Get Test Notification Status", 1)

    /// The endpoint of `method` `path` (`/inApps/…`); nil for a request Apple's table does not name.
    static func of(method: String, path: String) -> AppleAPIEndpoint? {
        let p = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard p.first == "inApps", p.count >= 4 else { return nil }
        switch (method, p[1], p[2], p.count) {
        case ("GET", "v1", "transactions", 4): return .transactionInfo
        case ("GET", "v2", "history", 4): return .transactionHistory
        case ("GET", "v1", "history", 4): return .transactionHistoryV1
        case ("GET", "v1", "subscriptions", 4): return .subscriptionStatuses
        case ("PUT", "v2", "transactions", 5) where p[3] == "consumption": return .sendConsumption
        case ("PUT", "v1", "transactions", 5) where p[3] == "consumption": return .sendConsumptionV1
        case ("POST", "v1", "notifications", 4) where p[3] == "history": return .notificationHistory
        case ("POST", "v1", "notifications", 4) where p[3] == "test": return .requestTestNotification
        case ("GET", "v1", "notifications", 5) where p[3] == "test": return .testNotificationStatus
        case ("PUT", "v1", "subscriptions", 5) where p[3] == "extend": return .extendRenewalDate
        case ("POST", "v1", "subscriptions", 5) where p[3] == "extend" && p[4] == "mass": return .massExtendRenewalDates
        case ("GET", "v1", "lookup", 4): return .lookUpOrderID
        case ("GET", "v2", "refund", 5) where p[3] == "lookup": return .refundHistory
        case ("GET", "v1", "refund", 5) where p[3] == "lookup": return .refundHistoryV1
        default: return nil
        }
    }
}

/// Enforces ``AppleRateLimits`` on the fake's clock and counts what the fake's App Store Server API answered, per
/// app, endpoint and environment (`GET /fake/api/stats`). In memory: a restarted fake starts afresh.
final class AppleRateLimiter: Sendable {
    struct Key: Hashable, Comparable {
        var bundleID: String
        var endpoint: String
        var environment: String

        static func < (a: Key, b: Key) -> Bool {
            (a.bundleID, a.endpoint, a.environment) < (b.bundleID, b.endpoint, b.environment)
        }
    }

    /// The requests accepted in the current second and hour of the clock (windows start at whole seconds and hours).
    struct Windows {
        var second: Int64 = .min
        var inSecond = 0
        var hour: Int64 = .min
        var inHour = 0
    }

    /// What the fake answered for one key.
    struct Counts {
        var calls = 0
        /// 429s answered because Apple's rate was exceeded.
        var rateLimited = 0
        /// Every 429 answered (Apple's rate, ``SimWorld/apiRateLimit``, a queued fault).
        var answered429 = 0
    }

    private struct State {
        var windows: [Key: Windows] = [:]
        var counts: [Key: Counts] = [:]
    }

    private let state = Mutex(State())

    static let secondMillis: Int64 = 1_000
    static let hourMillis: Int64 = 3_600_000

    /// nil when a request of `key`'s app and endpoint at `now` (ms) is within `limits` (and is counted); otherwise
    /// the UNIX time in milliseconds from which one more fits: the end of the hour when the hour's allowance is
    /// spent, else the end of the second. Refused requests do not count, so a client that waits as told gets in.
    func admit(_ key: Key, endpoint: AppleAPIEndpoint, limits: AppleRateLimits, at now: Int64) -> Int64? {
        let (perSecond, perHour) = limits.allowance(endpoint)
        let second = Self.floor(now, Self.secondMillis)
        let hour = Self.floor(now, Self.hourMillis)
        return state.withLock { s in
            var w = s.windows[key, default: Windows()]
            if w.second != second { (w.second, w.inSecond) = (second, 0) }
            if w.hour != hour { (w.hour, w.inHour) = (hour, 0) }
            defer { s.windows[key] = w }
            if w.inHour >= perHour { return hour.clampedAdding(Self.hourMillis) }
            if w.inSecond >= perSecond { return second.clampedAdding(Self.secondMillis) }
            w.inSecond += 1
            w.inHour += 1
            return nil
        }
    }

    /// Counts one answer of the App Store Server API; `rateLimited`: a 429 of Apple's rate.
    func record(_ key: Key, status: Int, rateLimited: Bool) {
        state.withLock { s in
            var c = s.counts[key, default: Counts()]
            c.calls += 1
            if status == 429 { c.answered429 += 1 }
            if rateLimited { c.rateLimited += 1 }
            s.counts[key] = c
        }
    }

    /// Forgets the counts (the windows stay: Apple's hour goes on).
    func resetCounts() { state.withLock { $0.counts = [:] } }

    /// `GET /fake/api/stats`: the setting, totals, and per app, endpoint and environment the calls, the 429s and the
    /// allowance (null where no Apple limit applies).
    func stats(limits: AppleRateLimits?) -> JSONValue {
        let counts = state.withLock { $0.counts }.sorted { $0.key < $1.key }
        func number(_ n: Int) -> JSONValue { .number(String(n)) }
        let items: [JSONValue] = counts.map { key, c in
            let allowance = limits.flatMap { l in
                AppleAPIEndpoint.named(key.endpoint).map { l.allowance($0) }
            }
            return .object(
                JSONObject([
                    ("bundle_id", .string(key.bundleID)), ("endpoint", .string(key.endpoint)),
                    ("environment", .string(key.environment)), ("calls", number(c.calls)),
                    ("answered_429", number(c.answered429)), ("rate_limited", number(c.rateLimited)),
                    ("limit_per_second", allowance.map { number($0.perSecond) } ?? .null),
                    ("limit_per_hour", allowance.map { number($0.perHour) } ?? .null),
                ])
            )
        }
        return .object(
            JSONObject([
                ("apple_rate_limits", .string(limits?.description ?? "off")),
                ("calls", number(counts.reduce(0) { $0 + $1.value.calls })),
                ("answered_429", number(counts.reduce(0) { $0 + $1.value.answered429 })),
                ("rate_limited", number(counts.reduce(0) { $0 + $1.value.rateLimited })),
                ("endpoints", .array(items)),
            ])
        )
    }

    /// The start of the window of `length` that holds `t` (ms), for negative times too.
    static func floor(_ t: Int64, _ length: Int64) -> Int64 {
        let r = t % length
        return r < 0 ? t - r - length : t - r
    }
}

extension AppleAPIEndpoint {
    static let all: [AppleAPIEndpoint] = [
        .transactionInfo, .transactionHistory, .transactionHistoryV1, .subscriptionStatuses, .sendConsumption,
        .sendConsumptionV1, .notificationHistory, .extendRenewalDate, .lookUpOrderID, .refundHistory, .refundHistoryV1,
        .massExtendRenewalDates, .requestTestNotification, .testNotificationStatus,
    ]

    static func named(_ name: String) -> AppleAPIEndpoint? { all.first { $0.name == name } }
}
