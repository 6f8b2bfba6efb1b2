public import WireJSON

/// A decoded `signedRenewalInfo` (Apple's `JWSRenewalInfoDecodedPayload`). It carries no bundle id.
public struct RenewalInfoPayload: Codable, Sendable, Hashable {
    /// 1 customer cancelled, 2 billing error, 3 no consent to a price increase, 4 product unavailable, 5 other.
    public var expirationIntent: Int?
    public var originalTransactionID: String?
    public var autoRenewProductID: String?
    public var productID: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: Int?
    public var isInBillingRetryPeriod: Bool?
    /// 0 not responded, 1 consented (or no consent needed).
    public var priceIncreaseStatus: Int?
    public var gracePeriodExpiresDate: Int64?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var signedDate: Int64?
    public var environment: String?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    public var renewalPrice: Int64?
    public var offerDiscountType: String?
    public var eligibleWinBackOfferIDs: [String]?
    public var appAccountToken: String?
    public var appTransactionID: String?
    public var offerPeriod: String?
    public var advancedCommerceInfo: JSONValue?
    public var commitmentInfo: JSONValue?
    public var renewalBillingPlanType: String?
    /// Multiseat: the seats at the next renewal (a reduction applies there; an addition applied at once).
    public var renewalQuantity: Int?
    /// Multiseat: the next renewal's price tiers.
    public var multiSeatInfo: RenewalMultiSeatInfo?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case expirationIntent
        case originalTransactionID = "originalTransactionId"
        case autoRenewProductID = "autoRenewProductId"
        case productID = "productId"
        case autoRenewStatus, isInBillingRetryPeriod, priceIncreaseStatus, gracePeriodExpiresDate, offerType
        case offerIdentifier, signedDate, environment, recentSubscriptionStartDate, renewalDate, currency, renewalPrice
        case offerDiscountType
        case eligibleWinBackOfferIDs = "eligibleWinBackOfferIds"
        case appAccountToken
        case appTransactionID = "appTransactionId"
        case offerPeriod, advancedCommerceInfo, commitmentInfo, renewalBillingPlanType, renewalQuantity, multiSeatInfo
    }
}

/// A multiseat renewal's `multiSeatInfo` (Apple's `RenewalMultiSeatInfo`).
public struct RenewalMultiSeatInfo: Codable, Sendable, Hashable {
    public var renewalPriceTiers: [MultiSeatPriceTier]?

    public init(renewalPriceTiers: [MultiSeatPriceTier]? = nil) { self.renewalPriceTiers = renewalPriceTiers }
}
