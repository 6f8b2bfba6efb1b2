public import Canonical

/// What the gateway tells Apple about a purchase whose customer asked for a refund, after a CONSUMPTION_REQUEST
/// notification: the body of Send Consumption Information (Apple: "ConsumptionRequest", App Store Server API 1.19),
/// checked against Apple's rules for the purchase's product before it is sent (``validated(for:)``), so an answer
/// Apple would refuse with a 400 never leaves the gateway.
public struct ConsumptionInformation: Sendable, Hashable, Encodable {
    /// Whether the app delivered a working purchase (Apple: "deliveryStatus").
    public enum DeliveryStatus: String, Sendable, Hashable, Encodable, CaseIterable {
        case delivered = "DELIVERED"
        case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
        case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// The developer's preference for Apple's decision (Apple: "refundPreference").
    public enum RefundPreference: String, Sendable, Hashable, Encodable, CaseIterable {
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        case grantProrated = "GRANT_PRORATED"
    }

    /// Why an answer cannot be sent, as a stable code.
    public enum Problem: String, Error, Sendable, Hashable {
        /// Apple takes consumption information only with the customer's consent (it answers 400 otherwise).
        case noConsent = "no_consent"
        /// `consumptionPercentage` outside 0…100000 (milliunits of a percent).
        case percentageOutOfRange = "percentage_out_of_range"
        /// A purchase that was not delivered was not consumed: its percentage must be 0.
        case percentageWithoutDelivery = "percentage_without_delivery"
        /// An auto-renewable subscription takes no percentage: Apple works it out from the time elapsed (and answers
        /// 400 to one).
        case percentageForSubscription = "percentage_for_subscription"
        /// A prorated refund of a purchase other than an auto-renewable subscription needs a percentage above 0.
        case proratedWithoutPercentage = "prorated_without_percentage"
    }

    public var customerConsented: Bool
    public var deliveryStatus: DeliveryStatus
    public var sampleContentProvided: Bool
    /// The share consumed, in milliunits (100000: all of it); nil: not said.
    public var consumptionPercentage: Int?
    public var refundPreference: RefundPreference?

    public init(
        customerConsented: Bool,
        deliveryStatus: DeliveryStatus,
        sampleContentProvided: Bool,
        consumptionPercentage: Int? = nil,
        refundPreference: RefundPreference? = nil
    ) {
        (self.customerConsented, self.deliveryStatus, self.sampleContentProvided) = (
            customerConsented, deliveryStatus, sampleContentProvided
        )
        (self.consumptionPercentage, self.refundPreference) = (consumptionPercentage, refundPreference)
    }

    /// Itself, when Apple would take it for a purchase of `productType`; otherwise the first rule it breaks. Apple's
    /// rules depend on the product: an auto-renewable subscription takes no percentage, and its `GRANT_PRORATED` goes
    /// without one (Apple prorates it by the time elapsed); any other product's `GRANT_PRORATED` needs a percentage
    /// above 0. A product type not known (nil) is judged as a product other than an auto-renewable subscription.
    public func validated(for productType: ProductType?) throws(Problem) -> ConsumptionInformation {
        guard customerConsented else { throw .noConsent }
        let subscription = productType == .autoRenewable
        if let p = consumptionPercentage {
            guard (0...100_000).contains(p) else { throw .percentageOutOfRange }
            guard deliveryStatus == .delivered || p == 0 else { throw .percentageWithoutDelivery }
            guard !subscription else { throw .percentageForSubscription }
        }
        if refundPreference == .grantProrated, !subscription {
            guard let p = consumptionPercentage, p > 0 else { throw .proratedWithoutPercentage }
        }
        return self
    }

    enum CodingKeys: String, CodingKey {
        case customerConsented, deliveryStatus, sampleContentProvided, consumptionPercentage, refundPreference
    }

    /// Absent members are left out of the body, as Apple's libraries send them.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(customerConsented, forKey: .customerConsented)
        try c.encode(deliveryStatus, forKey: .deliveryStatus)
        try c.encode(sampleContentProvided, forKey: .sampleContentProvided)
        try c.encodeIfPresent(consumptionPercentage, forKey: .consumptionPercentage)
        try c.encodeIfPresent(refundPreference, forKey: .refundPreference)
    }
}
