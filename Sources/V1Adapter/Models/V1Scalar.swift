/// One V1 scalar as Apple sent it. Apple's V1 JSON writes numbers and booleans as strings (`"1587701553000"`,
/// `"true"`, `"1"`), sometimes as real numbers (iOS-6 style `auto_renew_status: 0`), and spells booleans two ways;
/// this keeps the value verbatim (so a body re-encodes as it came) and reads it leniently.
public struct V1Scalar: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral
{
    public enum Kind: Sendable, Hashable {
        case string, number, bool
    }

    /// The value's text (a number's digits, `true` / `false` for a JSON boolean).
    public var text: String
    public var kind: Kind

    public init(text: String, kind: Kind = .string) { (self.text, self.kind) = (text, kind) }
    public init(stringLiteral value: String) { self.init(text: value) }
    public init(integerLiteral value: Int64) { self.init(text: String(value), kind: .number) }
    public init(booleanLiteral value: Bool) { self.init(text: value ? "true" : "false", kind: .bool) }
    public init(_ value: Int64) { self.init(text: String(value)) }

    public var description: String { text }

    /// A whole number from `"123"`, `123` or `"123.0"`-free text; nil otherwise (dates are text in some fields).
    public var int64: Int64? { Int64(text.trimmingSpaces) }

    /// `true`/`"true"`/`"1"`/`1` → true; `false`/`"false"`/`"0"`/`0` → false; anything else nil.
    public var bool: Bool? {
        switch text.trimmingSpaces.lowercased() {
        case "true", "1", "yes": true
        case "false", "0", "no": false
        default: nil
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) {
            self.init(text: s, kind: .string)
        } else if let b = try? c.decode(Bool.self) {
            self.init(text: b ? "true" : "false", kind: .bool)
        } else if let i = try? c.decode(Int64.self) {
            self.init(text: String(i), kind: .number)
        } else {
            let d = try c.decode(Double.self)
            self.init(text: String(d), kind: .number)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch kind {
        case .string: try c.encode(text)
        case .bool: try c.encode(text == "true")
        case .number:
            if let i = Int64(text) { try c.encode(i) } else { try c.encode(Double(text) ?? 0) }
        }
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return String(s)
    }
}

/// A member that is one object in iOS-6-style answers and an array of them in iOS-7 style.
public struct OneOrMany<Element: Codable & Sendable & Hashable>: Sendable, Hashable, Codable {
    public var items: [Element]
    /// True when Apple sent a single object (re-encoded the same way).
    public var wasSingle: Bool

    public init(_ items: [Element]) { (self.items, self.wasSingle) = (items, false) }
    public init(single: Element) { (self.items, self.wasSingle) = ([single], true) }

    public init(from decoder: any Decoder) throws {
        if let many = try? [Element](from: decoder) {
            self.init(many)
        } else {
            self.init(single: try Element(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if wasSingle, let only = items.first { try only.encode(to: encoder) } else { try items.encode(to: encoder) }
    }
}
