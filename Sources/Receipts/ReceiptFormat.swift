/// What kind of receipt was read.
public enum ReceiptFormat: String, Sendable, Hashable {
    /// An App Store app receipt: base64 of a PKCS#7 SignedData (DER) signed by Apple's receipt chain.
    case appReceipt = "app_receipt"
    /// An iOS 6 `SKPaymentTransaction.transactionReceipt`: base64 of an old-style property list with
    /// `purchase-info`, signed in Apple's own format (``TransactionReceiptSignaturePolicy``).
    case transactionReceipt = "transaction_receipt"
    /// A StoreKit testing receipt made by Xcode (`receipt_type` `Xcode`, signed by a self-signed `CN=StoreKit`
    /// certificate): readable, never Apple's.
    case xcode
}
