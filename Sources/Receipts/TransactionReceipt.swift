/// An iOS 6 transaction receipt (`SKPaymentTransaction.transactionReceipt`), as read from its `purchase-info`; nil
/// for what it does not carry. Dates are ms since the epoch.
public struct TransactionReceipt: Sendable, Hashable {
    /// `transaction-id`.
    public var transactionID: String?
    /// `original-transaction-id`.
    public var originalTransactionID: String?
    /// `product-id`.
    public var productID: String?
    /// `bid`.
    public var bundleID: String?
    /// `bvrs`.
    public var bundleVersion: String?
    /// `web-order-line-item-id`.
    public var webOrderLineItemID: String?
    /// The outer property list's `environment` (`Sandbox`); production receipts carry none.
    public var environment: String?
    /// `purchase-date-ms` (else `purchase-date`).
    public var purchaseDate: Int64?
    /// `expires-date` (milliseconds, subscriptions; else `expires-date-formatted`).
    public var expiresDate: Int64?
    /// Every string entry of `purchase-info`, in its order: what verifyReceipt answered such a receipt with.
    public var purchaseInfo: [PurchaseInfoField]

    /// One `"key" = "value";` entry of `purchase-info`.
    public struct PurchaseInfoField: Sendable, Hashable {
        public var key: String
        public var value: String
        public init(key: String, value: String) { (self.key, self.value) = (key, value) }
    }

    public init(
        transactionID: String? = nil,
        originalTransactionID: String? = nil,
        productID: String? = nil,
        bundleID: String? = nil,
        bundleVersion: String? = nil,
        webOrderLineItemID: String? = nil,
        environment: String? = nil,
        purchaseDate: Int64? = nil,
        expiresDate: Int64? = nil,
        purchaseInfo: [PurchaseInfoField] = []
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.bundleID = bundleID
        self.bundleVersion = bundleVersion
        self.webOrderLineItemID = webOrderLineItemID
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.purchaseInfo = purchaseInfo
    }

    /// True when the outer property list says `"environment" = "Sandbox"`.
    public var isSandbox: Bool { environment == "Sandbox" }
}
