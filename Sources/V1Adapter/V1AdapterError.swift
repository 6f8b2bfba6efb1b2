/// The one error type of `V1Adapter`, with stable wire codes. Equality uses the code only.
/// `reason` never contains the shared secret, the receipt or other payload bytes.
public struct V1AdapterError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not a V1 body: not a JSON object, `notification_type` missing or not a string, a member of the wrong shape.
        public static let malformedBody = Self(rawValue: "malformed_body")
        /// `password` missing or equal to none of the bundle's configured shared secrets.
        public static let badSharedSecret = Self(rawValue: "bad_shared_secret")
        /// The bundle (`bid`) is missing or not configured.
        public static let unknownBundle = Self(rawValue: "unknown_bundle")
        /// The environment is not one the bundle is configured for.
        public static let environmentMismatch = Self(rawValue: "environment_mismatch")
        /// verifyReceipt: 21002 after retries, 21003, 21010, or no receipt to verify; or the answer does not
        /// describe the notification's subscription.
        public static let receiptInvalid = Self(rawValue: "receipt_invalid")
        /// verifyReceipt 21004: the shared secret Apple holds differs (configuration, not the receipt).
        public static let receiptConfigError = Self(rawValue: "receipt_config_error")
        /// verifyReceipt unreachable, 5xx, timeouts, garbage, 21005/21009/retryable 211xx after retries.
        public static let appleUnavailable = Self(rawValue: "apple_unavailable")

        /// Every code above (a code added there belongs here too: the gateway maps each to an HTTP status).
        public static let all: [Code] = [
            .malformedBody, .badSharedSecret, .unknownBundle, .environmentMismatch, .receiptInvalid,
            .receiptConfigError, .appleUnavailable,
        ]
    }

    public var code: Code
    public var reason: String
    /// verifyReceipt's `status` when the error came from Apple's answer.
    public var appleStatus: Int?

    public init(_ code: Code, _ reason: String, appleStatus: Int? = nil) {
        (self.code, self.reason, self.appleStatus) = (code, reason, appleStatus)
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String {
        "V1AdapterError.\(code): \(reason)\(appleStatus.map { " (status \($0))" } ?? "")"
    }
}
