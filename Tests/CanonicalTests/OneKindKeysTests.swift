import Canonical
import Foundation
import Testing

/// The keys of one kind only (docs/architecture.md, "The canonical event"): written only on an event that carries
/// them, so every other event keeps exactly the forty keys the schema requires (schemas/event.schema.json).
@Suite struct OneKindKeysTests {
    static let oneKindKeys = [
        "app_transaction_id", "consumption_request_reason", "external_purchase_id", "external_purchase_token_type",
        "external_purchase_token_creation_date", "external_purchase_token_expiration_date",
    ]

    static func keys(_ event: CanonicalEvent) throws -> Set<String> {
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(event)) as? [String: Any]
        return Set(try #require(object).keys)
    }

    @Test func anEventWithoutThemHasExactlyTheTablesKeys() throws {
        let keys = try Self.keys(CanonicalEventTests.minimal())
        #expect(keys == Set(CanonicalEventTests.designKeys))
        #expect(keys.isDisjoint(with: Self.oneKindKeys))
    }

    @Test func aConsumptionRequestCarriesApplesReasonAndRoundTrips() throws {
        var e = CanonicalEventTests.minimal()
        (e.kind, e.rawType) = (.consumptionRequest, "CONSUMPTION_REQUEST")
        e.consumptionRequestReason = "unintended_purchase"
        #expect(try Self.keys(e) == Set(CanonicalEventTests.designKeys + ["consumption_request_reason"]))
        let bytes = try JSONEncoder().encode(e)
        #expect(try JSONDecoder().decode(CanonicalEvent.self, from: bytes) == e)
    }

    @Test func anExternalPurchaseTokenEventCarriesItsFourAndRoundTrips() throws {
        var e = CanonicalEventTests.minimal()
        (e.kind, e.reason, e.rawType, e.rawSubtype) = (
            .externalPurchaseToken, .created, "EXTERNAL_PURCHASE_TOKEN", "CREATED"
        )
        e.externalPurchaseID = "SANDBOX_6f1e3c55"
        e.externalPurchaseTokenType = "ACQUISITION"
        e.externalPurchaseTokenCreationDate = 1_748_735_940_000
        e.externalPurchaseTokenExpirationDate = 1_751_328_000_000
        let text = try CanonicalEventTests.encode(e)
        #expect(try Self.keys(e) == Set(CanonicalEventTests.designKeys + Self.oneKindKeys.dropFirst(2)))
        #expect(text.contains(#""external_purchase_id":"SANDBOX_6f1e3c55""#))
        #expect(text.contains(#""external_purchase_token_creation_date":1748735940000"#))
        #expect(text.contains(#""external_purchase_token_expiration_date":1751328000000"#))
        #expect(text.contains(#""external_purchase_token_type":"ACQUISITION""#))
        #expect(try CanonicalEventTests.decode(text) == e)
    }

    @Test func aConsentRescindedEventCarriesTheAppTransactionIDAndRoundTrips() throws {
        var e = CanonicalEventTests.minimal()
        (e.kind, e.rawType) = (.consentRescinded, "RESCIND_CONSENT")
        e.appTransactionID = "704000000000012345"
        let text = try CanonicalEventTests.encode(e)
        #expect(try Self.keys(e) == Set(CanonicalEventTests.designKeys + ["app_transaction_id"]))
        #expect(text.contains(#""app_transaction_id":"704000000000012345""#))
        #expect(try CanonicalEventTests.decode(text) == e)
    }

    @Test func aNullOneKindKeyDecodesAsAbsent() throws {
        let text = CanonicalEventTests.minimalJSON(["app_transaction_id": "null", "external_purchase_id": "null"])
        #expect(try CanonicalEventTests.decode(text) == CanonicalEventTests.minimal())
    }
}
