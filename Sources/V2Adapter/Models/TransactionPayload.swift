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
    /// Consumables: how many were bought. Multiseat: the seats this transaction covers (a seat addition's: the seats
    /// added; an Apple-hosted member's: the purchaser's).
    public var quantity: Int?
    /// `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable`, `Non-Renewing Subscription`.
    public var type: String?
    public var appAccountToken: String?
    /// `PURCHASED` / `FAMILY_SHARED` / `ASSIGNED` (an organization's or a group's member).
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
    /// Multiseat: seats, per-seat price tiers, who hosts the invitations, seats a seat refund revoked.
    public var multiSeatInfo: TransactionMultiSeatInfo?
    /// Multiseat: the seats a seat-based refund revoked from this transaction, where Apple puts it beside
    /// ``multiSeatInfo`` rather than in it (``revokedSeats`` reads both).
    public var revokedSeatQuantity: Int?
    /// Multiseat: `APPLE` / `DEVELOPER`, where Apple puts it beside ``multiSeatInfo`` (``invitation`` reads both).
    public var invitationManagement: String?
    /// `SEAT_ADDITION` on every transaction of a subscription period that several transactions represent.
    public var additionalTransactionReason: String?

    public init() {}

    /// The seats a seat-based refund revoked from this transaction, wherever Apple put the count.
    public var revokedSeats: Int? { multiSeatInfo?.revokedSeatQuantity ?? revokedSeatQuantity }

    /// Who hosts the group's invitations, wherever Apple put it.
    public var invitation: String? { multiSeatInfo?.invitationManagement ?? invitationManagement }

    /// Whether this is a multiseat purchase's transaction (the purchaser's or a member's).
    public var isMultiSeat: Bool {
        multiSeatInfo != nil || revokedSeatQuantity != nil || invitationManagement != nil
            || additionalTransactionReason != nil
    }

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
        case multiSeatInfo, revokedSeatQuantity, invitationManagement, additionalTransactionReason
    }
}

/// A multiseat transaction's `multiSeatInfo` (Apple's `TransactionMultiSeatInfo`).
public struct TransactionMultiSeatInfo: Codable, Sendable, Hashable {
    /// Per-seat prices and the seats bought at each (one tier for per-seat pricing, up to five for volume pricing; in
    /// no guaranteed order).
    public var priceTiers: [MultiSeatPriceTier]?
    public var revokedSeatQuantity: Int?
    public var invitationManagement: String?

    public init(
        priceTiers: [MultiSeatPriceTier]? = nil,
        revokedSeatQuantity: Int? = nil,
        invitationManagement: String? = nil
    ) {
        (self.priceTiers, self.revokedSeatQuantity, self.invitationManagement) = (
            priceTiers, revokedSeatQuantity, invitationManagement
        )
    }
}

/// One price tier of a multiseat purchase or renewal (Apple's `MultiSeatPriceTier`): a price per seat in milliunits of
/// the transaction's `currency`, and the seats at that price.
public struct MultiSeatPriceTier: Codable, Sendable, Hashable {
    public var price: Int64?
    public var quantity: Int?

    public init(price: Int64?, quantity: Int?) { (self.price, self.quantity) = (price, quantity) }
}
