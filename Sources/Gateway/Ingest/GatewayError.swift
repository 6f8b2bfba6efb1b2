public import V1Adapter
public import V2Adapter

/// The gateway's error vocabulary: every code the notification endpoint, the service and the admin API answer
/// with, the adapters' codes included, each one a case. ``Disposition`` maps each to an HTTP status and a
/// quarantine lane with an exhaustive `switch`, so a new code does not compile until it has both
/// (docs/architecture.md, "error codes"). `reason` is for logs and answers: it never holds payload bytes, tokens or
/// secrets. Equality uses the codes only.
public struct GatewayError: Error, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        // What a body is, before any adapter sees it.
        case malformedBody = "malformed_body"
        case bodyTooLarge = "body_too_large"
        case unknownVersion = "unknown_version"
        // V1 (`V1AdapterError`).
        case badSharedSecret = "bad_shared_secret"
        case unknownBundle = "unknown_bundle"
        case environmentMismatch = "environment_mismatch"
        case receiptInvalid = "receipt_invalid"
        case receiptConfigError = "receipt_config_error"
        case appleUnavailable = "apple_unavailable"
        // V2 (`V2AdapterError`).
        case malformed
        case unsupportedAlgorithm = "unsupported_algorithm"
        case invalidChainLength = "invalid_chain_length"
        case untrustedRoot = "untrusted_root"
        case invalidCertificate = "invalid_certificate"
        case certificateExpired = "certificate_expired"
        case missingAppleMarker = "missing_apple_marker"
        case badSignature = "bad_signature"
        case appAppleIDMismatch = "app_apple_id_mismatch"
        case unsupportedEnvironment = "unsupported_environment"
        case nestedJWSInvalid = "nested_jws_invalid"
        case staleNotification = "stale_notification"
        // The service.
        case storeUnavailable = "store_unavailable"
        case serverBusy = "server_busy"
        case addressBusy = "address_busy"
        // The HTTP API.
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case unauthorized
        case badRequest = "bad_request"
    }

    public var code: Code
    /// For `nested_jws_invalid`: the inner token's failure.
    public var cause: Code?
    public var reason: String

    public init(_ code: Code, _ reason: String, cause: Code? = nil) {
        (self.code, self.reason, self.cause) = (code, reason, cause)
    }

    /// An adapter code without a case here is a bug (a test holds every adapter code mapped); it is treated as a
    /// malformed body, refused and kept in the untrusted lane, never accepted.
    public init(_ e: V1AdapterError) {
        self.init(Code(rawValue: e.code.rawValue) ?? .malformedBody, e.reason)
    }

    public init(_ e: V2AdapterError) {
        self.init(
            Code(rawValue: e.code.rawValue) ?? .malformed,
            e.reason,
            cause: e.cause.map { Code(rawValue: $0.rawValue) ?? .malformed }
        )
    }

    public init(_ e: BodyError) {
        self.init(Code(rawValue: e.code.rawValue) ?? .malformedBody, e.reason)
    }

    /// The code as answered and recorded: `code`, or `code:cause` for a nested failure.
    public var wireCode: String { cause.map { "\(code.rawValue):\($0.rawValue)" } ?? code.rawValue }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code && a.cause == b.cause }
    public func hash(into h: inout Hasher) {
        h.combine(code)
        h.combine(cause)
    }
    public var description: String { "GatewayError.\(wireCode): \(reason)" }
}
