/// A parsed JSON document. Numbers keep their source text so 64-bit ids and millisecond dates never pass through
/// `Double`; objects keep key order and reject duplicate keys (two parsers must never disagree on a signed payload).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's exact source text (already validated against the JSON grammar).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// An integer number as `Int64`. Apple's Xcode tokens carry fractional milliseconds: those truncate toward
    /// zero, as Apple's own libraries do. Out-of-range or non-numbers give nil.
    public var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let v = Int64(text) { return v }
        guard let d = Double(text), d.isFinite, d >= -9.2e18, d <= 9.2e18 else { return nil }
        return Int64(d.rounded(.towardZero))
    }
}

/// A JSON object: ordered members, unique keys.
public struct JSONObject: Sendable, Hashable, Sequence {
    public private(set) var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) { self.members = members }

    public subscript(key: String) -> JSONValue? {
        for m in members where m.key == key { return m.value }
        return nil
    }

    public var keys: [String] { members.map(\.key) }
    public var count: Int { members.count }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> { members.makeIterator() }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.members.count == b.members.count
            && zip(a.members, b.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
    public func hash(into h: inout Hasher) {
        for m in members {
            h.combine(m.key)
            h.combine(m.value)
        }
    }
}

/// Why a document is not acceptable JSON. `offset` is a byte position; the message never quotes the input.
public struct JSONParseError: Error, Hashable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}
