public import BearerToken
internal import Crypto

/// The ES256 bearer token the App Store Server API requires (Apple: "Generating JSON Web Tokens for API requests"):
/// header `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, payload `{"iss","iat","exp","aud":"appstoreconnect-v1","bid"}`,
/// raw `R‖S` signature (made by `BearerToken`'s `ES256BearerToken`). Apple refuses tokens living longer than 60 minutes.
///
/// The gateway's own tokens always carry `iat`. Apple's own client libraries do not all send it (the Python one signs
/// `{"bid","iss","aud","exp"}` only), and Apple accepts them, so the simulator's fake, which checks presented tokens
/// the way Apple does (`AppStoreAPIToken.verify` in `Sources/Simulator/PresentedBearerToken.swift`), takes a token
/// without `iat` too.
public struct AppStoreAPIToken: AppleAPIToken, Sendable, Hashable {
    public var keyID: String
    public var issuerID: String
    public var bundleID: String
    /// Seconds since the epoch; nil for a presented token without `iat` (as the simulator's check reads one): every
    /// token the gateway signs has one.
    public var issuedAt: Int64?
    public var expiresAt: Int64

    public static let audience = "appstoreconnect-v1"
    public static let maxLifetimeSeconds: Int64 = 3600

    public init(keyID: String, issuerID: String, bundleID: String, issuedAt: Int64?, expiresAt: Int64) {
        (self.keyID, self.issuerID, self.bundleID, self.issuedAt, self.expiresAt) = (
            keyID, issuerID, bundleID, issuedAt, expiresAt
        )
    }

    public var issuedAtClaim: Int64? { issuedAt }
    public var claimsAfterAudience: [ES256BearerToken.Claim] { [.init("bid", bundleID)] }
}
