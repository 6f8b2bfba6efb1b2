import Canonical
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// V1 → canonical: each synthetic V1 body (one per notification type) from Apple's verifyReceipt answer and from
/// the body alone, and the resolution of V1's ambiguous types from transaction data.
@Suite struct V1EventBuilderTests {
    static let now: Int64 = 1_748_736_000_000 + 3_600_000  // an hour after the fixtures' T

    static let expected: [(String, EventKind, EventReason?, Entitlement.State)] = [
        ("initial-buy", .purchase, .initial, .active),
        ("did-renew", .renewal, .auto, .active),
        ("did-recover", .renewal, .billingRecovery, .active),
        ("renewal", .renewal, .billingRecovery, .active),
        ("interactive-renewal", .purchase, .resubscribe, .active),
        ("did-change-renewal-pref", .planChange, .downgrade, .active),
        ("did-change-renewal-status", .autoRenewChanged, .disabled, .active),
        ("did-fail-to-renew", .renewalFailure, .gracePeriod, .gracePeriod),
        ("cancel", .refund, nil, .revoked),
        ("refund", .refund, nil, .revoked),
        ("revoke", .revocation, nil, .revoked),
        ("price-increase-consent", .priceIncrease, .pending, .active),
        ("consumption-request", .consumptionRequest, nil, .active),
    ]

    static func body(_ name: String) throws -> ResponseBodyV1 {
        try V1Adapter(apps: [V1AuthenticationTests.app]).authenticate(
            body: try Fixtures.bytes("v1-synthetic/\(name).json")
        ).body
    }

    static func receipt(_ name: String) throws -> VerifyReceiptResponse {
        try JSONValueDecoderShim.decode(
            VerifyReceiptResponse.self,
            try Fixtures.bytes("v1-synthetic/\(name).receipt.json")
        )
    }

    @Test(arguments: expected.map(\.0))
    func everyV1TypeMapsFromTheReceiptAndFromTheBodyAlike(_ name: String) throws {
        let row = try #require(Self.expected.first { $0.0 == name })
        let body = try Self.body(name)
        let fromReceipt = V1EventBuilder().event(
            for: body,
            id: "v1:x",
            facts: V1EventBuilder.facts(fromReceipt: try Self.receipt(name), subscription: body.subscriptionID),
            arrival: Self.now
        )
        let fromBody = V1EventBuilder().event(
            for: body,
            id: "v1:x",
            facts: V1EventBuilder.facts(fromBody: body, subscription: body.subscriptionID),
            arrival: Self.now
        )
        for e in [fromReceipt, fromBody] {
            #expect(e.kind == row.1, "\(name)")
            #expect(e.reason == row.2, "\(name)")
            #expect(e.entitlement?.state == row.3, "\(name)")
            #expect(e.source == .v1 && e.rawType == body.notificationType && e.bundleID == "com.example.gateway")
        }
        #expect(fromReceipt.verified && !fromBody.verified)
        #expect(fromReceipt.originalTransactionID == body.subscriptionID)
    }

    @Test func picksTheLatestTransactionByPurchaseDateWhateverTheOrder() throws {
        var a = V1Transaction()
        a.originalTransactionID = "1"
        a.transactionID = "11"
        a.purchaseDateMs = "2000"
        a.expiresDateMs = "3000"
        var b = a
        b.transactionID = "12"
        b.purchaseDateMs = "3000"
        b.expiresDateMs = "4000"
        var other = a
        other.originalTransactionID = "2"
        other.transactionID = "21"
        other.purchaseDateMs = "9000"
        let body = ResponseBodyV1(notificationType: "DID_RENEW", password: nil, environment: "PROD")
        for order in [[a, b, other], [other, b, a], [b, other, a]] {
            let facts = V1EventBuilder.Facts(
                transactions: [],
                pendingRenewal: nil,
                environment: .production,
                bundleID: "x",
                verified: true
            )
            var f = facts
            f.transactions = V1EventBuilder.facts(fromReceipt: Self.response(order), subscription: "1").transactions
            let e = V1EventBuilder().event(for: body, id: "v1:x", facts: f, arrival: 5000)
            #expect(e.transactionID == "12")
            #expect(e.expiresDate == 4000)
        }
    }

    static func response(_ items: [V1Transaction]) -> VerifyReceiptResponse {
        var r = VerifyReceiptResponse(status: 0)
        r.latestReceiptInfo = OneOrMany(items)
        return r
    }

    static func transaction(_ id: String, product: String, purchase: Int64, expires: Int64) -> V1Transaction {
        var t = V1Transaction()
        t.originalTransactionID = "1"
        t.transactionID = V1Scalar(text: id)
        t.productID = product
        t.purchaseDateMs = V1Scalar(purchase)
        t.expiresDateMs = V1Scalar(expires)
        return t
    }

    static func kind(
        _ type: String,
        _ txs: [V1Transaction],
        renewal: V1PendingRenewal? = nil,
        top: (ResponseBodyV1) -> ResponseBodyV1 = { $0 },
        arrival: Int64 = 10_000
    ) -> (EventKind, EventReason?) {
        let body = top(ResponseBodyV1(notificationType: type, password: nil, environment: "PROD"))
        let facts = V1EventBuilder.Facts(
            transactions: txs,
            pendingRenewal: renewal,
            environment: .production,
            bundleID: "b",
            verified: true
        )
        let e = V1EventBuilder().event(for: body, id: "v1:x", facts: facts, arrival: arrival)
        return (e.kind, e.reason)
    }

    @Test func interactiveRenewalIsAResubscribeAnUpgradeOrAnInteractiveRenewal() {
        let old = Self.transaction("1", product: "monthly", purchase: 1000, expires: 5000)
        // Expired before the new purchase → resubscribe.
        #expect(
            Self.kind(
                "INTERACTIVE_RENEWAL",
                [old, Self.transaction("2", product: "yearly", purchase: 6000, expires: 9000)]
            ) == (.purchase, .resubscribe)
        )
        // Still active, another product → upgrade.
        #expect(
            Self.kind(
                "INTERACTIVE_RENEWAL",
                [old, Self.transaction("2", product: "yearly", purchase: 3000, expires: 9000)]
            ) == (.planChange, .upgrade)
        )
        // Still active, same product → an interactive renewal.
        #expect(
            Self.kind(
                "INTERACTIVE_RENEWAL",
                [old, Self.transaction("2", product: "monthly", purchase: 3000, expires: 9000)]
            ) == (.renewal, .interactive)
        )
    }

    @Test func renewalStatusChangeIsAToggleAResubscribeAChurnOrAPriceIncreaseExpiry() {
        var on = V1PendingRenewal()
        on.autoRenewStatus = "1"
        var off = V1PendingRenewal()
        off.autoRenewStatus = "0"
        off.expirationIntent = "1"
        let active = Self.transaction("1", product: "m", purchase: 1000, expires: 50_000)
        let withDate: (ResponseBodyV1) -> ResponseBodyV1 = {
            var b = $0
            b.autoRenewStatusChangeDateMs = "10000"
            return b
        }
        #expect(
            Self.kind("DID_CHANGE_RENEWAL_STATUS", [active], renewal: off, top: withDate) == (
                .autoRenewChanged, .disabled
            )
        )
        #expect(
            Self.kind("DID_CHANGE_RENEWAL_STATUS", [active], renewal: on, top: withDate) == (
                .autoRenewChanged, .enabled
            )
        )
        // Expired earlier, a new purchase of the same product at the change date → resubscribe.
        let lapsed = Self.transaction("1", product: "m", purchase: 1000, expires: 5000)
        let again = Self.transaction("2", product: "m", purchase: 10_000, expires: 90_000)
        #expect(
            Self.kind("DID_CHANGE_RENEWAL_STATUS", [lapsed, again], renewal: on, top: withDate) == (
                .purchase, .resubscribe
            )
        )
        // Off after billing retries gave up (intent 2, no longer retrying, expired) → expiration [billing_retry].
        var churn = off
        churn.expirationIntent = "2"
        churn.isInBillingRetryPeriod = "0"
        #expect(
            Self.kind("DID_CHANGE_RENEWAL_STATUS", [lapsed], renewal: churn, top: withDate) == (
                .expiration, .billingRetry
            )
        )
        // Off at the end of a period whose price increase the customer never accepted (intent 3) → expiration
        // [price_increase]; the same intent before the period ends is only the toggle.
        var declined = off
        declined.expirationIntent = "3"
        #expect(
            Self.kind("DID_CHANGE_RENEWAL_STATUS", [lapsed], renewal: declined, top: withDate) == (
                .expiration, .priceIncrease
            )
        )
        #expect(
            Self.kind("DID_CHANGE_RENEWAL_STATUS", [active], renewal: declined, top: withDate) == (
                .autoRenewChanged, .disabled
            )
        )
    }

    @Test func cancelOfAnUpgradedTransactionIsAPlanChange() {
        var upgraded = Self.transaction("1", product: "monthly", purchase: 1000, expires: 50_000)
        upgraded.isUpgraded = "true"
        upgraded.cancellationDateMs = "2000"
        #expect(Self.kind("CANCEL", [upgraded]) == (.planChange, .upgrade))
        var refunded = upgraded
        refunded.isUpgraded = nil
        #expect(Self.kind("CANCEL", [refunded]) == (.refund, nil))
    }

    @Test func renewalPreferenceIsADowngradeOrARevert() {
        let current = Self.transaction("1", product: "yearly", purchase: 1000, expires: 50_000)
        var toMonthly = V1PendingRenewal()
        toMonthly.autoRenewProductID = "monthly"
        var back = V1PendingRenewal()
        back.autoRenewProductID = "yearly"
        #expect(Self.kind("DID_CHANGE_RENEWAL_PREF", [current], renewal: toMonthly) == (.planChange, .downgrade))
        #expect(Self.kind("DID_CHANGE_RENEWAL_PREF", [current], renewal: back) == (.planChange, .reverted))
    }

    @Test func billingFailureIsGraceOrRetryByTheGraceDate() {
        let lapsed = Self.transaction("1", product: "m", purchase: 1000, expires: 5000)
        var grace = V1PendingRenewal()
        grace.isInBillingRetryPeriod = "1"
        grace.gracePeriodExpiresDateMs = "9000"
        var retry = grace
        retry.gracePeriodExpiresDateMs = nil
        #expect(Self.kind("DID_FAIL_TO_RENEW", [lapsed], renewal: grace) == (.renewalFailure, .gracePeriod))
        #expect(Self.kind("DID_FAIL_TO_RENEW", [lapsed], renewal: retry) == (.renewalFailure, .billingRetry))
    }

    @Test func priceIncreaseConsentAndOfferCodesAndUnknownTypes() {
        let t = Self.transaction("1", product: "m", purchase: 1000, expires: 50_000)
        var consented = V1PendingRenewal()
        consented.priceConsentStatus = "1"
        #expect(Self.kind("PRICE_INCREASE_CONSENT", [t], renewal: consented) == (.priceIncrease, .accepted))
        var coded = t
        coded.offerCodeRefName = "SPRING"
        #expect(Self.kind("INITIAL_BUY", [coded]) == (.purchase, .offerRedeemed))
        #expect(Self.kind("SOMETHING_NEW", [t]) == (.other, nil))
    }

    @Test func eventDateIsTheDateTheChangeCarriesElseArrival() {
        let t = Self.transaction("1", product: "m", purchase: 1000, expires: 50_000)
        let facts = V1EventBuilder.Facts(
            transactions: [t],
            pendingRenewal: nil,
            environment: .production,
            bundleID: "b",
            verified: true
        )
        let renew = V1EventBuilder().event(
            for: ResponseBodyV1(notificationType: "DID_RENEW", password: nil, environment: "PROD"),
            id: "v1:x",
            facts: facts,
            arrival: 77_000
        )
        #expect(renew.eventDate == 1000 && renew.eventDateSource == .notification)
        let pref = V1EventBuilder().event(
            for: ResponseBodyV1(notificationType: "DID_CHANGE_RENEWAL_PREF", password: nil, environment: "PROD"),
            id: "v1:x",
            facts: facts,
            arrival: 77_000
        )
        #expect(pref.eventDate == 77_000 && pref.eventDateSource == .arrival)
    }

    @Test func aCarriedDateLaterThanArrivalIsNotBelieved() {
        // verifyReceipt already describes a later period (fetched late): the failure cannot postdate its notification.
        let later = Self.transaction("2", product: "m", purchase: 90_000, expires: 190_000)
        let facts = V1EventBuilder.Facts(
            transactions: [later],
            pendingRenewal: nil,
            environment: .production,
            bundleID: "b",
            verified: true
        )
        let failed = V1EventBuilder().event(
            for: ResponseBodyV1(notificationType: "DID_FAIL_TO_RENEW", password: nil, environment: "PROD"),
            id: "v1:x",
            facts: facts,
            arrival: 80_000
        )
        #expect(failed.eventDate == 80_000 && failed.eventDateSource == .arrival)
        let renew = V1EventBuilder().event(
            for: ResponseBodyV1(notificationType: "DID_RENEW", password: nil, environment: "PROD"),
            id: "v1:x",
            facts: facts,
            arrival: 90_000
        )
        #expect(renew.eventDate == 90_000 && renew.eventDateSource == .notification)
    }
}

/// Decodes fixtures with the adapter's own decoder (the one production uses).
enum JSONValueDecoderShim {
    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        try WireJSON.JSONValueDecoder().decode(type, from: bytes)
    }
}
