public import Canonical
public import Store

/// What the gateway answers for an error, and where the body goes (docs/architecture.md, "error codes"). The one
/// place that maps codes to HTTP statuses: 400 malformed; 401 V1 secret mismatch; 403 V2 signature/chain failure;
/// 413 too large; 503 genuine-but-unservable (a config fix cures it, so Apple must retry) and store failure.
/// Exhaustive: a new ``GatewayError/Code`` is a compile error here until it has a status and a lane.
public struct Disposition: Sendable, Equatable {
    public typealias Lane = QuarantineRecord.Lane

    public var status: Int
    /// The quarantine lane, nil when nothing is quarantined (store failures: Apple will resend).
    public var lane: Lane?

    /// `version` is the body's generation when known: only authenticated data may enter the genuine lane, and a V1
    /// body for an unconfigured bundle was never authenticated (there is no secret to check it against).
    public init(_ error: GatewayError, version: Generation? = nil) {
        switch error.code {
        case .unknownBundle where version == .v1:
            // 503 so that Apple retries once the operator adds the bundle; but anyone can claim any `bid`, so the body
            // goes to the untrusted lane, whose byte cap bounds what such claims can store.
            self.init(status: 503, lane: .untrusted)
        case .unknownBundle, .appAppleIDMismatch, .environmentMismatch:
            self.init(status: 503, lane: .genuine)
        case .malformedBody, .unknownVersion, .malformed, .receiptInvalid:
            self.init(status: 400, lane: .untrusted)
        case .bodyTooLarge:
            self.init(status: 413, lane: nil)  // never stored: the point of the limit
        case .badSharedSecret:
            self.init(status: 401, lane: .untrusted)
        case .unsupportedAlgorithm, .invalidChainLength, .untrustedRoot, .invalidCertificate, .certificateExpired,
            .missingAppleMarker,
            .badSignature, .unsupportedEnvironment, .staleNotification:
            self.init(status: 403, lane: .untrusted)
        case .nestedJWSInvalid:
            // A nested token that verified but names another bundle or environment is Apple's data, unservable;
            // any cryptographic or shape failure inside is a forgery.
            switch error.cause {
            case .unknownBundle?, .environmentMismatch?, .appAppleIDMismatch?:
                self.init(status: 503, lane: .genuine)
            case let cause?:
                self.init(status: Disposition(GatewayError(cause, "")).status == 400 ? 400 : 403, lane: .untrusted)
            case nil:
                self.init(status: 403, lane: .untrusted)
            }
        case .storeUnavailable, .serverBusy, .addressBusy, .appleUnavailable, .receiptConfigError:
            // Nothing is kept: Apple (or the client) sends it again.
            self.init(status: 503, lane: nil)
        case .notFound:
            self.init(status: 404, lane: nil)
        case .methodNotAllowed:
            self.init(status: 405, lane: nil)
        case .unauthorized:
            self.init(status: 401, lane: nil)
        case .badRequest:
            self.init(status: 400, lane: nil)
        }
    }

    public init(status: Int, lane: Lane?) { (self.status, self.lane) = (status, lane) }
}
