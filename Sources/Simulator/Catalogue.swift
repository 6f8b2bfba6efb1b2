/// The simulated app's products.
public enum Catalogue {
    public static let bundleID = "com.example.sim"
    public static let groupID = "21000777"

    public static let monthly = SimProduct(
        id: "sim.monthly",
        kind: .autoRenewable,
        level: 1,
        months: 1,
        priceMilli: 9_990
    )
    public static let quarterly = SimProduct(
        id: "sim.quarterly",
        kind: .autoRenewable,
        level: 1,
        months: 3,
        priceMilli: 26_990
    )
    public static let yearly = SimProduct(
        id: "sim.yearly",
        kind: .autoRenewable,
        level: 2,
        months: 12,
        priceMilli: 99_990
    )
    public static let premium = SimProduct(
        id: "sim.premium.monthly",
        kind: .autoRenewable,
        level: 3,
        months: 1,
        priceMilli: 19_990
    )
    public static let coins = SimProduct(id: "sim.coins100", kind: .consumable, level: 0, months: 0, priceMilli: 4_990)
    /// A monthly subscription bought by the seat (a group, or multiseat, subscription): volume pricing, the first 5
    /// seats at 9.99 each and every further seat at 7.99.
    public static let team = SimProduct(
        id: "sim.team.monthly",
        kind: .autoRenewable,
        level: 1,
        months: 1,
        priceMilli: 9_990,
        seatPricing: [SimSeatPricing(seats: 5, priceMilli: 9_990), SimSeatPricing(seats: nil, priceMilli: 7_990)]
    )

    public static let all = [monthly, quarterly, yearly, premium, coins, team]
    public static func product(_ id: String) -> SimProduct? { all.first { $0.id == id } }
}
