/// One verb of `iap-gateway` (`verify`, `serve`, …), in a file of its own (`Sources/GatewayCLI/<Verb>Command.swift`):
/// its part of the usage text, and its run, which checks the command's own flags and arguments first.
protocol Command {
    /// The verb on the command line.
    static var name: String { get }
    /// Its lines of `iap-gateway help`, in the usage text's layout (two spaces, the synopsis, then the description
    /// indented by six).
    static var usage: String { get }
    /// Runs with the arguments after the verb and returns the exit status; throws a ``CommandError`` (exit 2 for a
    /// usage or config error) or any other error (exit 1, `iap-gateway: ERROR`).
    static func run(_ arguments: [String]) async throws -> Int32
}
