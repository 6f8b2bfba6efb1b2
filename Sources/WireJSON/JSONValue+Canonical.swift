extension JSONValue {
    /// A canonical serialization: no whitespace, object members sorted by the UTF-8 bytes of their names, numbers
    /// as their source text, strings with only the escapes JSON requires (`"`, `\`, control characters as
    /// `\u00XX` except `\b \f \n \r \t`). Two documents that differ only in member order or formatting serialize
    /// identically; this is what V1 event ids are hashed over, so it must never change.
    public func canonicalBytes() -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: Array("null".utf8))
        case .bool(let b): out.append(contentsOf: Array((b ? "true" : "false").utf8))
        case .number(let n): out.append(contentsOf: Array(n.utf8))
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            let sorted = o.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (i, m) in sorted.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(m.key, into: &out)
                out.append(UInt8(ascii: ":"))
                m.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `s` as a JSON string literal (with the canonical escapes) to `out`. A string with nothing to escape
    /// (nearly all) is copied in one step.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escape: one pass over their contiguous UTF-8, then one copy.
        let plain =
            s.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
                for c in bytes where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { return false }
                out.append(contentsOf: bytes)
                return true
            }
            ?? false
        if plain {
            out.append(UInt8(ascii: "\""))
            return
        }
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigit(c >> 4))
                out.append(hexDigit(c & 0x0F))
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    @inline(__always) private static func hexDigit(_ v: UInt8) -> UInt8 {
        v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10
    }

    /// `s` as a JSON string literal (with the canonical escapes).
    public static func quoted(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        writeString(s, into: &out)
        return out
    }
}
