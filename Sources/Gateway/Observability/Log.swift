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
        var object: [String: LogValue] = ["ts": .int(now()), "level": .string(level.rawValue), "msg": .string(message)]
        for (k, v) in fields { if let v { object[k] = v } }
        sink(Self.encode(object))
    }

    public func info(_ message: String, _ fields: [String: LogValue?] = [:]) { log(.info, message, fields) }
    public func warn(_ message: String, _ fields: [String: LogValue?] = [:]) { log(.warn, message, fields) }
    public func error(_ message: String, _ fields: [String: LogValue?] = [:]) { log(.error, message, fields) }

    static func rank(_ l: Level) -> Int {
        switch l {
        case .debug: 0
        case .info: 1
        case .warn: 2
        case .error: 3
        }
    }

    static func encode(_ object: [String: LogValue]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(512)
        for (i, key) in object.keys.sorted().enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += JSONValue.quoted(key)
            out.append(UInt8(ascii: ":"))
            switch object[key]! {
            case .string(let s): out += JSONValue.quoted(s)
            case .int(let n): out += Array(String(n).utf8)
            case .double(let d): out += Array((d.isFinite ? String(d) : "null").utf8)
            case .bool(let b): out += Array((b ? "true" : "false").utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    private static let stdoutLock = Mutex(())

    /// Writes `text` to standard output whole, never interleaved with a log line or another caller's text
    /// (`iap-gateway receive` prints its lines through it).
    public static func writeStdout(_ text: String) {
        stdoutLock.withLock { _ in
            var bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
                if n <= 0 { return }
                offset += n
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
