/// The one error type of ``AppStoreConnectClient``. ``Code`` is stable (snake_case raw values, for logs, the admin API
/// and the migration's stored steps); equality uses the code only.
///
/// ``reason`` is for people and logs: our own words, the HTTP status, and Apple's JSON:API `errors[]` (`status`,
/// `code`, `title`, `detail`) reduced to printable ASCII and clipped. It never holds the bearer token, the
/// `Authorization` header or the private key.
public struct AppStoreConnectError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// HTTP 401: App Store Connect refused the token: the key id, issuer id or key is wrong, the key was revoked,
        /// the clock is far off, or the key is an In-App Purchase key instead of a team API key.
        public static let unauthorized = Self(rawValue: "unauthorized")
        /// HTTP 403: the key's role may not do this: modifying an app needs App Manager or Admin.
        public static let forbidden = Self(rawValue: "forbidden")
        /// HTTP 404, or no app (or more than one) with the bundle id asked for.
        public static let notFound = Self(rawValue: "not_found")
        /// HTTP 409: Apple refused the change (an attribute value, the app's state); Apple's detail says why.
        public static let conflict = Self(rawValue: "conflict")
        /// HTTP 429: the key's rate limit (about 3,600 requests an hour) is spent;
        /// ``AppStoreConnectError/retryAfterMillis`` says how long Apple asked to wait, when it did.
        public static let rateLimited = Self(rawValue: "rate_limited")
        /// HTTP 5xx, or no answer (connect, TLS, timeout), or a URL the transport cannot use.
        public static let unavailable = Self(rawValue: "unavailable")
        /// An answer that is not Apple's JSON:API (not JSON, a member missing or of the wrong type, a resource that is
        /// not the app asked for, an unexpected status, more than the allowed bytes).
        public static let malformed = Self(rawValue: "malformed")
        /// Any other 4xx (400, 422, …): Apple refused the request itself; or the client refused to send it (an
        /// empty id, an environment App Store Connect has no setting for).
        public static let badRequest = Self(rawValue: "bad_request")
        /// The private key cannot make an ES256 token: not a P-256 key.
        public static let invalidKey = Self(rawValue: "invalid_key")

        /// Every code, for exhaustive mappings and their tests.
        public static let all: [Code] = [
            .unauthorized, .forbidden, .notFound, .conflict, .rateLimited, .unavailable, .malformed, .badRequest,
            .invalidKey,
        ]
    }

    public var code: Code
    public var reason: String
    /// The HTTP status of Apple's answer, when there was one.
    public var httpStatus: Int?
    /// Apple's JSON:API error codes in the answer, in order (`ENTITY_ERROR.ATTRIBUTE.INVALID`, `NOT_AUTHORIZED`, …).
    public var appleCodes: [String]
    /// For `rate_limited` (and `unavailable`): the wait Apple's `Retry-After` asked for, in milliseconds, when it
    /// gave one (read by `HTTPClient`'s `RetryAfter`, at most a day).
    public var retryAfterMillis: Int64?
    /// Where the error was made (`file:line`).
    public var location: String

    public init(
        _ code: Code,
        _ reason: String,
        httpStatus: Int? = nil,
        appleCodes: [String] = [],
        retryAfterMillis: Int64? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        (self.code, self.reason, self.httpStatus, self.appleCodes, self.retryAfterMillis) =
            (code, reason, httpStatus, appleCodes, retryAfterMillis)
        location = "\(file):\(line)"
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }

    public var description: String { "AppStoreConnectError.\(code): \(reason) (\(location))" }
}
