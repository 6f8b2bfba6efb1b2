public import WireJSON

/// A decoded `signedTransactionInfo` (Apple's `JWSTransactionDecodedPayload`). Ids are strings, dates ms, `price`
/// milli-units. Members Apple may add later are ignored; enum-like values keep Apple's raw form.
public struct TransactionPayload: Codable, Sendable, Hashable {
    public var originalTransactionID: String?
    public var transactionID: String?
    public var webOrderLineItemID: String?
    public var bundleID: String?
    public var productID: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int?
    /// `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable`, `Non-Renewing Subscription`.
    public var type: String?
    public var appAccountToken: String?
    /// `PURCHASED` / `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    public var signedDate: Int64?
    public var revocationReason: Int?
    public var revocationDate: Int64?
    public var isUpgraded: Bool?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var environment: String?
    public var storefront: String?
    public var storefrontID: String?
    public var transactionReason: String?
    public var currency: String?
    public var price: Int64?
    public var offerDiscountType: String?
    public var appTransactionID: String?
    public var offerPeriod: String?
    public var revocationType: String?
    public var revocationPercentage: Int?
    public var advancedCommerceInfo: JSONValue?
    public var billingPlanType: String?
    public var commitmentInfo: JSONValue?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case originalTransactionID = "originalTransactionId"
        case transactionID = "transactionId"
        case webOrderLineItemID = "webOrderLineItemId"
        case bundleID = "bundleId"
        case productID = "productId"
        case subscriptionGroupIdentifier, purchaseDate, originalPurchaseDate, expiresDate, quantity, type
        case appAccountToken, inAppOwnershipType, signedDate, revocationReason, revocationDate, isUpgraded
        case offerType, offerIdentifier, environment, storefront
        case storefrontID = "storefrontId"
        case transactionReason, currency, price, offerDiscountType
        case appTransactionID = "appTransactionId"
        case offerPeriod, revocationType, revocationPercentage, advancedCommerceInfo, billingPlanType, commitmentInfo
    }
}
