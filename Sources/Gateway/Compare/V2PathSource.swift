public import Canonical
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

/// Why a fetch of one path's view failed; `retryable` failures are tried again later.
public struct PathFetchError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var retryable: Bool
    public init(code: String, message: String, retryable: Bool) { (self.code, self.message, self.retryable) = (code, message, retryable) }
    public var description: String { "\(code): \(message)" }
}

/// The V2 path's view of a subscription (the App Store Server API in the service; a fake in tests).
public protocol V2PathSource: Sendable {
    /// nil when Apple's V2 path does not know the subscription.
    func status(bundleID: String, environment: AppStoreEnvironment, originalTransactionID: String, observedAt: Int64) async throws(PathFetchError)
        -> V2PathStatus?
}
