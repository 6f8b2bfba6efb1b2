/// One `pending_renewal_info` entry: what happens at the next renewal of one subscription.
public struct V1PendingRenewal: Sendable, Hashable, Codable {
    public var autoRenewProductID: String?
    /// `"1"` / `"0"` (a number in some iOS-6-era answers).
    public var autoRenewStatus: V1Scalar?
    public var expirationIntent: V1Scalar?
    public var gracePeriodExpiresDate: V1Scalar?
    public var gracePeriodExpiresDateMs: V1Scalar?
    public var gracePeriodExpiresDatePst: V1Scalar?
    public var isInBillingRetryPeriod: V1Scalar?
    public var offerCodeRefName: String?
    public var originalTransactionID: V1Scalar?
    public var priceConsentStatus: V1Scalar?
    public var priceIncreaseStatus: V1Scalar?
    public var productID: String?
    public var promotionalOfferID: String?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case autoRenewProductID = "auto_renew_product_id"
        case autoRenewStatus = "auto_renew_status"
        case expirationIntent = "expiration_intent"
        case gracePeriodExpiresDate = "grace_period_expires_date"
        case gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
        case gracePeriodExpiresDatePst = "grace_period_expires_date_pst"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
        case offerCodeRefName = "offer_code_ref_name"
        case originalTransactionID = "original_transaction_id"
        case priceConsentStatus = "price_consent_status"
        case priceIncreaseStatus = "price_increase_status"
        case productID = "product_id"
        case promotionalOfferID = "promotional_offer_id"
    }

    public var gracePeriodExpiresMillis: Int64? {
        V1Transaction.millis(gracePeriodExpiresDateMs, gracePeriodExpiresDate)
    }
}
