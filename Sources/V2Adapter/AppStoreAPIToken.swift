internal import Canonical
public import Crypto
internal import WireJSON

/// The ES256 bearer token the App Store Server API requires (Apple: "Generating JSON Web Tokens for API requests"):
/// header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, payload `{"iss","iat","exp","aud":"appstoreconnect-v1","bid"}`,
/// raw `R‖S` signature. Apple refuses tokens living longer than 60 minutes.
///
/// The gateway's own tokens always carry `iat`. Apple's own client libraries do not all send it (the Python one signs
/// `{"bid","iss","aud","exp"}` only), and Apple accepts them, so ``verify(_:publicKey:now:)`` takes a token without
/// `iat` too.
public struct AppStoreAPIToken: Sendable, Hashable {
    public var keyID: String
    public var issuerID: String
    public var bundleID: String
    /// Seconds since the epoch; nil for a presented token without `iat` (``verify(_:publicKey:now:)`` only: every
    /// token this module signs has one).
    public var issuedAt: Int64?
    public var expiresAt: Int64

    public static let audience = "appstoreconnect-v1"
    public static let maxLifetimeSeconds: Int64 = 3600

    public init(keyID: String, issuerID: String, bundleID: String, issuedAt: Int64?, expiresAt: Int64) {
        (self.keyID, self.issuerID, self.bundleID, self.issuedAt, self.expiresAt) = (
            keyID, issuerID, bundleID, issuedAt, expiresAt
        )
    }

    /// The compact token, signed with `key` (a P-256 key: the `.p8` Apple issues).
    public func signed(with key: PrivateKey) throws(CryptoError) -> String {
        let header =
            "{\"alg\":\"ES256\",\"kid\":" + String(decoding: JSONValue.quoted(keyID), as: UTF8.self)
            + ",\"typ\":\"JWT\"}"
        let iat = issuedAt.map { ",\"iat\":\($0)" } ?? ""
        let payload =
            "{\"iss\":" + String(decoding: JSONValue.quoted(issuerID), as: UTF8.self) + iat + ",\"exp\":\(expiresAt)"
            + ",\"aud\":\"\(Self.audience)\",\"bid\":" + String(decoding: JSONValue.quoted(bundleID), as: UTF8.self)
            + "}"
        return try CompactES256.sign(header: Array(header.utf8), payload: Array(payload.utf8), key: key)
    }

    /// Why a presented token is refused, as a stable code.
    public enum Rejection: String, Error, Sendable {
        case malformed = "token_malformed"
        case badAlgorithm = "token_bad_algorithm"
        case badSignature = "token_bad_signature"
        case badAudience = "token_bad_audience"
        case expired = "token_expired"
        case notYetValid = "token_not_yet_valid"
        case tooLong = "token_lifetime_too_long"
    }

    /// Checks a presented token the way the App Store Server API does: ES256 over the first two segments with
    /// `publicKey`, `aud`, `exp` in the future; with `iat`, `iat` not in the future (a minute of skew) and `exp` at most
    /// 60 minutes after it; without `iat` (Apple's Python library sends none), `exp` at most 60 minutes from now.
    /// The header needs `alg` ES256 and `kid`; `typ` is not required.
    public static func verify(
        _ token: String,
        publicKey: PublicKey,
        now seconds: Int64
    ) throws(Rejection) -> AppStoreAPIToken {
        guard let parts = CompactES256.split(token),
            case .object(let header)? = try? JSONParser.parse(parts.header),
            case .object(let payload)? = try? JSONParser.parse(parts.payload)
        else { throw .malformed }
        guard header["alg"]?.stringValue == "ES256", parts.signature.count == 64 else { throw .badAlgorithm }
        guard parts.verifies(with: publicKey) else { throw .badSignature }
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
        // Both dates are the presenter's claims and `seconds` any clock: compared with clamped arithmetic.
        if let iat {
            guard iat <= seconds.clampedAdding(60) else { throw .notYetValid }
            guard exp > seconds else { throw .expired }
            guard exp > iat else { throw .malformed }
            guard exp.clampedSubtracting(iat) <= maxLifetimeSeconds else { throw .tooLong }
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
