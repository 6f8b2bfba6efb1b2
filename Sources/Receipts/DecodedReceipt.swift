/// One receipt as ``ReceiptReader`` read it: its format, the verdict on its signature, its contents, and the
/// transaction id the App Store Server API can be asked with. A receipt whose signature failed is still a
/// `DecodedReceipt` (``signature`` says why); only bytes that are no receipt at all throw.
public struct DecodedReceipt: Sendable {
    public var format: ReceiptFormat
    public var signature: ReceiptSignature
    /// The payload of an app receipt or an Xcode one.
    public var app: AppReceipt?
    /// The `purchase-info` of a transaction receipt.
    public var transaction: TransactionReceipt?
    /// From the app receipt's `receipt_type` (``AppReceipt/isSandbox``: `ProductionSandbox`,
    /// `ProductionVPPSandbox`) or the transaction receipt's `environment` (`Sandbox`). Xcode receipts are not sandbox.
    public var isSandbox: Bool
    /// The id a Server API lookup (Get Transaction History) uses, chosen deterministically: the original transaction
    /// id (1705) of the first auto-renewable subscription in encoded order, else the first 1705 or 1703 of any
    /// purchase; for a transaction receipt its `original-transaction-id`, else its `transaction-id`. Only ids made
    /// of 1 to 32 ASCII digits count (Apple's are decimal; anything else could steer the API path). Nil when there
    /// is no purchase, and always for an Xcode receipt (its ids, such as "0", exist only on the test device).
    public var lookupTransactionID: String?

    public init(
        format: ReceiptFormat,
        signature: ReceiptSignature,
        app: AppReceipt? = nil,
        transaction: TransactionReceipt? = nil,
        isSandbox: Bool,
        lookupTransactionID: String? = nil
    ) {
        (self.format, self.signature, self.app, self.transaction) = (format, signature, app, transaction)
        (self.isSandbox, self.lookupTransactionID) = (isSandbox, lookupTransactionID)
    }

    /// True when the signature verified under the policy (``ReceiptSignature/valid``).
    public var isAuthenticated: Bool { signature.valid }

    /// ``lookupTransactionID``'s rule, for an app receipt's purchases.
    static func lookupID(_ purchases: [ReceiptPurchase]) -> String? {
        if let subscription = purchases.first(where: { $0.isAutoRenewable && isLookupID($0.originalTransactionID) }) {
            return subscription.originalTransactionID
        }
        for p in purchases {
            if isLookupID(p.originalTransactionID) { return p.originalTransactionID }
            if isLookupID(p.transactionID) { return p.transactionID }
        }
        return nil
    }

    /// ``lookupTransactionID``'s rule, for a transaction receipt.
    static func lookupID(_ t: TransactionReceipt) -> String? {
        if isLookupID(t.originalTransactionID) { return t.originalTransactionID }
        return isLookupID(t.transactionID) ? t.transactionID : nil
    }

    /// 1 to 32 ASCII digits, not all zeros (Xcode's "0" never reaches Apple's servers).
    static func isLookupID(_ id: String?) -> Bool {
        guard let id, (1...32).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { (0x30...0x39).contains($0) } && id.utf8.contains { $0 != 0x30 }
    }
}
