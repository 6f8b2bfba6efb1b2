import Canonical
import Foundation
import Testing

@Suite struct EventKindTests {
    @Test func allHoldsTheTwentySixDistinctDesignKinds() {
        #expect(EventKind.all.count == 26)
        #expect(Set(EventKind.all).count == 26)
        #expect(
            EventKind.all.map(\.rawValue) == [
                "purchase", "renewal", "renewal_failure", "grace_period_expired", "expiration", "auto_renew_changed",
                "plan_change", "price_increase", "refund", "refund_declined", "refund_reversed", "revocation",
                "renewal_extended", "renewal_extension_summary", "consumption_request", "one_time_charge", "test",
                "consent_rescinded", "external_purchase_token", "metadata_update", "migration", "price_change",
                "seats_changed", "seats_refunded", "seats_unclaimed", "other",
            ]
        )
    }

    @Test func anUnknownKindIsNotAmongAllButStillAValue() {
        let future = EventKind(rawValue: "future_kind")
        #expect(!EventKind.all.contains(future))
        #expect(future.description == "future_kind")
        #expect(future == EventKind(rawValue: "future_kind"))
    }

    @Test func wireStringsEncodeAsBareJSONStrings() throws {
        let encoder = JSONEncoder()
        #expect(String(decoding: try encoder.encode(EventKind.renewalFailure), as: UTF8.self) == #""renewal_failure""#)
        #expect(String(decoding: try encoder.encode(EventSource.v2API), as: UTF8.self) == #""v2-api""#)
        #expect(
            String(decoding: try encoder.encode([EventReason.offerRedeemed]), as: UTF8.self) == #"["offer_redeemed"]"#
        )
        #expect(try JSONDecoder().decode(EventKind.self, from: Data(#""one_time_charge""#.utf8)) == .oneTimeCharge)
    }

    @Test func sourcesAndDateSourcesMatchTheDesign() {
        #expect([EventSource.v1, .v2, .v2API, .v1Receipt].map(\.rawValue) == ["v1", "v2", "v2-api", "v1-receipt"])
        #expect(
            [EventDateSource.signedDate, .transactionSignedDate, .notification, .arrival].map(\.rawValue)
                == ["signed_date", "transaction_signed_date", "notification", "arrival"]
        )
    }

    @Test func reasonsMatchTheDesign() {
        let reasons: [EventReason] = [
            .initial, .resubscribe, .offerRedeemed, .auto, .billingRecovery, .interactive, .gracePeriod, .billingRetry,
            .voluntary, .priceIncrease, .productNotForSale, .enabled, .disabled, .upgrade, .downgrade, .reverted,
            .pending, .accepted, .failure, .unreported, .created, .activeTokenReminder,
        ]
        #expect(
            reasons.map(\.rawValue) == [
                "initial", "resubscribe", "offer_redeemed", "auto", "billing_recovery", "interactive", "grace_period",
                "billing_retry", "voluntary", "price_increase", "product_not_for_sale", "enabled", "disabled",
                "upgrade",
                "downgrade", "reverted", "pending", "accepted", "failure", "unreported", "created",
                "active_token_reminder",
            ]
        )
    }
}
