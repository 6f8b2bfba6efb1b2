internal import FoundationEssentials
import Synchronization
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// Structured log lines: one JSON object per line on standard output. Callers pass only our own fields (ids,
/// codes, names); nothing here ever receives a body, a token or a secret.
public final class Log: Sendable {
    public enum Level: String, Sendable { case debug, info, warn, error }

    private let sink: @Sendable (String) -> Void
    private let now: @Sendable () -> Int64
    public let minimum: Level

    /// `sink` receives each line without its newline (tests capture; production writes to stdout).
    public init(minimum: Level = .info, now: @escaping @Sendable () -> Int64, sink: (@Sendable (String) -> Void)? = nil)
    {
        self.minimum = minimum
        self.now = now
        self.sink = sink ?? { line in Log.writeStdout(line + "\n") }
    }

    /// Logs `message` with `fields` (strings, integers, doubles, booleans; nil values omitted).
    public func log(_ level: Level, _ message: String, _ fields: [String: LogValue?] = [:]) {
        guard Self.rank(level) >= Self.rank(minimum) else { return }
        var members: [(key: String, value: LogValue)] = [
            ("ts", .int(now())), ("level", .string(level.rawValue)), ("msg", .string(message)),
        ]
        members.reserveCapacity(fields.count + 3)
        for (k, v) in fields {
            guard let v else { continue }
            // A field named like one of the three above replaces it (field names are a dictionary's: unique).
            switch k {
            case "ts": members[0].value = v
            case "level": members[1].value = v
            case "msg": members[2].value = v
            default: members.append((k, v))
            }
        }
        sink(Self.encode(members))
    }

    public func info(_ message: String, _ fields: [String: LogValue?] = [:]) { log(.info, message, fields) }
    public func warn(_ message: String, _ fields: [String: LogValue?] = [:]) { log(.warn, message, fields) }
    public func error(_ message: String, _ fields: [String: LogValue?] = [:]) { log(.error, message, fields) }

    package static func rank(_ l: Level) -> Int {
        switch l {
        case .debug: 0
        case .info: 1
        case .warn: 2
        case .error: 3
        }
    }

    package static func encode(_ object: [String: LogValue]) -> String {
        encode(object.map { ($0.key, $0.value) })
    }

    /// One line: the members sorted by the bytes of their names (names are unique), written into one buffer.
    package static func encode(_ members: [(key: String, value: LogValue)]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(512)
        for (i, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            switch member.value {
            case .string(let s): JSONValue.writeString(s, into: &out)
            case .int(let n): out.append(contentsOf: String(n).utf8)
            case .double(let d): out.append(contentsOf: (d.isFinite ? String(d) : "null").utf8)
            case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    private static let stdoutLock = Mutex(())

    /// Writes `text` to standard output whole, never interleaved with a log line or another caller's text
    /// (`iap-gateway receive` prints its lines through it).
    public static func writeStdout(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            stdoutLock.withLock { _ in
                var offset = 0
                while offset < bytes.count {
                    let n = write(1, bytes.baseAddress! + offset, bytes.count - offset)
                    if n <= 0 { return }
                    offset += n
                }
            }
        }
    }
}

public enum LogValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
