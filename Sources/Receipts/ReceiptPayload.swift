/// Reads an app receipt's payload — `SET OF ReceiptAttribute`, `ReceiptAttribute ::= SEQUENCE { type INTEGER,
/// version INTEGER, value OCTET STRING }`, type 17 holding a nested SET of in-app attributes — with the module's own
/// ``BER`` reader (docs/architecture.md, "The receipt reader"). Attributes of unknown types, or of a shape other
/// than the three fields, are skipped; a value that does not decode as its type is left out (nil); the first of
/// two attributes of one type wins. Structural damage (a length past its end, nesting past ``BER/maxDepth``) throws.
enum ReceiptPayload {
    /// One attribute: its type and the bytes of its value (the OCTET STRING's contents).
    struct Attribute {
        let type: Int64
        let value: BER.Bytes
    }

    /// The receipt in `content` (the PKCS#7 eContent). Xcode receipts may wrap the SET in one more OCTET STRING
    /// (Apple's libraries unwrap it): up to two such wrappers are taken off.
    static func parse(_ content: [UInt8]) throws(ReceiptError) -> AppReceipt {
        var bytes = BER.Bytes(array: content, range: 0..<content.count)
        var unwrapped = 0
        while true {
            guard !bytes.range.isEmpty else { throw ReceiptError(.malformed, "empty receipt payload") }
            let top = try BER.element(bytes.array, at: bytes.range.lowerBound, limit: bytes.range.upperBound, depth: 0)
            guard top.end == bytes.range.upperBound else {
                throw ReceiptError(.malformed, "trailing bytes after the receipt payload")
            }
            if top.identifier == BER.Tag.set {
                return try receipt(try attributes(bytes.array, set: top))
            }
            guard top.identifier == BER.Tag.octetString || top.identifier == BER.Tag.constructedOctetString,
                unwrapped < 2
            else { throw ReceiptError(.malformed, "the receipt payload is not a SET of attributes") }
            bytes = try BER.octets(bytes.array, top, depth: 0)
            unwrapped += 1
        }
    }

    /// The attributes of a SET element of `b`. The three fields of each are read in place (a receipt of a few
    /// hundred purchases has thousands of attributes: no array per attribute).
    static func attributes(_ b: [UInt8], set: BER.Element) throws(ReceiptError) -> [Attribute] {
        var out: [Attribute] = []
        for child in try BER.children(b, of: set, depth: 0) where child.identifier == BER.Tag.sequence {
            let fields = child.contents
            guard fields.count >= 3 else { continue }
            let type = try BER.element(b, at: fields.lowerBound, limit: fields.upperBound, depth: 2)
            guard type.end < fields.upperBound else { continue }
            let version = try BER.element(b, at: type.end, limit: fields.upperBound, depth: 2)
            guard version.end < fields.upperBound else { continue }
            let value = try BER.element(b, at: version.end, limit: fields.upperBound, depth: 2)
            guard type.identifier == BER.Tag.integer, version.identifier == BER.Tag.integer,
                let number = BER.int64(b[type.contents]),
                value.identifier == BER.Tag.octetString || value.identifier == BER.Tag.constructedOctetString
            else { continue }
            out.append(Attribute(type: number, value: try BER.octets(b, value, depth: 2)))
        }
        return out
    }

    /// Which attribute types of `base ..< base + 64` were met already (the first of each wins); types outside that
    /// range are not read, so never need remembering.
    struct Seen {
        let base: Int64
        var bits: UInt64 = 0

        /// True the first time `type` is met.
        mutating func first(_ type: Int64) -> Bool {
            let offset = type &- base
            guard offset >= 0, offset < 64 else { return true }
            let bit: UInt64 = 1 << UInt64(offset)
            defer { bits |= bit }
            return bits & bit == 0
        }
    }

    /// A UTF8String or IA5String value; nil when it is another type, empty, or not alone in its OCTET STRING.
    /// Bytes that are not UTF-8 are read with replacement characters (never trusted, never a trap).
    static func string(_ value: BER.Bytes) -> String? {
        guard let contents = BER.single(value, tags: (BER.Tag.utf8String, BER.Tag.ia5String)), !contents.isEmpty
        else { return nil }
        return String(decoding: contents, as: UTF8.self)
    }

    /// An INTEGER value that fits `Int64`.
    static func integer(_ value: BER.Bytes) -> Int64? {
        BER.single(value, tags: (BER.Tag.integer, BER.Tag.integer)).flatMap(BER.int64)
    }

    /// An RFC 3339 date value (``ReceiptDate``).
    static func date(_ value: BER.Bytes) -> Int64? { string(value).flatMap { ReceiptDate.millis($0) } }

    private static func receipt(_ attributes: [Attribute]) throws(ReceiptError) -> AppReceipt {
        var r = AppReceipt()
        var seen = Seen(base: 0)
        for a in attributes {
            if a.type == 17 {
                r.inApp.append(try purchase(a.value))
                continue
            }
            guard seen.first(a.type) else { continue }
            switch a.type {
            case 0: r.receiptType = string(a.value)
            case 1: r.appItemID = integer(a.value)
            case 2: r.bundleID = string(a.value)
            case 3: r.applicationVersion = string(a.value)
            case 12: r.creationDate = date(a.value)
            case 15: r.downloadID = integer(a.value)
            case 16: r.versionExternalIdentifier = integer(a.value)
            case 18: r.originalPurchaseDate = date(a.value)
            case 19: r.originalApplicationVersion = string(a.value)
            case 21: r.expirationDate = date(a.value)
            default: break
            }
        }
        return r
    }

    /// One type-17 value: a SET of in-app attributes. A value that is not a SET is a purchase with nothing known.
    private static func purchase(_ value: BER.Bytes) throws(ReceiptError) -> ReceiptPurchase {
        var p = ReceiptPurchase()
        guard !value.range.isEmpty else { return p }
        let set = try BER.element(value.array, at: value.range.lowerBound, limit: value.range.upperBound, depth: 1)
        guard set.identifier == BER.Tag.set, set.end == value.range.upperBound else { return p }
        var seen = Seen(base: 1700)
        for a in try attributes(value.array, set: set) where seen.first(a.type) {
            switch a.type {
            case 1701: p.quantity = integer(a.value)
            case 1702: p.productID = string(a.value)
            case 1703: p.transactionID = string(a.value)
            case 1704: p.purchaseDate = date(a.value)
            case 1705: p.originalTransactionID = string(a.value)
            case 1706: p.originalPurchaseDate = date(a.value)
            case 1707: p.productType = integer(a.value).flatMap { Int(exactly: $0) }
            case 1708: p.expiresDate = date(a.value)
            case 1711: p.webOrderLineItemID = integer(a.value).map { String($0) }
            case 1712: p.cancellationDate = date(a.value)
            case 1713: p.isTrialPeriod = integer(a.value).map { $0 != 0 }
            case 1719: p.isInIntroOfferPeriod = integer(a.value).map { $0 != 0 }
            case 1721: p.promotionalOfferID = string(a.value)
            default: break
            }
        }
        return p
    }
}
