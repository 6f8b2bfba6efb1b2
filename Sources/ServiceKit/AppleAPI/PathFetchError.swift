package import V2Adapter

/// Why a fetch of one path's view failed; `retryable` failures are tried again later.
public struct PathFetchError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var retryable: Bool
    /// How long Apple asked to wait (`Retry-After`), when it did.
    public var retryAfterMillis: Int64?
    public init(code: String, message: String, retryable: Bool, retryAfterMillis: Int64? = nil) {
        (self.code, self.message, self.retryable, self.retryAfterMillis) = (code, message, retryable, retryAfterMillis)
    }
    public var description: String { "\(code): \(message)" }
}

extension PathFetchError {
    /// An App Store Server API failure: retryable when Apple is rate limiting or unavailable or the budget had no
    /// turn in time, with the wait a `Retry-After` (or the budget) asked for.
    package init(_ error: AppStoreAPIError) {
        self.init(
            code: error.code.rawValue,
            message: error.message,
            retryable: [.rateLimited, .appleUnavailable, .budgetExhausted].contains(error.code)
        )
        retryAfterMillis = error.retryAfter.map { $0.components.seconds.clampedMultiplied(by: 1000) }
    }
}
