import Canonical
import Foundation
import TestSupport
import Testing
import V2Adapter

/// Group (multiseat) subscriptions as Apple documents them, from tokens built and signed in code: every multiseat
/// field of a transaction and a renewal info read into the canonical event, the seat subtypes deciding the kind
/// whatever type they come with, UNCLAIM_SEATS's claims kept, `ASSIGNED` ownership, and the amount from the tiers.
@Suite struct V2MultiSeatTests {
    let ca: TestCA
    let signer: TestSigner

    init() throws {
        ca = try TestCA()
        signer = try ca.chain.signer()
    }

    func event(_ n: TestNotification) throws -> CanonicalEvent {
        let verified = try ca.adapter().verifyNotification(
            signedPayload: Array(try n.signed(by: signer).utf8),
            now: TestPKI.now
        )
        let events = verified.canonicalEvents()
        try #require(events.count == 1)
        return events[0]
    }

    /// The purchaser's transaction of a group bought with 8 seats at 5 × 9.99 and 3 × 7.99, Apple-hosted invitations.
    static func purchaser() -> TestTransaction {
        var tx = TestTransaction()
        tx.quantity = 8
        tx.price = 9_240  // Apple's average per seat, never the amount
        tx.multiSeatInfo = TestTransaction.multiSeatInfo(
            tiers: [(9_990, 5), (7_990, 3)],
            invitations: "APPLE"
        )
        return tx
    }

    static func notification(_ type: String, _ subtype: String?, _ tx: TestTransaction) -> TestNotification {
        var n = TestNotification.didRenew()
        (n.notificationType, n.subtype, n.transaction) = (type, subtype, tx)
        n.notificationUUID = "00000000-0000-4000-8000-0000000005ea"
        return n
    }

    @Test func aGroupPurchaseCarriesItsSeatsTiersAndAmount() throws {
        var n = Self.notification("SUBSCRIBED", "INITIAL_BUY", Self.purchaser())
        n.renewalInfo?.renewalQuantity = 8
        n.renewalInfo?.multiSeatInfo =
            #"{"renewalPriceTiers":[{"price":9990,"quantity":5},{"price":7990,"quantity":3}]}"#
        let e = try event(n)
        #expect(e.kind == .purchase && e.reason == .initial)
        #expect(e.quantity == 8 && e.priceMilli == 9_240)
        #expect(
            e.seatPriceTiers == [
                SeatPriceTier(priceMilli: 9_990, quantity: 5), SeatPriceTier(priceMilli: 7_990, quantity: 3),
            ]
        )
        // 5 × 9.99 + 3 × 7.99 = 73.92, exactly, in milliunits; never 8 × the average.
        #expect(e.amountMilli == 73_920)
        #expect(e.invitationManagement == "apple" && e.ownership == "purchased")
        #expect(e.renewalQuantity == 8 && e.renewalSeatPriceTiers?.count == 2)
        #expect(e.revokedSeats == nil && e.additionalTransactionReason == nil && e.unclaimedSeatIDs == nil)
        #expect(e.entitlement?.state == .active)
        #expect(e.isMultiSeat)
    }

    @Test func fiveTiersAddUpExactly() {
        let tiers = [(12_990, 3), (11_990, 4), (10_490, 10), (9_990, 25), (8_990, 100)].map {
            SeatPriceTier(priceMilli: Int64($0.0), quantity: $0.1)
        }
        // 38,970 + 47,960 + 104,900 + 249,750 + 899,000
        #expect(SeatPriceTier.amount(tiers) == 1_340_580)
        #expect(SeatPriceTier.amount([SeatPriceTier(priceMilli: 9_990, quantity: 1)]) == 9_990)
        #expect(SeatPriceTier.amount([]) == nil)
        // A sum no purchase reaches is no wrapped number.
        #expect(SeatPriceTier.amount([SeatPriceTier(priceMilli: .max, quantity: 2)]) == nil)
    }

    @Test(arguments: ["DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_INFO", "SUBSCRIBED", "SOMETHING_NEW"])
    func seatChangesAreSeatChangesWhateverTheirType(_ type: String) throws {
        var up = Self.purchaser()
        (up.transactionID, up.quantity, up.additionalTransactionReason) = ("2000000900101005", 4, "SEAT_ADDITION")
        up.multiSeatInfo = TestTransaction.multiSeatInfo(tiers: [(7_990, 4)], invitations: "APPLE")
        let increase = try event(Self.notification(type, "INCREASE_QUANTITY", up))
        #expect(increase.kind == .seatsChanged && increase.reason == .increase)
        #expect(increase.additionalTransactionReason == "seat_addition" && increase.quantity == 4)
        #expect(increase.amountMilli == 31_960)
        var down = Self.notification(type, "DECREASE_QUANTITY", Self.purchaser())
        down.renewalInfo?.renewalQuantity = 6
        let decrease = try event(down)
        #expect(decrease.kind == .seatsChanged && decrease.reason == .decrease)
        #expect(decrease.renewalQuantity == 6)
        #expect(decrease.rawType == type && decrease.rawSubtype == "DECREASE_QUANTITY")
    }

    @Test(arguments: [true, false])
    func aSeatRefundReadsItsRevokedSeatsWhereverApplePutsThem(_ inside: Bool) throws {
        var tx = Self.purchaser()
        if inside {
            tx.multiSeatInfo = TestTransaction.multiSeatInfo(
                tiers: [(9_990, 5), (7_990, 3)],
                revoked: 2,
                invitations: "APPLE"
            )
        } else {
            tx.revokedSeatQuantity = 2
            tx.invitationManagement = "APPLE"
            tx.multiSeatInfo = TestTransaction.multiSeatInfo(tiers: [(9_990, 5), (7_990, 3)])
        }
        let e = try event(Self.notification("REFUND", "SEATS", tx))
        #expect(e.kind == .seatsRefunded && e.reason == nil)
        #expect(e.revokedSeats == 2 && e.invitationManagement == "apple")
        #expect(e.revocationDate == nil)
        #expect(e.entitlement?.state == .active, "a seat refund never revokes the purchaser")
    }

    @Test func unclaimedSeatsCarryTheClaimsToRevoke() throws {
        var n = Self.notification("UNCLAIM_SEATS", nil, Self.purchaser())
        n.unclaimSeatIDs = ["9b7e6c5a-1f2e-4d3c-8b9a-0a1b2c3d4e5f", "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9"]
        let e = try event(n)
        #expect(e.kind == .seatsUnclaimed)
        #expect(e.unclaimedSeatIDs == n.unclaimSeatIDs)
        #expect(e.rawType == "UNCLAIM_SEATS")
    }

    @Test func aMembersOwnTransactionIsAssigned() throws {
        var tx = Self.purchaser()
        (tx.transactionID, tx.originalTransactionID, tx.ownership) = (
            "2000000900202001", "2000000900202001", "ASSIGNED"
        )
        let e = try event(Self.notification("SUBSCRIBED", "INITIAL_BUY", tx))
        #expect(e.ownership == "assigned")
        #expect(e.quantity == 8, "a member's transaction repeats the purchaser's seats")
        #expect(!GroupPeriod.isPurchasers(e))
    }

    @Test func aWholeRefundIsStillARefund() throws {
        var tx = Self.purchaser()
        (tx.revocationDate, tx.revocationReason) = (TestCA.signedDate - 1_000, 0)
        let e = try event(Self.notification("REFUND", nil, tx))
        #expect(e.kind == .refund)
        #expect(e.entitlement?.state == .revoked)
    }

    @Test func anEventWithoutSeatsKeepsItsShape() throws {
        let e = try event(TestNotification.didRenew())
        #expect(!e.isMultiSeat)
        let json = String(decoding: try JSONEncoder().encode(e), as: UTF8.self)
        for key in ["revoked_seats", "seat_price_tiers", "amount_milli", "renewal_quantity", "group_seats"] {
            #expect(!json.contains("\"\(key)\""), "\(key) on an event of no group")
        }
    }
}
