import Canonical
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import V2Adapter
import WireJSON

/// Group (multiseat) subscriptions as the simulator plays and signs them (docs/simulator.md, "Group subscriptions"):
/// every step of every group lifecycle carries the multiseat fields as the simulated App Store holds them, read back by
/// the gateway's V2 adapter; V1 never says a seat; the fake App Store Server API signs the same world.
@Suite struct GroupLifecycleTests {
    static let names = Lifecycles.groups.map(\.name)

    static func plan(_ name: String, _ pki: SimulatorPKI) throws -> Lifecycle.Plan { try Sim.plan(name, pki: pki) }

    /// The V1 bodies' JSON, as sent.
    static func json(_ body: ResponseBodyV1) throws -> JSONObject {
        try #require(try JSONParser.parse(Array(try JSONEncoder().encode(body))).objectValue)
    }

    static func receiptInfo(_ body: ResponseBodyV1) throws -> [JSONObject] {
        try json(body)["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue?.compactMap(\.objectValue)
            ?? []
    }

    @Test func theGroupLifecyclesArePlayedWithEveryOther() {
        #expect(
            Self.names == [
                "group-buy", "group-add-seats", "group-reduce-at-renewal", "group-seat-refund", "group-whole-refund",
                "group-member-joins-and-leaves", "group-unclaim",
            ]
        )
        #expect(Self.names.allSatisfy { name in Lifecycles.all.contains { $0.name == name } })
        let complete = Lifecycles.groups.allSatisfy { $0.v1Complete }
        #expect(complete, "V1 ends where V2 does for every group lifecycle")
    }

    @Test(arguments: names)
    func everyStepSignsTheSeatsTheSimulatedAppStoreHolds(name: String) throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan(name, pki)
            let adapter = try Sim.adapter(trusting: pki)
            for e in plan.emissions {
                let step = "\(name) '\(e.step)'"
                let n = try adapter.verifyNotification(
                    signedPayload: Array(try #require(e.v2SignedPayload).utf8),
                    now: e.at
                )
                let t = try #require(e.subscription.transactions.first { $0.transactionID == e.v2TransactionID })
                let seats = try #require(t.seats, "\(step): a group's transaction has seats")
                let tiers = try #require(t.seatTiers)

                // The transaction as Apple signs it: seats, tiers adding up to them, the average price per seat.
                let tx = try #require(n.transaction)
                #expect(tx.isMultiSeat && tx.quantity == seats, "\(step)")
                let signedTiers = try #require(tx.multiSeatInfo?.priceTiers, "\(step)")
                #expect(signedTiers.map(\.price) == tiers.map(\.priceMilli), "\(step)")
                #expect(signedTiers.map(\.quantity) == tiers.map(\.quantity), "\(step)")
                #expect(signedTiers.reduce(0) { $0 + ($1.quantity ?? 0) } == seats, "\(step)")
                #expect(tx.price == SimSeatTier.average(tiers), "\(step)")
                #expect(tx.revokedSeats == t.revokedSeats && tx.invitation == t.invitationManagement, "\(step)")
                #expect(tx.invitation == "APPLE" || tx.invitation == "DEVELOPER", "\(step)")
                #expect(tx.additionalTransactionReason == t.additionalTransactionReason, "\(step)")
                #expect(tx.inAppOwnershipType == (t.assignedBy == nil ? "PURCHASED" : "ASSIGNED"), "\(step)")
                // The renewal info: the seats of the next renewal and their tiers.
                let renewal = try #require(n.renewalInfo, "\(step)")
                let renewalSeats = try #require(e.subscription.renewal?.renewalSeats, "\(step)")
                #expect(renewal.renewalQuantity == renewalSeats, "\(step)")
                let renewalTiers = try #require(renewal.multiSeatInfo?.renewalPriceTiers, "\(step)")
                #expect(renewalTiers.reduce(0) { $0 + ($1.quantity ?? 0) } == renewalSeats, "\(step)")
                #expect(renewal.renewalPrice != nil, "\(step): the average per seat")

                // The gateway's V2 adapter reads them all into the canonical event.
                let event = try #require(n.canonicalEvents().first)
                #expect(event.isMultiSeat && event.quantity == seats && event.revokedSeats == t.revokedSeats, "\(step)")
                #expect(
                    event.seatPriceTiers
                        == tiers.map { SeatPriceTier(priceMilli: $0.priceMilli, quantity: $0.quantity) },
                    "\(step)"
                )
                #expect(
                    event.amountMilli == tiers.reduce(0) { $0 + $1.priceMilli * Int64($1.quantity) },
                    "\(step): the amount is the tiers' sum, never price × seats"
                )
                #expect(event.ownership == (t.assignedBy == nil ? "purchased" : "assigned"), "\(step)")
                #expect(event.renewalQuantity == renewalSeats, "\(step)")

                // V1 never had seats: its bodies say nothing of them, and nothing V1 did not have.
                for body in e.v1Bodies {
                    let text = String(decoding: try JSONEncoder().encode(body), as: UTF8.self)
                    #expect(
                        !text.contains("ASSIGNED") && !text.contains("SEAT") && !text.contains("multiSeat"),
                        "\(step)"
                    )
                    for entry in try Self.receiptInfo(body) {
                        #expect(
                            ["PURCHASED", "FAMILY_SHARED"].contains(entry["in_app_ownership_type"]?.stringValue ?? "")
                        )
                    }
                }
            }
        }
    }

    @Test func seatsAddedMidPeriodAreATransactionOfTheirOwnAndMarkTheWholePeriod() throws {
        try Sim.withPKI { pki throws in
            let e = try Self.plan("group-add-seats", pki).emissions
            #expect(e.map(\.v2Subtype) == ["INITIAL_BUY", "INCREASE_QUANTITY", nil])
            #expect(e.map(\.v2Type) == ["SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_RENEW"])
            #expect(e.map { $0.v1Bodies.map(\.notificationType) } == [["INITIAL_BUY"], [], ["DID_RENEW"]])
            #expect(e[1].expectedV2 == ExpectedEvent(.seatsChanged, .increase) && e[1].expectedV1.isEmpty)

            let added = e[1].subscription
            try #require(added.transactions.count == 2)
            let (original, addition) = (added.transactions[0], added.transactions[1])
            #expect(e[1].v2TransactionID == addition.transactionID, "the notification carries the new transaction")
            #expect(original.expiresDate == addition.expiresDate && addition.purchaseDate > original.purchaseDate)
            #expect(original.seats == 5 && addition.seats == 3, "the addition covers only the seats added")
            // 5 at 9.99 were bought: the 3 added are priced from the sixth seat on.
            #expect(addition.seatTiers == [SimSeatTier(priceMilli: 7_990, quantity: 3)])
            #expect(added.transactions.allSatisfy { $0.additionalTransactionReason == "SEAT_ADDITION" })
            #expect(added.groupSeats == 8 && added.renewal?.renewalSeats == 8, "additions carry into the renewal")
            #expect(e[0].subscription.transactions[0].additionalTransactionReason == nil, "one transaction: none")

            // The renewal: one transaction for all 8 seats, tiers from the first seat on.
            let renewed = try #require(e[2].subscription.latest)
            #expect(renewed.seats == 8 && renewed.additionalTransactionReason == nil && renewed.renewal)
            #expect(
                renewed.seatTiers == [
                    SimSeatTier(priceMilli: 9_990, quantity: 5), SimSeatTier(priceMilli: 7_990, quantity: 3),
                ]
            )
            #expect(renewed.priceMilli == (5 * 9_990 + 3 * 7_990) / 8)
            #expect(e[2].subscription.groupPeriod.map(\.transactionID) == [renewed.transactionID])
        }
    }

    @Test func aReductionWaitsForTheRenewal() throws {
        try Sim.withPKI { pki throws in
            let e = try Self.plan("group-reduce-at-renewal", pki).emissions
            #expect(e.map(\.v2Subtype) == ["INITIAL_BUY", "DECREASE_QUANTITY", nil])
            #expect(e[1].v1Bodies.isEmpty && e[1].expectedV2 == ExpectedEvent(.seatsChanged, .decrease))
            let renewal = try Sim.payload(try #require(e[1].v2SignedPayload), as: NotificationPayloadV2.self)
            let info = try Sim.payload(try #require(renewal.data?.signedRenewalInfo), as: RenewalInfoPayload.self)
            #expect(info.renewalQuantity == 5 && info.multiSeatInfo?.renewalPriceTiers?.count == 1)
            #expect(e[1].subscription.groupSeats == 8, "the period keeps its seats")
            #expect(e[2].subscription.latest?.seats == 5 && e[2].subscription.groupSeats == 5)
        }
    }

    @Test func aSeatRefundRevokesSeatsNotThePurchaser() throws {
        try Sim.withPKI { pki throws in
            let e = try Self.plan("group-seat-refund", pki).emissions
            let step = try #require(e.last)
            #expect(step.v2Type == "REFUND" && step.v2Subtype == "SEATS" && step.v1Bodies.isEmpty)
            let t = try #require(step.subscription.latest)
            #expect(t.revokedSeats == 3 && t.revocationDate == nil && t.revocationReason == nil)
            #expect(step.subscription.groupSeats == 5)
            let payload = try Sim.payload(try #require(step.v2SignedPayload), as: NotificationPayloadV2.self)
            #expect(payload.data?.status == 1, "the subscription stays active")
            let tx = try Sim.payload(try #require(payload.data?.signedTransactionInfo), as: TransactionPayload.self)
            #expect(tx.multiSeatInfo?.revokedSeatQuantity == 3 && tx.revocationDate == nil && tx.quantity == 8)
            #expect(Emitter.entitlement(step.subscription, at: step.at).state == .active)
            // verifyReceipt's view has no cancellation.
            #expect(Emitter.v1Transaction(t).cancellationDate == nil)
        }
    }

    @Test func aWholeRefundRevokesEveryTransactionOfThePeriodEachToldOnce() throws {
        try Sim.withPKI { pki throws in
            let e = try Self.plan("group-whole-refund", pki).emissions
            #expect(e.map(\.v2Type) == ["SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "REFUND", "REFUND"])
            let (first, last) = (e[2], e[3])
            let period = last.subscription.transactions
            try #require(period.count == 2)
            #expect(first.v2TransactionID == period[0].transactionID && last.v2TransactionID == period[1].transactionID)
            #expect(period.allSatisfy { $0.revocationDate == first.at && $0.revocationReason == 1 })
            #expect(first.subscription == last.subscription, "the App Store refunded the period at once")
            // V1 tells the subscription's refund once, with the last.
            #expect(first.v1Bodies.isEmpty && first.expectedV1.isEmpty)
            #expect(last.v1Bodies.map(\.notificationType) == ["CANCEL", "DID_CHANGE_RENEWAL_STATUS"])
            #expect(try Self.receiptInfo(last.v1Bodies[0]).allSatisfy { $0["cancellation_date_ms"] != nil })
            for step in [first, last] {
                let payload = try Sim.payload(try #require(step.v2SignedPayload), as: NotificationPayloadV2.self)
                #expect(payload.subtype == nil && payload.data?.status == 5)
                let tx = try Sim.payload(try #require(payload.data?.signedTransactionInfo), as: TransactionPayload.self)
                #expect(tx.revocationDate != nil && tx.additionalTransactionReason == "SEAT_ADDITION")
            }
            #expect(Emitter.entitlement(last.subscription, at: last.at).state == .revoked)
        }
    }

    @Test func aMemberHasATransactionOfTheirOwnAndLeavesByAssignmentRevoke() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan("group-member-joins-and-leaves", pki)
            let e = plan.emissions
            try #require(e.count == 3 && plan.originalTransactionIDs.count == 2)
            let (purchaser, member) = (plan.originalTransactionIDs[0], plan.originalTransactionIDs[1])
            #expect(e.map(\.originalTransactionID) == [purchaser, member, member])
            let joined = try #require(e[1].subscription.latest)
            #expect(joined.assignedBy == purchaser && joined.originalTransactionID == member)
            let group = try #require(e[0].subscription.latest)
            #expect(joined.seats == group.seats && joined.seatTiers == group.seatTiers, "the group's seat data")
            #expect(joined.expiresDate == group.expiresDate, "the member's access ends with the group's period")
            #expect(e[1].subscription.appAccountToken != e[0].subscription.appAccountToken)
            #expect(e[1].v2Type == "SUBSCRIBED" && e[1].v2Subtype == "INITIAL_BUY")
            // V1 never had ASSIGNED: the member reads as family shared.
            #expect(e[1].v1Bodies.map(\.notificationType) == ["INITIAL_BUY"])
            #expect(
                try Self.receiptInfo(e[1].v1Bodies[0]).map { $0["in_app_ownership_type"] } == [.string("FAMILY_SHARED")]
            )

            let left = try #require(e[2].subscription.latest)
            #expect(left.revocationType == "ASSIGNMENT_REVOKE" && left.revocationDate == e[2].at)
            #expect(e[2].v2Type == "REVOKE" && e[2].v1Bodies.map(\.notificationType) == ["REVOKE"])
            let revoke = try Sim.payload(try #require(e[2].v2SignedPayload), as: NotificationPayloadV2.self)
            let tx = try Sim.payload(try #require(revoke.data?.signedTransactionInfo), as: TransactionPayload.self)
            #expect(tx.revocationType == "ASSIGNMENT_REVOKE" && tx.inAppOwnershipType == "ASSIGNED")
            #expect(Emitter.entitlement(e[2].subscription, at: e[2].at).state == .revoked)
            #expect(plan.finalStates == [.active, .revoked], "the purchaser keeps access")
        }
    }

    @Test func anUnclaimCarriesTheClaimsAndThePurchasersSubscription() throws {
        try Sim.withPKI { pki throws in
            let e = try Self.plan("group-unclaim", pki).emissions
            #expect(e.map(\.v2Type) == ["SUBSCRIBED", "REFUND", "UNCLAIM_SEATS"])
            let step = try #require(e.last)
            #expect(step.v1Bodies.isEmpty && step.expectedV2 == ExpectedEvent(.seatsUnclaimed))
            let payload = try Sim.payload(try #require(step.v2SignedPayload), as: NotificationPayloadV2.self)
            let ids = try #require(payload.unclaimInfo?.unclaimSeatIDs)
            #expect(ids.count == 2 && Set(ids).count == 2)
            #expect(ids.allSatisfy { $0.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12] })
            let tx = try Sim.payload(try #require(payload.data?.signedTransactionInfo), as: TransactionPayload.self)
            #expect(tx.originalTransactionID == step.originalTransactionID && tx.invitation == "DEVELOPER")
            let token = try #require(step.v2SignedPayload)
            let verified = try Sim.adapter(trusting: pki).verifyNotification(
                signedPayload: Array(token.utf8),
                now: step.at
            )
            let event = try #require(verified.canonicalEvents().first)
            #expect(event.kind == .seatsUnclaimed && event.unclaimedSeatIDs == ids)
            #expect(event.invitationManagement == "developer" && event.entitlement?.state == .active)
        }
    }

    @Test func tiersArePricedFromWhereThePeriodsSeatsEnd() {
        let team = Catalogue.team
        #expect(team.seatTiers(3) == [SimSeatTier(priceMilli: 9_990, quantity: 3)])
        #expect(
            team.seatTiers(8) == [
                SimSeatTier(priceMilli: 9_990, quantity: 5), SimSeatTier(priceMilli: 7_990, quantity: 3),
            ]
        )
        #expect(
            team.seatTiers(4, after: 3) == [
                SimSeatTier(priceMilli: 9_990, quantity: 2), SimSeatTier(priceMilli: 7_990, quantity: 2),
            ]
        )
        #expect(team.seatTiers(2, after: 9) == [SimSeatTier(priceMilli: 7_990, quantity: 2)])
        #expect(team.seatTiers(0).isEmpty)
        #expect(Catalogue.monthly.seatTiers(4) == [SimSeatTier(priceMilli: 9_990, quantity: 4)], "one price")
        var bounded = team
        bounded.seatPricing = [
            SimSeatPricing(seats: 2, priceMilli: 5_000), SimSeatPricing(seats: 2, priceMilli: 4_000),
        ]
        #expect(
            bounded.seatTiers(6) == [
                SimSeatTier(priceMilli: 5_000, quantity: 2), SimSeatTier(priceMilli: 4_000, quantity: 4),
            ],
            "beyond the last step, its price"
        )
        #expect(SimSeatTier.average([]) == nil)
        #expect(SimSeatTier.average(team.seatTiers(8)) == 9_240)
    }

    @Test func impossibleGroupStepsThrowBadStep() throws {
        let cases: [@Sendable (inout LifecycleContext) throws -> Void] = [
            { c in _ = try c.buyGroup(Catalogue.team, seats: 0) },
            { c in _ = try c.buyGroup(Catalogue.coins, seats: 3) },
            { c in _ = try c.buyGroup(Catalogue.team, seats: 3, invitations: "SOMEONE") },
            { c in try c.addSeats(try c.buy(Catalogue.monthly), 2) },
            { c in
                let s = try c.buyGroup(Catalogue.team, seats: 3)
                c.advance(months: 1.5)
                try c.addSeats(s, 2)
            },
            { c in try c.reduceSeatsAtRenewal(try c.buyGroup(Catalogue.team, seats: 3), to: 3) },
            { c in try c.reduceSeatsAtRenewal(try c.buyGroup(Catalogue.team, seats: 3), to: 0) },
            { c in try c.refundSeats(try c.buyGroup(Catalogue.team, seats: 3), 3) },
            { c in _ = try c.memberJoins(try c.buyGroup(Catalogue.team, seats: 3, invitations: "DEVELOPER")) },
            { c in
                let s = try c.buyGroup(Catalogue.team, seats: 2)
                _ = try c.memberJoins(s)
                _ = try c.memberJoins(s)  // the purchaser holds the other seat
            },
            { c in try c.memberLeaves(try c.buyGroup(Catalogue.team, seats: 3)) },
            { c in _ = try c.unclaimSeats(try c.buyGroup(Catalogue.team, seats: 3), 1) },
            { c in
                let s = try c.buyGroup(Catalogue.team, seats: 3)
                try c.refundGroup(s)
                try c.refundGroup(s)
            },
        ]
        for (i, body) in cases.enumerated() {
            let error = #expect(throws: SimulatorError.self, "case \(i)") {
                try Sim.withPKI { pki throws in
                    _ = try Lifecycle("custom", "a story written by the test", final: [.active], body).plan(
                        bundleID: Sim.bundleID,
                        sharedSecret: Sim.secret,
                        emitter: Emitter(pki: pki),
                        start: Sim.t0,
                        monthMillis: Sim.month
                    )
                }
            }
            #expect(error?.code == "bad_step", "case \(i)")
        }
    }

    // MARK: The fake App Store Server API

    @Test func theFakeAppStoreServerAPISignsTheGroupAndItsMembers() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan("group-member-joins-and-leaves", pki)
            let added = try Sim.finalSubscription("group-add-seats", pki: pki)
            // The member left at 0.5 month; the group's period runs to 1 month.
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + Sim.month * 6 / 10)
            let (purchaser, member) = (plan.originalTransactionIDs[0], plan.originalTransactionIDs[1])
            for otid in plan.originalTransactionIDs {
                try h.put(try #require(plan.emissions.last { $0.originalTransactionID == otid }).subscription)
            }

            // The member's history: their own transaction, ASSIGNED, the group's seats; the filter finds it.
            let history = try h.get("/inApps/v2/history/\(member)")
            try #require(history.status == 200)
            let signed = try Sim.decode(HistoryResponse.self, history).signedTransactions
            let tx = try Sim.payload(try #require(signed.first), as: TransactionPayload.self)
            #expect(signed.count == 1 && tx.inAppOwnershipType == "ASSIGNED" && tx.quantity == 5)
            #expect(tx.multiSeatInfo?.priceTiers?.count == 1 && tx.revocationType == "ASSIGNMENT_REVOKE")
            #expect(
                try FakeAppleHarness.transactionIDs(
                    try h.get("/inApps/v2/history/\(member)", query: ["inAppOwnershipType": "ASSIGNED"])
                ) == [member]
            )
            #expect(
                try FakeAppleHarness.transactionIDs(
                    try h.get("/inApps/v2/history/\(member)", query: ["inAppOwnershipType": "PURCHASED"])
                ).isEmpty
            )
            #expect(
                try FakeAppleHarness.transactionIDs(
                    try h.get("/inApps/v2/history/\(purchaser)", query: ["inAppOwnershipType": "ASSIGNED"])
                ).isEmpty
            )

            // The member's and the purchaser's statuses: revoked and active, each renewal info with the group's seats.
            for (otid, status) in [(member, 5), (purchaser, 1)] {
                let response = try h.get("/inApps/v1/subscriptions/\(otid)")
                try #require(response.status == 200)
                let item = try #require(
                    try Sim.decode(StatusResponse.self, response).data.first?.lastTransactions.first
                )
                #expect(item.status == status, "\(otid)")
                let renewal = try Sim.payload(try #require(item.signedRenewalInfo), as: RenewalInfoPayload.self)
                #expect(renewal.renewalQuantity == 5 && renewal.multiSeatInfo?.renewalPriceTiers != nil, "\(otid)")
            }

            // A period of two transactions: the history signs both, each with its own seats, both SEAT_ADDITION
            // while they share the period; the status signs the latest, with the renewal's seats.
            try h.put(added)
            let all = try Sim.decode(
                HistoryResponse.self,
                try h.get("/inApps/v2/history/\(added.originalTransactionID)")
            )
            .signedTransactions.map { try Sim.payload($0, as: TransactionPayload.self) }
            #expect(all.map(\.quantity) == [5, 3, 8])
            #expect(all.map(\.additionalTransactionReason) == ["SEAT_ADDITION", "SEAT_ADDITION", nil])
            #expect(
                all.allSatisfy {
                    $0.inAppOwnershipType == "PURCHASED" && $0.multiSeatInfo?.invitationManagement == "APPLE"
                }
            )
            let status = try Sim.decode(
                StatusResponse.self,
                try h.get("/inApps/v1/subscriptions/\(added.originalTransactionID)")
            )
            let item = try #require(status.data.first?.lastTransactions.first)
            #expect(try Sim.payload(item.signedTransactionInfo, as: TransactionPayload.self).quantity == 8)
            #expect(
                try Sim.payload(try #require(item.signedRenewalInfo), as: RenewalInfoPayload.self).renewalQuantity == 8
            )
        }
    }

    @Test func verifyReceiptAnswersTheGroupAsV1Knew() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan("group-member-joins-and-leaves", pki)
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + Sim.month * 6 / 10)
            for otid in plan.originalTransactionIDs {
                let s = try #require(plan.emissions.last { $0.originalTransactionID == otid }).subscription
                try h.put(s)
                let answer = try h.verifyReceipt(sandbox: true, receipt: s.receiptToken)
                #expect(answer.status == 0)
                let info = try #require(answer.latestReceiptInfo?.items.first)
                let member = s.latest?.assignedBy != nil
                #expect(info.inAppOwnershipType == (member ? "FAMILY_SHARED" : "PURCHASED"), "\(otid)")
                #expect(info.quantity == V1Scalar(text: "5"), "\(otid): the seats, as the gateway's V1 formats say")
                #expect((info.cancellationDateMs != nil) == member, "\(otid)")
            }
        }
    }
}
