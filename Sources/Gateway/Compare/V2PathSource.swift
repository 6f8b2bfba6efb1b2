public import Canonical
public import ServiceKit
public import V2Adapter

/// What the V2 path says about a subscription right now: Get All Subscription Statuses, verified.
public struct V2PathStatus: Sendable {
    public var snapshot: OutcomeSnapshot
    public var transaction: TransactionPayload
    public var renewal: RenewalInfoPayload?
    public init(snapshot: OutcomeSnapshot, transaction: TransactionPayload, renewal: RenewalInfoPayload?) {
        (self.snapshot, self.transaction, self.renewal) = (snapshot, transaction, renewal)
    }
}

/// The V2 path's view of a subscription (the App Store Server API in the service; a fake in tests).
public protocol V2PathSource: Sendable {
    /// Whether it can answer for an app (the App Store Server API: only apps with a client).
    func serves(bundleID: String) -> Bool
    /// nil when Apple's V2 path does not know the subscription.
    func status(
        bundleID: String,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        observedAt: Int64
    ) async throws(PathFetchError)
        -> V2PathStatus?
}

extension V2PathSource {
    public func serves(bundleID: String) -> Bool { true }
}

/// One page of Get Notification History: the `signedPayload`s, and where the next page starts (nil: the last).
public struct NotificationHistorySlice: Sendable {
    public var signedPayloads: [String]
    public var nextPaginationToken: String?
    /// The size of Apple's answer (bytes), for a walk that bounds what it reads; 0 when unknown.
    public var byteCount: Int
    public init(signedPayloads: [String], nextPaginationToken: String?, byteCount: Int = 0) {
        self.signedPayloads = signedPayloads
        self.nextPaginationToken = nextPaginationToken
        self.byteCount = byteCount
    }
}

/// Apple's notification history (the App Store Server API in the service), for the sweep.
public protocol NotificationHistorySource: Sendable {
    func serves(bundleID: String) -> Bool
    /// One page of the notifications Apple sent for the app in [startDate, endDate).
    func notificationHistoryPage(
        bundleID: String,
        environment: AppStoreEnvironment,
        startDate: Int64,
        endDate: Int64,
        paginationToken: String?
    ) async throws(PathFetchError) -> NotificationHistorySlice
}
