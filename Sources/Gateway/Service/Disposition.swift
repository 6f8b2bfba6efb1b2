public import Store
public import Canonical

/// What the endpoint answers for an error code, and where the body goes (docs/architecture.md). The one place that maps
/// codes to HTTP statuses: 400 malformed; 401 V1 secret mismatch; 403 V2 signature/chain failure; 413 too large;
/// 503 genuine-but-unservable (a config fix cures it, so Apple must retry) and store failure.
public struct Disposition: Sendable, Equatable {
    public typealias Lane = QuarantineRecord.Lane

    public var status: Int
    /// The quarantine lane, nil when nothing is quarantined (store failures: Apple will resend).
    public var lane: Lane?

    /// `version` is the body's generation when known: only authenticated data may enter the genuine lane,
    /// and a V1 body for an unconfigured bundle was never authenticated (there is no secret to check it against).
    public static func forCode(_ code: String, cause: String? = nil, version: Generation? = nil) -> Disposition {
        switch code {
        case "unknown_bundle" where version == .v1:
            // 503 so that Apple retries once the operator adds the bundle; but anyone can claim any `bid`, so the body
            // goes to the untrusted lane, whose byte cap bounds what such claims can store.
            return Disposition(status: 503, lane: .untrusted)
        case "malformed_body", "unknown_version", "malformed":
            return Disposition(status: 400, lane: .untrusted)
        case "body_too_large":
            return Disposition(status: 413, lane: nil)  // never stored: the point of the limit
        case "bad_shared_secret":
            return Disposition(status: 401, lane: .untrusted)
        case "unsupported_algorithm", "invalid_chain_length", "untrusted_root", "invalid_certificate", "certificate_expired",
            "missing_apple_marker", "bad_signature", "unsupported_environment", "stale_notification":
            return Disposition(status: 403, lane: .untrusted)
        case "nested_jws_invalid":
            // A nested token that verified but names another bundle or environment is Apple's data, unservable;
            // any cryptographic or shape failure inside is a forgery.
            if let cause, ["unknown_bundle", "environment_mismatch", "app_apple_id_mismatch"].contains(cause) {
                return Disposition(status: 503, lane: .genuine)
            }
            return forCode(cause ?? "bad_signature").status == 400
                ? Disposition(status: 400, lane: .untrusted) : Disposition(status: 403, lane: .untrusted)
        case "unknown_bundle", "app_apple_id_mismatch", "environment_mismatch":
            return Disposition(status: 503, lane: .genuine)
        case "store_unavailable":
            return Disposition(status: 503, lane: nil)
        default:
            return Disposition(status: 400, lane: .untrusted)
        }
    }
}
