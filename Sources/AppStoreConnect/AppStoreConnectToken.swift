internal import Canonical
public import Crypto
internal import WireJSON

/// The bearer token of the App Store Connect API (Apple: "Generating Tokens for API Requests"), ES256 with a team
/// API key: header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, payload `{"iss":ISSUER_ID,"iat":…,"exp":…,"aud":
/// "appstoreconnect-v1"}`, raw `R‖S` signature (signed by `Crypto`'s ``CompactES256``, like the App Store Server
/// API's token). Apple refuses a token whose `exp` is more than 20 minutes after its `iat`; the gateway makes each
/// one live ``lifetimeSeconds`` (15 minutes), one token per request.
public struct AppStoreConnectToken: Sendable, Hashable {
    public var keyID: String
    public var issuerID: String
    /// Seconds since the epoch.
    public var issuedAt: Int64
    /// Seconds since the epoch.
    public var expiresAt: Int64

    public static let audience = "appstoreconnect-v1"
    /// The longest lifetime Apple accepts for a token without a `scope` limited to GET requests: 20 minutes.
    public static let maxLifetimeSeconds: Int64 = 1200
    /// The lifetime of the gateway's tokens: 15 minutes, well within Apple's 20 whatever the skew.
    public static let lifetimeSeconds: Int64 = 900

    public init(keyID: String, issuerID: String, issuedAt: Int64, expiresAt: Int64) {
        (self.keyID, self.issuerID, self.issuedAt, self.expiresAt) = (keyID, issuerID, issuedAt, expiresAt)
    }

    /// A token for `credentials` issued at `nowMillis` (ms since the epoch, from the caller's injected clock) and
    /// living `lifetimeSeconds`, kept within 1…``maxLifetimeSeconds``.
    public init(
        credentials: AppStoreConnectCredentials,
        nowMillis: Int64,
        lifetimeSeconds: Int64 = Self.lifetimeSeconds
    ) {
        let issuedAt = nowMillis / 1000
        self.init(
            keyID: credentials.keyID,
            issuerID: credentials.issuerID,
            issuedAt: issuedAt,
            expiresAt: issuedAt.clampedAdding(min(max(1, lifetimeSeconds), Self.maxLifetimeSeconds))
        )
    }

    /// The compact token, signed with `key`.
    public func signed(with key: PrivateKey) throws(CryptoError) -> String {
        let header =
            "{\"alg\":\"ES256\",\"kid\":" + String(decoding: JSONValue.quoted(keyID), as: UTF8.self)
            + ",\"typ\":\"JWT\"}"
        let payload =
            "{\"iss\":" + String(decoding: JSONValue.quoted(issuerID), as: UTF8.self) + ",\"iat\":\(issuedAt)"
            + ",\"exp\":\(expiresAt),\"aud\":\"\(Self.audience)\"}"
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

    /// Checks a presented token the way App Store Connect does (for the simulator's fake): ES256 over the first two
    /// segments with `publicKey`; header `alg` ES256 and `kid` (and `typ`, when present, `JWT`); payload `iss`,
    /// `iat` and `exp` numbers, `aud` ``audience``, `iat` not in the future (a minute of skew), `exp` in the future
    /// and at most ``maxLifetimeSeconds`` after `iat`. `now` is in seconds.
    public static func verify(
        _ token: String,
        publicKey: PublicKey,
        now seconds: Int64
    ) throws(Rejection) -> AppStoreConnectToken {
        guard let parts = CompactES256.split(token),
            case .object(let header)? = try? JSONParser.parse(parts.header),
            case .object(let payload)? = try? JSONParser.parse(parts.payload)
        else { throw .malformed }
        guard header["alg"]?.stringValue == "ES256", parts.signature.count == 64 else { throw .badAlgorithm }
        guard parts.verifies(with: publicKey) else { throw .badSignature }
        if let typ = header["typ"], typ.stringValue != "JWT" { throw .malformed }
        guard let kid = header["kid"]?.stringValue, let iss = payload["iss"]?.stringValue,
            let iat = payload["iat"]?.int64Value, let exp = payload["exp"]?.int64Value
        else { throw .malformed }
        guard payload["aud"]?.stringValue == audience else { throw .badAudience }
        // Both dates are the presenter's claims and `seconds` any clock: compared with clamped arithmetic.
        guard iat <= seconds.clampedAdding(60) else { throw .notYetValid }
        guard exp > seconds else { throw .expired }
        guard exp > iat else { throw .malformed }
        guard exp.clampedSubtracting(iat) <= maxLifetimeSeconds else { throw .tooLong }
        return AppStoreConnectToken(keyID: kid, issuerID: iss, issuedAt: iat, expiresAt: exp)
    }
}
