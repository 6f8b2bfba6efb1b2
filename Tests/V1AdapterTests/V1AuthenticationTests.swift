import Canonical
import Crypto
import TestSupport
import Testing
import V1Adapter
import WireJSON

@Suite struct V1AuthenticationTests {
    static let secret = "0123456789abcdef0123456789abcdef"
    static let app = V1App(
        bundleID: "com.example.gateway",
        environments: [.production, .sandbox],
        sharedSecrets: [
            SharedSecret(name: "OLD_SECRET", value: "ffffffffffffffffffffffffffffffff"),
            SharedSecret(name: "APP_SHARED_SECRET", value: secret),
        ]
    )

    static func body(_ name: String = "did-renew") throws -> [UInt8] { try Fixtures.bytes("v1-synthetic/\(name).json") }

    static func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let e as V1AdapterError {
            return e.code.rawValue
        } catch {
            return "not a V1AdapterError"
        }
    }

    @Test func acceptsAnyOfTheBundlesSecretsAndSaysWhichMatched() throws {
        let n = try V1Adapter(apps: [Self.app]).authenticate(body: try Self.body())
        #expect(n.secretName == "APP_SHARED_SECRET")
        #expect(n.bundleID == "com.example.gateway")
        #expect(n.environment == .production)
        #expect(n.body.notificationType == "DID_RENEW")
    }

    @Test func refusesAWrongOrMissingPassword() throws {
        var object = try #require(JSONParser.parse(try Self.body()).objectValue).members
        object = object.map { $0.key == "password" ? ($0.key, .string("0123456789abcdef0123456789abcdeX")) : $0 }
        let wrong = JSONValue.object(JSONObject(object)).canonicalBytes()
        #expect(Self.code { _ = try V1Adapter(apps: [Self.app]).authenticate(body: wrong) } == "bad_shared_secret")
        let missing = JSONValue.object(JSONObject(object.filter { $0.key != "password" })).canonicalBytes()
        #expect(Self.code { _ = try V1Adapter(apps: [Self.app]).authenticate(body: missing) } == "bad_shared_secret")
        // A prefix of the secret is not the secret.
        let prefix = JSONValue.object(
            JSONObject(object.map { $0.key == "password" ? ($0.key, .string(String(Self.secret.prefix(31)))) : $0 })
        ).canonicalBytes()
        #expect(Self.code { _ = try V1Adapter(apps: [Self.app]).authenticate(body: prefix) } == "bad_shared_secret")
    }

    @Test func refusesUnknownBundlesAndUnconfiguredEnvironments() throws {
        let other = V1App(
            bundleID: "com.example.other",
            environments: [.production],
            sharedSecrets: Self.app.sharedSecrets
        )
        #expect(Self.code { _ = try V1Adapter(apps: [other]).authenticate(body: try Self.body()) } == "unknown_bundle")
        let sandboxOnly = V1App(
            bundleID: "com.example.gateway",
            environments: [.sandbox],
            sharedSecrets: Self.app.sharedSecrets
        )
        #expect(
            Self.code { _ = try V1Adapter(apps: [sandboxOnly]).authenticate(body: try Self.body()) }
                == "environment_mismatch"
        )
    }

    @Test(arguments: [
        "", "[]", "not json", #"{"password":"x"}"#, #"{"notification_type":5,"bid":"com.example.gateway"}"#,
        #"{"notification_type":"DID_RENEW","bid":"com.example.gateway","unified_receipt":"x"}"#,
    ])
    func refusesMalformedBodies(_ text: String) {
        #expect(
            Self.code { _ = try V1Adapter(apps: [Self.app]).authenticate(body: Array(text.utf8)) } == "malformed_body"
        )
    }

    @Test func theSecretNeverLeavesTheAdapter() throws {
        let original = try Self.body()
        let n = try V1Adapter(apps: [Self.app]).authenticate(body: original)
        let stored = String(decoding: n.redactedBody, as: UTF8.self)
        #expect(!stored.contains(Self.secret))
        #expect(stored.contains("\"iapgw-secret:APP_SHARED_SECRET\""))
        #expect(!n.eventID.contains(Self.secret))
        #expect(!"\(n.app.sharedSecrets)".contains(Self.secret))
        // Everything but the password value is byte-for-byte what arrived.
        let restored = try #require(V1Adapter.restore(redactedBody: n.redactedBody, secrets: Self.app.sharedSecrets))
        #expect(restored == original)
        #expect(V1Adapter.restore(redactedBody: n.redactedBody, secrets: [Self.app.sharedSecrets[0]]) == nil)
    }

    @Test func fingerprintsThePresentedPasswordWithoutKeepingIt() throws {
        #expect(V1Adapter.passwordFingerprint(body: try Self.body()) == SHA256.hex(Array(Self.secret.utf8)))
        #expect(V1Adapter.passwordFingerprint(body: Array(#"{"notification_type":"X"}"#.utf8)) == nil)
    }

    @Test func eventIDIgnoresPasswordKeyOrderAndWhitespace() throws {
        let a = try V1Adapter(apps: [Self.app]).authenticate(body: try Self.body())
        // The same body re-serialized with sorted keys, no whitespace, and the other (rotated) secret.
        var members = try #require(JSONParser.parse(try Self.body()).objectValue).members
        members = members.reversed().map {
            $0.key == "password" ? ($0.key, .string("ffffffffffffffffffffffffffffffff")) : $0
        }
        let b = try V1Adapter(apps: [Self.app]).authenticate(
            body: JSONValue.object(JSONObject(members)).canonicalBytes()
        )
        #expect(a.eventID == b.eventID)
        #expect(a.eventID.hasPrefix("v1:") && a.eventID.count == 3 + 64)
        // A different body (another notification) has another id.
        let c = try V1Adapter(apps: [Self.app]).authenticate(body: try Self.body("did-recover"))
        #expect(c.eventID != a.eventID)
    }

    @Test func readsBothBodyShapesAndTheirBundle() throws {
        // Pre-2021 shape: no top-level bid, the transaction's bid counts.
        let old = try Fixtures.bytes("v1/v1-notif-renewal-sandbox-2019.json")
        let app = V1App(
            bundleID: "com.freeramble.smsautosenderpro",
            environments: [.sandbox],
            sharedSecrets: [SharedSecret(name: "S", value: "...")]
        )
        let n = try V1Adapter(apps: [app]).authenticate(body: old)
        #expect(n.environment == .sandbox && n.body.receiptData == "..." && n.body.subscriptionID == "1000000563776136")
    }
}
