import Canonical
import Testing

@Suite struct ProductTypeTests {
    @Test(arguments: [
        ("Auto-Renewable Subscription", ProductType.autoRenewable, "auto_renewable"),
        ("Non-Renewing Subscription", .nonRenewing, "non_renewing"),
        ("Consumable", .consumable, "consumable"),
        ("Non-Consumable", .nonConsumable, "non_consumable"),
    ])
    func normalizesTheFourAppleTypes(_ apple: String, _ expected: ProductType, _ wire: String) {
        let type = ProductType(appleValue: apple)
        #expect(type == expected)
        #expect(type.rawValue == wire)
    }

    @Test(arguments: ["Subscription Bundle", "consumable", "auto_renewable", ""])
    func keepsAnUnknownTypeVerbatim(_ apple: String) {
        // Matching is exact: Apple's own spelling only, so our wire strings and other casings stay as they are.
        #expect(ProductType(appleValue: apple).rawValue == apple)
    }
}
