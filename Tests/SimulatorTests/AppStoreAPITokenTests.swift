import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import Testing
import V2Adapter

/// The App Store Server API bearer token: what `signed(with:)` produces and every reason `verify` refuses one.
@Suite struct AppStoreAPITokenTests {
    static let now: Int64 = Sim.t0 / 1000
    static let key: PrivateKey = {
        do { return try PrivateKey.generateP256() } catch { fatalError("P-256 key generation failed: \(error)") }
    }()

    static func token(
        bundleID: String = Sim.bundleID,
        iat: Int64 = now - 10,
        exp: Int64 = now + 600
    ) -> AppStoreAPIToken {
        AppStoreAPIToken(
            keyID: SimulatorPKI.apiKeyID,
            issuerID: SimulatorPKI.issuerID,
            bundleID: bundleID,
            issuedAt: iat,
            expiresAt: exp
        )
    }

    static func rejection(_ token: String, key: PrivateKey = key, now: Int64 = now) -> AppStoreAPIToken.Rejection? {
        do throws(AppStoreAPIToken.Rejection) {
            _ = try AppStoreAPIToken.verify(token, publicKey: key.publicKey, now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test func signedTokenVerifiesAndRoundTrips() throws {
        let token = Self.token()
        let signed = try token.signed(with: Self.key)
        #expect(try AppStoreAPIToken.verify(signed, publicKey: Self.key.publicKey, now: Self.now) == token)
        let parts = signed.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(!signed.contains("=") && !signed.contains("+") && !signed.contains("/"), "base64url without padding")
        let header = try Sim.header(signed)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == SimulatorPKI.apiKeyID)
        #expect(header["typ"] as? String == "JWT")
        struct Claims: Decodable { var iss: String, iat: Int64, exp: Int64, aud: String, bid: String }
        let claims = try Sim.payload(signed, as: Claims.self)
        #expect(claims.iss == SimulatorPKI.issuerID)
        #expect(claims.iat == Self.now - 10 && claims.exp == Self.now + 600)
        #expect(claims.aud == "appstoreconnect-v1")
        #expect(claims.bid == Sim.bundleID)
        #expect(try Base64.decode(Array(parts[2].utf8), alphabet: .url).count == 64, "raw R‖S")
    }

    @Test func valuesNeedingJSONEscapesSurvive() throws {
        let token = AppStoreAPIToken(
            keyID: "K\"1\\",
            issuerID: "iss\u{1}",
            bundleID: "com.example.\"quoted\"",
            issuedAt: Self.now,
            expiresAt: Self.now + 60
        )
        let verified = try AppStoreAPIToken.verify(
            try token.signed(with: Self.key),
            publicKey: Self.key.publicKey,
            now: Self.now
        )
        #expect(verified == token)
    }

    @Test func boundariesAreInclusiveWhereAppleIs() throws {
        // An hour exactly, issued up to a minute in the future, expiring a second from now: all fine.
        #expect(
            Self.rejection(try Self.token(iat: Self.now - 100, exp: Self.now - 100 + 3_600).signed(with: Self.key))
                == nil
        )
        #expect(Self.rejection(try Self.token(iat: Self.now + 60, exp: Self.now + 600).signed(with: Self.key)) == nil)
        #expect(Self.rejection(try Self.token(iat: Self.now - 10, exp: Self.now + 1).signed(with: Self.key)) == nil)
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "!!!.e30.AAAA", "e30.!!!.AAAA", "e30.e30.!!!"])
    func malformedShapes(token: String) {
        #expect(Self.rejection(token) == .malformed)
    }

    @Test func malformedJSON() throws {
        let sig = Base64.encode([UInt8](repeating: 1, count: 64), alphabet: .url)
        let notJSON = CraftedJWT.segment("not json")
        let array = CraftedJWT.segment("[1]")
        let header = CraftedJWT.segment(#"{"alg":"ES256"}"#)
        #expect(Self.rejection(notJSON + "." + CraftedJWT.segment("{}") + "." + sig) == .malformed)
        #expect(Self.rejection(header + "." + notJSON + "." + sig) == .malformed)
        #expect(Self.rejection(header + "." + array + "." + sig) == .malformed)
        // Well signed but missing claims (or `kid`): malformed, judged after the signature. (`iat` may be missing:
        // AppStoreAPITokenTests.tokenWithoutIatIsJudgedByItsExpiry.)
        let noExp = try CraftedJWT.make(
            payload: #"{"iss":"i","iat":\#(Self.now),"aud":"appstoreconnect-v1"}"#,
            key: Self.key
        )
        #expect(Self.rejection(noExp) == .malformed)
        let noIss = try CraftedJWT.make(
            payload: #"{"iat":\#(Self.now),"exp":\#(Self.now + 60),"aud":"appstoreconnect-v1"}"#,
            key: Self.key
        )
        #expect(Self.rejection(noIss) == .malformed)
        for iat in [#""\#(Self.now)""#, "null", "true", "{}"] {
            let odd = try CraftedJWT.make(
                payload: #"{"iss":"i","iat":\#(iat),"exp":\#(Self.now + 60),"aud":"appstoreconnect-v1"}"#,
                key: Self.key
            )
            #expect(Self.rejection(odd) == .malformed, "iat \(iat): present, so it must be whole seconds")
        }
        let noKid = try CraftedJWT.make(
            header: #"{"alg":"ES256","typ":"JWT"}"#,
            payload: CraftedJWT.claims(iat: Self.now, exp: Self.now + 60),
            key: Self.key
        )
        #expect(Self.rejection(noKid) == .malformed)
        let stringDates = try CraftedJWT.make(
            payload: #"{"iss":"i","iat":"\#(Self.now)","exp":"\#(Self.now + 60)","aud":"appstoreconnect-v1"}"#,
            key: Self.key
        )
        #expect(Self.rejection(stringDates) == .malformed)
    }

    @Test func badAlgorithm() throws {
        let claims = CraftedJWT.claims(iat: Self.now, exp: Self.now + 60)
        for alg in [
            #"{"alg":"HS256","kid":"K","typ":"JWT"}"#, #"{"alg":"none","kid":"K"}"#, #"{"alg":"es256","kid":"K"}"#,
            #"{"kid":"K"}"#,
        ] {
            #expect(
                Self.rejection(try CraftedJWT.make(header: alg, payload: claims, key: Self.key)) == .badAlgorithm,
                "\(alg)"
            )
        }
        // ES256 named, but a DER signature instead of raw R‖S.
        let input = CraftedJWT.segment(#"{"alg":"ES256","kid":"K"}"#) + "." + CraftedJWT.segment(claims)
        let der = try Self.key.signDER(Array(input.utf8))
        #expect(der.count != 64)
        #expect(Self.rejection(input + "." + Base64.encode(der, alphabet: .url)) == .badAlgorithm)
    }

    @Test func badSignature() throws {
        let signed = try Self.token().signed(with: Self.key)
        let parts = signed.split(separator: ".").map(String.init)
        // Another payload under the original signature.
        let tampered =
            parts[0] + "."
            + CraftedJWT.segment(CraftedJWT.claims(iat: Self.now - 10, exp: Self.now + 600, bid: "com.example.other"))
            + "." + parts[2]
        #expect(Self.rejection(tampered) == .badSignature)
        // Another header under the original signature.
        let header = CraftedJWT.segment(#"{"alg":"ES256","kid":"SIMKEY0002","typ":"JWT"}"#)
        #expect(header != parts[0])
        #expect(Self.rejection(header + "." + parts[1] + "." + parts[2]) == .badSignature)
        // Signed by another key.
        #expect(Self.rejection(signed, key: try PrivateKey.generateP256()) == .badSignature)
        // Zeroed signature of the right length.
        #expect(
            Self.rejection(
                parts[0] + "." + parts[1] + "." + Base64.encode([UInt8](repeating: 0, count: 64), alphabet: .url)
            ) == .badSignature
        )
    }

    @Test func badAudience() throws {
        for aud in ["appstoreconnect-v2", "", "APPSTORECONNECT-V1"] {
            let token = try CraftedJWT.make(
                payload: CraftedJWT.claims(iat: Self.now, exp: Self.now + 60, aud: aud),
                key: Self.key
            )
            #expect(Self.rejection(token) == .badAudience, "\(aud)")
        }
        let missing = try CraftedJWT.make(
            payload: CraftedJWT.claims(iat: Self.now, exp: Self.now + 60, aud: nil),
            key: Self.key
        )
        #expect(Self.rejection(missing) == .badAudience)
    }

    @Test func expired() throws {
        #expect(Self.rejection(try Self.token(iat: Self.now - 600, exp: Self.now).signed(with: Self.key)) == .expired)
        #expect(
            Self.rejection(try Self.token(iat: Self.now - 600, exp: Self.now - 1).signed(with: Self.key)) == .expired
        )
        // The same token was fine a minute earlier.
        #expect(
            Self.rejection(
                try Self.token(iat: Self.now - 600, exp: Self.now).signed(with: Self.key),
                now: Self.now - 60
            ) == nil
        )
    }

    @Test func notYetValid() throws {
        #expect(
            Self.rejection(try Self.token(iat: Self.now + 61, exp: Self.now + 600).signed(with: Self.key))
                == .notYetValid
        )
        #expect(
            Self.rejection(try Self.token(iat: Self.now + 3_000, exp: Self.now + 3_100).signed(with: Self.key))
                == .notYetValid
        )
    }

    @Test func tooLong() throws {
        #expect(
            Self.rejection(try Self.token(iat: Self.now - 10, exp: Self.now - 10 + 3_601).signed(with: Self.key))
                == .tooLong
        )
        #expect(
            Self.rejection(try Self.token(iat: Self.now, exp: Self.now + 86_400).signed(with: Self.key)) == .tooLong
        )
        #expect(AppStoreAPIToken.maxLifetimeSeconds == 3_600)
    }

    @Test func rejectionCodesAreStable() {
        let codes: [AppStoreAPIToken.Rejection: String] = [
            .malformed: "token_malformed", .badAlgorithm: "token_bad_algorithm", .badSignature: "token_bad_signature",
            .badAudience: "token_bad_audience", .expired: "token_expired", .notYetValid: "token_not_yet_valid",
            .tooLong: "token_lifetime_too_long",
        ]
        for (rejection, code) in codes { #expect(rejection.rawValue == code) }
        #expect(AppStoreAPIToken.audience == "appstoreconnect-v1")
    }

    // MARK: tokens as Apple's own clients sign them

    /// Apple's Python library (`app-store-server-library` 3.1.2, through PyJWT) signs header
    /// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}` and payload `{"bid","iss","aud","exp"}`: no `iat`, `exp` five
    /// minutes ahead. Apple takes it; so must the fake.
    static func pythonLibraryToken(
        exp: Int64,
        header: String = #"{"alg":"ES256","kid":"SIMKEY0001","typ":"JWT"}"#
    ) throws -> String {
        try CraftedJWT.make(
            header: header,
            payload:
                #"{"bid":"\#(Sim.bundleID)","iss":"\#(SimulatorPKI.issuerID)","aud":"appstoreconnect-v1","exp":\#(exp)}"#,
            key: Self.key
        )
    }

    @Test func tokenOfApplesPythonLibraryVerifies() throws {
        let verified = try AppStoreAPIToken.verify(
            try Self.pythonLibraryToken(exp: Self.now + 300),
            publicKey: Self.key.publicKey,
            now: Self.now
        )
        #expect(
            verified
                == AppStoreAPIToken(
                    keyID: SimulatorPKI.apiKeyID,
                    issuerID: SimulatorPKI.issuerID,
                    bundleID: Sim.bundleID,
                    issuedAt: nil,
                    expiresAt: Self.now + 300
                )
        )
    }

    /// Without `iat` the lifetime is counted from now: `exp` in the future and at most 60 minutes ahead.
    @Test func tokenWithoutIatIsJudgedByItsExpiry() throws {
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now + 1)) == nil)
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now + 3_600)) == nil, "exactly an hour ahead")
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now + 3_601)) == .tooLong)
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now)) == .expired)
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now - 300)) == .expired)
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: .max)) == .tooLong, "clamped, not trapped")
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: .min)) == .expired)
        // With `iat` the old rules still hold: the same expiry is too long when issued over an hour before it.
        let early = try CraftedJWT.make(
            payload: CraftedJWT.claims(iat: Self.now - 3_000, exp: Self.now + 601),
            key: Self.key
        )
        #expect(Self.rejection(early) == .tooLong)
    }

    /// `typ` is optional in a JWS header; clients that leave it out are answered like the others.
    @Test func headerWithoutTypIsAccepted() throws {
        let bare = #"{"alg":"ES256","kid":"SIMKEY0001"}"#
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now + 300, header: bare)) == nil)
        #expect(
            Self.rejection(
                try CraftedJWT.make(
                    header: bare,
                    payload: CraftedJWT.claims(iat: Self.now, exp: Self.now + 60),
                    key: Self.key
                )
            ) == nil
        )
        let otherTyp = #"{"typ":"jwt","kid":"SIMKEY0001","alg":"ES256"}"#
        #expect(Self.rejection(try Self.pythonLibraryToken(exp: Self.now + 300, header: otherTyp)) == nil)
    }

    /// Every token the gateway signs carries `iat`; only a token built without one (as tests build Apple's
    /// clients' tokens) leaves it out.
    @Test func signedTokensCarryIatUnlessItIsNil() throws {
        struct Claims: Decodable { var iat: Int64? }
        #expect(try Sim.payload(try Self.token().signed(with: Self.key), as: Claims.self).iat == Self.now - 10)
        var withoutIat = Self.token()
        withoutIat.issuedAt = nil
        let signed = try withoutIat.signed(with: Self.key)
        #expect(try Sim.payload(signed, as: Claims.self).iat == nil)
        #expect(try AppStoreAPIToken.verify(signed, publicKey: Self.key.publicKey, now: Self.now) == withoutIat)
    }

    @Test func expiryBeforeIssueIsRefused() throws {
        // exp < iat is no lifetime at all.
        let backwards = try Self.token(iat: Self.now + 50, exp: Self.now + 10).signed(with: Self.key)
        #expect(Self.rejection(backwards) != nil)
    }
}
