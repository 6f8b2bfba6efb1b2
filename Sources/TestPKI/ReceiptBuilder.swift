public import Crypto
public import Receipts

/// Builds app receipts the way Apple does: the DER payload of an ``AppReceipt`` (a SET OF ReceiptAttribute, sorted
/// by encoding as DER requires and as Apple's are) signed as PKCS#7 with a given leaf key, leaf certificate and
/// chain (``CMSSignedData/sign(content:signer:key:chain:digest:)``). For tests and the simulator: receipts signed by
/// a test root are readable by ``ReceiptReader`` and valid only where that root is an extra sandbox root.
///
/// What is written, per field that is set (version 1 each): 0 `receiptType`, 1 `appItemID`, 2 `bundleID`,
/// 3 `applicationVersion`, 12 `creationDate`, 15 `downloadID`, 16 `versionExternalIdentifier`, 18
/// `originalPurchaseDate`, 19 `originalApplicationVersion`, 21 `expirationDate`, and a 17 per purchase with 1701
/// `quantity`, 1702 `productID`, 1703 `transactionID`, 1704 `purchaseDate`, 1705 `originalTransactionID`, 1706
/// `originalPurchaseDate`, 1707 `productType`, 1708 `expiresDate` (empty when nil, as Apple writes it), 1711
/// `webOrderLineItemID`, 1712 `cancellationDate` (empty when nil), 1713 `isTrialPeriod`, 1719
/// `isInIntroOfferPeriod`, 1721 `promotionalOfferID`. Strings are UTF8String, dates IA5String
/// (`YYYY-MM-DDTHH:MM:SSZ`), numbers INTEGER. With `appleFiller` each purchase also carries the undocumented
/// attributes Apple's do (1709, 1714–1718 empty, 1710 zero), so built receipts have the size of real ones.
public enum ReceiptBuilder {
    /// The DER payload of `receipt`. Throws `cannotBuild` for a `webOrderLineItemID` that is not a decimal `Int64`.
    public static func payload(_ receipt: AppReceipt, appleFiller: Bool = true) throws(ReceiptError) -> [UInt8] {
        var attributes: [[UInt8]] = []
        func add(_ type: Int64, _ value: [UInt8]?) {
            if let value { attributes.append(attribute(type, value)) }
        }
        add(0, receipt.receiptType.map(DER.utf8String))
        add(1, receipt.appItemID.map(DER.integer))
        add(2, receipt.bundleID.map(DER.utf8String))
        add(3, receipt.applicationVersion.map(DER.utf8String))
        add(12, receipt.creationDate.map(date))
        add(15, receipt.downloadID.map(DER.integer))
        add(16, receipt.versionExternalIdentifier.map(DER.integer))
        add(18, receipt.originalPurchaseDate.map(date))
        add(19, receipt.originalApplicationVersion.map(DER.utf8String))
        add(21, receipt.expirationDate.map(date))
        for p in receipt.inApp { add(17, try purchase(p, appleFiller: appleFiller)) }
        return DER.set(attributes)
    }

    /// `payload` signed as an app receipt (DER PKCS#7, content embedded, `leaf` then `chain` embedded).
    public static func sign(
        payload: [UInt8],
        leafKey: PrivateKey,
        leaf: X509Certificate,
        chain: [X509Certificate],
        digest: CMSDigest = .sha256
    ) throws(ReceiptError) -> [UInt8] {
        do {
            return try CMSSignedData.sign(content: payload, signer: leaf, key: leafKey, chain: chain, digest: digest)
        } catch {
            throw ReceiptError(.cannotBuild, "signing: \(error.reason)")
        }
    }

    /// `receipt` built and signed: the DER of an app receipt (base64 it for `receipt-data`: ``base64(_:)``).
    public static func build(
        _ receipt: AppReceipt,
        leafKey: PrivateKey,
        leaf: X509Certificate,
        chain: [X509Certificate],
        digest: CMSDigest = .sha256,
        appleFiller: Bool = true
    ) throws(ReceiptError) -> [UInt8] {
        try sign(
            payload: try payload(receipt, appleFiller: appleFiller),
            leafKey: leafKey,
            leaf: leaf,
            chain: chain,
            digest: digest
        )
    }

    /// `receipt` built and signed with `pki` (leaf, intermediate and root embedded, as Apple's receipts have them).
    public static func build(
        _ receipt: AppReceipt,
        pki: GeneratedReceiptPKI,
        digest: CMSDigest = .sha256,
        appleFiller: Bool = true
    ) throws(ReceiptError) -> [UInt8] {
        try build(
            receipt,
            leafKey: pki.leafKey,
            leaf: pki.leaf,
            chain: [pki.intermediate, pki.root],
            digest: digest,
            appleFiller: appleFiller
        )
    }

    /// Standard base64 with padding, on one line: `receipt-data` as StoreKit's clients send it.
    public static func base64(_ der: [UInt8]) -> String { Base64.encode(der, alphabet: .standard) }

    static func purchase(_ p: ReceiptPurchase, appleFiller: Bool) throws(ReceiptError) -> [UInt8] {
        var attributes: [[UInt8]] = []
        func add(_ type: Int64, _ value: [UInt8]?) {
            if let value { attributes.append(attribute(type, value)) }
        }
        add(1701, p.quantity.map(DER.integer))
        add(1702, p.productID.map(DER.utf8String))
        add(1703, p.transactionID.map(DER.utf8String))
        add(1704, p.purchaseDate.map(date))
        add(1705, p.originalTransactionID.map(DER.utf8String))
        add(1706, p.originalPurchaseDate.map(date))
        add(1707, p.productType.map { DER.integer(Int64($0)) })
        add(1708, p.expiresDate.map(date) ?? DER.ia5String(""))
        if let id = p.webOrderLineItemID {
            guard let n = Int64(id) else { throw ReceiptError(.cannotBuild, "web_order_line_item_id is not a number") }
            add(1711, DER.integer(n))
        }
        add(1712, p.cancellationDate.map(date) ?? DER.ia5String(""))
        add(1713, p.isTrialPeriod.map { DER.integer($0 ? 1 : 0) })
        add(1719, p.isInIntroOfferPeriod.map { DER.integer($0 ? 1 : 0) })
        add(1721, p.promotionalOfferID.map(DER.utf8String))
        if appleFiller {
            for type: Int64 in [1709, 1714, 1715, 1716, 1717, 1718] { add(type, DER.utf8String("")) }
            add(1710, DER.integer(0))
        }
        return DER.set(attributes)
    }

    /// `SEQUENCE { type INTEGER, version INTEGER (1), value OCTET STRING }`.
    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        DER.sequence([DER.integer(type), DER.integer(1), DER.octetString(value)])
    }

    static func date(_ ms: Int64) -> [UInt8] { DER.ia5String(ReceiptDate.text(ms)) }
}

/// The few DER encodings ``ReceiptBuilder`` writes (tests build hostile receipts with them too).
package enum DER {
    package static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        let n = contents.count
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var length: [UInt8] = []
            var v = n
            while v > 0 {
                length.insert(UInt8(v & 0xFF), at: 0)
                v >>= 8
            }
            out.append(0x80 | UInt8(length.count))
            out += length
        }
        return out + contents
    }

    /// The minimal two's-complement encoding.
    package static func integer(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        while bytes.count > 1, (bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0) {
            bytes.removeFirst()
        }
        return tlv(BER.Tag.integer, bytes)
    }

    package static func utf8String(_ s: String) -> [UInt8] { tlv(BER.Tag.utf8String, Array(s.utf8)) }
    package static func ia5String(_ s: String) -> [UInt8] { tlv(BER.Tag.ia5String, Array(s.utf8)) }
    package static func octetString(_ b: [UInt8]) -> [UInt8] { tlv(BER.Tag.octetString, b) }
    package static func sequence(_ items: [[UInt8]]) -> [UInt8] { tlv(BER.Tag.sequence, items.flatMap { $0 }) }

    /// A SET OF, its elements sorted by their encodings (X.690 §11.6).
    package static func set(_ items: [[UInt8]]) -> [UInt8] {
        tlv(BER.Tag.set, items.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }
}
