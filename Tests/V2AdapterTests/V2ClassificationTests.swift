import Canonical
import Testing
import V2Adapter

/// docs/architecture.md, "The canonical event"'s mapping, stated independently of the golden files: every Apple type/subtype pair.
@Suite struct V2ClassificationTests {
    struct Row: Sendable, CustomStringConvertible {
        var type: String
        var subtype: String?
        var kind: EventKind
        var reason: EventReason?
        var description: String { "\(type)/\(subtype ?? "-")" }
    }

    static let table: [Row] = [
        Row(type: "SUBSCRIBED", subtype: "INITIAL_BUY", kind: .purchase, reason: .initial),
        Row(type: "SUBSCRIBED", subtype: "RESUBSCRIBE", kind: .purchase, reason: .resubscribe),
        Row(type: "OFFER_REDEEMED", subtype: "INITIAL_BUY", kind: .purchase, reason: .offerRedeemed),
        Row(type: "OFFER_REDEEMED", subtype: nil, kind: .purchase, reason: .offerRedeemed),
        Row(type: "OFFER_REDEEMED", subtype: "RESUBSCRIBE", kind: .purchase, reason: .resubscribe),
        Row(type: "OFFER_REDEEMED", subtype: "UPGRADE", kind: .planChange, reason: .upgrade),
        Row(type: "OFFER_REDEEMED", subtype: "DOWNGRADE", kind: .planChange, reason: .downgrade),
        Row(type: "DID_RENEW", subtype: nil, kind: .renewal, reason: .auto),
        Row(type: "DID_RENEW", subtype: "BILLING_RECOVERY", kind: .renewal, reason: .billingRecovery),
        Row(type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", kind: .planChange, reason: .upgrade),
        Row(type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", kind: .planChange, reason: .downgrade),
        Row(type: "DID_CHANGE_RENEWAL_PREF", subtype: nil, kind: .planChange, reason: .reverted),
        Row(
            type: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_ENABLED",
            kind: .autoRenewChanged,
            reason: .enabled
        ),
        Row(
            type: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_DISABLED",
            kind: .autoRenewChanged,
            reason: .disabled
        ),
        Row(type: "DID_FAIL_TO_RENEW", subtype: nil, kind: .renewalFailure, reason: .billingRetry),
        Row(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", kind: .renewalFailure, reason: .gracePeriod),
        Row(type: "GRACE_PERIOD_EXPIRED", subtype: nil, kind: .gracePeriodExpired, reason: nil),
        Row(type: "EXPIRED", subtype: "VOLUNTARY", kind: .expiration, reason: .voluntary),
        Row(type: "EXPIRED", subtype: "BILLING_RETRY", kind: .expiration, reason: .billingRetry),
        Row(type: "EXPIRED", subtype: "PRICE_INCREASE", kind: .expiration, reason: .priceIncrease),
        Row(type: "EXPIRED", subtype: "PRODUCT_NOT_FOR_SALE", kind: .expiration, reason: .productNotForSale),
        Row(type: "PRICE_INCREASE", subtype: "PENDING", kind: .priceIncrease, reason: .pending),
        Row(type: "PRICE_INCREASE", subtype: "ACCEPTED", kind: .priceIncrease, reason: .accepted),
        Row(type: "REFUND", subtype: nil, kind: .refund, reason: nil),
        // A group's seats: the subtype decides whatever type it comes with.
        Row(type: "REFUND", subtype: "SEATS", kind: .seatsRefunded, reason: nil),
        Row(type: "DID_CHANGE_RENEWAL_PREF", subtype: "INCREASE_QUANTITY", kind: .seatsChanged, reason: .increase),
        Row(type: "DID_CHANGE_RENEWAL_PREF", subtype: "DECREASE_QUANTITY", kind: .seatsChanged, reason: .decrease),
        Row(type: "DID_RENEW", subtype: "INCREASE_QUANTITY", kind: .seatsChanged, reason: .increase),
        Row(type: "UNCLAIM_SEATS", subtype: nil, kind: .seatsUnclaimed, reason: nil),
        Row(type: "REFUND_DECLINED", subtype: nil, kind: .refundDeclined, reason: nil),
        Row(type: "REFUND_REVERSED", subtype: nil, kind: .refundReversed, reason: nil),
        Row(type: "REVOKE", subtype: nil, kind: .revocation, reason: nil),
        Row(type: "RENEWAL_EXTENDED", subtype: nil, kind: .renewalExtended, reason: nil),
        Row(type: "RENEWAL_EXTENSION", subtype: "SUMMARY", kind: .renewalExtensionSummary, reason: nil),
        Row(type: "RENEWAL_EXTENSION", subtype: "FAILURE", kind: .renewalExtensionSummary, reason: .failure),
        Row(type: "CONSUMPTION_REQUEST", subtype: nil, kind: .consumptionRequest, reason: nil),
        Row(type: "ONE_TIME_CHARGE", subtype: nil, kind: .oneTimeCharge, reason: nil),
        Row(type: "TEST", subtype: nil, kind: .test, reason: nil),
        Row(
            type: "EXTERNAL_PURCHASE_TOKEN",
            subtype: "UNREPORTED",
            kind: .externalPurchaseToken,
            reason: .unreported
        ),
        Row(
            type: "EXTERNAL_PURCHASE_TOKEN",
            subtype: "ACTIVE_TOKEN_REMINDER",
            kind: .externalPurchaseToken,
            reason: .activeTokenReminder
        ),
        Row(type: "EXTERNAL_PURCHASE_TOKEN", subtype: "CREATED", kind: .externalPurchaseToken, reason: .created),
        Row(type: "RESCIND_CONSENT", subtype: nil, kind: .consentRescinded, reason: nil),
        Row(type: "METADATA_UPDATE", subtype: nil, kind: .metadataUpdate, reason: nil),
        Row(type: "MIGRATION", subtype: nil, kind: .migration, reason: nil),
        Row(type: "PRICE_CHANGE", subtype: nil, kind: .priceChange, reason: nil),
        Row(type: "SOMETHING_APPLE_ADDS_IN_2027", subtype: "NEW", kind: .other, reason: nil),
        // A subtype Apple adds to a known type keeps the type's kind, without a reason.
        Row(type: "EXTERNAL_PURCHASE_TOKEN", subtype: "SOMETHING_NEW", kind: .externalPurchaseToken, reason: nil),
        Row(type: "RESCIND_CONSENT", subtype: "SOMETHING_NEW", kind: .consentRescinded, reason: nil),
        Row(type: "PRICE_CHANGE", subtype: "SOMETHING_NEW", kind: .priceChange, reason: nil),
    ]

    @Test(arguments: table)
    func mapsAppleTypeToCanonicalKind(_ row: Row) {
        let (kind, reason) = VerifiedNotificationV2.classify(type: row.type, subtype: row.subtype)
        #expect(kind == row.kind)
        #expect(reason == row.reason)
    }

    /// The one list of Apple's values (``NotificationTypeV2``, what a downstream's `filter.types` may name) and the
    /// classification agree: every type and subtype in this table is in it, and every type in it is classified.
    @Test func theListOfApplesValuesHoldsEveryClassifiedOne() {
        for row in Self.table where !row.type.hasPrefix("SOMETHING") {
            #expect(NotificationTypeV2.all.contains(row.type), "\(row.type)")
            if let subtype = row.subtype, !subtype.hasPrefix("SOMETHING") {
                #expect(NotificationTypeV2.subtypes.contains(subtype), "\(subtype)")
            }
        }
        for type in NotificationTypeV2.all {
            let kind = VerifiedNotificationV2.classify(type: type, subtype: nil).kind
            #expect(kind != .other, "\(type)")
        }
    }

    @Test func renewalStatusWithoutSubtypeIsReadFromRenewalInfo() {
        var on = RenewalInfoPayload()
        on.autoRenewStatus = 1
        var off = RenewalInfoPayload()
        off.autoRenewStatus = 0
        #expect(
            VerifiedNotificationV2.classify(type: "DID_CHANGE_RENEWAL_STATUS", subtype: nil, renewalInfo: on).reason
                == .enabled
        )
        #expect(
            VerifiedNotificationV2.classify(type: "DID_CHANGE_RENEWAL_STATUS", subtype: nil, renewalInfo: off).reason
                == .disabled
        )
        #expect(VerifiedNotificationV2.classify(type: "DID_CHANGE_RENEWAL_STATUS", subtype: nil).reason == nil)
    }
}
