/// One per-seat price of a multiseat purchase or renewal, and the seats at it (docs/architecture.md, "Group
/// subscriptions").
public struct SeatPriceTier: Sendable, Hashable, Codable {
    /// The price of one seat, in milli-units of the event's `currency`.
    public var priceMilli: Int64
    public var quantity: Int

    public init(priceMilli: Int64, quantity: Int) { (self.priceMilli, self.quantity) = (priceMilli, quantity) }

    /// What the tiers add up to: Σ price × seats; nil when there are none, or when the sum would not fit (a value no
    /// real purchase reaches: never a wrapped number).
    public static func amount(_ tiers: [SeatPriceTier]) -> Int64? {
        guard !tiers.isEmpty else { return nil }
        var total: Int64 = 0
        for tier in tiers {
            let (line, over) = tier.priceMilli.multipliedReportingOverflow(by: Int64(tier.quantity))
            guard !over else { return nil }
            let (sum, overSum) = total.addingReportingOverflow(line)
            guard !overSum else { return nil }
            total = sum
        }
        return total
    }

    enum CodingKeys: String, CodingKey {
        case priceMilli = "price_milli"
        case quantity
    }
}
