public import Canonical

/// An App Store Server API endpoint as Apple's rate limits count it ("Identifying rate limits": per app, per endpoint),
/// named in the gateway's words (the keys of `app_store_api.rate_limits.per_second`, metric labels), with Apple's
/// published production rate per second.
public struct AppStoreAPIEndpoint: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static let transactionHistory = Self(rawValue: "transaction_history")
    public static let subscriptionStatuses = Self(rawValue: "subscription_statuses")
    public static let transactionInfo = Self(rawValue: "transaction_info")
    public static let consumptionInformation = Self(rawValue: "consumption_information")
    public static let notificationHistory = Self(rawValue: "notification_history")
    public static let extendRenewalDate = Self(rawValue: "extend_renewal_date")
    public static let lookUpOrderID = Self(rawValue: "look_up_order_id")
    public static let refundHistory = Self(rawValue: "refund_history")
    public static let testNotification = Self(rawValue: "test_notification")
    public static let testNotificationStatus = Self(rawValue: "test_notification_status")

    /// Apple's table of production rates per second; the sandbox has a tenth of each.
    public static let productionPerSecond: [AppStoreAPIEndpoint: Double] = [
        .transactionHistory: 50, .subscriptionStatuses: 50, .transactionInfo: 50, .consumptionInformation: 50,
        .notificationHistory: 50, .extendRenewalDate: 20, .lookUpOrderID: 10, .refundHistory: 10,
        .testNotification: 1, .testNotificationStatus: 1,
    ]
}

/// Whose call waits first for the budget: a call a client request is waiting on (the receipt path's customer
/// history for a `POST /verifyReceipt`) goes before background work (reconciliation, the history sweep, comparison,
/// backfill, refund answers, a history fetch its request no longer waits for).
public enum AppStoreAPICallPriority: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    case request = 0
    case background = 1

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public var description: String { self == .request ? "request" : "background" }
}

/// What one call is counted against: the app, the endpoint and the environment (Apple limits each apart).
public struct AppStoreAPICall: Sendable, Hashable, CustomStringConvertible {
    public var bundleID: String
    public var endpoint: AppStoreAPIEndpoint
    public var environment: AppStoreEnvironment

    public init(bundleID: String, endpoint: AppStoreAPIEndpoint, environment: AppStoreEnvironment) {
        (self.bundleID, self.endpoint, self.environment) = (bundleID, endpoint, environment)
    }

    public var description: String { "\(bundleID) \(endpoint) \(environment.rawValue)" }
}

/// The answer of ``AppStoreAPIBudget/acquire(_:priority:deadline:)``.
public enum AppStoreAPIBudgetGrant: Sendable, Hashable {
    /// The call may go now.
    case granted
    /// No turn before the deadline: the earliest time (ms since the epoch) one could come.
    case expired(nextAt: Int64)
}

/// The one plan every App Store Server API call of a process goes through (docs/operations.md, "Apple's rate
/// limits"): each HTTP attempt of ``AppStoreAPIClient`` waits for its turn, and a 429 Apple answered holds every
/// caller of that app, endpoint and environment until Apple's `Retry-After`. The gateway implements it.
public protocol AppStoreAPIBudget: Sendable {
    /// Waits for a turn of `call`, before calls of lower priority, until `deadline` (ms since the epoch) at most.
    func acquire(
        _ call: AppStoreAPICall,
        priority: AppStoreAPICallPriority,
        deadline: Int64
    ) async
        -> AppStoreAPIBudgetGrant

    /// Apple answered `call` 429: no call of its app, endpoint and environment before `until` (ms since the epoch,
    /// Apple's `Retry-After`; nil when Apple gave none).
    func rateLimited(_ call: AppStoreAPICall, until: Int64?)
}

/// The priority and the deadline of the App Store Server API calls made in a task, for callers whose calls go through
/// an interface that does not carry them (the receipt path's history source): set with
/// `AppStoreAPICallContext.$current.withValue(…)`. Without it a client uses its own priority and waits at most its
/// ``AppStoreAPIClient/budgetWaitMillis``.
public struct AppStoreAPICallContext: Sendable {
    public var priority: AppStoreAPICallPriority
    /// Until when (ms since the epoch) a call may wait for its turn.
    public var deadline: Int64

    public init(priority: AppStoreAPICallPriority, deadline: Int64) {
        (self.priority, self.deadline) = (priority, deadline)
    }

    @TaskLocal public static var current: AppStoreAPICallContext?
}
