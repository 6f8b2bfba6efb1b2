/// Builds one compact JSON object with members sorted by the UTF-8 bytes of their names — the same bytes
/// `JSONEncoder` produces with `.sortedKeys` and `.withoutEscapingSlashes` for strings, integers, booleans and
/// nulls — without `Encoder`'s per-value boxing. For the hot paths (events, envelopes) only; values that are
/// already JSON (a stored event) are spliced in as raw bytes.
public struct JSONObjectWriter {
    private var members: [(key: String, value: [UInt8])] = []

    public init() {}

    public mutating func string(_ key: String, _ value: String?) {
        members.append((key, value.map(JSONValue.quoted) ?? Self.null))
    }

    public mutating func int(_ key: String, _ value: Int64?) {
        members.append((key, value.map { Array(String($0).utf8) } ?? Self.null))
    }

    public mutating func int(_ key: String, _ value: Int?) { int(key, value.map(Int64.init)) }

    public mutating func bool(_ key: String, _ value: Bool?) {
        members.append((key, value.map { Array(($0 ? "true" : "false").utf8) } ?? Self.null))
    }

    /// `value` must be one complete JSON value.
    public mutating func raw(_ key: String, _ value: [UInt8]?) {
        members.append((key, value ?? Self.null))
    }

    public func finish() -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(members.reduce(2) { $0 + $1.key.utf8.count + $1.value.count + 4 })
        for (i, m) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += JSONValue.quoted(m.key)
            out.append(UInt8(ascii: ":"))
            out += m.value
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    static let null: [UInt8] = Array("null".utf8)
}
