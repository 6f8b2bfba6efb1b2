/// A tiny argument scanner: `--flag value`, `--flag=value`, repeated flags, and positionals.
struct Arguments {
    var positionals: [String] = []
    private var values: [String: [String]] = [:]
    private var switches: Set<String> = []

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    /// `valueFlags` take a value; `switchFlags` do not. Anything else starting with `--` is an error.
    init(_ args: [String], valueFlags: Set<String>, switchFlags: Set<String> = []) throws(Problem) {
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
                        guard i < args.count else { throw Problem(description: "--\(name) needs a value") }
                        value = args[i]
                    }
                    values[name, default: []].append(value!)
                } else {
                    throw Problem(description: "unknown option --\(name)")
                }
            } else {
                positionals.append(a)
            }
            i += 1
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { switches.contains(name) }
}
