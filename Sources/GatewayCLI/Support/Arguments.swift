internal import Canonical
internal import Gateway

/// A tiny argument scanner: `--flag value`, `--flag=value`, repeated flags, and positionals, in any order.
/// A command names the flags it takes; anything else starting with `--` is a usage error that shows the command's
/// usage (``CommandError/unknownFlag(_:)``), and so is a flag of one of its subcommands given to another
/// (``only(_:for:)``); an argument it does not take is a usage error too (``positionals(_:for:)``). `--help` and `-h`
/// never get here: ``GatewayCLI/main(_:)`` answers them before any command runs.
struct Arguments {
    private(set) var positionals: [String] = []
    private var values: [String: [String]] = [:]
    private var switches: Set<String> = []
    /// Every flag given, in order of appearance.
    private var given: [String] = []

    /// `valueFlags` take a value; `switchFlags` do not. Anything else starting with `--` is an error.
    init(_ args: [String], valueFlags: Set<String>, switchFlags: Set<String> = []) throws(CommandError) {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a == "--" {
                positionals += args[(i + 1)...]
                break
            }
            if a.hasPrefix("--") {
                var name = String(a.dropFirst(2))
                var value: String?
                if let eq = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if switchFlags.contains(name), value == nil {
                    switches.insert(name)
                } else if valueFlags.contains(name) {
                    if value == nil {
                        i += 1
                        guard i < args.count else { throw .usage("--\(name) needs a value") }
                        value = args[i]
                    }
                    values[name, default: []].append(value!)
                } else {
                    throw .unknownFlag("unknown option --\(name)")
                }
                given.append(name)
            } else {
                positionals.append(a)
            }
            i += 1
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { switches.contains(name) }

    /// For a command with subcommands, which scans with the flags of all of them: a usage error for the first flag
    /// given that `command` (`quarantine list`) does not take.
    func only(_ allowed: Set<String>, for command: String) throws(CommandError) {
        if let wrong = given.first(where: { !allowed.contains($0) }) {
            throw .unknownFlag("\(command) does not take --\(wrong)")
        }
    }

    /// The positionals, when there are at most `limit` of them; a usage error naming the first extra one otherwise.
    func positionals(atMost limit: Int, for command: String) throws(CommandError) -> [String] {
        guard positionals.count <= limit else { throw .usage("\(command): unexpected argument \(positionals[limit])") }
        return positionals
    }

    // MARK: Values shared by several commands

    /// `--config FILE`, loaded: a usage error when absent, a config error (exit 2) when it does not load.
    func config(for command: String) throws(CommandError) -> GatewayConfig {
        guard let path = value("config") else { throw .usage("\(command) needs --config FILE") }
        return try Self.loadConfig(path)
    }

    /// The config at `path`; a config error (exit 2) when it does not load.
    static func loadConfig(_ path: String) throws(CommandError) -> GatewayConfig {
        do { return try GatewayConfig.load(path: path) } catch { throw .usage("config: \(error)") }
    }

    /// `--environment production|sandbox`; nil when absent.
    func environment() throws(CommandError) -> AppStoreEnvironment? {
        guard let e = value("environment") else { return nil }
        guard e == "production" || e == "sandbox" else { throw .usage("--environment must be production or sandbox") }
        return AppStoreEnvironment(rawValue: e)
    }

    /// A time flag (`--since`, `--until`, `--demo-verify-time`): ISO-8601, epoch milliseconds or relative to `now`
    /// (7d, 12h); nil when absent, a usage error when it is not a time.
    func time(_ name: String, now: Int64) throws(CommandError) -> Int64? {
        guard let text = value(name) else { return nil }
        guard let t = TimeText.milliseconds(text, now: now) else { throw .usage("--\(name): not a time") }
        return t
    }

    /// A size flag (`--max-bytes 64MiB`: bytes, or a number with a unit, as in the config), or `defaultValue` when
    /// absent; a usage error naming `range` when it is not a size within it.
    func size(_ name: String, default defaultValue: Int64, _ range: ClosedRange<Int64>) throws(CommandError) -> Int64 {
        guard let text = value(name) else { return defaultValue }
        guard let bytes = SizeText.bytes(text), range.contains(bytes) else {
            throw .usage(
                "--\(name) must be a size from \(range.lowerBound) to \(range.upperBound) bytes, such as 64MiB"
            )
        }
        return bytes
    }

    /// A number flag (`--seconds 3`), or `defaultValue` when absent; the usage error `problem` when it is not a number
    /// or not `valid`.
    func number<T: LosslessStringConvertible>(
        _ name: String,
        default defaultValue: T,
        valid: (T) -> Bool,
        _ problem: String
    )
        throws(CommandError) -> T
    {
        guard let text = value(name) else { return defaultValue }
        guard let n = T(text), valid(n) else { throw .usage(problem) }
        return n
    }
}
