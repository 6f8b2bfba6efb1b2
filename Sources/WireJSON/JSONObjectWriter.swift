/// Builds one compact JSON object with members sorted by the UTF-8 bytes of their names — the same bytes
/// `JSONEncoder` produces with `.sortedKeys` and `.withoutEscapingSlashes` for strings, integers, booleans and
/// nulls — without `Encoder`'s per-value boxing. For the hot paths (events, envelopes) only; values that are
/// already JSON (a stored event) are spliced in as raw bytes.
public struct JSONObjectWriter {
    /// `,"name":value` for every member, in the order they were added.
    private var body: [UInt8] = []
    /// Every member's name as UTF-8, one after the other: what the order is decided on.
    private var names: [UInt8] = []
    /// Per member: its name in ``names`` and its `,"name":value` in ``body``.
    private var members: [(name: Range<Int>, bytes: Range<Int>)] = []
    /// Whether every member so far came after the one before it: then ``finish()`` copies ``body`` as it is, and
    /// a writer that adds its members in order (the canonical types do) sorts nothing and allocates little.
    private var inOrder = true
    /// Members are written in the order they were added, not sorted.
    private var keepsOrder = false

    public init() {}

    /// A writer that keeps its members in the order they are added: for an object whose member order is another
    /// system's (Apple's verifyReceipt answers).
    public init(keepingOrder: Bool) { keepsOrder = keepingOrder }

    public mutating func string(_ key: String, _ value: String?) {
        member(key) { out in
            if let value { JSONValue.writeString(value, into: &out) } else { out += Self.null }
        }
    }

    public mutating func int(_ key: String, _ value: Int64?) {
        member(key) { out in
            if let value { out += String(value).utf8 } else { out += Self.null }
        }
    }

    public mutating func int(_ key: String, _ value: Int?) { int(key, value.map(Int64.init)) }

    public mutating func bool(_ key: String, _ value: Bool?) {
        member(key) { out in
            if let value { out += value ? Self.true : Self.false } else { out += Self.null }
        }
    }

    /// `value` must be one complete JSON value.
    public mutating func raw(_ key: String, _ value: [UInt8]?) {
        member(key) { out in out += value ?? Self.null }
    }

    public func finish() -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(body.count + 2)
        if inOrder || keepsOrder {
            out += body.dropFirst()  // the first member's comma
        } else {
            let sorted = members.sorted { names[$0.name].lexicographicallyPrecedes(names[$1.name]) }
            for (i, m) in sorted.enumerated() {
                out += body[(i == 0 ? m.bytes.lowerBound + 1 : m.bytes.lowerBound)..<m.bytes.upperBound]
            }
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private mutating func member(_ key: String, _ writeValue: (inout [UInt8]) -> Void) {
        let nameStart = names.count
        names += key.utf8
        let name = nameStart..<names.count
        if inOrder, let last = members.last, !names[last.name].lexicographicallyPrecedes(names[name]) {
            inOrder = false
        }
        let start = body.count
        body.append(UInt8(ascii: ","))
        JSONValue.writeString(key, into: &body)
        body.append(UInt8(ascii: ":"))
        writeValue(&body)
        members.append((name, start..<body.count))
    }

    static let null: [UInt8] = Array("null".utf8)
    static let `true`: [UInt8] = Array("true".utf8)
    static let `false`: [UInt8] = Array("false".utf8)
}
