internal import Canonical

/// One transaction as V1 data carries it: an entry of `latest_receipt_info` / `in_app`, or — iOS-6 style — the
/// single `receipt`, `latest_receipt_info` or `latest_expired_receipt_info` object. Every member is optional and
/// kept verbatim; the accessors read dates and flags whichever way Apple wrote them.
public struct V1Transaction: Sendable, Hashable, Codable {
    public var appAccountToken: String?
    public var cancellationDate: V1Scalar?
    public var cancellationDateMs: V1Scalar?
    public var cancellationDatePst: V1Scalar?
    public var cancellationReason: V1Scalar?
    /// iOS-7: text date; iOS-6: milliseconds.
    public var expiresDate: V1Scalar?
    public var expiresDateMs: V1Scalar?
    public var expiresDatePst: V1Scalar?
    public var expiresDateFormatted: V1Scalar?
    public var expiresDateFormattedPst: V1Scalar?
    public var inAppOwnershipType: String?
    public var isInIntroOfferPeriod: V1Scalar?
    public var isTrialPeriod: V1Scalar?
    public var isUpgraded: V1Scalar?
    public var offerCodeRefName: String?
    public var originalPurchaseDate: V1Scalar?
    public var originalPurchaseDateMs: V1Scalar?
    public var originalPurchaseDatePst: V1Scalar?
    public var originalTransactionID: V1Scalar?
    public var productID: String?
    public var promotionalOfferID: String?
    public var purchaseDate: V1Scalar?
    public var purchaseDateMs: V1Scalar?
    public var purchaseDatePst: V1Scalar?
    public var quantity: V1Scalar?
    public var subscriptionGroupIdentifier: V1Scalar?
    public var transactionID: V1Scalar?
    public var webOrderLineItemID: V1Scalar?
    // iOS-6 and notification-era extras.
    public var bid: String?
    public var bvrs: V1Scalar?
    public var itemID: V1Scalar?
    public var appItemID: V1Scalar?
    public var uniqueIdentifier: String?
    public var uniqueVendorIdentifier: String?
    public var versionExternalIdentifier: V1Scalar?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case appAccountToken = "app_account_token"
        case cancellationDate = "cancellation_date"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationDatePst = "cancellation_date_pst"
        case cancellationReason = "cancellation_reason"
        case expiresDate = "expires_date"
        case expiresDateMs = "expires_date_ms"
        case expiresDatePst = "expires_date_pst"
        case expiresDateFormatted = "expires_date_formatted"
        case expiresDateFormattedPst = "expires_date_formatted_pst"
        case inAppOwnershipType = "in_app_ownership_type"
        case isInIntroOfferPeriod = "is_in_intro_offer_period"
        case isTrialPeriod = "is_trial_period"
        case isUpgraded = "is_upgraded"
        case offerCodeRefName = "offer_code_ref_name"
        case originalPurchaseDate = "original_purchase_date"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case originalPurchaseDatePst = "original_purchase_date_pst"
        case originalTransactionID = "original_transaction_id"
        case productID = "product_id"
        case promotionalOfferID = "promotional_offer_id"
        case purchaseDate = "purchase_date"
        case purchaseDateMs = "purchase_date_ms"
        case purchaseDatePst = "purchase_date_pst"
        case quantity
        case subscriptionGroupIdentifier = "subscription_group_identifier"
        case transactionID = "transaction_id"
        case webOrderLineItemID = "web_order_line_item_id"
        case bid, bvrs
        case itemID = "item_id"
        case appItemID = "app_item_id"
        case uniqueIdentifier = "unique_identifier"
        case uniqueVendorIdentifier = "unique_vendor_identifier"
        case versionExternalIdentifier = "version_external_identifier"
    }

    // MARK: Reading Apple's several renderings

    /// Milliseconds: `_ms`, else the plain member when it is numeric (iOS-6), else its `Etc/GMT` text (2014-era).
    static func millis(_ ms: V1Scalar?, _ plain: V1Scalar?) -> Int64? {
        if let v = ms?.int64 { return v }
        if let v = plain?.int64 { return v }
        if let text = plain?.text { return AppleDateText.millis(text) }
        return nil
    }

    public var purchaseMillis: Int64? { Self.millis(purchaseDateMs, purchaseDate) }
    public var originalPurchaseMillis: Int64? { Self.millis(originalPurchaseDateMs, originalPurchaseDate) }
    public var expiresMillis: Int64? {
        Self.millis(expiresDateMs, expiresDate) ?? expiresDateFormatted.flatMap { AppleDateText.millis($0.text) }
    }
    public var cancellationMillis: Int64? { Self.millis(cancellationDateMs, cancellationDate) }
    public var originalTransactionIDText: String? { originalTransactionID?.text }
    public var transactionIDText: String? { transactionID?.text }
}
