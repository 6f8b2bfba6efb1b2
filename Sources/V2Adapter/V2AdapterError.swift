/// The one error type of `V2Adapter`. `code` is the stable wire string; for a failure inside a
/// nested JWS the code is `nested_jws_invalid` and `cause` names the inner failure. Equality uses the codes only.
/// `reason` is for logs: it never contains payload bytes, tokens or keys.
public struct V2AdapterError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not a compact JWS, bad base64url, bad JSON, missing or mistyped members, oversized segments.
        public static let malformed = Self(rawValue: "malformed")
        /// `alg` is not exactly `ES256`.
        public static let unsupportedAlgorithm = Self(rawValue: "unsupported_algorithm")
        /// `x5c` does not hold exactly three certificates.
        public static let invalidChainLength = Self(rawValue: "invalid_chain_length")
        /// `x5c[2]` is not a pinned root, the path does not end at it, or an extra root signed a production payload.
        public static let untrustedRoot = Self(rawValue: "untrusted_root")
        /// A certificate does not decode, a chain signature fails, a CA flag is wrong, the leaf key is not P-256.
        public static let invalidCertificate = Self(rawValue: "invalid_certificate")
        /// A certificate of the chain is not valid at the payload's `signedDate`.
        public static let certificateExpired = Self(rawValue: "certificate_expired")
        /// Leaf without 1.2.840.113635.100.6.11.1 or intermediate without 1.2.840.113635.100.6.2.1.
        public static let missingAppleMarker = Self(rawValue: "missing_apple_marker")
        /// The ES256 signature is not 64 raw bytes or does not verify.
        public static let badSignature = Self(rawValue: "bad_signature")
        /// The bundle is not configured.
        public static let unknownBundle = Self(rawValue: "unknown_bundle")
        /// A production payload's `appAppleId` differs from (or lacks) the configured one.
        public static let appAppleIDMismatch = Self(rawValue: "app_apple_id_mismatch")
        /// The environment is not one the bundle is configured for, or differs between nested tokens.
        public static let environmentMismatch = Self(rawValue: "environment_mismatch")
        /// `Xcode` / `LocalTesting` data: signed with local keys, never trusted.
        public static let unsupportedEnvironment = Self(rawValue: "unsupported_environment")
        /// A nested JWS (`signedTransactionInfo`, `signedRenewalInfo`, `signedAppTransactionInfo`) failed;
        /// ``V2AdapterError/cause`` says how.
        public static let nestedJWSInvalid = Self(rawValue: "nested_jws_invalid")
        /// Live traffic signed too long ago (or in the future).
        public static let staleNotification = Self(rawValue: "stale_notification")

        /// Every code above (a code added there belongs here too: the gateway maps each to an HTTP status).
        public static let all: [Code] = [
            .malformed, .unsupportedAlgorithm, .invalidChainLength, .untrustedRoot, .invalidCertificate,
            .certificateExpired,
            .missingAppleMarker, .badSignature, .unknownBundle, .appAppleIDMismatch, .environmentMismatch,
            .unsupportedEnvironment,
            .nestedJWSInvalid, .staleNotification,
        ]
    }

    public var code: Code
    /// For `nested_jws_invalid`: the inner failure's code.
    public var cause: Code?
    public var reason: String
    public var location: String

    public init(_ code: Code, _ reason: String, cause: Code? = nil, file: String = #fileID, line: Int = #line) {
        (self.code, self.cause, self.reason, self.location) = (code, cause, reason, "\(file):\(line)")
    }

    /// Wraps an inner token's failure as `nested_jws_invalid`, keeping the inner code as the cause.
    static func nested(_ field: String, _ inner: V2AdapterError) -> V2AdapterError {
        var e = V2AdapterError(
            .nestedJWSInvalid,
            "\(field): \(inner.code): \(inner.reason)",
            cause: inner.cause ?? inner.code
        )
        e.location = inner.location
        return e
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code && a.cause == b.cause }
    public func hash(into h: inout Hasher) {
        h.combine(code)
        h.combine(cause)
    }
    public var description: String {
        "V2AdapterError.\(code)\(cause.map { "(\($0))" } ?? ""): \(reason) (\(location))"
    }
}
