public import BearerToken
internal import Crypto

/// The bearer token of the App Store Connect API (Apple: "Generating Tokens for API Requests"), ES256 with a team
/// API key: header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, payload `{"iss":ISSUER_ID,"iat":…,"exp":…,"aud":
/// "appstoreconnect-v1"}`, raw `R‖S` signature (made by `BearerToken`'s `ES256BearerToken`, like the App Store Server
/// API's token). Apple refuses a token whose `exp` is more than 20 minutes after its `iat`; the gateway makes each
/// one live ``lifetimeSeconds`` (15 minutes), one token per request.
public struct AppStoreConnectToken: AppleAPIToken, Sendable, Hashable {
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
        let (issuedAt, expiresAt) = ES256BearerToken.validity(
            nowMillis: nowMillis,
            lifetimeSeconds: lifetimeSeconds,
            maxLifetimeSeconds: Self.maxLifetimeSeconds
        )
        self.init(keyID: credentials.keyID, issuerID: credentials.issuerID, issuedAt: issuedAt, expiresAt: expiresAt)
    }

    public var issuedAtClaim: Int64? { issuedAt }
}
