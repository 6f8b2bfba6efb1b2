/// What the gateway tells Apple about a purchase whose customer asked for a refund, after a CONSUMPTION_REQUEST
/// notification: the body of Send Consumption Information (Apple: "ConsumptionRequest", App Store Server API 1.19),
/// checked against Apple's rules before it is sent (``validated()``), so an answer Apple would refuse with a 400
/// never leaves the gateway.
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
        /// A prorated refund needs a percentage above 0.
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

    /// Itself, when Apple would take it; otherwise the first rule it breaks.
    public func validated() throws(Problem) -> ConsumptionInformation {
        guard customerConsented else { throw .noConsent }
        if let p = consumptionPercentage {
            guard (0...100_000).contains(p) else { throw .percentageOutOfRange }
            guard deliveryStatus == .delivered || p == 0 else { throw .percentageWithoutDelivery }
        }
        if refundPreference == .grantProrated {
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
