internal import Canonical
internal import Gateway
internal import ServiceKit

/// The `iap-gateway` command line: finds the command named by the first argument and runs it. Each command is one
/// file here (`VerifyCommand.swift`, `ServeCommand.swift`, …) with its usage text, its flags and its run; what they
/// share is in `Support/`. `iap-gateway COMMAND --help` prints that command's part of the usage text, `--version` the
/// version. Usage errors exit with status 2, failures with 1.
public enum GatewayCLI {
    /// Every command, in the order of the usage text.
    static var commands: [any Command.Type] {
        [
            VerifyCommand.self, ReceiptCommand.self, ReceiptsCommand.self, ServeCommand.self, ReplayCommand.self,
            QuarantineCommand.self,
            DeliveriesCommand.self, SubscriptionCommand.self,
            ReportCommand.self, CutoverCommand.self, MigrateCommand.self, BackfillCommand.self, ReconcileCommand.self,
            MigrateStoreCommand.self, TestNotificationCommand.self,
            ReceiveCommand.self, BenchCommand.self, SimulateCommand.self, SchemaCommand.self,
        ]
    }

    /// `iap-gateway help`.
    public static var usage: String {
        "iap-gateway — Apple App Store Server Notifications (V1 and V2) gateway\n\nUSAGE\n"
            + commands.map { $0.usage + "\n" }.joined()
            + "  iap-gateway --version\n"
            + "      The gateway's version (GET /admin/status and the User-Agent of its requests carry the same).\n"
            + "  iap-gateway COMMAND [SUBCOMMAND] --help\n"
            + "      That command's part of this text (-h too); nothing else is checked or run.\n"
            + "  iap-gateway help\n"
    }

    /// `iap-gateway --version` (and `iap-gateway version`).
    static var versionLine: String { "iap-gateway \(GatewayVersion.string)\n" }

    /// Where ``main(_:output:)`` writes what it says itself: the usage, the version, errors. The commands print their
    /// results on their own.
    struct Output: Sendable {
        var stdout: @Sendable (String) -> Void
        var stderr: @Sendable (String) -> Void

        static let standard = Output(stdout: { print($0, terminator: "") }, stderr: { FileHandleOutput.stderr($0) })
    }

    /// Runs the command line `arguments` (the program name first, as in `CommandLine.arguments`) and returns the
    /// process's exit status. Output goes to standard output, errors to standard error as `iap-gateway: MESSAGE`.
    public static func main(_ arguments: [String]) async -> Int32 {
        await main(arguments, output: .standard)
    }

    /// ``main(_:)``, writing its own lines to `output`.
    ///
    /// `--help` or `-h` anywhere after the verb (before a `--`) prints the command's usage to standard output and
    /// exits 0 without running it, whatever else is given — so `migrate --help` needs no config. A flag the command
    /// does not take prints its usage to standard error with the error (exit 2).
    static func main(_ arguments: [String], output: Output) async -> Int32 {
        let args = Array(arguments.dropFirst())
        guard let verb = args.first else {
            output.stderr(usage)
            return 2
        }
        if verb == "help" || verb == "--help" || verb == "-h" {
            output.stdout(usage)
            return 0
        }
        if verb == "--version" || verb == "version" {
            output.stdout(versionLine)
            return 0
        }
        guard let command = commands.first(where: { $0.name == verb }) else {
            output.stderr(usage)
            output.stderr("iap-gateway: unknown command \(verb)\n")
            return 2
        }
        let rest = Array(args.dropFirst())
        if asksForHelp(rest) {
            output.stdout(command.usage(for: rest) + "\n")
            return 0
        }
        do {
            return try await command.run(rest)
        } catch let error as CommandError {
            if error.showsUsage { output.stderr(command.usage(for: rest) + "\n") }
            output.stderr("iap-gateway: \(error.message)\n")
            return error.status
        } catch {
            output.stderr("iap-gateway: \(error)\n")
            return 1
        }
    }

    /// Whether a command's arguments ask for its usage: `--help` or `-h` before any `--` (after it, they are
    /// arguments, a file named `-h` say). Also where a flag would take it as its value (`--reason -h`): help, which
    /// runs nothing, is the safe reading.
    static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.prefix(while: { $0 != "--" }).contains { $0 == "--help" || $0 == "-h" }
    }
}
