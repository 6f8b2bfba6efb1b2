public import AppStoreConnect
internal import Canonical
public import Crypto
public import V2Adapter
internal import WireJSON

/// Why a presented bearer token is refused, as a stable code: the same for the fake App Store Server API and the
/// fake App Store Connect, which check tokens the way Apple does (``AppStoreAPIToken/verify(_:publicKey:now:)``,
/// ``AppStoreConnectToken/verify(_:publicKey:now:)``). The gateway itself only signs tokens.
public enum BearerTokenRejection: String, Error, Sendable {
    case malformed = "token_malformed"
    case badAlgorithm = "token_bad_algorithm"
    case badSignature = "token_bad_signature"
    case badAudience = "token_bad_audience"
    case expired = "token_expired"
    case notYetValid = "token_not_yet_valid"
    case tooLong = "token_lifetime_too_long"
}

/// A presented token past the checks both APIs make first: three base64url segments whose header and payload are
/// JSON objects (`malformed`), header `alg` ES256 and a 64-byte signature (`bad_algorithm`), the signature by the
/// key (`bad_signature`).
struct PresentedBearerToken {
    let header: JSONObject
    let payload: JSONObject

    init(_ token: String, publicKey: PublicKey) throws(BearerTokenRejection) {
        guard let parts = CompactES256.split(token),
            case .object(let header)? = try? JSONParser.parse(parts.header),
            case .object(let payload)? = try? JSONParser.parse(parts.payload)
        else { throw .malformed }
        guard header["alg"]?.stringValue == "ES256", parts.signature.count == 64 else { throw .badAlgorithm }
        guard parts.verifies(with: publicKey) else { throw .badSignature }
        (self.header, self.payload) = (header, payload)
    }

    /// A token with `iat`: `iat` not in the future (a minute of skew), `exp` in the future and after `iat`, at most
    /// `maxLifetimeSeconds` after it. `now` is in seconds. Both dates are the presenter's claims and `now` any clock:
    /// compared with clamped arithmetic.
    static func checkDates(
        issuedAt iat: Int64,
        expiresAt exp: Int64,
        now: Int64,
        maxLifetimeSeconds: Int64
    ) throws(BearerTokenRejection) {
        guard iat <= now.clampedAdding(60) else { throw .notYetValid }
        guard exp > now else { throw .expired }
        guard exp > iat else { throw .malformed }
        guard exp.clampedSubtracting(iat) <= maxLifetimeSeconds else { throw .tooLong }
    }
}

extension AppStoreAPIToken {
    /// Why a presented token is refused, as a stable code.
    public typealias Rejection = BearerTokenRejection

    /// Checks a presented token the way the App Store Server API does: ES256 over the first two segments with
    /// `publicKey`, `aud`, `exp` in the future; with `iat`, `iat` not in the future (a minute of skew) and `exp` at most
    /// 60 minutes after it; without `iat` (Apple's Python library sends none), `exp` at most 60 minutes from now.
    /// The header needs `alg` ES256 and `kid`; `typ` is not required. `now` is in seconds.
    public static func verify(
        _ token: String,
        publicKey: PublicKey,
        now seconds: Int64
    ) throws(Rejection) -> AppStoreAPIToken {
        let presented = try PresentedBearerToken(token, publicKey: publicKey)
        let (header, payload) = (presented.header, presented.payload)
        guard let kid = header["kid"]?.stringValue, let iss = payload["iss"]?.stringValue,
            let exp = payload["exp"]?.int64Value
        else { throw .malformed }
        // `iat` may be absent, but when present it must be a number.
        var iat: Int64?
        if let claim = payload["iat"] {
            guard let value = claim.int64Value else { throw .malformed }
            iat = value
        }
        guard payload["aud"]?.stringValue == audience else { throw .badAudience }
        if let iat {
            try PresentedBearerToken.checkDates(
                issuedAt: iat,
                expiresAt: exp,
                now: seconds,
                maxLifetimeSeconds: maxLifetimeSeconds
            )
        } else {
            guard exp > seconds else { throw .expired }
            guard exp.clampedSubtracting(seconds) <= maxLifetimeSeconds else { throw .tooLong }
        }
        return AppStoreAPIToken(
            keyID: kid,
            issuerID: iss,
            bundleID: payload["bid"]?.stringValue ?? "",
            issuedAt: iat,
            expiresAt: exp
        )
    }
}

extension AppStoreConnectToken {
    /// Why a presented token is refused, as a stable code.
    public typealias Rejection = BearerTokenRejection

    /// Checks a presented token the way App Store Connect does: ES256 over the first two segments with `publicKey`;
    /// header `alg` ES256 and `kid` (and `typ`, when present, `JWT`); payload `iss`, `iat` and `exp` numbers, `aud`
    /// ``audience``, `iat` not in the future (a minute of skew), `exp` in the future and at most
    /// ``maxLifetimeSeconds`` after `iat`. `now` is in seconds.
    public static func verify(
        _ token: String,
        publicKey: PublicKey,
        now seconds: Int64
    ) throws(Rejection) -> AppStoreConnectToken {
        let presented = try PresentedBearerToken(token, publicKey: publicKey)
        let (header, payload) = (presented.header, presented.payload)
        if let typ = header["typ"], typ.stringValue != "JWT" { throw .malformed }
        guard let kid = header["kid"]?.stringValue, let iss = payload["iss"]?.stringValue,
            let iat = payload["iat"]?.int64Value, let exp = payload["exp"]?.int64Value
        else { throw .malformed }
        guard payload["aud"]?.stringValue == audience else { throw .badAudience }
        try PresentedBearerToken.checkDates(
            issuedAt: iat,
            expiresAt: exp,
            now: seconds,
            maxLifetimeSeconds: maxLifetimeSeconds
        )
        return AppStoreConnectToken(keyID: kid, issuerID: iss, issuedAt: iat, expiresAt: exp)
    }
}
