import Canonical
import Testing

/// A group subscription's seats and its purchaser's access, period by period (``GroupPeriod``): seat additions add
/// transactions to a period, a seat refund revokes seats of some of them, a renewal starts a period of its own.
@Suite struct GroupPeriodTests {
    static let otid = "3000000000000001"
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_780_000_000_000
    static let end = start + 30 * day

    /// A view of one of the purchaser's transactions, as a V2 event carries it.
    static func tx(
        _ id: String,
        seats: Int,
        revoked: Int? = nil,
        revocation: Int64? = nil,
        at: Int64,
        expires: Int64 = end,
        addition: Bool = true,
        renewal: Int? = nil,
        ownership: String = "purchased"
    ) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: "n-\(id)-\(at)",
            source: .v2,
            kind: .renewal,
            rawType: "DID_RENEW",
            eventDate: at,
            eventDateSource: .signedDate,
            verified: true
        )
        (e.originalTransactionID, e.transactionID, e.productType) = (otid, id, .autoRenewable)
        (e.purchaseDate, e.expiresDate, e.revocationDate) = (start, expires, revocation)
        (e.quantity, e.revokedSeats, e.ownership, e.renewalQuantity) = (seats, revoked, ownership, renewal)
        e.invitationManagement = "apple"
        e.additionalTransactionReason = addition ? "seat_addition" : nil
        e.computeEntitlement()
        return e
    }

    @Test func anOriginalAndTwoAdditionsAddUpAndASeatRefundOverTwoOfThemTakesItsSeatsOff() throws {
        let t0 = Self.tx("t0", seats: 8, at: Self.start)
        let t1 = Self.tx("t1", seats: 4, at: Self.start + Self.day)
        let t2 = Self.tx("t2", seats: 2, at: Self.start + 2 * Self.day)
        #expect(GroupPeriod.of(t2, earlier: [t0, t1])?.seats == 14)
        // One refund of 5 seats: 3 of t1's and 2 of t0's. Each transaction's newest view counts, once.
        let t1Refunded = Self.tx("t1", seats: 4, revoked: 3, at: Self.start + 3 * Self.day)
        let t0Refunded = Self.tx("t0", seats: 8, revoked: 2, at: Self.start + 3 * Self.day)
        let period = try #require(GroupPeriod.of(t0Refunded, earlier: [t0, t1, t2, t1Refunded]))
        #expect(period.seats == 9)
        #expect(!period.allRevoked)
        let settled = GroupPeriod.settle(t0Refunded, earlier: [t0, t1, t2, t1Refunded])
        #expect(settled.groupSeats == 9)
        #expect(settled.entitlement?.state == .active, "a seat refund never revokes the purchaser")
    }

    @Test func aRenewalWithFewerSeatsIsAPeriodOfItsOwn() throws {
        let old = [
            Self.tx("t0", seats: 8, at: Self.start), Self.tx("t1", seats: 4, at: Self.start + Self.day, renewal: 6),
        ]
        let renewed = Self.tx(
            "t3",
            seats: 6,
            at: Self.end,
            expires: Self.end + 30 * Self.day,
            addition: false,
            renewal: nil
        )
        let settled = GroupPeriod.settle(renewed, earlier: old)
        #expect(settled.groupSeats == 6, "the last period's transactions are not this one's")
        #expect(settled.renewalQuantity == 6, "the newest renewal quantity the subscription has")
    }

    @Test func aTransactionWhollyRefundedLeavesThePurchaserWhileAnotherStandsAndNotWhenNone() throws {
        let t0 = Self.tx("t0", seats: 8, at: Self.start)
        let t1Gone = Self.tx(
            "t1",
            seats: 4,
            revoked: 4,
            revocation: Self.start + 2 * Self.day,
            at: Self.start + 2 * Self.day
        )
        #expect(t1Gone.entitlement?.state == .revoked, "alone, the transaction's own dates revoke it")
        let settled = GroupPeriod.settle(t1Gone, earlier: [t0])
        #expect(settled.entitlement?.state == .active && settled.groupSeats == 8)
        #expect(GroupPeriod.isPartialRevocation(settled))
        // Then the rest: every transaction of the period carries a revocation, and only now the purchaser loses it.
        let t0Gone = Self.tx(
            "t0",
            seats: 8,
            revoked: 8,
            revocation: Self.start + 3 * Self.day,
            at: Self.start + 3 * Self.day
        )
        let all = GroupPeriod.settle(t0Gone, earlier: [t0, t1Gone])
        #expect(all.entitlement?.state == .revoked && all.groupSeats == 0)
        #expect(!GroupPeriod.isPartialRevocation(all))
    }

    @Test func membersAreNeverCountedNorSettled() {
        let t0 = Self.tx("t0", seats: 8, at: Self.start)
        let member = Self.tx("m1", seats: 8, at: Self.start + Self.day, ownership: "assigned")
        #expect(GroupPeriod.of(member, earlier: [t0]) == nil)
        #expect(GroupPeriod.settle(member, earlier: [t0]) == member)
        #expect(GroupPeriod.of(t0, earlier: [member])?.seats == 8, "a member's copy of the seats is not more seats")
        #expect(GroupPeriod.isBeyondV1(member), "a member is V2's alone: never compared")
        #expect(!GroupPeriod.isBeyondV1(t0), "the purchaser's renewal is compared as any subscription's")
    }

    @Test func anEventOfNoGroupIsLeftAlone() {
        var e = Self.tx("t0", seats: 1, at: Self.start, addition: false)
        (e.invitationManagement, e.ownership) = (nil, "purchased")
        #expect(!e.isMultiSeat)
        #expect(GroupPeriod.settle(e, earlier: []) == e)
        #expect(!GroupPeriod.isBeyondV1(e))
    }
}
