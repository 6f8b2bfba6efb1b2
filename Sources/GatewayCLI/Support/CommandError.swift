/// Why a command stops early: `iap-gateway: MESSAGE` on standard error and the exit status — 2 for a usage or config
/// error (a wrong or misplaced flag, a missing argument, a config that does not load), 1 for a failure while running.
public struct CommandError: Error, CustomStringConvertible {
    public var message: String
    public var status: Int32
    /// Whether the command's usage goes to standard error before the message: for a flag the command does not take,
    /// where what it does take is the answer.
    public var showsUsage = false

    public init(_ message: String, status: Int32) { (self.message, self.status) = (message, status) }

    /// Exit status 2: the command line (or the config it names) is wrong.
    public static func usage(_ message: String) -> CommandError { CommandError(message, status: 2) }

    /// Exit status 2 with the command's usage: a flag the command (or its subcommand) does not take.
    public static func unknownFlag(_ message: String) -> CommandError {
        var error = usage(message)
        error.showsUsage = true
        return error
    }

    /// Exit status 1: the command ran and failed.
    public static func failure(_ message: String) -> CommandError { CommandError(message, status: 1) }

    public var description: String { message }
}
