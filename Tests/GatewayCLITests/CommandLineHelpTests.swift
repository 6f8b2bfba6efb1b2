import Canonical
import Foundation
import Synchronization
import Testing

@testable import GatewayCLI

/// `iap-gateway CMD --help`, `iap-gateway --version`, and the usage shown beside an unknown flag: what the command line
/// itself says, through ``GatewayCLI/main(_:output:)`` as the executable runs it.
@Suite struct CommandLineHelpTests {
    /// What one run of the command line wrote and returned.
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    final class Capture: Sendable {
        private let out = Mutex("")
        private let err = Mutex("")
        var output: GatewayCLI.Output {
            GatewayCLI.Output(
                stdout: { s in self.out.withLock { $0 += s } },
                stderr: { s in self.err.withLock { $0 += s } }
            )
        }
        var stdout: String { out.withLock { $0 } }
        var stderr: String { err.withLock { $0 } }
    }

    /// `iap-gateway ARGUMENTS…`, in this process.
    static func run(_ arguments: String...) async -> Run { await run(arguments) }

    static func run(_ arguments: [String]) async -> Run {
        let capture = Capture()
        let status = await GatewayCLI.main(["iap-gateway"] + arguments, output: capture.output)
        return Run(status: status, stdout: capture.stdout, stderr: capture.stderr)
    }

    static let commandNames = GatewayCLI.commands.map { $0.name }

    static func command(_ name: String) throws -> any Command.Type {
        try #require(GatewayCLI.commands.first { $0.name == name })
    }

    // MARK: --help

    @Test(arguments: commandNames)
    func everyCommandAnswersHelpWithItsUsage(_ name: String) async throws {
        let command = try Self.command(name)
        for flag in ["--help", "-h"] {
            let run = await Self.run(name, flag)
            #expect(run.status == 0, "\(name) \(flag)")
            #expect(run.stdout == command.usage + "\n", "\(name) \(flag)")
            #expect(run.stderr.isEmpty, "\(name) \(flag): \(run.stderr)")
        }
    }

    @Test func helpComesBeforeEveryOtherCheck() async throws {
        // No config, a config that does not exist, an unknown flag, a missing or extra argument: still the usage.
        let cases: [[String]] = [
            ["migrate", "--help"], ["migrate", "BUNDLE", "--to", "v2", "-h"],
            ["serve", "--config", CommandLineTests.missingConfig, "--help"],
            ["replay", "--no-such-flag", "--help"], ["verify", "--help"], ["subscription", "1", "2", "-h"],
            ["migrate-store", "--to-postgres-env", "-h"], ["receive", "--listen", "nowhere", "--help"],
        ]
        for arguments in cases {
            let command = try Self.command(arguments[0])
            let run = await Self.run(arguments)
            #expect(run.status == 0 && run.stdout == command.usage + "\n" && run.stderr.isEmpty, "\(arguments)")
        }
    }

    @Test func afterADoubleDashHelpIsAnArgument() {
        #expect(GatewayCLI.asksForHelp(["--help"]) && GatewayCLI.asksForHelp(["x.json", "-h"]))
        #expect(!GatewayCLI.asksForHelp(["--", "--help"]) && !GatewayCLI.asksForHelp(["x.json", "--", "-h"]))
        #expect(!GatewayCLI.asksForHelp(["--helpful", "-help", "--help=yes", "-hh"]))
    }

    /// `bench` and `simulate` have one synopsis per subcommand: `CMD SUB --help` prints that part, the same subcommands
    /// as the command's table of flags.
    @Test(arguments: ["bench", "simulate"])
    func aSubcommandsHelpIsItsPartOfTheUsage(_ name: String) async throws {
        let subcommands = (name == "bench" ? BenchCommand.flags : SimulateCommand.flags).keys.sorted()
        let command = try Self.command(name)
        let parts = command.usageParts
        #expect(parts.map { $0.subcommand }.sorted() == subcommands)
        #expect(parts.map { $0.text }.joined(separator: "\n") == command.usage)
        for part in parts {
            #expect(part.text.hasPrefix("  iap-gateway \(name) \(part.subcommand)"))
            #expect(
                part.text.split(separator: "\n").filter { $0.hasPrefix("  iap-gateway ") }.count == 1,
                "\(name) \(part.subcommand)"
            )
            let run = await Self.run(name, part.subcommand, "--help")
            #expect(
                run.status == 0 && run.stdout == part.text + "\n" && run.stderr.isEmpty,
                "\(name) \(part.subcommand)"
            )
        }
        // The subcommand where it may stand, among other arguments; without one, the whole usage.
        #expect(await Self.run(name, "--help").stdout == command.usage + "\n")
        #expect(await Self.run(name, "nothing-such", "-h").stdout == command.usage + "\n")
    }

    @Test func subcommandHelpAmongOtherArguments() async throws {
        let simulate = try Self.command("simulate").usageParts
        let lifecycle = try #require(simulate.first { $0.subcommand == "lifecycle" })
        #expect(
            await Self.run("simulate", "lifecycle", "refund", "--pki", "x", "--version", "v1", "--help").stdout
                == lifecycle.text + "\n"
        )
        let bench = try Self.command("bench").usageParts
        let soak = try #require(bench.first { $0.subcommand == "soak" })
        #expect(await Self.run("bench", "soak", "--minutes", "1", "-h").stdout == soak.text + "\n")
        // quarantine's usage is one synopsis for both of its subcommands: all of it.
        #expect(
            await Self.run("quarantine", "--config", "c.json", "list", "--help").stdout == QuarantineCommand.usage
                + "\n"
        )
        #expect(QuarantineCommand.usageParts.count == 1)
    }

    @Test func everyCommandsUsageIsOnePartUnlessItHasSubcommands() {
        for command in GatewayCLI.commands where command.name != "bench" && command.name != "simulate" {
            #expect(command.usageParts.count == 1, "\(command.name)")
            #expect(command.usage(for: ["list", "verify", "lifecycle"]) == command.usage, "\(command.name)")
        }
    }

    // MARK: --version

    @Test func versionPrintsTheOneConstant() async {
        for flag in ["--version", "version"] {
            let run = await Self.run(flag)
            #expect(run.status == 0 && run.stderr.isEmpty, "\(flag)")
            #expect(run.stdout == "iap-gateway \(GatewayVersion.string)\n", "\(flag)")
        }
        #expect(GatewayVersion.userAgent == "iap-gateway/" + GatewayVersion.string)
        #expect(!GatewayVersion.string.isEmpty && !GatewayVersion.string.contains(" "))
        // The top-level help names both.
        #expect(
            GatewayCLI.usage.contains("\n  iap-gateway --version\n")
                && GatewayCLI.usage.contains("\n  iap-gateway COMMAND [SUBCOMMAND] --help\n")
        )
    }

    // MARK: Unknown flags

    @Test(arguments: commandNames)
    func anUnknownFlagShowsTheUsageWithTheError(_ name: String) async throws {
        let command = try Self.command(name)
        for flag in ["--no-such-flag", "--no-such-flag=1"] {
            let run = await Self.run(name, flag)
            #expect(run.status == 2, "\(name) \(flag)")
            #expect(run.stdout.isEmpty, "\(name) \(flag)")
            #expect(
                run.stderr == command.usage + "\n" + "iap-gateway: unknown option --no-such-flag\n",
                "\(name) \(flag)"
            )
        }
    }

    @Test func aFlagOfAnotherSubcommandShowsThisSubcommandsUsage() async throws {
        let soak = try #require(BenchCommand.usageParts.first { $0.subcommand == "soak" })
        let run = await Self.run("bench", "soak", "--seconds", "1")
        #expect(run.status == 2 && run.stdout.isEmpty)
        #expect(run.stderr == soak.text + "\n" + "iap-gateway: bench soak does not take --seconds\n")
        let list = try #require(SimulateCommand.usageParts.first { $0.subcommand == "list" })
        #expect(
            await Self.run("simulate", "list", "--out", "x").stderr == list.text + "\n"
                + "iap-gateway: simulate list does not take --out\n"
        )
        #expect(
            await Self.run("quarantine", "--config", "c.json", "list", "--id", "3").stderr
                == QuarantineCommand.usage + "\n" + "iap-gateway: quarantine list does not take --id\n"
        )
    }

    @Test func otherUsageErrorsStayOneLine() async {
        let missing = await Self.run("subscription", "--config", "c.json")
        #expect(missing.status == 2 && missing.stderr == "iap-gateway: subscription needs an ORIGINAL_TRANSACTION_ID\n")
        let noValue = await Self.run("replay", "--config")
        #expect(noValue.status == 2 && noValue.stderr == "iap-gateway: --config needs a value\n")
        let unknown = await Self.run("frobnicate")
        #expect(unknown.status == 2 && unknown.stderr == GatewayCLI.usage + "iap-gateway: unknown command frobnicate\n")
    }

    // MARK: The executable

    /// The built `iap-gateway` itself: what it prints, on which stream, with which exit status.
    @Test func theExecutableAnswersVersionAndHelp() throws {
        func execute(_ arguments: [String]) throws -> Run {
            let process = Process()
            process.executableURL = URL(filePath: MultiInstanceProcessTests.binary)
            process.arguments = arguments
            let (out, err) = (Pipe(), Pipe())
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Run(
                status: process.terminationStatus,
                stdout: String(decoding: stdout, as: UTF8.self),
                stderr: String(decoding: stderr, as: UTF8.self)
            )
        }
        let version = try execute(["--version"])
        #expect(
            version.status == 0 && version.stdout == "iap-gateway \(GatewayVersion.string)\n" && version.stderr.isEmpty
        )
        let help = try execute(["migrate", "--help"])
        #expect(help.status == 0 && help.stdout == MigrateCommand.usage + "\n" && help.stderr.isEmpty)
        let unknown = try execute(["migrate", "--no-such-flag"])
        #expect(unknown.status == 2 && unknown.stdout.isEmpty)
        #expect(unknown.stderr == MigrateCommand.usage + "\n" + "iap-gateway: unknown option --no-such-flag\n")
    }
}
