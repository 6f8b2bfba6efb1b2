import Canonical
import FoundationEssentials
import Gateway
import GatewayCLI
import ServiceKit
import Store
import TestSupport
import Testing

/// The `verify` command as a user runs it: options and a config file, no test-only trust.
@Suite struct VerifyCommandTests {
    static let now: @Sendable () -> Int64 = { TestPKI.now }

    @Test func configExtraRootAcceptsSandboxAndRefusesProduction() async throws {
        var options = VerifyCommand.Options()
        options.configPath = Fixtures.url("config/synthetic-sandbox.json").path()
        let command = try VerifyCommand(options: options, now: Self.now)
        let sandbox = await command.run(file: Fixtures.url("v2-synthetic/notif-did-renew.json").path())
        #expect(sandbox.ok && sandbox.events?.first?.kind == .renewal)
        let production = await command.run(
            file: Fixtures.url("v2-synthetic/notif-subscribed-initial-buy-production.json").path()
        )
        #expect(production.error?.code == "untrusted_root")
    }

    @Test func rootFlagBehavesLikeExtraRoots() async throws {
        var options = VerifyCommand.Options()
        options.extraRoots = [Fixtures.url("test-pki/root.der").path()]
        let command = try VerifyCommand(options: options, now: Self.now)
        let report = await command.run(file: Fixtures.url("v2-synthetic/notif-test.json").path())
        #expect(report.ok && report.bundleID == "com.example.gateway" && report.environment == .sandbox)
    }

    @Test func bundleFlagAppliesTheAppPolicy() async throws {
        var options = VerifyCommand.Options()
        options.bundleID = "com.example.other"
        options.environment = .sandbox
        let command = try VerifyCommand(options: options, now: Self.now)
        #expect(
            await command.run(file: Fixtures.url("v2/notif-test-sandbox-2025.json").path()).error?.code
                == "unknown_bundle"
        )

        options.bundleID = "com.loki-project.loki-messenger"
        options.environment = .production
        let production = try VerifyCommand(options: options, now: Self.now)
        #expect(
            await production.run(file: Fixtures.url("v2/notif-test-sandbox-2025.json").path()).error?.code
                == "environment_mismatch"
        )
    }

    @Test func unreadableFilesAndBadRootsAreReported() async throws {
        let command = try VerifyCommand(options: .init(), now: Self.now)
        #expect(await command.run(file: "/nonexistent/body.json").error?.code == "unreadable_file")
        var options = VerifyCommand.Options()
        options.extraRoots = [Fixtures.url("v2/notif-test-sandbox-2025.json").path()]
        #expect(throws: ConfigError.self) { try VerifyCommand(options: options, now: Self.now) }
    }
}

@Suite struct VerifyPathExpansionTests {
    @Test func aFolderStandsForItsBodiesWithoutGoldens() {
        let paths = VerifyCommand.expand(paths: [Fixtures.url("v2-negative").path()])
        #expect(paths.count == 7)
        #expect(paths.allSatisfy { $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json") })
        #expect(paths == paths.sorted())
    }

    @Test func filesAndUnknownPathsAreKeptAsGiven() {
        #expect(
            VerifyCommand.expand(paths: ["/nonexistent/x.json", "a.expected.json"]) == [
                "/nonexistent/x.json", "a.expected.json",
            ]
        )
    }
}

@Suite struct VerifyV1OptionsTests {
    static let now: @Sendable () -> Int64 = { 1_748_739_600_000 }
    static let secret = "0123456789abcdef0123456789abcdef"

    static func config(_ json: String) throws -> String {
        let path = try Scratch.directory("iapgw-verify") + "/config.json"
        try Data(json.utf8).write(to: URL(filePath: path))
        return path
    }

    @Test func sharedSecretEnvAcceptsTheBodysBundle() async throws {
        var options = VerifyCommand.Options()
        options.sharedSecretEnv = "FIXTURE_SECRET"
        let command = try VerifyCommand(options: options, environment: ["FIXTURE_SECRET": Self.secret], now: Self.now)
        let report = await command.run(file: Fixtures.url("v1-synthetic/did-renew.json").path())
        #expect(report.ok && report.version == "v1" && report.secretName == "FIXTURE_SECRET")
        #expect(report.events?.first?.verified == false)  // offline: built from the unsigned body
        let wrong = try VerifyCommand(options: options, environment: ["FIXTURE_SECRET": "nope"], now: Self.now)
        #expect(
            await wrong.run(file: Fixtures.url("v1-synthetic/did-renew.json").path()).error?.code == "bad_shared_secret"
        )
        #expect(throws: ConfigError.self) { try VerifyCommand(options: options, environment: [:], now: Self.now) }
    }

    @Test(arguments: ["v1-notif-cancel-prod-2019.json", "v1-notif-did-change-renewal-status-expired-prod-2019.json"])
    func sharedSecretEnvFindsTheBundleWhereTheAdapterDoes(_ name: String) async throws {
        // Real pre-2021 bodies that name their bundle only in latest_expired_receipt_info: `verify` had its own reading
        // of the claimed bundle, missed that field and refused them as unknown_bundle (serve accepted them).
        var options = VerifyCommand.Options()
        options.sharedSecretEnv = "FIXTURE_SECRET"
        let command = try VerifyCommand(
            options: options,
            environment: ["FIXTURE_SECRET": "<redacted: shared secret present in source>"],
            now: Self.now
        )
        let report = await command.run(file: Fixtures.url("v1/\(name)").path())
        #expect(report.ok, "\(String(describing: report.error))")
        #expect(report.bundleID?.hasPrefix("com.freeramble.") == true)
    }

    @Test func configSecretsComeFromTheEnvironment() async throws {
        var options = VerifyCommand.Options()
        options.configPath = try Self.config(
            #"{"apps": [{"bundle_id": "com.example.gateway", "app_apple_id": 1234567890, "shared_secret_env": ["APP_SECRET"]}]}"#
        )
        let ok = try VerifyCommand(options: options, environment: ["APP_SECRET": Self.secret], now: Self.now)
        #expect(await ok.run(file: Fixtures.url("v1-synthetic/did-renew.json").path()).ok)
        let unset = try VerifyCommand(options: options, environment: [:], now: Self.now)
        let report = await unset.run(file: Fixtures.url("v1-synthetic/did-renew.json").path())
        #expect(report.error?.code == "config_error" && report.error?.message.contains("APP_SECRET") == true)
    }
}
