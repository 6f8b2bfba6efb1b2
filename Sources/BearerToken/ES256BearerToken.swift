internal import Canonical
public import Crypto
internal import WireJSON

/// The ES256 JSON Web Token both of Apple's APIs take as their bearer token: the App Store Server API's
/// (`AppStoreAPIToken`) and the App Store Connect API's (`AppStoreConnectToken`). Header
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`; payload `{"iss":ISSUER_ID,"iat":…,"exp":…,"aud":AUDIENCE}` with
/// ``claims`` after `aud` (the App Store Server API's `bid`); the raw `R‖S` signature of ``CompactES256``.
///
/// Each token type keeps its own audience, claims and longest lifetime and hands them here; the bytes signed are
/// exactly these, in this order (docs/architecture.md, "Where is …").
public struct ES256BearerToken: Sendable, Hashable {
    /// A string claim of the payload, after `aud`.
    public struct Claim: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) { (self.name, self.value) = (name, value) }
    }

    public var keyID: String
    public var issuerID: String
    /// Seconds since the epoch; nil leaves `iat` out of the payload.
    public var issuedAt: Int64?
    /// Seconds since the epoch.
    public var expiresAt: Int64
    public var audience: String
    /// The claims after `aud`, in order.
    public var claims: [Claim]

    public init(
        keyID: String,
        issuerID: String,
        issuedAt: Int64?,
        expiresAt: Int64,
        audience: String,
        claims: [Claim] = []
    ) {
        (self.keyID, self.issuerID, self.issuedAt, self.expiresAt) = (keyID, issuerID, issuedAt, expiresAt)
        (self.audience, self.claims) = (audience, claims)
    }

    /// `iat` and `exp` of a token issued at `nowMillis` (ms since the epoch, from the caller's injected clock): `iat`
    /// the second it falls in, `exp` `lifetimeSeconds` later, the lifetime kept within 1…`maxLifetimeSeconds`.
    public static func validity(
        nowMillis: Int64,
        lifetimeSeconds: Int64,
        maxLifetimeSeconds: Int64
    ) -> (issuedAt: Int64, expiresAt: Int64) {
        let issuedAt = nowMillis / 1000
        return (issuedAt, issuedAt.clampedAdding(min(max(1, lifetimeSeconds), maxLifetimeSeconds)))
    }

    /// The header's JSON bytes.
    public var header: [UInt8] {
        Array(#"{"alg":"ES256","kid":"#.utf8) + JSONValue.quoted(keyID) + Array(#","typ":"JWT"}"#.utf8)
    }

    /// The payload's JSON bytes.
    public var payload: [UInt8] {
        var out = Array(#"{"iss":"#.utf8) + JSONValue.quoted(issuerID)
        if let issuedAt { out += Array(",\"iat\":\(issuedAt)".utf8) }
        out += Array(",\"exp\":\(expiresAt),\"aud\":".utf8) + JSONValue.quoted(audience)
        for claim in claims {
            out +=
                [UInt8(ascii: ",")] + JSONValue.quoted(claim.name) + [UInt8(ascii: ":")] + JSONValue.quoted(claim.value)
        }
        return out + [UInt8(ascii: "}")]
    }

    /// The compact token, signed with `key` (a P-256 key: the `.p8` Apple issues).
    public func signed(with key: PrivateKey) throws(CryptoError) -> String {
        try CompactES256.sign(header: header, payload: payload, key: key)
    }
}

/// One of Apple's API tokens (`AppStoreAPIToken`, `AppStoreConnectToken`): what it hands ``ES256BearerToken`` — its
/// audience and the claims after `aud` are its own — and, from that, its signing.
public protocol AppleAPIToken {
    var keyID: String { get }
    var issuerID: String { get }
    /// `iat` (seconds since the epoch); nil leaves it out.
    var issuedAtClaim: Int64? { get }
    /// `exp` (seconds since the epoch).
    var expiresAt: Int64 { get }
    static var audience: String { get }
    /// The claims after `aud`, in order.
    var claimsAfterAudience: [ES256BearerToken.Claim] { get }
}

extension AppleAPIToken {
    public var claimsAfterAudience: [ES256BearerToken.Claim] { [] }

    /// The token as the bytes it signs.
    public var bearer: ES256BearerToken {
        ES256BearerToken(
            keyID: keyID,
            issuerID: issuerID,
            issuedAt: issuedAtClaim,
            expiresAt: expiresAt,
            audience: Self.audience,
            claims: claimsAfterAudience
        )
    }

    /// The compact token, signed with `key` (a P-256 key: the `.p8` Apple issues).
    public func signed(with key: PrivateKey) throws(CryptoError) -> String { try bearer.signed(with: key) }
}
