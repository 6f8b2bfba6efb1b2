import AppStoreConnect
import Canonical
import Crypto
import Gateway
import HTTPClient
import ServiceKit
import Simulator
import TestSupport
import Testing
import WireJSON

/// `app_store_connect` and `apps[].notification_url`: what is read, what is refused with which field, the client the
/// settings make, and the team key kept out of stored and logged bytes.
@Suite struct AppStoreConnectConfigTests {
    static let connect =
        #""app_store_connect": {"issuer_id": "57246542-96fe-1a63-e053-0824d011072a", "key_id": "8XK2JPZ4QW", "private_key_env": "ASC_KEY"}"#

    @Test func theSettingsAndEachAppsNotificationURLsAreRead() throws {
        let c = try GatewayConfigTests.parse(
            """
            { \(Self.connect),
              "apps": [ { "bundle_id": "a", "app_apple_id": 1,
                          "notification_url": { "production": "https://iap.example.com/notifications", "sandbox": "http://127.0.0.1:8080/notifications" } },
                        { "bundle_id": "b", "environments": ["sandbox"], "notification_url": { "sandbox": "https://iap.example.com/n" } },
                        { "bundle_id": "c", "environments": ["sandbox"] } ] }
            """
        )
        #expect(
            c.appStoreConnect
                == GatewayConfig.AppStoreConnect(
                    issuerID: "57246542-96fe-1a63-e053-0824d011072a",
                    keyID: "8XK2JPZ4QW",
                    privateKeyEnv: "ASC_KEY",
                    url: "https://api.appstoreconnect.apple.com"
                )
        )
        #expect(
            c.apps[0].notificationURL == [
                .production: "https://iap.example.com/notifications", .sandbox: "http://127.0.0.1:8080/notifications",
            ]
        )
        #expect(c.apps[1].notificationURL == [.sandbox: "https://iap.example.com/n"])
        #expect(c.apps[2].notificationURL.isEmpty)
        #expect(try GatewayConfigTests.parse(#"{"app_store_connect": null}"#).appStoreConnect == nil)
        #expect(try GatewayConfigTests.parse("{}").appStoreConnect == nil)
        let local = try GatewayConfigTests.parse(
            #"{"app_store_connect": {"issuer_id": "i", "key_id": "k", "private_key_env": "V", "url": "http://127.0.0.1:8091"}}"#
        )
        #expect(local.appStoreConnect?.url == "http://127.0.0.1:8091")
    }

    @Test(arguments: [
        (#"{"app_store_connect": {"key_id": "k", "private_key_env": "V"}}"#, "app_store_connect.issuer_id"),
        (
            #"{"app_store_connect": {"issuer_id": "", "key_id": "k", "private_key_env": "V"}}"#,
            "app_store_connect.issuer_id"
        ),
        (#"{"app_store_connect": {"issuer_id": "i", "private_key_env": "V"}}"#, "app_store_connect.key_id"),
        (#"{"app_store_connect": {"issuer_id": "i", "key_id": "k"}}"#, "app_store_connect.private_key_env"),
        (
            #"{"app_store_connect": {"issuer_id": "i", "key_id": 7, "private_key_env": "V"}}"#,
            "app_store_connect.key_id"
        ),
        (
            #"{"app_store_connect": {"issuer_id": "i", "key_id": "k", "private_key_env": "V", "url": "api.appstoreconnect.apple.com"}}"#,
            "app_store_connect.url"
        ),
        (
            #"{"app_store_connect": {"issuer_id": "i", "key_id": "k", "private_key_env": "V", "private_key": "-----BEGIN"}}"#,
            "app_store_connect.private_key"
        ),
        (#"{"app_store_connect": "ASC_KEY"}"#, "app_store_connect"),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "notification_url": "https://x/n"}]}"#,
            "apps[0].notification_url"
        ),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "notification_url": {"sandbox": "ftp://x/n"}}]}"#,
            "apps[0].notification_url.sandbox"
        ),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "notification_url": {"staging": "https://x/n"}}]}"#,
            "apps[0].notification_url.staging"
        ),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "notification_url": {"production": "https://x/n"}}]}"#,
            "apps[0].notification_url.production"
        ),
        (
            #"{"apps": [{"bundle_id": "a", "environments": ["sandbox"], "notification_url": {"sandbox": 1}}]}"#,
            "apps[0].notification_url.sandbox"
        ),
    ])
    func aBadSettingNamesItsField(_ json: String, _ field: String) {
        #expect(GatewayConfigTests.field(json) == field)
    }

    static func config() throws -> GatewayConfig {
        try GatewayConfigTests.parse("{ \(connect) }")
    }

    @Test func theClientIsMadeFromTheSettingsAndTheKeysVariable() async throws {
        let key = try PrivateKey.generateP256()
        let transport = ScriptedTransport { _ throws(HTTPClientError) in
            HTTPResponse(
                status: 200,
                body: Array(#"{"data":{"type":"apps","id":"1","attributes":{"bundleId":"a"}}}"#.utf8)
            )
        }
        #expect(
            try AppStoreConnectClient.make(
                config: GatewayConfigTests.parse("{}"),
                environment: [:],
                transport: transport,
                now: { 0 }
            ) == nil
        )
        let client = try #require(
            try AppStoreConnectClient.make(
                config: Self.config(),
                environment: ["ASC_KEY": key.pemPKCS8],
                transport: transport,
                now: { 1_748_736_000_000 }
            )
        )
        #expect(client.baseURL == "https://api.appstoreconnect.apple.com")
        #expect(
            client.credentials.keyID == "8XK2JPZ4QW"
                && client.credentials.issuerID == "57246542-96fe-1a63-e053-0824d011072a"
        )
        _ = try await client.app(id: "1")
        let request = try #require(transport.requests.first)
        #expect(request.url.hasPrefix("https://api.appstoreconnect.apple.com/v1/apps/1?"))
        let bearer = try #require(request.headers.first { $0.name == "Authorization" }?.value.dropFirst(7))
        #expect(
            try AppStoreConnectToken.verify(String(bearer), publicKey: key.publicKey, now: 1_748_736_000).keyID
                == "8XK2JPZ4QW"
        )
    }

    @Test(
        arguments: [
            ([:], "environment variable ASC_KEY is not set"),
            (["ASC_KEY": ""], "environment variable ASC_KEY is not set"),
            (
                ["ASC_KEY": "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"],
                "ASC_KEY does not hold a P-256 private key in PEM (the .p8 file of an App Store Connect API key)"
            ),
        ] as [([String: String], String)]
    )
    func anUnsetOrUnusableKeyNamesTheVariablesField(_ environment: [String: String], _ message: String) throws {
        let config = try Self.config()
        #expect {
            _ = try AppStoreConnectClient.make(
                config: config,
                environment: environment,
                transport: ScriptedTransport(results: []),
                now: { 0 }
            )
        } throws: { error in
            (error as? ConfigError)?.field == "app_store_connect.private_key_env"
                && (error as? ConfigError)?.message == message
        }
        // A P-384 key is no ES256 key either; the error never holds the key.
        let p384 = try PrivateKey.generateP384().pemPKCS8
        do {
            _ = try AppStoreConnectClient.make(
                config: config,
                environment: ["ASC_KEY": p384],
                transport: ScriptedTransport(results: []),
                now: { 0 }
            )
            Issue.record("a P-384 key was taken")
        } catch {
            #expect(error.field == "app_store_connect.private_key_env" && !error.description.contains("PRIVATE KEY"))
        }
    }

    @Test func theTeamKeyIsKeptOutOfStoredAndLoggedBytes() throws {
        let iap = try PrivateKey.generateP256().pemPKCS8
        let team = try PrivateKey.generateP256().pemPKCS8
        let config = try GatewayConfigTests.parse(
            """
            { \(Self.connect), "app_store_api": {"issuer_id": "i", "key_id": "k", "private_key_env": "IAP_KEY"} }
            """
        )
        let redactor = config.secretRedactor(environment: ["ASC_KEY": team, "IAP_KEY": iap])
        for pem in [team, iap] {
            for line in pem.split(separator: "\n") where !line.hasPrefix("-----") {
                let body = Array(#"{"note":"leaked \#(line) here"}"#.utf8)
                let redacted = String(decoding: redactor.redact(body), as: UTF8.self)
                #expect(!redacted.contains(String(line)), "every line of both keys is found")
            }
        }
    }
}
