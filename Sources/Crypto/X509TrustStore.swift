internal import COpenSSL

/// Why a certificate path did not validate, in OpenSSL's terms reduced to what a policy needs to tell apart.
public struct X509PathFailure: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The path does not reach the store's anchor (unknown issuer, self-signed leaf, wrong root).
        case untrustedIssuer
        /// A certificate on the path is not yet valid or has expired at the validation time.
        case outsideValidity
        /// Anything else: a bad certificate signature, a CA flag missing, a strict-profile violation.
        case invalid
    }

    public var kind: Kind
    /// OpenSSL's `X509_V_ERR_*` value.
    public var openSSLCode: Int32
    /// OpenSSL's text for that value, with the depth it applies to.
    public var message: String
    public var description: String { message }
}

/// One trust anchor and the path validation against it (`X509_STORE` + `X509_STORE_CTX`). The system trust store is
/// never consulted. `X509_STORE` is internally locked and may be shared by concurrent verifications.
public final class X509TrustStore: @unchecked Sendable {
    private let store: OpaquePointer
    /// The anchor every path must end at.
    public let anchor: X509Certificate

    public init(anchor: X509Certificate) throws(CryptoError) {
        guard let store = X509_STORE_new() else { throw CryptoError(.internalFailure, "X509_STORE_new") }
        guard X509_STORE_add_cert(store, anchor.x509) == 1 else {
            X509_STORE_free(store)
            throw CryptoError(.internalFailure, "X509_STORE_add_cert: \(CryptoError.drainOpenSSLErrors())")
        }
        // RFC 5280 strict profile (as Apple's Python library runs it): AKI, critical CA basicConstraints, …
        X509_STORE_set_flags(store, UInt(X509_V_FLAG_X509_STRICT))
        (self.store, self.anchor) = (store, anchor)
    }

    deinit { X509_STORE_free(store) }

    /// Validates `leaf` → `intermediates` → anchor at `time` (seconds since the epoch).
    public func validate(
        leaf: X509Certificate,
        intermediates: [X509Certificate],
        at time: Int64
    ) throws(X509PathFailure) {
        guard let ctx = X509_STORE_CTX_new() else {
            throw X509PathFailure(kind: .invalid, openSSLCode: -1, message: "X509_STORE_CTX_new failed")
        }
        defer { X509_STORE_CTX_free(ctx) }
        guard let untrusted = gateway_sk_X509_new_null() else {
            throw X509PathFailure(kind: .invalid, openSSLCode: -1, message: "stack allocation failed")
        }
        defer { gateway_sk_X509_free(untrusted) }
        let result: Int32 = withExtendedLifetime((leaf, intermediates, anchor)) {
            for c in intermediates { _ = gateway_sk_X509_push(untrusted, c.x509) }
            guard X509_STORE_CTX_init(ctx, store, leaf.x509, untrusted) == 1 else { return -2 }
            X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), time_t(time))
            return X509_verify_cert(ctx)
        }
        ERR_clear_error()
        if result == 1 { return }
        if result == -2 {
            throw X509PathFailure(kind: .invalid, openSSLCode: -1, message: "X509_STORE_CTX_init failed")
        }
        let code = X509_STORE_CTX_get_error(ctx)
        let depth = X509_STORE_CTX_get_error_depth(ctx)
        let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "unknown"
        let kind: X509PathFailure.Kind
        switch code {
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            kind = .untrustedIssuer
        case X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED,
            X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD:
            kind = .outsideValidity
        default:
            kind = .invalid
        }
        throw X509PathFailure(kind: kind, openSSLCode: code, message: "\(text) (depth \(depth))")
    }
}
