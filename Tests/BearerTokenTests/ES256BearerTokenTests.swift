import BearerToken
import Crypto
import Testing

/// The one ES256 bearer token of Apple's APIs with a fixed clock: the exact bytes it signs, that its signature
/// verifies with the key's public half and only over those bytes, and the lifetime kept in bounds.
@Suite struct ES256BearerTokenTests {
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyID = "2X9R4HXF34"
    /// 2025-06-01 00:00:00 UTC, in milliseconds.
    static let now: Int64 = 1_748_736_000_000

    /// A fresh P-256 key: what is checked byte for byte (header, payload) does not depend on it, and an ES256
    /// signature differs from run to run anyway.
    static func key() throws -> PrivateKey { try PrivateKey.generateP256() }

    @Test func theHeaderAndPayloadAreSignedAsWrittenAndOnlyTheKeysPublicHalfVerifiesThem() throws {
        let key = try Self.key()
        let (issuedAt, expiresAt) = ES256BearerToken.validity(
            nowMillis: Self.now,
            lifetimeSeconds: 3600,
            maxLifetimeSeconds: 3600
        )
        let token = ES256BearerToken(
            keyID: Self.keyID,
            issuerID: Self.issuer,
            issuedAt: issuedAt,
            expiresAt: expiresAt,
            audience: "appstoreconnect-v1",
            claims: [.init("bid", "com.example.app")]
        )
        #expect(String(decoding: token.header, as: UTF8.self) == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        let payload =
            #"{"iss":"57246542-96fe-1a63-e053-0824d011072a","iat":1748736000,"exp":1748739600,"#
            + #""aud":"appstoreconnect-v1","bid":"com.example.app"}"#
        #expect(String(decoding: token.payload, as: UTF8.self) == payload)

        let signed = try token.signed(with: key)
        let parts = try #require(CompactES256.split(signed))
        #expect(parts.header == token.header && parts.payload == token.payload)
        #expect(parts.signature.count == 64, "raw R‖S")
        #expect(parts.verifies(with: key.publicKey))
        #expect(!parts.verifies(with: try PrivateKey.generateP256().publicKey))
        let segments = signed.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let tampered = [segments[0], Base64.encode(Array(#"{"iss":"x"}"#.utf8), alphabet: .url), segments[2]]
        #expect(CompactES256.split(tampered.joined(separator: "."))?.verifies(with: key.publicKey) == false)
        #expect(!signed.contains("=") && !signed.contains("+") && !signed.contains("/"), "base64url without padding")
    }

    @Test func claimsFollowTheAudienceInOrderAndIatMayBeLeftOut() {
        let token = ES256BearerToken(
            keyID: "K",
            issuerID: "I",
            issuedAt: nil,
            expiresAt: 1_748_736_900,
            audience: "appstoreconnect-v1",
            claims: [.init("bid", "com.example.app"), .init("scope", "GET /v1/apps")]
        )
        #expect(
            String(decoding: token.payload, as: UTF8.self)
                == #"{"iss":"I","exp":1748736900,"aud":"appstoreconnect-v1","bid":"com.example.app","scope":"GET /v1/apps"}"#
        )
    }

    @Test func valuesNeedingJSONEscapesAreQuoted() {
        let token = ES256BearerToken(
            keyID: "K\"1\\",
            issuerID: "i\n",
            issuedAt: 1,
            expiresAt: 2,
            audience: "a",
            claims: [.init("bid", "b\u{1}")]
        )
        #expect(String(decoding: token.header, as: UTF8.self) == #"{"alg":"ES256","kid":"K\"1\\","typ":"JWT"}"#)
        #expect(
            String(decoding: token.payload, as: UTF8.self)
                == #"{"iss":"i\n","iat":1,"exp":2,"aud":"a","bid":"b\u0001"}"#
        )
    }

    @Test(arguments: [
        (Int64(3600), Int64(1200), Int64(1200)), (1200, 1200, 1200), (900, 1200, 900), (0, 1200, 1), (-5, 1200, 1),
        (7200, 3600, 3600),
    ])
    func theLifetimeStaysWithinOneSecondAndTheLongestAllowed(asked: Int64, longest: Int64, lifetime: Int64) {
        let (issuedAt, expiresAt) = ES256BearerToken.validity(
            nowMillis: Self.now + 999,
            lifetimeSeconds: asked,
            maxLifetimeSeconds: longest
        )
        #expect(issuedAt == Self.now / 1000, "the second the clock falls in")
        #expect(expiresAt - issuedAt == lifetime)
    }
}
