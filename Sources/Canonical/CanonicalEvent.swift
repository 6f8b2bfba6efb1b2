/// One normalized subscription event, the same shape whichever Apple generation produced it (docs/architecture.md, "The canonical event").
///
/// Encoded as JSON with stable snake_case keys and `"schema": 1`; every key is always present (null when the
/// source does not carry the value), so consumers can rely on one shape — except the few keys of one kind only
/// (``appTransactionID``, ``consumptionRequestReason``, the `external_purchase_*` ones) and the multiseat keys
/// (``revokedSeats``, ``seatPriceTiers``, …), written only on an event that carries them. Times are milliseconds
/// since the epoch; ids are strings.
public struct CanonicalEvent: Sendable, Hashable, Codable {
    /// The `schema` of every event, and the version of the contracts that carry one (schemas/event.schema.json and the
    /// others of docs/contracts.md): a change that breaks a consumer bumps it, an added key or value does not.
    public static let schemaVersion = 1

    public var schema: Int = CanonicalEvent.schemaVersion
    /// V2: `notificationUUID` (`:n` appended when one notification yields several events).
    /// V1: `v1:` + hex SHA-256 of the body without `password`, keys sorted (`:n` likewise).
    public var id: String
    public var source: EventSource
    /// How the event was recovered when it was not received live (reconciliation, notification history); nil live.
    public var recoveredBy: RecoveryMechanism?
    public var kind: EventKind
    public var reason: EventReason?
    /// Apple's own strings, kept verbatim, including values unknown today.
    public var rawType: String
    public var rawSubtype: String?

    public var bundleID: String?
    public var appAppleID: Int64?
    public var environment: AppStoreEnvironment?

    public var productID: String?
    public var productType: ProductType?
    public var originalTransactionID: String?
    public var transactionID: String?
    public var webOrderLineItemID: String?
    public var subscriptionGroupID: String?

    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var revocationDate: Int64?
    public var gracePeriodExpiresDate: Int64?
    public var eventDate: Int64
    public var eventDateSource: EventDateSource

    /// `app_issue` / `other` (Apple's 1 / 0), or Apple's raw value when unknown.
    public var revocationReason: String?
    /// `customer_cancelled`, `billing_error`, `price_increase_declined`, `product_unavailable`, `other`.
    public var expirationIntent: String?
    public var autoRenew: Bool?
    public var autoRenewProductID: String?
    public var inBillingRetry: Bool?
    /// `introductory`, `promotional`, `offer_code`, `win_back`.
    public var offerType: String?
    public var offerID: String?
    public var isTrial: Bool?
    public var isIntro: Bool?
    /// Price in milli-units of `currency` (V1 carries no price).
    public var priceMilli: Int64?
    public var currency: String?
    /// Consumables: how many were bought; multiseat: the seats this transaction covers.
    public var quantity: Int?
    public var appAccountToken: String?
    /// `purchased` / `family_shared` / `assigned` (a member of an organization or a group, with its own transaction).
    public var ownership: String?

    // Keys of one kind only: left out of the JSON when nil, so every other event keeps its shape.
    /// `consent_rescinded`: the signed app transaction's `appTransactionId`.
    public var appTransactionID: String?
    /// `consumption_request`: Apple's `consumptionRequestReason`, lower-cased (`unintended_purchase`,
    /// `fulfillment_issue`, `unsatisfied_with_purchase`, `legal`, `other`; a value Apple adds later keeps its words).
    public var consumptionRequestReason: String?
    /// `external_purchase_token`: the token's `externalPurchaseId`, `tokenType` (Apple's string, custom link tokens
    /// only), `tokenCreationDate` and `tokenExpirationDate` (ms; custom link tokens only).
    public var externalPurchaseID: String?
    public var externalPurchaseTokenType: String?
    public var externalPurchaseTokenCreationDate: Int64?
    public var externalPurchaseTokenExpirationDate: Int64?

    // Multiseat (group) subscriptions (docs/architecture.md, "Group subscriptions"): left out of the JSON when nil, so
    // every other event keeps its shape. `price_milli` of a multiseat transaction is Apple's average per seat; what
    // it cost is `amount_milli`.
    /// The seats a seat-based refund revoked from this transaction (the purchaser's only).
    public var revokedSeats: Int?
    /// Who hosts the group's invitations: `apple` (members get `assigned` transactions of their own) or `developer`
    /// (members get none: the team's seat claims are the record).
    public var invitationManagement: String?
    /// The transaction's per-seat price tiers.
    public var seatPriceTiers: [SeatPriceTier]?
    /// What the transaction cost: the sum over its tiers of price × seats, in milli-units of `currency`.
    public var amountMilli: Int64?
    /// `seat_addition`: one of several transactions that together represent the subscription period.
    public var additionalTransactionReason: String?
    /// The seats at the next renewal: the notification's renewal info's, or, on a group purchaser's event whose
    /// notification carries none, the newest the gateway holds for the subscription (``GroupPeriod``).
    public var renewalQuantity: Int?
    /// The next renewal's per-seat price tiers.
    public var renewalSeatPriceTiers: [SeatPriceTier]?
    /// `seats_unclaimed`: the seat claims (`seatClaimId`) Apple released; the team revokes the people on them.
    public var unclaimedSeatIDs: [String]?
    /// A group purchaser's event: the group's seats in the transaction's period after it, over every transaction of
    /// the period the gateway holds (``GroupPeriod``).
    public var groupSeats: Int?

    /// True when the fields came from Apple-signed data or Apple's verifyReceipt answer.
    public var verified: Bool
    /// The subscription's state after this event; nil when the event concerns no transaction (TEST, summaries).
    public var entitlement: Entitlement?

    public init(
        id: String,
        source: EventSource,
        kind: EventKind,
        reason: EventReason? = nil,
        rawType: String,
        rawSubtype: String? = nil,
        eventDate: Int64,
        eventDateSource: EventDateSource,
        verified: Bool
    ) {
        self.id = id
        self.source = source
        self.kind = kind
        self.reason = reason
        self.rawType = rawType
        self.rawSubtype = rawSubtype
        self.eventDate = eventDate
        self.eventDateSource = eventDateSource
        self.verified = verified
    }

    /// Recomputes `entitlement` from this event's own dates and flags at `eventDate`.
    /// Whether the event is about an auto-renewable subscription (what the two paths are compared on).
    public var isSubscription: Bool {
        originalTransactionID != nil && (productType == .autoRenewable || (productType == nil && expiresDate != nil))
    }

    /// Whether the event is about a multiseat (group) subscription.
    public var isMultiSeat: Bool {
        kind == .seatsChanged || kind == .seatsRefunded || kind == .seatsUnclaimed || revokedSeats != nil
            || invitationManagement != nil || seatPriceTiers != nil || additionalTransactionReason != nil
            || renewalQuantity != nil || renewalSeatPriceTiers != nil || unclaimedSeatIDs != nil || groupSeats != nil
    }

    public mutating func computeEntitlement() {
        entitlement = Entitlement.compute(
            expiresDate: expiresDate,
            revocationDate: revocationDate,
            gracePeriodExpiresDate: gracePeriodExpiresDate,
            inBillingRetry: inBillingRetry,
            at: eventDate
        )
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case schema, id, source
        case recoveredBy = "recovered_by"
        case kind, reason
        case rawType = "raw_type"
        case rawSubtype = "raw_subtype"
        case bundleID = "bundle_id"
        case appAppleID = "app_apple_id"
        case environment
        case productID = "product_id"
        case productType = "product_type"
        case originalTransactionID = "original_transaction_id"
        case transactionID = "transaction_id"
        case webOrderLineItemID = "web_order_line_item_id"
        case subscriptionGroupID = "subscription_group_id"
        case purchaseDate = "purchase_date"
        case originalPurchaseDate = "original_purchase_date"
        case expiresDate = "expires_date"
        case revocationDate = "revocation_date"
        case gracePeriodExpiresDate = "grace_period_expires_date"
        case eventDate = "event_date"
        case eventDateSource = "event_date_source"
        case revocationReason = "revocation_reason"
        case expirationIntent = "expiration_intent"
        case autoRenew = "auto_renew"
        case autoRenewProductID = "auto_renew_product_id"
        case inBillingRetry = "in_billing_retry"
        case offerType = "offer_type"
        case offerID = "offer_id"
        case isTrial = "is_trial"
        case isIntro = "is_intro"
        case priceMilli = "price_milli"
        case currency, quantity
        case appAccountToken = "app_account_token"
        case ownership, verified, entitlement
        case appTransactionID = "app_transaction_id"
        case consumptionRequestReason = "consumption_request_reason"
        case externalPurchaseID = "external_purchase_id"
        case externalPurchaseTokenType = "external_purchase_token_type"
        case externalPurchaseTokenCreationDate = "external_purchase_token_creation_date"
        case externalPurchaseTokenExpirationDate = "external_purchase_token_expiration_date"
        case revokedSeats = "revoked_seats"
        case invitationManagement = "invitation_management"
        case seatPriceTiers = "seat_price_tiers"
        case amountMilli = "amount_milli"
        case additionalTransactionReason = "additional_transaction_reason"
        case renewalQuantity = "renewal_quantity"
        case renewalSeatPriceTiers = "renewal_seat_price_tiers"
        case unclaimedSeatIDs = "unclaimed_seat_ids"
        case groupSeats = "group_seats"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(id, forKey: .id)
        try c.encode(source, forKey: .source)
        try c.encode(recoveredBy, forKey: .recoveredBy)
        try c.encode(kind, forKey: .kind)
        try c.encode(reason, forKey: .reason)
        try c.encode(rawType, forKey: .rawType)
        try c.encode(rawSubtype, forKey: .rawSubtype)
        try c.encode(bundleID, forKey: .bundleID)
        try c.encode(appAppleID, forKey: .appAppleID)
        try c.encode(environment, forKey: .environment)
        try c.encode(productID, forKey: .productID)
        try c.encode(productType, forKey: .productType)
        try c.encode(originalTransactionID, forKey: .originalTransactionID)
        try c.encode(transactionID, forKey: .transactionID)
        try c.encode(webOrderLineItemID, forKey: .webOrderLineItemID)
        try c.encode(subscriptionGroupID, forKey: .subscriptionGroupID)
        try c.encode(purchaseDate, forKey: .purchaseDate)
        try c.encode(originalPurchaseDate, forKey: .originalPurchaseDate)
        try c.encode(expiresDate, forKey: .expiresDate)
        try c.encode(revocationDate, forKey: .revocationDate)
        try c.encode(gracePeriodExpiresDate, forKey: .gracePeriodExpiresDate)
        try c.encode(eventDate, forKey: .eventDate)
        try c.encode(eventDateSource, forKey: .eventDateSource)
        try c.encode(revocationReason, forKey: .revocationReason)
        try c.encode(expirationIntent, forKey: .expirationIntent)
        try c.encode(autoRenew, forKey: .autoRenew)
        try c.encode(autoRenewProductID, forKey: .autoRenewProductID)
        try c.encode(inBillingRetry, forKey: .inBillingRetry)
        try c.encode(offerType, forKey: .offerType)
        try c.encode(offerID, forKey: .offerID)
        try c.encode(isTrial, forKey: .isTrial)
        try c.encode(isIntro, forKey: .isIntro)
        try c.encode(priceMilli, forKey: .priceMilli)
        try c.encode(currency, forKey: .currency)
        try c.encode(quantity, forKey: .quantity)
        try c.encode(appAccountToken, forKey: .appAccountToken)
        try c.encode(ownership, forKey: .ownership)
        try c.encode(verified, forKey: .verified)
        try c.encode(entitlement, forKey: .entitlement)
        try c.encodeIfPresent(appTransactionID, forKey: .appTransactionID)
        try c.encodeIfPresent(consumptionRequestReason, forKey: .consumptionRequestReason)
        try c.encodeIfPresent(externalPurchaseID, forKey: .externalPurchaseID)
        try c.encodeIfPresent(externalPurchaseTokenType, forKey: .externalPurchaseTokenType)
        try c.encodeIfPresent(externalPurchaseTokenCreationDate, forKey: .externalPurchaseTokenCreationDate)
        try c.encodeIfPresent(externalPurchaseTokenExpirationDate, forKey: .externalPurchaseTokenExpirationDate)
        try c.encodeIfPresent(revokedSeats, forKey: .revokedSeats)
        try c.encodeIfPresent(invitationManagement, forKey: .invitationManagement)
        try c.encodeIfPresent(seatPriceTiers, forKey: .seatPriceTiers)
        try c.encodeIfPresent(amountMilli, forKey: .amountMilli)
        try c.encodeIfPresent(additionalTransactionReason, forKey: .additionalTransactionReason)
        try c.encodeIfPresent(renewalQuantity, forKey: .renewalQuantity)
        try c.encodeIfPresent(renewalSeatPriceTiers, forKey: .renewalSeatPriceTiers)
        try c.encodeIfPresent(unclaimedSeatIDs, forKey: .unclaimedSeatIDs)
        try c.encodeIfPresent(groupSeats, forKey: .groupSeats)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schema = try c.decode(Int.self, forKey: .schema)
        id = try c.decode(String.self, forKey: .id)
        source = try c.decode(EventSource.self, forKey: .source)
        recoveredBy = try c.decodeIfPresent(RecoveryMechanism.self, forKey: .recoveredBy)
        kind = try c.decode(EventKind.self, forKey: .kind)
        reason = try c.decodeIfPresent(EventReason.self, forKey: .reason)
        rawType = try c.decode(String.self, forKey: .rawType)
        rawSubtype = try c.decodeIfPresent(String.self, forKey: .rawSubtype)
        bundleID = try c.decodeIfPresent(String.self, forKey: .bundleID)
        appAppleID = try c.decodeIfPresent(Int64.self, forKey: .appAppleID)
        environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        productID = try c.decodeIfPresent(String.self, forKey: .productID)
        productType = try c.decodeIfPresent(ProductType.self, forKey: .productType)
        originalTransactionID = try c.decodeIfPresent(String.self, forKey: .originalTransactionID)
        transactionID = try c.decodeIfPresent(String.self, forKey: .transactionID)
        webOrderLineItemID = try c.decodeIfPresent(String.self, forKey: .webOrderLineItemID)
        subscriptionGroupID = try c.decodeIfPresent(String.self, forKey: .subscriptionGroupID)
        purchaseDate = try c.decodeIfPresent(Int64.self, forKey: .purchaseDate)
        originalPurchaseDate = try c.decodeIfPresent(Int64.self, forKey: .originalPurchaseDate)
        expiresDate = try c.decodeIfPresent(Int64.self, forKey: .expiresDate)
        revocationDate = try c.decodeIfPresent(Int64.self, forKey: .revocationDate)
        gracePeriodExpiresDate = try c.decodeIfPresent(Int64.self, forKey: .gracePeriodExpiresDate)
        eventDate = try c.decode(Int64.self, forKey: .eventDate)
        eventDateSource = try c.decode(EventDateSource.self, forKey: .eventDateSource)
        revocationReason = try c.decodeIfPresent(String.self, forKey: .revocationReason)
        expirationIntent = try c.decodeIfPresent(String.self, forKey: .expirationIntent)
        autoRenew = try c.decodeIfPresent(Bool.self, forKey: .autoRenew)
        autoRenewProductID = try c.decodeIfPresent(String.self, forKey: .autoRenewProductID)
        inBillingRetry = try c.decodeIfPresent(Bool.self, forKey: .inBillingRetry)
        offerType = try c.decodeIfPresent(String.self, forKey: .offerType)
        offerID = try c.decodeIfPresent(String.self, forKey: .offerID)
        isTrial = try c.decodeIfPresent(Bool.self, forKey: .isTrial)
        isIntro = try c.decodeIfPresent(Bool.self, forKey: .isIntro)
        priceMilli = try c.decodeIfPresent(Int64.self, forKey: .priceMilli)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        ownership = try c.decodeIfPresent(String.self, forKey: .ownership)
        verified = try c.decode(Bool.self, forKey: .verified)
        entitlement = try c.decodeIfPresent(Entitlement.self, forKey: .entitlement)
        appTransactionID = try c.decodeIfPresent(String.self, forKey: .appTransactionID)
        consumptionRequestReason = try c.decodeIfPresent(String.self, forKey: .consumptionRequestReason)
        externalPurchaseID = try c.decodeIfPresent(String.self, forKey: .externalPurchaseID)
        externalPurchaseTokenType = try c.decodeIfPresent(String.self, forKey: .externalPurchaseTokenType)
        externalPurchaseTokenCreationDate = try c.decodeIfPresent(
            Int64.self,
            forKey: .externalPurchaseTokenCreationDate
        )
        externalPurchaseTokenExpirationDate = try c.decodeIfPresent(
            Int64.self,
            forKey: .externalPurchaseTokenExpirationDate
        )
        revokedSeats = try c.decodeIfPresent(Int.self, forKey: .revokedSeats)
        invitationManagement = try c.decodeIfPresent(String.self, forKey: .invitationManagement)
        seatPriceTiers = try c.decodeIfPresent([SeatPriceTier].self, forKey: .seatPriceTiers)
        amountMilli = try c.decodeIfPresent(Int64.self, forKey: .amountMilli)
        additionalTransactionReason = try c.decodeIfPresent(String.self, forKey: .additionalTransactionReason)
        renewalQuantity = try c.decodeIfPresent(Int.self, forKey: .renewalQuantity)
        renewalSeatPriceTiers = try c.decodeIfPresent([SeatPriceTier].self, forKey: .renewalSeatPriceTiers)
        unclaimedSeatIDs = try c.decodeIfPresent([String].self, forKey: .unclaimedSeatIDs)
        groupSeats = try c.decodeIfPresent(Int.self, forKey: .groupSeats)
    }
}

/// Apple's small integer codes turned into our words; both generations use the same codes (V1 as strings).
public enum AppleCodes {
    /// `expirationIntent` / `expiration_intent` 1…5.
    public static func expirationIntent(_ code: Int) -> String {
        switch code {
        case 1: "customer_cancelled"
        case 2: "billing_error"
        case 3: "price_increase_declined"
        case 4: "product_unavailable"
        case 5: "other"
        default: String(code)
        }
    }

    /// `revocationReason` / `cancellation_reason`: 1 = an issue in the app, 0 = another reason.
    public static func revocationReason(_ code: Int) -> String {
        switch code {
        case 1: "app_issue"
        case 0: "other"
        default: String(code)
        }
    }

    /// V2 `offerType` 1…4.
    public static func offerType(_ code: Int) -> String {
        switch code {
        case 1: "introductory"
        case 2: "promotional"
        case 3: "offer_code"
        case 4: "win_back"
        default: String(code)
        }
    }

    /// `inAppOwnershipType` / `in_app_ownership_type`.
    public static func ownership(_ value: String) -> String {
        switch value {
        case "PURCHASED": "purchased"
        case "FAMILY_SHARED": "family_shared"
        case "ASSIGNED": "assigned"
        default: value
        }
    }

    /// `invitationManagement`: `APPLE` / `DEVELOPER`.
    public static func invitationManagement(_ value: String) -> String {
        switch value {
        case "APPLE": "apple"
        case "DEVELOPER": "developer"
        default: value
        }
    }

    /// `additionalTransactionReason`: `SEAT_ADDITION`.
    public static func additionalTransactionReason(_ value: String) -> String {
        value == "SEAT_ADDITION" ? "seat_addition" : value
    }
}
