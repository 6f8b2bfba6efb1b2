/// A small BER/DER reader for what App Store receipts hold (docs/architecture.md, "The receipt reader"): tags of one
/// or a few bytes, definite lengths of up to four length bytes, indefinite lengths (constructed elements only, closed
/// by `00 00`), constructed OCTET STRINGs. Every read is bounded: no element reaches past its parent or the buffer,
/// nesting stops at ``maxDepth`` (no recursion: explicit stacks), every step advances, and no arithmetic can trap
/// (lengths are checked against what is left before they are added). Time is linear in the bytes read times the
/// nesting depth.
package enum BER {
    /// Nesting accepted: Apple's receipts nest 10 levels (a certificate's name inside the PKCS#7 container);
    /// anything past 32 is a bomb or not a receipt.
    static let maxDepth = 32

    /// The identifier octet of the tags read here (universal class); the test PKI's receipt builder writes them too.
    package enum Tag {
        package static let integer: UInt8 = 0x02
        package static let octetString: UInt8 = 0x04
        package static let constructedOctetString: UInt8 = 0x24
        package static let objectIdentifier: UInt8 = 0x06
        package static let utf8String: UInt8 = 0x0C
        package static let ia5String: UInt8 = 0x16
        package static let sequence: UInt8 = 0x30
        package static let set: UInt8 = 0x31
    }

    /// One element's header.
    struct Header {
        /// The first identifier octet (class, constructed bit, tag number or 0x1F for a long tag).
        let identifier: UInt8
        /// The tag number (long-form tags decoded, up to 2^28).
        let number: UInt32
        /// Where the contents start.
        let contentStart: Int
        /// The contents' length; nil for an indefinite length.
        let length: Int?

        var isConstructed: Bool { identifier & 0x20 != 0 }
        /// The end-of-contents marker `00 00`.
        var isEndOfContents: Bool { identifier == 0 && length == 0 }
        /// The end of a definite-length element.
        var definiteEnd: Int? { length.map { contentStart + $0 } }
    }

    /// One element: where it starts, its header, and where it ends (after its end-of-contents marker, for an
    /// indefinite one).
    struct Element {
        let start: Int
        let header: Header
        let end: Int
        /// The whole element, header included.
        var bytes: Range<Int> { start..<end }
        var identifier: UInt8 { header.identifier }
        /// The contents of a definite-length element; for an indefinite one, from the contents' start to its end
        /// marker's start (the children, without the marker).
        var contents: Range<Int> { header.contentStart..<(header.length == nil ? end - 2 : end) }
    }

    /// Reads the header at `offset`, whose element must end by `limit`. Throws `malformed` for a truncated header,
    /// a length that does not fit, an indefinite length on a primitive element, or the reserved length byte 0xFF.
    static func header(_ b: [UInt8], at offset: Int, limit: Int) throws(ReceiptError) -> Header {
        guard offset >= 0, offset < limit, limit <= b.count else { throw truncated }
        let identifier = b[offset]
        var p = offset + 1
        var number = UInt32(identifier & 0x1F)
        if number == 0x1F {
            // Long form: base-128, at most four bytes (tag numbers up to 2^28), no leading 0x80.
            number = 0
            var count = 0
            while true {
                guard p < limit else { throw truncated }
                let byte = b[p]
                p += 1
                count += 1
                guard count <= 4, !(count == 1 && byte == 0x80) else {
                    throw ReceiptError(.malformed, "BER tag number too long")
                }
                number = number << 7 | UInt32(byte & 0x7F)
                if byte & 0x80 == 0 { break }
            }
        }
        guard p < limit else { throw truncated }
        let first = b[p]
        p += 1
        if first < 0x80 {
            guard Int(first) <= limit - p else { throw truncated }
            return Header(identifier: identifier, number: number, contentStart: p, length: Int(first))
        }
        if first == 0x80 {
            guard identifier & 0x20 != 0 else { throw ReceiptError(.malformed, "indefinite length on a primitive") }
            return Header(identifier: identifier, number: number, contentStart: p, length: nil)
        }
        let count = Int(first & 0x7F)
        // 0xFF is reserved; more than four length bytes would describe more than 4 GiB, which no receipt is.
        guard first != 0xFF, count <= 4 else { throw ReceiptError(.malformed, "BER length of \(count) bytes") }
        guard count <= limit - p else { throw truncated }
        var length = 0
        for i in 0..<count { length = length << 8 | Int(b[p + i]) }
        p += count
        guard length <= limit - p else { throw truncated }
        return Header(identifier: identifier, number: number, contentStart: p, length: length)
    }

    /// The element at `offset` within `..<limit`, at nesting `depth`: its header, and its end found by walking an
    /// indefinite-length element's contents (iteratively) to its matching end-of-contents marker.
    static func element(_ b: [UInt8], at offset: Int, limit: Int, depth: Int) throws(ReceiptError) -> Element {
        let h = try header(b, at: offset, limit: limit)
        if let end = h.definiteEnd { return Element(start: offset, header: h, end: end) }
        guard depth < maxDepth else { throw tooDeep }
        // Count the indefinite-length elements open above the position; definite children are skipped whole.
        var open = 1
        var p = h.contentStart
        while open > 0 {
            let c = try header(b, at: p, limit: limit)
            if c.isEndOfContents {
                open -= 1
                p = c.contentStart
            } else if let end = c.definiteEnd {
                p = end
            } else {
                open += 1
                guard depth + open <= maxDepth else { throw tooDeep }
                p = c.contentStart
            }
        }
        return Element(start: offset, header: h, end: p)
    }

    /// The direct children of `parent` (a constructed element read at nesting `depth`), in order.
    static func children(_ b: [UInt8], of parent: Element, depth: Int) throws(ReceiptError) -> [Element] {
        guard parent.header.isConstructed else { throw ReceiptError(.malformed, "children of a primitive element") }
        var out: [Element] = []
        let range = parent.contents
        var p = range.lowerBound
        while p < range.upperBound {
            let e = try element(b, at: p, limit: range.upperBound, depth: depth + 1)
            guard !e.header.isEndOfContents else { throw ReceiptError(.malformed, "end-of-contents inside contents") }
            out.append(e)
            p = e.end
        }
        return out
    }

    /// Checks that `b` is exactly one well-formed BER element, nested at most ``maxDepth`` deep: every header
    /// readable, every child inside its parent, every indefinite length closed. One pass, an explicit stack.
    /// Throws `tooDeep` for a nesting bomb, `malformed` for anything else.
    static func validate(_ b: [UInt8]) throws(ReceiptError) {
        let top = try header(b, at: 0, limit: b.count)
        guard !top.isEndOfContents else { throw ReceiptError(.malformed, "an end-of-contents marker alone") }
        // Each open constructed element: the limit its children must stay within, and whether it ends with a marker.
        var open: [(limit: Int, indefinite: Bool)] = []
        var p: Int
        if top.isConstructed {
            open.append(top.definiteEnd.map { ($0, false) } ?? (b.count, true))
            p = top.contentStart
        } else {
            p = top.contentStart + (top.length ?? 0)
        }
        while let frame = open.last {
            if !frame.indefinite, p == frame.limit {
                open.removeLast()
                continue
            }
            let h = try header(b, at: p, limit: frame.limit)
            if h.isEndOfContents {
                guard frame.indefinite else { throw ReceiptError(.malformed, "end-of-contents in a definite element") }
                open.removeLast()
                p = h.contentStart
                continue
            }
            if h.isConstructed {
                guard open.count < maxDepth else { throw tooDeep }
                open.append(h.definiteEnd.map { ($0, false) } ?? (frame.limit, true))
                p = h.contentStart
            } else {
                p = h.contentStart + (h.length ?? 0)
            }
        }
        guard p == b.count else { throw ReceiptError(.malformed, "trailing bytes after the receipt") }
    }

    /// Bytes inside some array: a range of `array` (a piece of the input, or a flattened copy).
    struct Bytes {
        let array: [UInt8]
        let range: Range<Int>
        var slice: ArraySlice<UInt8> { array[range] }
    }

    /// The bytes of an OCTET STRING element: its contents when primitive (no copy); when constructed (BER), the
    /// contents of its primitive OCTET STRING pieces in order, however nested (up to ``maxDepth``).
    static func octets(_ b: [UInt8], _ e: Element, depth: Int) throws(ReceiptError) -> Bytes {
        if e.identifier == Tag.octetString { return Bytes(array: b, range: e.contents) }
        guard e.identifier == Tag.constructedOctetString else {
            throw ReceiptError(.malformed, "not an OCTET STRING")
        }
        var out: [UInt8] = []
        // Pending pieces, last first: a stack instead of recursion.
        var pending: [(Element, Int)] = try children(b, of: e, depth: depth).reversed().map { ($0, depth + 1) }
        while let (piece, level) = pending.popLast() {
            if piece.identifier == Tag.octetString {
                out += b[piece.contents]
            } else if piece.identifier == Tag.constructedOctetString {
                guard level < maxDepth else { throw tooDeep }
                pending += try children(b, of: piece, depth: level).reversed().map { ($0, level + 1) }
            } else {
                throw ReceiptError(.malformed, "a constructed OCTET STRING holds another type")
            }
        }
        return Bytes(array: out, range: 0..<out.count)
    }

    /// A two's-complement big-endian INTEGER's contents as `Int64`; nil when empty or longer than eight bytes
    /// (beyond `Int64`, or not minimally encoded).
    static func int64(_ contents: ArraySlice<UInt8>) -> Int64? {
        guard let first = contents.first, contents.count <= 8 else { return nil }
        var value: Int64 = first & 0x80 != 0 ? -1 : 0
        for byte in contents { value = value << 8 | Int64(byte) }
        return value
    }

    /// The contents of the one element filling `bytes` when its identifier is one of `tags` (a primitive string
    /// or INTEGER inside an attribute's OCTET STRING); nil otherwise.
    static func single(_ bytes: Bytes, tags: (UInt8, UInt8)) -> ArraySlice<UInt8>? {
        guard let h = try? header(bytes.array, at: bytes.range.lowerBound, limit: bytes.range.upperBound),
            h.identifier == tags.0 || h.identifier == tags.1, let end = h.definiteEnd, end == bytes.range.upperBound
        else { return nil }
        return bytes.array[h.contentStart..<end]
    }

    private static var truncated: ReceiptError { ReceiptError(.malformed, "BER element runs past its end") }
    private static var tooDeep: ReceiptError { ReceiptError(.tooDeep, "BER nested deeper than \(maxDepth) levels") }
}
