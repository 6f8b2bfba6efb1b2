/// One verb of `iap-gateway` (`verify`, `serve`, …), in a file of its own (`Sources/GatewayCLI/<Verb>Command.swift`):
/// its part of the usage text, and its run, which checks the command's own flags and arguments first.
protocol Command {
    /// The verb on the command line.
    static var name: String { get }
    /// Its lines of `iap-gateway help`, in the usage text's layout (two spaces, the synopsis, then the description
    /// indented by six). A command with subcommands (`bench verify`, `simulate lifecycle`) has one synopsis for each,
    /// the subcommand right after the verb; ``usage(for:)`` finds them there.
    static var usage: String { get }
    /// Runs with the arguments after the verb and returns the exit status; throws a ``CommandError`` (exit 2 for a
    /// usage or config error) or any other error (exit 1, `iap-gateway: ERROR`).
    static func run(_ arguments: [String]) async throws -> Int32
}

extension Command {
    /// What `iap-gateway NAME ARGUMENTS --help` prints (and an unknown flag beside its error): the part of ``usage``
    /// for the subcommand the arguments name (`simulate lifecycle …` → the lines from `iap-gateway simulate lifecycle`
    /// to the next synopsis), or the whole usage when they name none or the usage has no part per subcommand.
    static func usage(for arguments: [String]) -> String {
        let parts = usageParts
        guard parts.count > 1 else { return usage }
        for word in arguments.prefix(while: { $0 != "--" }) {
            if let part = parts.first(where: { $0.subcommand == word }) { return part.text }
        }
        return usage
    }

    /// The usage split at each synopsis line (`  iap-gateway NAME …`), with the word after the name (the subcommand,
    /// where the command has them).
    static var usageParts: [(subcommand: String, text: String)] {
        let synopsis = "  iap-gateway \(name)"
        var parts: [(subcommand: String, lines: [Substring])] = []
        for line in usage.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == synopsis || line.hasPrefix(synopsis + " ") || parts.isEmpty {
                let words = line.split(separator: " ")
                parts.append((words.count > 2 ? String(words[2]) : "", [line]))
            } else {
                parts[parts.count - 1].lines.append(line)
            }
        }
        return parts.map { ($0.subcommand, $0.lines.joined(separator: "\n")) }
    }
}
