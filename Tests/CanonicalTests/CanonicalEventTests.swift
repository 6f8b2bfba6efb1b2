import Canonical
import Foundation
import Testing

@Suite struct CanonicalEventTests {
    /// The keys every encoded event carries (schemas/event.schema.json, `required`, in its order; docs/architecture.md,
    /// "The canonical event").
    static let designKeys = [
        "schema", "id", "source", "recovered_by", "kind", "reason", "raw_type", "raw_subtype", "bundle_id",
        "app_apple_id",
        "environment", "product_id", "product_type", "original_transaction_id", "transaction_id",
        "web_order_line_item_id", "subscription_group_id", "purchase_date", "original_purchase_date", "expires_date",
        "revocation_date", "grace_period_expires_date", "event_date", "event_date_source", "revocation_reason",
        "expiration_intent", "auto_renew", "auto_renew_product_id", "in_billing_retry", "offer_type", "offer_id",
        "is_trial", "is_intro", "price_milli", "currency", "quantity", "app_account_token", "ownership", "verified",
        "entitlement",
    ]

    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode(_ text: String) throws -> CanonicalEvent {
        try JSONDecoder().decode(CanonicalEvent.self, from: Data(text.utf8))
    }

    static func minimal() -> CanonicalEvent {
        CanonicalEvent(
            id: "n-1",
            source: .v2,
            kind: .test,
            rawType: "TEST",
            eventDate: 1_748_736_000_000,
            eventDateSource: .signedDate,
            verified: true
        )
    }

    /// The sorted, compact JSON of `minimal()`, with some members' JSON text replaced.
    static func minimalJSON(_ overrides: [String: String] = [:]) -> String {
        var values = Dictionary(uniqueKeysWithValues: designKeys.map { ($0, "null") })
        values["schema"] = "1"
        values["id"] = #""n-1""#
        values["source"] = #""v2""#
        values["kind"] = #""test""#
        values["raw_type"] = #""TEST""#
        values["event_date"] = "1748736000000"
        values["event_date_source"] = #""signed_date""#
        values["verified"] = "true"
        values.merge(overrides) { $1 }
        return "{" + values.keys.sorted().map { "\"\($0)\":\(values[$0]!)" }.joined(separator: ",") + "}"
    }

    static func full() -> CanonicalEvent {
        var e = CanonicalEvent(
            id: "0f8e1a3c-5b7d-4e2f-9a6b-1c2d3e4f5a6b:1",
            source: .v2,
            kind: .renewal,
            reason: .billingRecovery,
            rawType: "DID_RENEW",
            rawSubtype: "BILLING_RECOVERY",
            eventDate: 1_748_736_000_000,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = "com.example.gateway"
        e.appAppleID = 1_234_567_890
        e.environment = .sandbox
        e.productID = "com.example.gateway.monthly"
        e.productType = .autoRenewable
        e.originalTransactionID = "2000000123456789"
        e.transactionID = "2000000987654321"
        e.webOrderLineItemID = "2000000011112222"
        e.subscriptionGroupID = "21345678"
        e.purchaseDate = 1_748_735_000_000
        e.originalPurchaseDate = 1_740_000_000_000
        e.expiresDate = 1_751_327_000_000
        e.revocationDate = 1_748_737_000_000
        e.gracePeriodExpiresDate = 1_751_500_000_000
        e.revocationReason = "app_issue"
        e.expirationIntent = "billing_error"
        e.autoRenew = true
        e.autoRenewProductID = "com.example.gateway.yearly"
        e.inBillingRetry = false
        e.offerType = "introductory"
        e.offerID = "intro-1"
        e.isTrial = false
        e.isIntro = true
        e.priceMilli = 9_990
        e.currency = "EUR"
        e.quantity = 1
        e.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        e.ownership = "purchased"
        e.recoveredBy = .history
        e.computeEntitlement()
        return e
    }

    @Test func designListsFortyDistinctKeys() {
        #expect(Self.designKeys.count == 40)
        #expect(Set(Self.designKeys).count == Self.designKeys.count)
    }

    @Test func aMinimalEventEncodesEveryKeyWithExplicitNulls() throws {
        let text = try Self.encode(Self.minimal())
        #expect(text == Self.minimalJSON())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Set(object.keys) == Set(Self.designKeys))
        #expect(object.count == 40)
        #expect(text.hasPrefix("{") && text.contains(#""schema":1,"#))
        let nonNull: Set = [
            "schema", "id", "source", "kind", "raw_type", "event_date", "event_date_source", "verified",
        ]
        for key in Self.designKeys where !nonNull.contains(key) {
            #expect(object[key] is NSNull, "\(key) should be an explicit null")
        }
    }

    @Test func aMinimalEventDecodesBackEqual() throws {
        #expect(try Self.decode(Self.minimalJSON()) == Self.minimal())
    }

    @Test func aFullyPopulatedEventRoundTripsEqual() throws {
        let event = Self.full()
        let text = try Self.encode(event)
        // The only null is the revoked entitlement's `until`.
        #expect(!text.replacingOccurrences(of: #"{"state":"revoked","until":null}"#, with: "{}").contains("null"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Set(object.keys) == Set(Self.designKeys))
        let decoded = try Self.decode(text)
        #expect(decoded == event)
        #expect(try Self.encode(decoded) == text)
    }

    @Test func aFullyPopulatedEventUsesTheSnakeCaseKeysForEachField() throws {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(try Self.encode(Self.full()).utf8)) as? [String: Any]
        )
        #expect(object["app_apple_id"] as? Int == 1_234_567_890)
        #expect(object["original_transaction_id"] as? String == "2000000123456789")
        #expect(object["grace_period_expires_date"] as? Int == 1_751_500_000_000)
        #expect(object["in_billing_retry"] as? Bool == false)
        #expect(object["price_milli"] as? Int == 9_990)
        #expect(object["product_type"] as? String == "auto_renewable")
        #expect(object["environment"] as? String == "sandbox")
        #expect(object["reason"] as? String == "billing_recovery")
        #expect(object["raw_subtype"] as? String == "BILLING_RECOVERY")
        let entitlement = try #require(object["entitlement"] as? [String: Any])
        #expect(entitlement["state"] as? String == "revoked")
        #expect(entitlement["until"] is NSNull)
    }

    @Test func unknownVocabularyDecodesAndReEncodesVerbatim() throws {
        let text = Self.minimalJSON([
            "kind": #""future_kind""#, "reason": #""future_reason""#, "source": #""v3""#,
            "environment": #""moon_base""#, "product_type": #""Future-Type""#,
            "event_date_source": #""future_source""#,
            "entitlement": #"{"state":"future_state","until":null}"#,
        ])
        let event = try Self.decode(text)
        #expect(event.kind.rawValue == "future_kind")
        #expect(event.reason?.rawValue == "future_reason")
        #expect(event.source.rawValue == "v3")
        #expect(event.environment?.rawValue == "moon_base")
        #expect(event.productType?.rawValue == "Future-Type")
        #expect(event.eventDateSource.rawValue == "future_source")
        #expect(event.entitlement?.state.rawValue == "future_state")
        #expect(event.entitlement?.grantsAccess == false)
        #expect(try Self.encode(event) == text)
    }

    @Test func entitlementUntilIsAlwaysPresent() throws {
        var event = Self.minimal()
        event.entitlement = Entitlement(state: .expired, until: nil)
        #expect(try Self.encode(event).contains(#""entitlement":{"state":"expired","until":null}"#))
        event.entitlement = Entitlement(state: .active, until: 1_751_327_000_000)
        #expect(try Self.encode(event).contains(#""entitlement":{"state":"active","until":1751327000000}"#))
        event.entitlement = nil
        #expect(try Self.encode(event).contains(#""entitlement":null"#))
    }

    @Test func decodesAnEventThatOmitsEveryOptionalKey() throws {
        let text =
            #"{"schema":1,"id":"n-1","source":"v2","kind":"test","raw_type":"TEST","event_date":1748736000000,"#
            + #""event_date_source":"signed_date","verified":true}"#
        #expect(try Self.decode(text) == Self.minimal())
    }

    @Test(arguments: ["schema", "id", "source", "kind", "raw_type", "event_date", "event_date_source", "verified"])
    func rejectsAnEventWithoutARequiredKey(_ key: String) throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(Self.minimalJSON().utf8)) as? [String: Any]
        )
        object[key] = nil
        let data = try JSONSerialization.data(withJSONObject: object)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CanonicalEvent.self, from: data) }
    }

    @Test func newEventsCarrySchemaOne() {
        #expect(CanonicalEvent.schemaVersion == 1)
        #expect(Self.minimal().schema == 1)
    }

    @Test func computeEntitlementUsesTheEventsOwnDatesAtTheEventDate() {
        var event = Self.minimal()
        event.expiresDate = event.eventDate
        event.gracePeriodExpiresDate = event.eventDate + 1
        event.computeEntitlement()
        #expect(event.entitlement == Entitlement(state: .gracePeriod, until: event.eventDate + 1))
        event.inBillingRetry = true
        event.gracePeriodExpiresDate = nil
        event.computeEntitlement()
        #expect(event.entitlement == Entitlement(state: .billingRetry, until: nil))
        event.expiresDate = nil
        event.computeEntitlement()
        #expect(event.entitlement == Entitlement(state: .active, until: nil))
    }
}
