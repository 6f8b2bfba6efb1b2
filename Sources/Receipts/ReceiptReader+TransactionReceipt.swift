internal import Canonical

extension ReceiptReader {
    /// An iOS 6 transaction receipt: the outer property list (`signature`, `purchase-info`, `environment`, …) and
    /// the one inside `purchase-info` (docs/architecture.md, "The receipt reader"), its signature judged with the roots
    /// and intermediates of `trust` (``TransactionReceiptSignaturePolicy``) at its purchase date.
    static func transactionReceipt(_ bytes: [UInt8], trust: ReceiptTrust) throws(ReceiptError) -> DecodedReceipt {
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

        let signature = TransactionReceiptSignaturePolicy.judge(
            signature: OldStylePlist.string(outer, "signature"),
            purchaseInfo: infoBytes,
            transaction: t,
            trust: trust
        )
        return DecodedReceipt(
            format: .transactionReceipt,
            signature: signature,
            transaction: t,
            isSandbox: t.isSandbox,
            lookupTransactionID: DecodedReceipt.lookupID(t)
        )
    }
}
