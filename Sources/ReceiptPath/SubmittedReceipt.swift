public import Canonical
public import WireJSON

/// A receipt as the verifyReceipt endpoint needs it, from the receipt reader (docs/architecture.md, "The receipt
/// path"): whose it is, which environment, whether its signature is Apple's, the transaction id a lookup uses and
/// verifyReceipt's `receipt` object.
public struct SubmittedReceipt: Sendable {
    public enum Kind: String, Sendable {
        /// An app receipt (PKCS#7).
        case app
        /// A StoreKit-testing receipt made by Xcode: never Apple's.
        case xcode
        /// The iOS 6 transaction receipt: authenticated as an app receipt is, and taken only where the app's
        /// `legacy_transaction_receipts` allows the format.
        case transaction
    }
    public var kind: Kind
    public var bundleID: String?
    public var isSandbox: Bool
    /// Its signature chains to Apple's receipt root (or, for a sandbox receipt, to a configured extra root).
    public var authenticated: Bool
    /// Why it is not authenticated (the reader's stable code: `untrusted_root`, `sandbox_only_root`, …); nil when it is.
    public var signatureFailure: String?
    public var lookupTransactionID: String?
    /// verifyReceipt's `receipt` object, with `request_date` the given time.
    public var receiptObject: @Sendable (Int64) -> JSONValue

    public init(
        kind: Kind,
        bundleID: String?,
        isSandbox: Bool,
        authenticated: Bool,
        lookupTransactionID: String?,
        signatureFailure: String? = nil,
        receiptObject: @escaping @Sendable (Int64) -> JSONValue
    ) {
        (self.kind, self.bundleID, self.isSandbox, self.authenticated, self.lookupTransactionID, self.receiptObject) =
            (kind, bundleID, isSandbox, authenticated, lookupTransactionID, receiptObject)
        self.signatureFailure = authenticated ? nil : signatureFailure
    }

    public var environment: AppStoreEnvironment { isSandbox ? .sandbox : .production }
}

/// What reading `receipt-data` gave: a receipt, or why it is none (a stable code).
public enum ReceiptReading: Sendable {
    case receipt(SubmittedReceipt)
    case notAReceipt(code: String)
}
