internal import Gateway

/// The `iap-gateway` command line: finds the command named by the first argument and runs it. Each command is one
/// file here (`VerifyCommand.swift`, `ServeCommand.swift`, …) with its usage text, its flags and its run; what they
/// share is in `Support/`. Usage errors exit with status 2, failures with 1.
public enum GatewayCLI {
    /// Every command, in the order of the usage text.
    static var commands: [any Command.Type] {
        [
            VerifyCommand.self, ServeCommand.self, ReplayCommand.self, QuarantineCommand.self, SubscriptionCommand.self,
            ReportCommand.self, CutoverCommand.self, MigrateCommand.self, BackfillCommand.self, ReconcileCommand.self, MigrateStoreCommand.self, TestNotificationCommand.self,
            ReceiveCommand.self, BenchCommand.self, SimulateCommand.self,
        ]
    }

    /// `iap-gateway help`.
    public static var usage: String {
        "iap-gateway — Apple App Store Server Notifications (V1 and V2) gateway\n\nUSAGE\n"
            + commands.map { $0.usage + "\n" }.joined() + "  iap-gateway help\n"
    }

    /// Runs the command line `arguments` (the program name first, as in `CommandLine.arguments`) and returns the
    /// process's exit status. Output goes to standard output, errors to standard error as `iap-gateway: MESSAGE`.
    public static func main(_ arguments: [String]) async -> Int32 {
        let args = Array(arguments.dropFirst())
        guard let verb = args.first else {
            FileHandleOutput.stderr(usage)
            return 2
        }
        if verb == "help" || verb == "--help" || verb == "-h" {
            print(usage, terminator: "")
            return 0
        }
        guard let command = commands.first(where: { $0.name == verb }) else {
            FileHandleOutput.stderr(usage)
            FileHandleOutput.stderr("iap-gateway: unknown command \(verb)\n")
            return 2
        }
        do {
            return try await command.run(Array(args.dropFirst()))
        } catch let error as CommandError {
            FileHandleOutput.stderr("iap-gateway: \(error.message)\n")
            return error.status
        } catch {
            FileHandleOutput.stderr("iap-gateway: \(error)\n")
            return 1
        }
    }
}
