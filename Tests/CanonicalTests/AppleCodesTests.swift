import Canonical
import Testing

@Suite struct AppleCodesTests {
    @Test(arguments: [
        (1, "customer_cancelled"), (2, "billing_error"), (3, "price_increase_declined"), (4, "product_unavailable"),
        (5, "other"), (0, "0"), (6, "6"), (-1, "-1"), (99, "99"),
    ])
    func mapsExpirationIntent(_ code: Int, _ word: String) {
        #expect(AppleCodes.expirationIntent(code) == word)
    }

    @Test(arguments: [(1, "app_issue"), (0, "other"), (2, "2"), (-1, "-1")])
    func mapsRevocationReason(_ code: Int, _ word: String) {
        #expect(AppleCodes.revocationReason(code) == word)
    }

    @Test(arguments: [
        (1, "introductory"), (2, "promotional"), (3, "offer_code"), (4, "win_back"), (0, "0"), (5, "5"),
    ])
    func mapsOfferType(_ code: Int, _ word: String) {
        #expect(AppleCodes.offerType(code) == word)
    }

    @Test(arguments: [
        ("PURCHASED", "purchased"), ("FAMILY_SHARED", "family_shared"), ("purchased", "purchased"),
        ("Purchased", "Purchased"), ("GIFTED", "GIFTED"), ("", ""),
    ])
    func mapsOwnershipAndKeepsUnknownValuesVerbatim(_ apple: String, _ word: String) {
        #expect(AppleCodes.ownership(apple) == word)
    }
}
