/// One in-app purchase of an app receipt (one type-17 attribute: a SET of in-app attributes), as read; nil for what
/// the receipt does not carry or carries empty. Dates are ms since the epoch.
public struct ReceiptPurchase: Sendable, Hashable {
    /// 1701.
    public var quantity: Int64?
    /// 1702.
    public var productID: String?
    /// 1703.
    public var transactionID: String?
    /// 1705 (absent in Xcode receipts).
    public var originalTransactionID: String?
    /// 1704.
    public var purchaseDate: Int64?
    /// 1706.
    public var originalPurchaseDate: Int64?
    /// 1708 (subscriptions; Apple writes it empty for other products).
    public var expiresDate: Int64?
    /// 1712 (empty unless refunded or revoked).
    public var cancellationDate: Int64?
    /// 1711, an INTEGER written in decimal.
    public var webOrderLineItemID: String?
    /// 1713, non-zero = true.
    public var isTrialPeriod: Bool?
    /// 1719, non-zero = true.
    public var isInIntroOfferPeriod: Bool?
    /// 1721.
    public var promotionalOfferID: String?
    /// 1707: 0 non-consumable, 1 consumable, 2 non-renewing subscription, 3 auto-renewable subscription (not in
    /// Apple's documentation; RevenueCat's and TPInAppReceipt's reading, consistent with the real receipts).
    public var productType: Int?

    public init(
        quantity: Int64? = nil,
        productID: String? = nil,
        transactionID: String? = nil,
        originalTransactionID: String? = nil,
        purchaseDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil,
        expiresDate: Int64? = nil,
        cancellationDate: Int64? = nil,
        webOrderLineItemID: String? = nil,
        isTrialPeriod: Bool? = nil,
        isInIntroOfferPeriod: Bool? = nil,
        promotionalOfferID: String? = nil,
        productType: Int? = nil
    ) {
        self.quantity = quantity
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.webOrderLineItemID = webOrderLineItemID
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.promotionalOfferID = promotionalOfferID
        self.productType = productType
    }

    /// ``productType`` 3, or — when the receipt gives no product type — an expiry date: an auto-renewable
    /// subscription.
    public var isAutoRenewable: Bool { productType.map { $0 == 3 } ?? (expiresDate != nil) }
}
