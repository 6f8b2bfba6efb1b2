import Canonical
import Testing
import V1Adapter
import WireJSON

/// What V1 makes of a group subscription (docs/architecture.md, "Group subscriptions"): no type for the seat subtypes,
/// UNCLAIM_SEATS, or a partial revocation; no `cancellation_date` on a purchaser's transaction while its period goes
/// on; `ASSIGNED` as a value V1 had.
@Suite struct V1GroupSubscriptionTests {
    typealias S = Story
    static let end = S.t0 + S.month

    /// A purchaser's transaction of the group's period.
    static func seatTransaction(
        _ id: String,
        seats: Int,
        revoked: Int? = nil,
        revocation: Int64? = nil,
        at time: Int64,
        type: String = "DID_RENEW",
        subtype: String? = nil
    ) -> CanonicalEvent {
        var e = S.event(type, subtype, .renewal, .auto, at: time, transaction: id, purchase: S.t0 + 1_000)
        (e.quantity, e.revokedSeats, e.revocationDate) = (seats, revoked, revocation)
        (e.invitationManagement, e.additionalTransactionReason) = ("apple", "seat_addition")
        e.computeEntitlement()
        return e
    }

    @Test(
        arguments: [
            ("REFUND", "SEATS"), ("DID_CHANGE_RENEWAL_PREF", "INCREASE_QUANTITY"),
            ("DID_CHANGE_RENEWAL_PREF", "DECREASE_QUANTITY"),
            ("DID_RENEW", "INCREASE_QUANTITY"), ("UNCLAIM_SEATS", nil),
        ] as [(String, String?)]
    )
    func seatsHaveNoV1Type(_ type: String, _ subtype: String?) {
        #expect(V1BodySynthesizer.v1NotificationType(v2Type: type, subtype: subtype) == nil)
    }

    @Test func aTransactionRefundedWholeWhileItsPeriodStandsIsNoCancel() throws {
        let t0 = Self.seatTransaction("2000000900000001", seats: 8, at: S.t0 + 1_000)
        let refunded = GroupPeriod.settle(
            Self.seatTransaction(
                "2000000900000002",
                seats: 4,
                revoked: 4,
                revocation: S.t0 + 5_000,
                at: S.t0 + 5_000,
                type: "REFUND"
            ),
            earlier: [t0]
        )
        #expect(V1BodySynthesizer.v1NotificationType(for: refunded) == nil)
        // A later body of the subscription lists the refunded transaction without a cancellation: its period stands.
        let renewal = Self.seatTransaction("2000000900000001", seats: 8, at: S.t0 + 9_000)
        let body = try #require(
            V1BodySynthesizer.body(
                for: renewal,
                history: [t0, refunded],
                latestReceipt: nil,
                password: "iapgw-secret:APP_SECRET",
                bundleVersion: nil
            )
        )
        let text = String(decoding: body, as: UTF8.self)
        #expect(!text.contains("cancellation_date"))
        // Both transactions of the period revoked: a CANCEL, with its date, as for any subscription.
        let all = GroupPeriod.settle(
            Self.seatTransaction(
                "2000000900000001",
                seats: 8,
                revoked: 8,
                revocation: S.t0 + 10_000,
                at: S.t0 + 10_000,
                type: "REFUND"
            ),
            earlier: [t0, refunded]
        )
        #expect(V1BodySynthesizer.v1NotificationType(for: all) == "CANCEL")
        let cancel = try #require(
            V1BodySynthesizer.body(
                for: all,
                history: [t0, refunded],
                latestReceipt: nil,
                password: "iapgw-secret:APP_SECRET",
                bundleVersion: nil
            )
        )
        #expect(String(decoding: cancel, as: UTF8.self).contains("\"cancellation_date_ms\""))
    }

    @Test(arguments: ["FAMILY_SHARED", "PURCHASED"])
    func assignedIsAValueV1Had(_ chosen: String) throws {
        var member = S.event("SUBSCRIBED", "INITIAL_BUY", .purchase, .initial, at: S.t0 + 1_000)
        member.ownership = "assigned"
        let info = V1BodySynthesizer.receiptInfo(transactions: [member], excludeOld: false, assignedOwnership: chosen)
        let entries = try #require(try JSONParser.parse(info.latestReceiptInfo).arrayValue)
        #expect(entries.first?.objectValue?["in_app_ownership_type"] == .string(chosen))
        let body = try #require(
            V1BodySynthesizer.body(
                for: member,
                history: [],
                latestReceipt: nil,
                password: "iapgw-secret:APP_SECRET",
                bundleVersion: nil,
                assignedOwnership: chosen
            )
        )
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.contains("\"in_app_ownership_type\":\"\(chosen)\"") && !text.contains("ASSIGNED"))
        #expect(V1App.defaultAssignedOwnership == "FAMILY_SHARED")
    }
}
