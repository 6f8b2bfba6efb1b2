import AppStoreConnect
import Canonical
import Crypto
import Foundation
import Simulator
import Testing

/// The App Store Connect API's bearer token with a fixed key and a fixed clock: exactly what it says, that its
/// signature verifies, and every refusal the check (the simulator's fake uses it) makes.
@Suite struct AppStoreConnectTokenTests {
    /// A P-256 key made for this test only (`openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
    static let pem = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg4l05lzpeG8SdgcRj
        rUIwvF8bdJOcKSs17XSRzUQu3+OhRANCAAT5OiisqbLPZi0f/6m4WI8XfWR3q8G9
        jkHh5n5glIvIpm/kie5gQo8JJLj76ER9DHMk4pLxUnZqzLBPvy4AnIhW
        -----END PRIVATE KEY-----
        """
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyID = "2X9R4HXF34"
    /// 2025-06-01 00:00:00 UTC, in milliseconds.
    static let now: Int64 = 1_748_736_000_000

    static func credentials() throws -> AppStoreConnectCredentials {
        try AppStoreConnectCredentials(issuerID: issuer, keyID: keyID, privateKeyPEM: pem)
    }

    static func segment(_ json: String) -> String { Base64.encode(Array(json.utf8), alphabet: .url) }

    static func sign(
        header: String = #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#,
        payload: String,
        key: PrivateKey
    ) throws -> String {
        try CompactES256.sign(header: Array(header.utf8), payload: Array(payload.utf8), key: key)
    }

    static func claims(iat: Int64?, exp: Int64, aud: String? = AppStoreConnectToken.audience) -> String {
        var members = [#""iss":"\#(issuer)""#]
        if let iat { members.append(#""iat":\#(iat)"#) }
        members.append(#""exp":\#(exp)"#)
        if let aud { members.append(#""aud":"\#(aud)""#) }
        return "{" + members.joined(separator: ",") + "}"
    }

    @Test func theTokenSaysExactlyWhatAppleAsksForAndVerifies() throws {
        let credentials = try Self.credentials()
        let token = try AppStoreConnectToken(credentials: credentials, nowMillis: Self.now).signed(
            with: credentials.privateKey
        )
        let segments = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(segments.count == 3)
        // Header and payload are fixed bytes for a fixed key id, issuer and clock.
        #expect(segments[0] == "eyJhbGciOiJFUzI1NiIsImtpZCI6IjJYOVI0SFhGMzQiLCJ0eXAiOiJKV1QifQ")
        #expect(
            segments[1]
                == "eyJpc3MiOiI1NzI0NjU0Mi05NmZlLTFhNjMtZTA1My0wODI0ZDAxMTA3MmEiLCJpYXQiOjE3NDg3MzYwMDAsImV4cCI6MTc0ODczNjkwMCwiYXVkIjoiYXBwc3RvcmVjb25uZWN0LXYxIn0"
        )
        let parts = try #require(CompactES256.split(token))
        #expect(String(decoding: parts.header, as: UTF8.self) == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        #expect(
            String(decoding: parts.payload, as: UTF8.self)
                == #"{"iss":"57246542-96fe-1a63-e053-0824d011072a","iat":1748736000,"exp":1748736900,"aud":"appstoreconnect-v1"}"#
        )
        // The raw R‖S signature verifies with the key's public half, and only over these bytes.
        #expect(parts.signature.count == 64)
        #expect(parts.verifies(with: credentials.privateKey.publicKey))
        #expect(!parts.verifies(with: try PrivateKey.generateP256().publicKey))
        let tampered =
            segments[0] + "."
            + Self.segment(#"{"iss":"x","iat":1748736000,"exp":1748736900,"aud":"appstoreconnect-v1"}"#) + "."
            + segments[2]
        #expect(CompactES256.split(tampered)?.verifies(with: credentials.privateKey.publicKey) == false)

        let checked = try AppStoreConnectToken.verify(
            token,
            publicKey: credentials.privateKey.publicKey,
            now: Self.now / 1000
        )
        #expect(
            checked
                == AppStoreConnectToken(
                    keyID: Self.keyID,
                    issuerID: Self.issuer,
                    issuedAt: 1_748_736_000,
                    expiresAt: 1_748_736_900
                )
        )
        #expect(checked.expiresAt - checked.issuedAt <= AppStoreConnectToken.maxLifetimeSeconds)
    }

    @Test(arguments: [(Int64(3600), Int64(1200)), (1200, 1200), (900, 900), (0, 1), (-5, 1)])
    func theLifetimeStaysWithinTwentyMinutes(asked: Int64, lifetime: Int64) throws {
        let token = AppStoreConnectToken(
            credentials: try Self.credentials(),
            nowMillis: Self.now,
            lifetimeSeconds: asked
        )
        #expect(token.issuedAt == Self.now / 1000)
        #expect(token.expiresAt - token.issuedAt == lifetime)
    }

    @Test func presentedTokensAreRefusedForEachFlaw() throws {
        let key = try Self.credentials().privateKey
        let publicKey = key.publicKey
        let now = Self.now / 1000
        func rejection(_ token: String) -> AppStoreConnectToken.Rejection? {
            do {
                _ = try AppStoreConnectToken.verify(token, publicKey: publicKey, now: now)
                return nil
            } catch { return error }
        }
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: now - 10, exp: now + 600), key: key)) == nil,
            "the crafting is sound"
        )
        #expect(rejection(try Self.sign(payload: Self.claims(iat: now - 1300, exp: now - 100), key: key)) == .expired)
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: now - 600, exp: now), key: key)) == .expired,
            "expires now"
        )
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: now - 10, exp: now - 10 + 1201), key: key)) == .tooLong
        )
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: now - 10, exp: now - 10 + 1200), key: key)) == nil,
            "20 minutes exactly"
        )
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: now + 120, exp: now + 600), key: key)) == .notYetValid
        )
        #expect(
            rejection(
                try Self.sign(payload: Self.claims(iat: now - 10, exp: now + 600, aud: "appstoreconnect-v2"), key: key)
            ) == .badAudience
        )
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: now - 10, exp: now + 600, aud: nil), key: key))
                == .badAudience
        )
        #expect(
            rejection(try Self.sign(payload: Self.claims(iat: nil, exp: now + 600), key: key)) == .malformed,
            "iat is required"
        )
        #expect(
            rejection(
                try Self.sign(payload: Self.claims(iat: now - 10, exp: now + 600), key: try PrivateKey.generateP256())
            ) == .badSignature
        )
        #expect(
            rejection(
                try Self.sign(
                    header: #"{"alg":"HS256","kid":"2X9R4HXF34","typ":"JWT"}"#,
                    payload: Self.claims(iat: now - 10, exp: now + 600),
                    key: key
                )
            ) == .badAlgorithm
        )
        #expect(
            rejection(
                try Self.sign(
                    header: #"{"alg":"ES256","typ":"JWT"}"#,
                    payload: Self.claims(iat: now - 10, exp: now + 600),
                    key: key
                )
            )
                == .malformed,
            "kid is required"
        )
        #expect(
            rejection(
                try Self.sign(
                    header: #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWS"}"#,
                    payload: Self.claims(iat: now - 10, exp: now + 600),
                    key: key
                )
            ) == .malformed
        )
        #expect(rejection("not.a.token") == .malformed)
        #expect(rejection("") == .malformed)
    }

    @Test func credentialsRefuseAKeyThatIsNotP256AndNeverShowTheKey() throws {
        #expect(throws: AppStoreConnectError(.invalidKey, "")) {
            try AppStoreConnectCredentials(
                issuerID: Self.issuer,
                keyID: Self.keyID,
                privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
            )
        }
        let p384 = try PrivateKey.generateP384().pemPKCS8
        do {
            _ = try AppStoreConnectCredentials(issuerID: Self.issuer, keyID: Self.keyID, privateKeyPEM: p384)
            Issue.record("a P-384 key was taken")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.reason.contains("PRIVATE KEY") && !error.description.contains(p384))
        }
        let description = String(describing: try Self.credentials())
        #expect(description.contains(Self.keyID) && description.contains("<redacted>"))
        for line in Self.pem.split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!description.contains(line))
        }
    }

    @Test func notificationVersionsKeepUnknownValuesAndMapToGenerations() throws {
        #expect(NotificationVersion.v1.rawValue == "V1" && NotificationVersion.v2.rawValue == "V2")
        #expect(NotificationVersion(.v1) == .v1 && NotificationVersion(.v2) == .v2)
        #expect(NotificationVersion.v2.generation == .v2 && Generation(NotificationVersion.v1) == .v1)
        let future = NotificationVersion(rawValue: "V3")
        #expect(future.generation == nil && Generation(future) == nil)
        let decoded = try JSONDecoder().decode([NotificationVersion].self, from: Data(#"["V1","V2","V3"]"#.utf8))
        #expect(decoded == [.v1, .v2, future])
        #expect(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self) == #"["V1","V2","V3"]"#)
    }
}
