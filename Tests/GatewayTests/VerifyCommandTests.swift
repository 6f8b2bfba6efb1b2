import Canonical
import Gateway
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
        let production = await command.run(file: Fixtures.url("v2-synthetic/notif-subscribed-initial-buy-production.json").path())
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
        #expect(await command.run(file: Fixtures.url("v2/notif-test-sandbox-2025.json").path()).error?.code == "unknown_bundle")

        options.bundleID = "com.loki-project.loki-messenger"
        options.environment = .production
        let production = try VerifyCommand(options: options, now: Self.now)
        #expect(await production.run(file: Fixtures.url("v2/notif-test-sandbox-2025.json").path()).error?.code == "environment_mismatch")
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
        #expect(VerifyCommand.expand(paths: ["/nonexistent/x.json", "a.expected.json"]) == ["/nonexistent/x.json", "a.expected.json"])
    }
}
