/// A bounded reader of NeXT-style ("old-style") property-list text, the format of iOS 6 transaction receipts and of
/// their `purchase-info` (docs/architecture.md, "The receipt reader"):
///
/// ```text
/// { "signature" = "AnTJ…"; "purchase-info" = "ewoJ…"; "environment" = "Sandbox"; }
/// ```
///
/// A dictionary of string keys whose values are strings or dictionaries (at most ``maxDepth`` deep), each entry
/// closed by `;` (optional before `}`); strings quoted (`\\`, `\"`, `\n`, `\t`, `\r`, `\U` + four hex digits) or bare
/// (letters, digits, `_$+/:.-`); `/* … */` and `// …` comments. At most ``maxEntries`` entries in all. One pass, no
/// backtracking; recursion only into nested dictionaries, at most ``maxDepth`` deep.
public enum OldStylePlist {
    /// Nested dictionaries accepted (transaction receipts have none).
    public static let maxDepth = 4
    /// Entries accepted in all (a transaction receipt has about twenty).
    public static let maxEntries = 4096

    /// A value: text, or a nested dictionary.
    public indirect enum Value: Sendable, Hashable {
        case string(String)
        case dictionary([Entry])

        public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    }

    /// One `key = value;` entry, in the text's order (duplicates kept; readers take the first).
    public struct Entry: Sendable, Hashable {
        public var key: String
        public var value: Value
        public init(key: String, value: Value) { (self.key, self.value) = (key, value) }
    }

    /// The entries of the one dictionary `text` holds (white space and comments around it allowed). Throws
    /// `malformed` for anything else, `tooDeep` past ``maxDepth``, `tooLarge` past ``maxEntries``.
    public static func parse(_ text: some Collection<UInt8>) throws(ReceiptError) -> [Entry] {
        var p = Parser(bytes: Array(text))
        p.skipSpace()
        let entries = try p.dictionary(depth: 1)
        p.skipSpace()
        guard p.atEnd else { throw ReceiptError(.malformed, "property list: text after the dictionary") }
        return entries
    }

    /// The first string value of `key` among `entries`.
    public static func string(_ entries: [Entry], _ key: String) -> String? {
        entries.first { $0.key == key }?.value.stringValue
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0
        var entries = 0

        var atEnd: Bool { i >= bytes.count }

        mutating func skipSpace() {
            while i < bytes.count {
                let c = bytes[i]
                if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D {
                    i += 1
                } else if c == 0x2F, i + 1 < bytes.count, bytes[i + 1] == 0x2A {  // /* … */
                    i += 2
                    while i + 1 < bytes.count, !(bytes[i] == 0x2A && bytes[i + 1] == 0x2F) { i += 1 }
                    i = min(i + 2, bytes.count)
                } else if c == 0x2F, i + 1 < bytes.count, bytes[i + 1] == 0x2F {  // // …
                    while i < bytes.count, bytes[i] != 0x0A { i += 1 }
                } else {
                    return
                }
            }
        }

        mutating func expect(_ c: UInt8, _ what: String) throws(ReceiptError) {
            guard i < bytes.count, bytes[i] == c else { throw ReceiptError(.malformed, "property list: \(what)") }
            i += 1
        }

        mutating func dictionary(depth: Int) throws(ReceiptError) -> [Entry] {
            guard depth <= maxDepth else { throw ReceiptError(.tooDeep, "property list nested too deep") }
            try expect(0x7B, "a dictionary must start with {")
            var out: [Entry] = []
            while true {
                skipSpace()
                guard i < bytes.count else { throw ReceiptError(.malformed, "property list: unclosed dictionary") }
                if bytes[i] == 0x7D {
                    i += 1
                    return out
                }
                entries += 1
                guard entries <= maxEntries else { throw ReceiptError(.tooLarge, "property list: too many entries") }
                let key = try string()
                skipSpace()
                try expect(0x3D, "= expected after a key")
                skipSpace()
                let value: Value
                if i < bytes.count, bytes[i] == 0x7B {
                    value = .dictionary(try dictionary(depth: depth + 1))
                } else {
                    value = .string(try string())
                }
                out.append(Entry(key: key, value: value))
                skipSpace()
                if i < bytes.count, bytes[i] == 0x3B {
                    i += 1
                } else if !(i < bytes.count && bytes[i] == 0x7D) {
                    throw ReceiptError(.malformed, "property list: ; expected after a value")
                }
            }
        }

        mutating func string() throws(ReceiptError) -> String {
            guard i < bytes.count else { throw ReceiptError(.malformed, "property list: a string expected") }
            if bytes[i] == 0x22 { return try quoted() }
            let start = i
            while i < bytes.count, Self.isBare(bytes[i]) { i += 1 }
            guard i > start else { throw ReceiptError(.malformed, "property list: a string expected") }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }

        static func isBare(_ c: UInt8) -> Bool {
            switch c {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x24, 0x2B, 0x2F, 0x3A, 0x2E, 0x2D: true
            default: false
            }
        }

        mutating func quoted() throws(ReceiptError) -> String {
            i += 1  // the opening quote
            var out: [UInt8] = []
            while true {
                guard i < bytes.count else { throw ReceiptError(.malformed, "property list: unclosed string") }
                let c = bytes[i]
                i += 1
                if c == 0x22 { return String(decoding: out, as: UTF8.self) }
                guard c == 0x5C else {
                    out.append(c)
                    continue
                }
                guard i < bytes.count else { throw ReceiptError(.malformed, "property list: unclosed string") }
                let e = bytes[i]
                i += 1
                switch e {
                case 0x6E: out.append(0x0A)
                case 0x74: out.append(0x09)
                case 0x72: out.append(0x0D)
                case 0x55, 0x75:  // \Uxxxx
                    guard i + 4 <= bytes.count, let scalar = Self.hex4(bytes[i..<(i + 4)]) else {
                        throw ReceiptError(.malformed, "property list: bad \\U escape")
                    }
                    i += 4
                    out.append(contentsOf: Array(String(Unicode.Scalar(scalar) ?? "\u{FFFD}").utf8))
                default: out.append(e)  // \\ \" and any other escaped byte stand for themselves
                }
            }
        }

        static func hex4(_ b: ArraySlice<UInt8>) -> UInt32? {
            var v: UInt32 = 0
            for c in b {
                let d: UInt8
                switch c {
                case 0x30...0x39: d = c - 0x30
                case 0x41...0x46: d = c - 0x41 + 10
                case 0x61...0x66: d = c - 0x61 + 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }
    }
}
