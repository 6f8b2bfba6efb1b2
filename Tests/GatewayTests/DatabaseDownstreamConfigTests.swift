import Foundation
import ServiceKit
import TestSupport
import Testing

@testable import Gateway

/// `downstreams[]` of kind `database`: parsing, validation, the connection string read at start, routing.
@Suite struct DatabaseDownstreamConfigTests {
    static func config(_ downstreams: String, store: String = "") -> String {
        """
        { \(store) "apps": [ { "bundle_id": "a", "app_apple_id": 1, "environments": ["production", "sandbox"] } ],
          "downstreams": [ \(downstreams) ] }
        """
    }

    @Test func postgresAndSQLiteTargetsAreRead() throws {
        let c = try GatewayConfigTests.parse(
            Self.config(
                """
                { "name": "warehouse", "kind": "database", "url_env": "TEAM_DATABASE_URL", "environments": ["production", "sandbox"],
                  "shadow": true, "max_attempts": 30, "concurrency": 2 },
                { "name": "local", "kind": "database", "sqlite": "team/iap.db", "schema": "iap" },
                { "name": "archive", "kind": "database", "url_env": "TEAM_DATABASE_URL", "schema": "iap_archive_2" }
                """
            )
        )
        let warehouse = try #require(c.downstreams.first)
        #expect(warehouse.kind == .database && warehouse.url.isEmpty && warehouse.shadow && warehouse.maxAttempts == 30)
        #expect(warehouse.database == .postgres(urlEnv: "TEAM_DATABASE_URL", schema: "iap"))
        #expect(c.downstreams[1].database == .sqlite(path: "/etc/iapgw/team/iap.db", prefix: "iap"))
        #expect(c.downstreams[1].environments == [.production])
        #expect(c.downstreams[2].database == .postgres(urlEnv: "TEAM_DATABASE_URL", schema: "iap_archive_2"))
    }

    @Test(
        arguments: [
            (
                #"{ "name": "d", "kind": "database", "url_env": "U", "sqlite": "x.db" }"#, "downstreams[0].url_env",
                "exactly one of url_env"
            ),
            (#"{ "name": "d", "kind": "database" }"#, "downstreams[0].url_env", "exactly one of url_env"),
            (
                #"{ "name": "d", "kind": "database", "url_env": "" }"#, "downstreams[0].url_env",
                "must name an environment variable"
            ),
            (
                #"{ "name": "d", "kind": "database", "url_env": "U", "url": "http://127.0.0.1:1/" }"#,
                "downstreams[0].url", "does not apply"
            ),
            (
                #"{ "name": "d", "kind": "database", "sqlite": "x.db", "secret_env": "S" }"#,
                "downstreams[0].secret_env", "does not apply"
            ),
            (
                #"{ "name": "d", "kind": "database", "sqlite": "x.db", "include_raw": true }"#,
                "downstreams[0].include_raw", "does not apply"
            ),
            (
                #"{ "name": "d", "kind": "database", "url_env": "U", "schema": "Billing" }"#, "downstreams[0].schema",
                "lowercase"
            ),
            (
                #"{ "name": "d", "kind": "database", "url_env": "U", "schema": "pg_iap" }"#, "downstreams[0].schema",
                "lowercase"
            ),
            (
                #"{ "name": "d", "kind": "database", "url_env": "U", "schema": "9iap" }"#, "downstreams[0].schema",
                "lowercase"
            ),
            (
                #"{ "name": "d", "kind": "database", "url_env": "U", "schema": "iap;drop" }"#, "downstreams[0].schema",
                "lowercase"
            ),
            (
                #"{ "name": "d", "url": "http://127.0.0.1:1/", "url_env": "U" }"#, "downstreams[0].url_env",
                "applies only"
            ),
            (
                #"{ "name": "d", "kind": "v1_passthrough", "url": "http://127.0.0.1:1/", "sqlite": "x.db" }"#,
                "downstreams[0].sqlite", "applies only"
            ),
            (
                #"{ "name": "d", "url": "http://127.0.0.1:1/", "schema": "iap" }"#, "downstreams[0].schema",
                "applies only"
            ),
            (#"{ "name": "d", "kind": "warehouse", "url_env": "U" }"#, "downstreams[0].kind", #""database""#),
            (
                #"{ "name": "d", "kind": "database", "sqlite": "data/gateway.db" }"#, "downstreams[0].sqlite",
                "the gateway's own store"
            ),
            (
                #"{ "name": "d", "kind": "database", "sqlite": "x.db" }, { "name": "e", "kind": "database", "sqlite": "/etc/iapgw/x.db" }"#,
                "downstreams[1].sqlite", "downstream \"d\" already writes these tables"
            ),
            (
                #"{ "name": "d", "kind": "database", "url_env": "U" }, { "name": "e", "kind": "database", "url_env": "U", "schema": "iap" }"#,
                "downstreams[1].url_env", "already writes these tables"
            ),
        ] as [(String, String, String)]
    )
    func aBadDatabaseDownstreamNamesItsField(_ downstreams: String, _ field: String, _ message: String) {
        #expect {
            try GatewayConfigTests.parse(Self.config(downstreams))
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.field == field && error.message.contains(message)
        }
    }

    @Test func differentPrefixesMayShareASQLiteFile() throws {
        let c = try GatewayConfigTests.parse(
            Self.config(
                #"{ "name": "d", "kind": "database", "sqlite": "x.db" }, { "name": "e", "kind": "database", "sqlite": "x.db", "schema": "e" }"#
            )
        )
        #expect(c.downstreams.count == 2)
    }

    static let postgres = config(#"{ "name": "warehouse", "kind": "database", "url_env": "TEAM_DB" }"#)

    @Test func theConnectionStringIsReadAtStart() throws {
        let url = "postgresql://writer:s3cret@db.internal:5432/billing?sslmode=verify-full"
        let secrets = try ServiceSecrets(config: GatewayConfigTests.parse(Self.postgres), environment: ["TEAM_DB": url])
        #expect(secrets.databaseURLs == ["warehouse": url])
        #expect(secrets.signers.isEmpty)
        let sqlite = try ServiceSecrets(
            config: GatewayConfigTests.parse(Self.config(#"{ "name": "w", "kind": "database", "sqlite": "x.db" }"#)),
            environment: [:]
        )
        #expect(sqlite.databaseURLs.isEmpty)
    }

    @Test(
        arguments: [
            ([:], "environment variable TEAM_DB is not set"),
            (["TEAM_DB": ""], "environment variable TEAM_DB is not set"),
            (
                ["TEAM_DB": "host=db.internal password=s3cret-value port"],
                "TEAM_DB is not a PostgreSQL connection string (URI or key=value)"
            ),
        ] as [([String: String], String)]
    )
    func aMissingOrUnparseableConnectionStringStopsTheStart(_ environment: [String: String], _ message: String) throws {
        let config = try GatewayConfigTests.parse(Self.postgres)
        #expect {
            try ServiceSecrets(config: config, environment: environment)
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.field == "downstreams[0].url_env" && error.message == message
                && !error.message.contains("s3cret")
        }
    }

    @Test func databaseDownstreamsTakeEventsNotPassThroughBodies() throws {
        let router = Router(
            config: try GatewayConfigTests.parse(
                Self.config(
                    """
                    { "name": "db", "kind": "database", "url_env": "U", "environments": ["production", "sandbox"] },
                    { "name": "shadowdb", "kind": "database", "sqlite": "x.db", "shadow": true },
                    { "name": "legacy", "kind": "v1_passthrough", "url": "http://127.0.0.1:1/" }
                    """
                )
            )
        )
        #expect(
            router.eventTargets(bundleID: "a", environment: .production, authoritative: true) == ["db", "shadowdb"]
        )
        #expect(router.eventTargets(bundleID: "a", environment: .production, authoritative: false) == ["shadowdb"])
        #expect(router.eventTargets(bundleID: "a", environment: .sandbox, authoritative: true) == ["db"])
        #expect(router.passthroughTargets(bundleID: "a", environment: .production) == ["legacy"])
    }
}

/// "Not the gateway's own store" and "not another downstream's tables" judged by the file a path names, not by its
/// text: `..`, `.`, doubled slashes, a symbolic link to the file or to its folder, a hard link — whether or not the
/// store file exists yet (the config is read before the store is opened).
@Suite struct DownstreamFileIdentityTests {
    /// A scratch folder holding `sub/` (the store's folder), `link` → `sub`, and — once the store file exists —
    /// `alias.db` → `sub/gw.db` and the hard link `hard.db`.
    static func folder(storeExists: Bool) throws -> String {
        let base = try Scratch.directory()
        let fm = FileManager.default
        try fm.createDirectory(atPath: base + "/sub", withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: base + "/link", withDestinationPath: base + "/sub")
        // A link to the store file works before the file exists too: it is dangling until the store is created.
        try fm.createSymbolicLink(atPath: base + "/alias.db", withDestinationPath: "sub/gw.db")
        if storeExists {
            #expect(fm.createFile(atPath: base + "/sub/gw.db", contents: nil))
            try fm.linkItem(atPath: base + "/sub/gw.db", toPath: base + "/hard.db")
        }
        return base
    }

    static func parse(_ downstreams: String, base: String) throws(ConfigError) -> GatewayConfig {
        let json = """
            { "store": { "sqlite": "sub/gw.db" },
              "apps": [ { "bundle_id": "a", "app_apple_id": 1, "environments": ["production"] } ],
              "downstreams": [ \(downstreams) ] }
            """
        return try GatewayConfig.parse(Array(json.utf8), baseDirectory: base)
    }

    static let ownStore: [(String, Bool)] = [
        ("sub/../sub/gw.db", false), ("sub/../sub/gw.db", true), ("./sub/./gw.db", false), ("sub//gw.db", true),
        ("alias.db", false), ("alias.db", true), ("link/gw.db", false), ("link/gw.db", true),
        ("link/../sub/gw.db", true),
        ("hard.db", true),
    ]

    @Test(arguments: ownStore)
    func anotherPathToTheGatewaysOwnStoreIsRefused(_ path: String, _ storeExists: Bool) throws {
        let base = try Self.folder(storeExists: storeExists)
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect {
            try Self.parse(#"{ "name": "d", "kind": "database", "sqlite": "\#(path)" }"#, base: base)
        } throws: { error in
            let e = error as? ConfigError
            return e?.field == "downstreams[0].sqlite" && e?.message.contains("the gateway's own store") == true
        }
    }

    @Test(arguments: [
        ("sub/team.db", false), ("sub/team.db", true), ("link/team.db", true), ("gw.db", true), ("team.db", false),
    ])
    func aDifferentFileIsAccepted(_ path: String, _ storeExists: Bool) throws {
        let base = try Self.folder(storeExists: storeExists)
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(FileManager.default.createFile(atPath: base + "/team.db", contents: nil))
        let config = try Self.parse(#"{ "name": "d", "kind": "database", "sqlite": "\#(path)" }"#, base: base)
        #expect(config.downstreams.first?.database == .sqlite(path: base + "/" + path, prefix: ""))
    }

    @Test func twoPathsToOneFileAreOneDownstreamsTables() throws {
        let base = try Self.folder(storeExists: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect {
            try Self.parse(
                #"{ "name": "d", "kind": "database", "sqlite": "sub/team.db" }, { "name": "e", "kind": "database", "sqlite": "link/team.db" }"#,
                base: base
            )
        } throws: { error in
            let e = error as? ConfigError
            return e?.field == "downstreams[1].sqlite"
                && e?.message.contains("downstream \"d\" already writes these tables") == true
        }
    }
}
