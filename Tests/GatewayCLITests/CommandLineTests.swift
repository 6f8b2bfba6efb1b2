import Foundation
import Gateway
import ReportModel
import Reports
import Store
import TestSupport
import Testing

@testable import GatewayCLI

/// The command line: one usage text made of every command's part, and each command checking its own flags (a flag it
/// does not take, or one of another subcommand's, is a usage error with exit status 2, before any config is read).
@Suite struct CommandLineTests {
    /// What `command` throws for `arguments`; nil when it returned.
    static func error(_ command: any Command.Type, _ arguments: [String]) async -> CommandError? {
        do {
            _ = try await command.run(arguments)
            return nil
        } catch let error as CommandError {
            return error
        } catch {
            Issue.record("not a CommandError: \(error)")
            return nil
        }
    }

    /// Expects a usage error (status 2) whose message contains `message`.
    static func expectUsage(
        _ command: any Command.Type,
        _ arguments: [String],
        _ message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let error = await error(command, arguments)
        #expect(error?.status == 2, "\(command.name) \(arguments)", sourceLocation: sourceLocation)
        #expect(
            error?.message.contains(message) == true,
            "\(error?.message ?? "no error") lacks \(message)",
            sourceLocation: sourceLocation
        )
    }

    static let missingConfig = "/nonexistent/iap-gateway-test/config.json"

    @Test func theUsageTextIsEveryCommandsPartInOrder() {
        let usage = GatewayCLI.usage
        #expect(
            usage.hasPrefix(
                "iap-gateway — Apple App Store Server Notifications (V1 and V2) gateway\n\nUSAGE\n  iap-gateway verify "
            )
        )
        #expect(usage.hasSuffix("\n  iap-gateway help\n"))
        let names = GatewayCLI.commands.map { $0.name }
        #expect(Set(names).count == names.count)
        #expect(
            names == [
                "verify", "receipt", "receipts", "serve", "replay", "quarantine", "deliveries", "subscription",
                "report", "cutover",
                "migrate",
                "backfill",
                "reconcile", "migrate-store",
                "test-notification", "receive", "bench", "simulate", "schema",
            ]
        )
        for command in GatewayCLI.commands {
            #expect(command.usage.hasPrefix("  iap-gateway \(command.name)"), "\(command.name)")
            #expect(!command.usage.hasSuffix("\n"), "\(command.name): the usage text adds the line break")
            for line in command.usage.split(separator: "\n") {
                #expect(
                    line.hasPrefix("  iap-gateway \(command.name)") || line.hasPrefix("      "),
                    "\(command.name): \(line)"
                )
            }
        }
    }

    @Test func flagsOfNoCommandAreUsageErrors() async {
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "list", "--since", "7d"],
            "unknown option --since"
        )
        await Self.expectUsage(
            ReplayCommand.self,
            ["--config", Self.missingConfig, "--lane", "genuine"],
            "unknown option --lane"
        )
        await Self.expectUsage(
            SubscriptionCommand.self,
            ["--config", Self.missingConfig, "1", "--id", "2"],
            "unknown option --id"
        )
        await Self.expectUsage(
            ReportCommand.self,
            ["--config", Self.missingConfig, "--to", "v2"],
            "unknown option --to"
        )
        await Self.expectUsage(
            CutoverCommand.self,
            ["--config", Self.missingConfig, "b", "--to", "v2", "--format", "json"],
            "unknown option --format"
        )
        await Self.expectUsage(
            TestNotificationCommand.self,
            ["--config", Self.missingConfig, "--since", "1d"],
            "unknown option --since"
        )
        await Self.expectUsage(
            ServeCommand.self,
            ["--config", Self.missingConfig, "--listen", "x"],
            "unknown option --listen"
        )
        await Self.expectUsage(VerifyCommand.self, ["--force", "x.json"], "unknown option --force")
        await Self.expectUsage(ReplayCommand.self, ["--config"], "--config needs a value")
    }

    @Test func aSubcommandTakesOnlyItsOwnFlags() async {
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "list", "--id", "3"],
            "quarantine list does not take --id"
        )
        await Self.expectUsage(BenchCommand.self, ["soak", "--seconds", "1"], "bench soak does not take --seconds")
        await Self.expectUsage(
            BenchCommand.self,
            ["verify", "--no-delivery"],
            "bench verify does not take --no-delivery"
        )
        await Self.expectUsage(BenchCommand.self, ["flood", "--rate", "5"], "bench flood does not take --rate")
        await Self.expectUsage(BenchCommand.self, ["soak", "--store", "postgres"], "bench soak does not take --store")
        await Self.expectUsage(BenchCommand.self, ["fsync", "--count", "5"], "bench fsync does not take --count")
        await Self.expectUsage(
            BenchCommand.self,
            ["receipt-scale", "--apple-rate", "fast"],
            "--apple-rate must be production, sandbox or 1...100000 per second"
        )
        await Self.expectUsage(
            BenchCommand.self,
            ["receipt-scale", "--seconds", "10", "--hang-seconds", "10"],
            "--hang-seconds must be a number of seconds in [0, --seconds)"
        )
        await Self.expectUsage(BenchCommand.self, ["receipt-scale", "--customers", "0"], "--customers must be")
        await Self.expectUsage(
            BenchCommand.self,
            ["receipt-scale", "--count", "5"],
            "bench receipt-scale does not take"
        )
        await Self.expectUsage(BenchCommand.self, ["ingest", "--store", "mysql"], "--store must be sqlite or postgres")
        await Self.expectUsage(
            BenchCommand.self,
            ["ingest", "--instances", "2"],
            "--instances above 1 needs --store postgres"
        )
        await Self.expectUsage(
            BenchCommand.self,
            ["ingest", "--store", "postgres", "--instances", "0"],
            "--instances must be 1...8"
        )
        await Self.expectUsage(SimulateCommand.self, ["list", "--out", "x"], "simulate list does not take --out")
        await Self.expectUsage(
            SimulateCommand.self,
            ["pki", "--out", "x", "--listen", "127.0.0.1:1"],
            "simulate pki does not take --listen"
        )
        await Self.expectUsage(
            SimulateCommand.self,
            ["serve-apple", "--pki", "x", "--speed", "max"],
            "simulate serve-apple does not take --speed"
        )
        await Self.expectUsage(
            SimulateCommand.self,
            ["lifecycle", "refund", "--notify", "http://x"],
            "simulate lifecycle does not take --notify"
        )
        let lifecycle = [
            "lifecycle", "refund", "--pki", "x", "--bundle-id", "b", "--shared-secret-env", "PATH", "--to", "http://x",
        ]
        await Self.expectUsage(
            SimulateCommand.self,
            lifecycle + ["--version", "apple"],
            "--version apple needs --to URL and --apple URL"
        )
        await Self.expectUsage(
            SimulateCommand.self,
            lifecycle + ["--apple", "http://x"],
            "--apple goes with --version apple"
        )
        await Self.expectUsage(
            SimulateCommand.self,
            lifecycle + ["--version", "v3"],
            "--version must be v1, v2, both or apple"
        )
        // What a subcommand does take gets past the flag check, as far as the config.
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "list", "--lane", "genuine"],
            "config: "
        )
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "replay", "--lane", "genuine", "--id", "3"],
            "config: "
        )
    }

    @Test func argumentsACommandDoesNotTakeAreUsageErrors() async {
        await Self.expectUsage(
            ReplayCommand.self,
            ["--config", Self.missingConfig, "--dead-letters", "now"],
            "unexpected argument now"
        )
        await Self.expectUsage(
            SubscriptionCommand.self,
            ["--config", Self.missingConfig, "1", "2"],
            "unexpected argument 2"
        )
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "list", "all"],
            "unexpected argument all"
        )
        await Self.expectUsage(
            ReportCommand.self,
            ["--config", Self.missingConfig, "com.example"],
            "unexpected argument com.example"
        )
        await Self.expectUsage(
            CutoverCommand.self,
            ["--config", Self.missingConfig, "a", "b", "--to", "v1"],
            "unexpected argument b"
        )
        await Self.expectUsage(ServeCommand.self, ["--config", Self.missingConfig, "now"], "unexpected argument now")
        await Self.expectUsage(ReceiveCommand.self, ["127.0.0.1:9000"], "unexpected argument 127.0.0.1:9000")
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "x"],
            "unexpected argument x"
        )
        await Self.expectUsage(BenchCommand.self, ["verify", "ingest"], "unexpected argument ingest")
        await Self.expectUsage(SimulateCommand.self, ["list", "all"], "unexpected argument all")
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig],
            "quarantine needs list or replay"
        )
        await Self.expectUsage(BenchCommand.self, ["fast"], "bench needs a target")
        await Self.expectUsage(
            SimulateCommand.self,
            ["play"],
            "simulate needs pki, list, lifecycle, receipt or serve-apple"
        )
    }

    @Test func valuesAreCheckedWhereverTheFlagIs() async {
        // --environment: one rule for every command that takes it.
        let environment = "--environment must be production or sandbox"
        await Self.expectUsage(VerifyCommand.self, ["--environment", "Sandbox", "x.json"], environment)
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--environment", "Sandbox", "--since", "1d"],
            environment
        )
        await Self.expectUsage(
            TestNotificationCommand.self,
            ["--config", Self.missingConfig, "--bundle", "b", "--environment", "Sandbox"],
            environment
        )
        await Self.expectUsage(
            CutoverCommand.self,
            ["--config", Self.missingConfig, "b", "--to", "v1", "--environment", "Sandbox"],
            environment
        )
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "--until", "soon"],
            "--until: not a time"
        )
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "yesterday"],
            "--since: not a time"
        )
        await Self.expectUsage(
            ReportCommand.self,
            ["--config", Self.missingConfig, "--since", "yesterday"],
            "--since: not a time"
        )
        await Self.expectUsage(
            ReportCommand.self,
            ["--config", Self.missingConfig, "--format", "xml"],
            "--format must be table, json or html"
        )
        await Self.expectUsage(
            ServeCommand.self,
            ["--config", Self.missingConfig, "--demo-verify-time", "then"],
            "--demo-verify-time: not a time"
        )
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "replay", "--id", "x"],
            "--id must be a quarantine row id"
        )
        await Self.expectUsage(
            QuarantineCommand.self,
            ["--config", Self.missingConfig, "list", "--lane", "all"],
            "--lane must be untrusted or genuine"
        )
        await Self.expectUsage(BenchCommand.self, ["verify", "--seconds", "0"], "--seconds must be")
        await Self.expectUsage(BenchCommand.self, ["ingest", "--seconds", "nan"], "--seconds must be")
        await Self.expectUsage(BenchCommand.self, ["soak", "--minutes", "inf"], "--minutes must be")
        await Self.expectUsage(BenchCommand.self, ["soak", "--rate", "5001"], "--rate must be")
        await Self.expectUsage(BenchCommand.self, ["flood", "--count", "0"], "--count must be")
        await Self.expectUsage(
            VerifyCommand.self,
            ["--app-apple-id", "one", "x.json"],
            "--app-apple-id must be an integer"
        )
        await Self.expectUsage(
            TestNotificationCommand.self,
            ["--config", Self.missingConfig, "--bundle", "b"],
            "test-notification needs --environment production or sandbox"
        )
        await Self.expectUsage(BackfillCommand.self, ["--config", Self.missingConfig], "backfill needs --since T")
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "--max-pages", "0"],
            "--max-pages must be"
        )
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "--max-pages", "many"],
            "--max-pages must be"
        )
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "--max-bytes", "lots"],
            "--max-bytes must be"
        )
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "--max-bytes", "0MiB"],
            "--max-bytes must be"
        )
        await Self.expectUsage(
            BackfillCommand.self,
            ["--config", Self.missingConfig, "--since", "1d", "--resume-token", "p3"],
            "--resume-token needs --bundle and --environment"
        )
        await Self.expectUsage(
            BackfillCommand.self,
            [
                "--config", Self.missingConfig, "--since", "1d", "--resume-token", "p3", "--bundle", "b",
                "--environment", "sandbox", "--max-pages", "5",
            ],
            "config: "
        )
        await Self.expectUsage(SubscriptionCommand.self, ["1"], "subscription needs --config FILE")
    }

    @Test func theMigrateStoreFlagsAreCheckedBeforeAnyStoreIsTouched() async {
        let target = ["--to-postgres-env", "IAPGW_TEST_MIGRATE_TARGET_UNSET"]
        await Self.expectUsage(
            MigrateStoreCommand.self,
            ["--from", "sqlite:/tmp/x.db"],
            "migrate-store needs --to-postgres-env VAR"
        )
        // The connection string given in place of a variable's name is refused, and not echoed (it holds a password).
        let url = "postgresql://gw:s3cret@db/gateway"
        await Self.expectUsage(
            MigrateStoreCommand.self,
            ["--from", "sqlite:/tmp/x.db", "--to-postgres-env", url],
            "takes the name of an environment variable"
        )
        #expect(
            await Self.error(MigrateStoreCommand.self, ["--from", "sqlite:/tmp/x.db", "--to-postgres-env", url])?
                .message.contains("s3cret") == false
        )
        await Self.expectUsage(
            MigrateStoreCommand.self,
            target,
            "migrate-store needs --config FILE or --from sqlite:PATH"
        )
        await Self.expectUsage(MigrateStoreCommand.self, ["--from", "/tmp/x.db"] + target, "--from takes sqlite:PATH")
        await Self.expectUsage(MigrateStoreCommand.self, ["--config", Self.missingConfig] + target, "config: ")
        await Self.expectUsage(
            MigrateStoreCommand.self,
            ["--from", "sqlite:/tmp/x.db"] + target,
            "IAPGW_TEST_MIGRATE_TARGET_UNSET is not set"
        )
        await Self.expectUsage(
            MigrateStoreCommand.self,
            ["--from", "sqlite:/tmp/x.db", "--force"] + target,
            "unknown option --force"
        )
        await Self.expectUsage(
            MigrateStoreCommand.self,
            ["--from", "sqlite:/tmp/x.db", "extra"] + target,
            "unexpected argument extra"
        )
        // A refusal is a failure (exit 1): here, no store at the path (PATH is set, and never reached as a connection string).
        let refusal = await Self.error(
            MigrateStoreCommand.self,
            ["--from", "sqlite:/nonexistent/iap-gateway-test/gateway.db", "--to-postgres-env", "PATH"]
        )
        #expect(refusal?.status == 1 && refusal?.message.contains("no SQLite store") == true)
    }
}

/// Commands that read or act on an existing store never create one: a mistyped `store.sqlite` is refused with its path,
/// and nothing is made on disk (only `serve`, and `migrate-store`'s target, create a store).
@Suite struct MissingStoreTests {
    static func config(_ folder: String) throws -> (config: String, store: String) {
        let store = folder + "/nowhere/gateway.db"
        let json = """
            { "store": { "sqlite": "\(store)" },
              "apps": [ { "bundle_id": "com.example.app", "environments": ["sandbox"],
                          "notification_url": { "sandbox": "https://gw.example/notifications" } } ] }
            """
        try Data(json.utf8).write(to: URL(filePath: folder + "/gateway.json"))
        return (folder + "/gateway.json", store)
    }

    static var commands: [(any Command.Type, [String])] {
        [
            (ReportCommand.self, []),
            (SubscriptionCommand.self, ["2000000000000001"]),
            (QuarantineCommand.self, ["list"]),
            (QuarantineCommand.self, ["replay"]),
            (ReplayCommand.self, ["--since", "1d"]),
            (CutoverCommand.self, ["com.example.app", "--environment", "sandbox", "--to", "v2"]),
            (MigrateCommand.self, ["com.example.app", "--environment", "sandbox", "--to", "v2", "--dry-run"]),
            (BackfillCommand.self, ["--since", "1d"]),
            (ReconcileCommand.self, []),
            (TestNotificationCommand.self, ["--bundle", "com.example.app", "--environment", "sandbox"]),
        ]
    }

    @Test(arguments: commands.indices)
    func aStoreThatDoesNotExistIsRefusedNotCreated(_ i: Int) async throws {
        let (command, arguments) = Self.commands[i]
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (config, store) = try Self.config(folder)
        let error = await CommandLineTests.error(command, ["--config", config] + arguments)
        #expect(error?.status == 2, "\(command.name): \(error?.message ?? "no error")")
        #expect(error?.message.contains("no store at \(store)") == true, "\(command.name): \(error?.message ?? "-")")
        #expect(!FileManager.default.fileExists(atPath: folder + "/nowhere"), "\(command.name) made the folder")
    }

    @Test func theReportCommandAsAProcessSaysSoAndExits2() throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (config, store) = try Self.config(folder)
        let process = Process()
        process.executableURL = URL(filePath: MultiInstanceProcessTests.binary)
        process.arguments = ["report", "--config", config]
        let (out, err) = (Pipe(), Pipe())
        (process.standardOutput, process.standardError) = (out, err)
        try process.run()
        let printed = out.fileHandleForReading.readDataToEndOfFile()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
        #expect(printed.isEmpty, "no report of an empty store")
        #expect(said.contains("no store at \(store)"), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/nowhere"))
    }
}

/// `replay`'s selection: exactly one of `--id`, `--since [--until]` and `--dead-letters`.
@Suite struct ReplaySelectionTests {
    static let now: Int64 = 1_748_736_000_000

    static func selection(_ arguments: [String]) throws(CommandError) -> Operations.ReplaySelection {
        try ReplayCommand.selection(
            try Arguments(arguments, valueFlags: ["config", "id", "since", "until"], switchFlags: ["dead-letters"]),
            now: now
        )
    }

    static func describe(_ s: Operations.ReplaySelection) -> String {
        switch s {
        case .eventID(let id): "id \(id)"
        case .range(let since, let until): "range \(since) \(until)"
        case .deadLetters: "dead letters"
        }
    }

    @Test func oneSelection() throws {
        #expect(Self.describe(try Self.selection(["--id", "e1"])) == "id e1")
        #expect(Self.describe(try Self.selection(["--dead-letters"])) == "dead letters")
        #expect(Self.describe(try Self.selection(["--since", "1d"])) == "range \(Self.now - 86_400_000) \(Int64.max)")
        #expect(
            Self.describe(try Self.selection(["--since", "2d", "--until", "1d"]))
                == "range \(Self.now - 172_800_000) \(Self.now - 86_400_000)"
        )
    }

    @Test func noneOrSeveralIsAUsageError() {
        for arguments in [
            [], ["--id", "e1", "--dead-letters"], ["--since", "1d", "--id", "e1"], ["--until", "1d"],
            ["--since", "later"],
        ] {
            #expect(throws: CommandError.self, "\(arguments)") { try Self.selection(arguments) }
        }
    }
}

/// The one-shot commands' store: closed however the command ends.
@Suite struct OneShotStoreTests {
    @Test func theStoreIsClosedWhenTheCommandFails() throws {
        let folder = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            var config = GatewayConfig()
            config.sqlitePath = folder + "/gateway.db"
            try SQLiteStore(path: config.sqlitePath).close()  // as `serve` leaves it
            struct Boom: Error {}
            var kept: MaintenanceStore?
            #expect(throws: Boom.self) {
                try withStore(config) { store in
                    kept = store
                    _ = try store.operations.status()
                    throw Boom()
                }
            }
            let store = try #require(kept)
            #expect(throws: (any Error).self) { try store.store.read { tx in try tx.counts() } }
            #expect(throws: (any Error).self) { try store.store.write { _ in 1 } }
            // And when it succeeds.
            let n = try withStore(config) { store in
                kept = store
                return try store.operations.replay(.deadLetters)
            }
            #expect(n == 0)
            #expect(throws: (any Error).self) { try kept?.store.read { tx in try tx.counts() } }
        }
    }
}

/// `serve` gives the admin API the Reports module's renderer; the service alone answers JSON, byte for byte the same.
@Suite struct ServeReportRendererTests {
    static let report = CompareReport(
        generatedAt: 1_748_736_000_000,
        since: 1_748_131_200_000,
        until: 1_748_736_000_000,
        rule: ReadinessRule(),
        bundles: [
            BundleReport(
                bundleID: "com.example.app",
                environment: "sandbox",
                authority: "v1",
                eventsBySource: ["v1": 3, "v2": 3],
                pairs: 3,
                agreements: 2,
                disagreementsByField: ["expires_date": .init(count: 1, examples: ["1000000001"])],
                oneSided: .init(v1Only: 0, v2Only: 0, examples: []),
                daily: [],
                verdict: .notReady,
                rule: ReadinessRule().text,
                reasons: ["agreement 66.6 %; the rule needs 99.5 %"],
                cutovers: []
            )
        ]
    )

    @Test func serveRendersEveryFormat() throws {
        let renderer = ServeCommand.dependencies(demoSandboxVerifyTime: nil).reportRenderer
        for format in ReportRenderer.formats {
            let served = try #require(renderer(Self.report, format, "n0nce"))
            let direct = try #require(ReportRenderer.render(Self.report, format: format, styleNonce: "n0nce"))
            #expect(served.contentType == direct.contentType && served.body == direct.body)
        }
        #expect(renderer(Self.report, "xml", "n0nce") == nil)
        #expect(ServeCommand.dependencies(demoSandboxVerifyTime: 42).demoSandboxVerifyTime == 42)
    }

    @Test func withoutRendererTheServiceOffersTheSameJSON() throws {
        let renderer = GatewayService.Dependencies.live().reportRenderer
        let json = try #require(renderer(Self.report, "json", "n0nce"))
        #expect(json.contentType == "application/json" && json.body == ReportRenderer.json(Self.report))
        #expect(renderer(Self.report, "html", "n0nce") == nil && renderer(Self.report, "table", "n0nce") == nil)
    }
}
