import ServiceKit
import Testing

@testable import Gateway

/// The secrets a config names, read from the environment.
@Suite struct ServiceSecretsTests {
    static let secret = "whsec_ZXhhbXBsZS13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5"
    static let config = """
        { "admin": { "token_env": "TOKEN" },
          "apps": [ { "bundle_id": "a", "app_apple_id": 1 },
                    { "bundle_id": "b", "app_apple_id": 2, "shared_secret_env": ["B_OLD", "B_NEW"] } ],
          "downstreams": [ { "name": "legacy", "kind": "v1_passthrough", "url": "http://127.0.0.1:1/v1" },
                           { "name": "main", "url": "http://127.0.0.1:1/events", "secret_env": ["HOOK"] } ] }
        """

    static func secrets(_ environment: [String: String]) throws -> ServiceSecrets {
        try ServiceSecrets(config: GatewayConfigTests.parse(config), environment: environment)
    }

    @Test func everySecretIsReadFromTheEnvironment() throws {
        let s = try Self.secrets(["B_OLD": "old", "B_NEW": "new", "HOOK": Self.secret, "TOKEN": "t0ken"])
        #expect(s.v1Apps.map(\.bundleID) == ["a", "b"])
        #expect(s.v1Secrets.map(\.name) == ["B_OLD", "B_NEW"])
        #expect(Array(s.signers.keys) == ["main"])
        #expect(s.adminToken == Array("t0ken".utf8))
    }

    @Test func anUnsetOrEmptyTokenTurnsTheAdminAPIOff() throws {
        #expect(try Self.secrets(["B_OLD": "o", "B_NEW": "n", "HOOK": Self.secret]).adminToken == nil)
        #expect(try Self.secrets(["B_OLD": "o", "B_NEW": "n", "HOOK": Self.secret, "TOKEN": ""]).adminToken == nil)
    }

    @Test(
        arguments: [
            (["B_OLD": "o", "HOOK": secret], "apps[1].shared_secret_env", "environment variable B_NEW is not set"),
            (["B_OLD": "o", "B_NEW": "n"], "downstreams[1].secret_env", "environment variable HOOK is not set"),
            (
                ["B_OLD": "o", "B_NEW": "n", "HOOK": ""], "downstreams[1].secret_env",
                "environment variable HOOK is not set"
            ),
            (
                ["B_OLD": "o", "B_NEW": "n", "HOOK": "whsec_c2hvcnQ="], "downstreams[1].secret_env",
                "HOOK is not a whsec_ secret (base64 of at least 16 bytes)"
            ),
        ] as [([String: String], String, String)]
    )
    func aMissingOrBadSecretNamesItsField(_ environment: [String: String], _ field: String, _ message: String) {
        #expect {
            try Self.secrets(environment)
        } throws: { error in
            (error as? ConfigError)?.field == field && (error as? ConfigError)?.message == message
        }
    }
}
