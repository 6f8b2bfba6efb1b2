/// The one error type of ``AppStoreAPIClient``. `code` is stable (snake_case raw values, for logs, metrics and the
/// gateway's status mapping); equality uses the code only.
///
/// `message` is for logs. It never holds the bearer token, the `Authorization` header or the private key: it is built
/// from the HTTP status, Apple's `errorCode` / `errorMessage`, the transport's error code and our own words only.
public struct AppStoreAPIError: Error, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// HTTP 401: Apple refused the bearer token. The key id, issuer id or private key is wrong, the key was
        /// revoked, or the clock is far off. Never retried.
        case unauthorized
        /// HTTP 404: the transaction, test notification, … is unknown to Apple (``AppStoreAPIError/appleErrorCode``
        /// says which: 4040010 transaction id not found, 4040008 test notification not found, …). Apple's
        /// *retryable* not-found codes (4040002, 4040004, 4040006) end here too once the attempts are used up.
        case notFound = "not_found"
        /// HTTP 400 (and any other 4xx that is not one of the above): Apple refused the request itself, or the
        /// client refused to send it (an empty transaction id).
        case badRequest = "bad_request"
        /// HTTP 429 or Apple's 4290000, still so after every attempt, or Apple asked to wait longer than the
        /// configuration's ``RetryPolicy/retryAfterLimit`` (then ``AppStoreAPIError/retryAfter`` says how long).
        case rateLimited = "rate_limited"
        /// No turn came in the gateway's own budget of calls to Apple before the call's deadline (docs/operations.md,
        /// "Apple's rate limits"): nothing was sent; ``AppStoreAPIError/retryAfter`` says when a turn could come.
        case budgetExhausted = "budget_exhausted"
        /// HTTP 5xx (or Apple's 5000001) after every attempt, a network failure (connect, TLS, timeout) after every
        /// attempt, or a URL the transport cannot use.
        case appleUnavailable = "apple_unavailable"
        /// HTTP 200 with a body that is not Apple's JSON, a missing member, pagination that does not advance or does
        /// not end, an answer for another bundle or environment, an oversized body, an unexpected status (3xx).
        case invalidResponse = "invalid_response"
        /// A signed item of the answer (`signedTransactionInfo`, `signedRenewalInfo`, a history transaction) failed
        /// verification: ``AppStoreAPIError/verificationError`` holds the ``V2AdapterError`` and its code.
        case invalidSignature = "invalid_signature"
        /// The configured private key cannot make an ES256 token (not a P-256 key).
        case badKey = "bad_key"
        /// The environment has no App Store Server API (`xcode`, `local_testing`, anything but production/sandbox).
        case unsupportedEnvironment = "unsupported_environment"

        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    /// The HTTP status of Apple's last answer, when there was one.
    public var httpStatus: Int?
    /// Apple's `errorCode` from the last answer's body (e.g. 4040010), when it had one.
    public var appleErrorCode: Int64?
    /// For `invalid_signature`: why the signed item was refused.
    public var verificationError: V2AdapterError?
    /// For `rate_limited` / `apple_unavailable`: what Apple's `Retry-After` asked for, when present.
    public var retryAfter: Duration?
    /// HTTP exchanges spent on the failing call (0 when nothing was sent).
    public var attempts: Int

    public init(
        _ code: Code,
        _ message: String,
        httpStatus: Int? = nil,
        appleErrorCode: Int64? = nil,
        verificationError: V2AdapterError? = nil,
        retryAfter: Duration? = nil,
        attempts: Int = 0
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.appleErrorCode = appleErrorCode
        self.verificationError = verificationError
        self.retryAfter = retryAfter
        self.attempts = attempts
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }

    public var description: String {
        var text = "AppStoreAPIError.\(code): \(message)"
        var details: [String] = []
        if let httpStatus { details.append("HTTP \(httpStatus)") }
        if let appleErrorCode { details.append("Apple error \(appleErrorCode)") }
        if let verificationError {
            details.append("V2 \(verificationError.code)" + (verificationError.cause.map { "(\($0))" } ?? ""))
        }
        if let retryAfter { details.append("retry after \(retryAfter.components.seconds) s") }
        if attempts > 0 { details.append("\(attempts) attempt\(attempts == 1 ? "" : "s")") }
        if !details.isEmpty { text += " (" + details.joined(separator: ", ") + ")" }
        return text
    }
}
