import Canonical
import Crypto
import Foundation
import HTTPClient
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// Group (multiseat) subscriptions through the real service (docs/architecture.md, "Group subscriptions"): every
/// shape Apple documents, signed by the test PKI and posted to `serve`, gives its kind, keys, entitlement and the
/// subscription's seats; the old backend behind a `v1_passthrough` downstream never receives a cancellation while a
/// seat remains, and never `ASSIGNED`; a whole refund still revokes (the control).
@Suite struct GroupSubscriptionTests {
    static let signer = Result { TestSigner(headerJSON: try TestJWS.standardHeader(), key: try TestPKI.key("leaf")) }
    static let t = GatewayHarness.t
    static let day: Int64 = 86_400_000

    /// A purchaser's transaction of the test subscription (period of 30 days from `t` − 1 min).
    static func purchaser(id: String = "2000000900101004", seats: Int64, tiers: [(Int64, Int64)]) -> TestTransaction {
        var tx = TestTransaction()
        (tx.transactionID, tx.quantity, tx.price) = (id, seats, 9_990)
        tx.multiSeatInfo = TestTransaction.multiSeatInfo(tiers: tiers, invitations: "APPLE")
        return tx
    }

    static func body(
        _ n: Int,
        _ type: String,
        _ subtype: String?,
        _ tx: TestTransaction,
        renewal: Int64? = nil,
        unclaims: [String]? = nil
    ) throws -> [UInt8] {
        var note = TestNotification.didRenew()
        (note.notificationType, note.subtype, note.transaction) = (type, subtype, tx)
        note.notificationUUID = "00000000-0000-4000-8000-\(String(format: "%012d", 4_900 + n))"
        note.signedDate = t + Int64(n) * 60_000
        note.transaction?.signedDate = note.signedDate
        note.renewalInfo?.originalTransactionID = tx.originalTransactionID
        note.renewalInfo?.renewalQuantity = renewal
        note.renewalInfo?.signedDate = note.signedDate
        note.unclaimSeatIDs = unclaims
        let token = try note.signed(by: try signer.get())
        return Array(#"{"signedPayload":""#.utf8) + Array(token.utf8) + Array(#""}"#.utf8)
    }

    struct Delivered {
        var events: [String: (event: JSONObject, state: JSONObject?)] = [:]
        var v1Bodies: [String: JSONObject] = [:]
    }

    /// What the receiver got: each event's envelope by its notification's UUID, each V1 body by its `webhook-id`.
    static func delivered(_ receiver: LoopbackHTTPServer) throws -> Delivered {
        var d = Delivered()
        for r in receiver.requests {
            let object = try #require(try JSONParser.parse(r.body).objectValue)
            if r.path == "/events", let event = object["event"]?.objectValue, let id = event["id"]?.stringValue {
                d.events[id] = (event, object["state"]?.objectValue)
            } else if r.path == "/apple/v1", let id = r.header("webhook-id") {
                d.v1Bodies[id] = object
            }
        }
        return d
    }

    static func uuid(_ n: Int) -> String { "00000000-0000-4000-8000-\(String(format: "%012d", 4_900 + n))" }

    @Test func everyShapeGivesItsKindSeatsAndNeverACancellationWhileASeatRemains() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try GatewayServiceTests.start(receiver: receiver, now: Self.t + 3_600_000)
        defer { receiver.stop() }
        var seatAddition = Self.purchaser(id: "2000000900101005", seats: 4, tiers: [(7_990, 4)])
        seatAddition.additionalTransactionReason = "SEAT_ADDITION"
        var original = Self.purchaser(seats: 8, tiers: [(9_990, 5), (7_990, 3)])
        original.additionalTransactionReason = "SEAT_ADDITION"  // Apple marks every transaction of the period
        var seatRefund = original
        seatRefund.multiSeatInfo = TestTransaction.multiSeatInfo(
            tiers: [(9_990, 5), (7_990, 3)],
            revoked: 3,
            invitations: "APPLE"
        )
        var additionGone = seatAddition
        (additionGone.revocationDate, additionGone.revocationReason) = (Self.t + 5 * 60_000, 0)
        additionGone.revokedSeatQuantity = 4
        var member = Self.purchaser(id: "2000000900202002", seats: 8, tiers: [(9_990, 5), (7_990, 3)])
        (member.originalTransactionID, member.ownership) = ("2000000900202002", "ASSIGNED")
        var developerHosted = Self.purchaser(id: "2000000900303003", seats: 5, tiers: [(9_990, 5)])
        developerHosted.originalTransactionID = "2000000900303003"
        developerHosted.multiSeatInfo = TestTransaction.multiSeatInfo(tiers: [(9_990, 5)], invitations: "DEVELOPER")
        var whole = Self.purchaser(id: "2000000900404004", seats: 5, tiers: [(9_990, 5)])
        whole.originalTransactionID = "2000000900404004"
        (whole.revocationDate, whole.revocationReason) = (Self.t + 8 * 60_000, 1)

        let posts: [[UInt8]] = [
            try Self.body(
                1,
                "SUBSCRIBED",
                "INITIAL_BUY",
                Self.purchaser(seats: 8, tiers: [(9_990, 5), (7_990, 3)]),
                renewal: 8
            ),
            try Self.body(2, "DID_CHANGE_RENEWAL_PREF", "INCREASE_QUANTITY", seatAddition, renewal: 12),
            try Self.body(3, "REFUND", "SEATS", seatRefund),
            try Self.body(4, "DID_CHANGE_RENEWAL_PREF", "DECREASE_QUANTITY", seatRefund, renewal: 6),
            try Self.body(5, "REFUND", nil, additionGone),
            try Self.body(6, "SUBSCRIBED", "INITIAL_BUY", member),
            try Self.body(7, "UNCLAIM_SEATS", nil, developerHosted, unclaims: ["0f8fad5b-d9cb-469f-a165-70867728950e"]),
            try Self.body(8, "REFUND", nil, whole),
        ]
        for post in posts {
            #expect(try await GatewayServiceTests.post(g.url("/notifications"), post).status == 200)
        }
        await eventually("every delivery settled") {
            (try? g.service.store.deliveries().allSatisfy { $0.state == .delivered }) == true
                && (try? Self.delivered(receiver).events.count) == 8
        }
        let d = try Self.delivered(receiver)
        func event(_ n: Int) throws -> JSONObject { try #require(d.events[Self.uuid(n)]?.event) }
        func state(_ n: Int) throws -> JSONObject { try #require(d.events[Self.uuid(n)]?.state) }
        func entitlement(_ n: Int) throws -> String? { try event(n)["entitlement"]?.objectValue?["state"]?.stringValue }

        // 1. The purchase: its seats, tiers and amount; the state counts the group's seats.
        #expect(try event(1)["kind"] == .string("purchase"))
        #expect(try event(1)["group_seats"] == .number("8") && event(1)["amount_milli"] == .number("73920"))
        #expect(try state(1)["seats"] != nil, "the envelope's state carries the group's seats")
        // 2. Seats added: a new transaction of the same period; 12 seats.
        #expect(try event(2)["kind"] == .string("seats_changed") && event(2)["reason"] == .string("increase"))
        #expect(
            try event(2)["group_seats"] == .number("12")
                && event(2)["additional_transaction_reason"] == .string("seat_addition")
        )
        // 3. A seat refund: 3 of the original's seats; the purchaser keeps access.
        #expect(try event(3)["kind"] == .string("seats_refunded") && event(3)["revoked_seats"] == .number("3"))
        #expect(try event(3)["group_seats"] == .number("9") && entitlement(3) == "active")
        // 4. Fewer seats at the next renewal.
        #expect(try event(4)["kind"] == .string("seats_changed") && event(4)["reason"] == .string("decrease"))
        #expect(try event(4)["renewal_quantity"] == .number("6"))
        // 5. The addition refunded whole: its transaction revoked, the purchaser not (the original stands).
        #expect(try event(5)["kind"] == .string("refund") && event(5)["revocation_date"] != .null)
        #expect(try entitlement(5) == "active" && event(5)["group_seats"] == .number("5"))
        // 6. A member of an Apple-hosted group: assigned, entitled by its own transaction.
        #expect(try event(6)["ownership"] == .string("assigned") && entitlement(6) == "active")
        #expect(try event(6)["group_seats"] == nil, "a member's copy of the seats is not counted")
        // 7. Claims Apple released, for the team to revoke.
        #expect(try event(7)["kind"] == .string("seats_unclaimed"))
        #expect(try event(7)["unclaimed_seat_ids"] == .array([.string("0f8fad5b-d9cb-469f-a165-70867728950e")]))
        // 8. The control: a group refunded whole is revoked.
        #expect(try event(8)["kind"] == .string("refund") && entitlement(8) == "revoked")

        // The old backend: the purchase, the member (never ASSIGNED) and the whole refund; nothing for the seats.
        #expect(Set(d.v1Bodies.keys) == [Self.uuid(1), Self.uuid(6), Self.uuid(8)])
        func v1(_ n: Int) throws -> JSONObject { try #require(d.v1Bodies[Self.uuid(n)]) }
        func receipts(_ n: Int) throws -> [JSONObject] {
            try v1(n)["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue?.compactMap(\.objectValue)
                ?? []
        }
        #expect(try v1(1)["notification_type"] == .string("INITIAL_BUY"))
        #expect(try v1(6)["notification_type"] == .string("INITIAL_BUY"))
        #expect(try receipts(6).first?["in_app_ownership_type"] == .string("FAMILY_SHARED"))
        #expect(try v1(8)["notification_type"] == .string("CANCEL") && v1(8)["cancellation_date_ms"] != nil)
        for (id, body) in d.v1Bodies where id != Self.uuid(8) {
            #expect(!["CANCEL", "REFUND", "REVOKE"].contains(body["notification_type"]?.stringValue ?? ""))
        }
        let text = d.v1Bodies.values.map { String(decoding: JSONValue.object($0).text(), as: UTF8.self) }
        #expect(!text.contains { $0.contains("ASSIGNED") })

        // The subscription's state: 5 seats left this period, 6 at the next renewal.
        let states = try await g.service.store.read { tx in
            try tx.subscriptionStates(originalTransactionID: "2000000900101001")
        }
        let stored = try #require(try states.first.map { try JSONParser.parse($0.json).objectValue })
        #expect(stored?["seats"] == .number("5") && stored?["renewal_seats"] == .number("6"))

        // The report counts the groups whose period runs, their seats, and the window's seat events.
        let report = try g.service.ledger.report(bundleID: "com.example.gateway", since: 0, until: Self.t + 7_200_000)
        let sandbox = try #require(report.bundles.first { $0.environment == "sandbox" })
        let groups = try #require(sandbox.groups)
        // The purchaser's group (5 seats left) and the developer-hosted group (5); a member's copy of the seats is not
        // a group, and the group refunded whole has no seat left.
        #expect(groups.groups == 2 && groups.seats == 10)
        #expect(groups.seatsAdded == 1 && groups.seatsReduced == 1 && groups.seatRefunds == 1 && groups.unclaims == 1)
        await g.service.shutdown()
    }
}
