extension JSONValue {
    /// JSON text of this value with every object's members in their own order — unlike ``canonicalBytes()``, which
    /// sorts them — for answers whose key order is part of what they mimic (verifyReceipt's `receipt` object).
    /// Strings get the same escapes as ``canonicalBytes()``. `pretty`: one member or element per line, indented by
    /// two spaces, `"key": value`; otherwise no white space at all.
    public func text(pretty: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        write(into: &out, pretty: pretty, indent: 0)
        return out
    }

    private func write(into out: inout [UInt8], pretty: Bool, indent: Int) {
        func newline(_ level: Int) {
            guard pretty else { return }
            out.append(0x0A)
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }
        switch self {
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                item.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if !items.isEmpty { newline(indent) }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (i, m) in o.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                Self.writeString(m.key, into: &out)
                out.append(UInt8(ascii: ":"))
                if pretty { out.append(UInt8(ascii: " ")) }
                m.value.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if o.count > 0 { newline(indent) }
            out.append(UInt8(ascii: "}"))
        default:
            // Scalars have no members: their canonical text is their only text.
            out.append(contentsOf: canonicalBytes())
        }
    }
}
