/// Why a command stops early: `iap-gateway: MESSAGE` on standard error and the exit status — 2 for a usage or config
/// error (a wrong or misplaced flag, a missing argument, a config that does not load), 1 for a failure while running.
public struct CommandError: Error, CustomStringConvertible {
    public var message: String
    public var status: Int32

    public init(_ message: String, status: Int32) { (self.message, self.status) = (message, status) }

    /// Exit status 2: the command line (or the config it names) is wrong.
    public static func usage(_ message: String) -> CommandError { CommandError(message, status: 2) }

    /// Exit status 1: the command ran and failed.
    public static func failure(_ message: String) -> CommandError { CommandError(message, status: 1) }

    public var description: String { message }
}
