internal import Canonical
internal import Crypto

extension ReceiptReader {
    /// An iOS 6 transaction receipt: the outer property list (`signature`, `purchase-info`, `environment`, …) and
    /// the one inside `purchase-info` (docs/architecture.md, "The receipt reader"). Its signature blob (a version
    /// byte, an RSA signature, a length and a DER certificate `CN=PurchaseReceiptCertificate`) is Apple's own format
    /// with no chain to a pinned root: the signer's name is reported, the receipt is never authenticated.
    static func transactionReceipt(_ bytes: [UInt8]) throws(ReceiptError) -> DecodedReceipt {
        let outer = try OldStylePlist.parse(bytes)
        guard let info = OldStylePlist.string(outer, "purchase-info") else {
            throw ReceiptError(.notAReceipt, "a property list without purchase-info")
        }
        let infoBytes: [UInt8]
        switch try ReceiptInput.decode(Array(info.utf8), maxBytes: bytes.count) {
        case .bytes(let b): infoBytes = b
        case .storeKit2JWS: throw ReceiptError(.malformed, "purchase-info is not base64")
        }
        let entries = try OldStylePlist.parse(infoBytes)
        var t = TransactionReceipt()
        for e in entries {
            if case .string(let value) = e.value { t.purchaseInfo.append(.init(key: e.key, value: value)) }
        }
        func field(_ key: String) -> String? {
            OldStylePlist.string(entries, key).flatMap { $0.isEmpty ? nil : $0 }
        }
        t.transactionID = field("transaction-id")
        t.originalTransactionID = field("original-transaction-id")
        t.productID = field("product-id")
        t.bundleID = field("bid")
        t.bundleVersion = field("bvrs")
        t.webOrderLineItemID = field("web-order-line-item-id")
        t.environment = OldStylePlist.string(outer, "environment")
        t.purchaseDate =
            field("purchase-date-ms").flatMap { Int64($0) } ?? field("purchase-date").flatMap(AppleDateText.millis)
        t.expiresDate =
            field("expires-date").flatMap { Int64($0) } ?? field("expires-date-formatted").flatMap(AppleDateText.millis)

        var signature = ReceiptSignature(valid: false, failure: ReceiptSignature.Failure.unsigned)
        if let text = OldStylePlist.string(outer, "signature"), !text.isEmpty {
            signature.failure = ReceiptSignature.Failure.notVerifiable
            if case .bytes(let blob)? = try? ReceiptInput.decode(Array(text.utf8), maxBytes: bytes.count) {
                signature.signer = signerName(blob)
            }
        }
        return DecodedReceipt(
            format: .transactionReceipt,
            signature: signature,
            transaction: t,
            isSandbox: t.isSandbox,
            lookupTransactionID: DecodedReceipt.lookupID(t)
        )
    }

    /// The common name of the certificate in a transaction receipt's signature blob: version 2 (a 128-byte signature)
    /// or 3 (256 bytes), then a big-endian 4-byte length and the DER certificate. Nil for anything else.
    static func signerName(_ blob: [UInt8]) -> String? {
        guard let version = blob.first, version == 2 || version == 3 else { return nil }
        let start = 1 + (version == 2 ? 128 : 256)
        guard blob.count >= start + 4 else { return nil }
        let length = blob[start..<(start + 4)].reduce(0) { $0 << 8 | Int($1) }
        guard length > 0, length <= blob.count - start - 4 else { return nil }
        let der = Array(blob[(start + 4)..<(start + 4 + length)])
        return (try? X509Certificate(der: der))?.commonName
    }
}
