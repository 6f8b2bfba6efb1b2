import Canonical
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V2Adapter

/// The refund-request lifecycles: a purchase, Apple's CONSUMPTION_REQUEST, then Apple's decision by the consumption
/// information the fake App Store Server API received — sent here the way the gateway sends it (a PUT with a bearer
/// token and the client's body).
@Suite struct RefundRequestLifecycleTests {
    static let names = ["refund-request", "refund-request-consumable"]

    struct Request {
        let h: FakeAppleHarness
        let lifecycle: Lifecycle
        let plan: Lifecycle.Plan
        /// The CONSUMPTION_REQUEST's step.
        let index: Int
        var transactionID: String { plan.emissions[index].awaitsConsumptionInfo ?? "" }

        /// Sends consumption information to the fake as the gateway's client does: `202` expected.
        func answer(_ preference: ConsumptionInformation.RefundPreference?) throws {
            let info = ConsumptionInformation(
                customerConsented: true,
                deliveryStatus: .delivered,
                sampleContentProvided: false,
                refundPreference: preference
            )
            let response = h.api(
                "PUT",
                "/inApps/v2/transactions/consumption/" + transactionID,
                token: try h.token(),
                body: Array(try JSONEncoder().encode(info))
            )
            #expect(response.status == 202)
        }

        func outcome(waitMillis: Int64 = 30_000) async throws -> RefundRequestOutcome {
            try await lifecycle.awaitRefundAnswer(after: index, of: plan, store: h.store, waitMillis: waitMillis)
        }
    }

    /// The story planned, and the fake Apple's state as a run leaves it once the CONSUMPTION_REQUEST is sent.
    static func withRequest(_ name: String, _ body: (Request) async throws -> Void) async throws {
        try await Sim.withPKI { pki in
            let lifecycle = try #require(Lifecycles.named(name))
            let plan = try Sim.plan(name, pki: pki)
            let index = try #require(plan.emissions.firstIndex { $0.awaitsConsumptionInfo != nil })
            let h = FakeAppleHarness(pki: pki, now: plan.emissions[index].at + 1_000)
            for e in plan.emissions.prefix(index + 1) { try h.put(e.subscription) }
            try await body(Request(h: h, lifecycle: lifecycle, plan: plan, index: index))
        }
    }

    /// Every V2 notification of `plan` verified by the gateway's V2 adapter: its kind is the one the step expects.
    static func kinds(_ plan: Lifecycle.Plan, pki: SimulatorPKI) throws -> [EventKind] {
        let adapter = try Sim.adapter(trusting: pki)
        return try plan.emissions.map { e in
            let token = try #require(e.v2SignedPayload)
            let event = try #require(
                try adapter.verifyNotification(signedPayload: Array(token.utf8), now: e.at).canonicalEvents().first
            )
            #expect(event.kind == e.expectedV2?.kind, "\(e.step)")
            return event.kind
        }
    }

    @Test(arguments: names)
    func theRequestCarriesItsReasonAndAppleDecidesAloneByDefault(_ name: String) async throws {
        try await Self.withRequest(name) { r in
            let request = r.plan.emissions[r.index]
            #expect(request.v2Type == "CONSUMPTION_REQUEST")
            let payload = try Sim.payload(try #require(request.v2SignedPayload), as: NotificationPayloadV2.self)
            #expect(payload.data?.consumptionRequestReason == "UNINTENDED_PURCHASE")
            #expect(request.transactionIDAsked == r.transactionID)
            // V1 has a CONSUMPTION_REQUEST for consumables only.
            #expect(
                request.v1Bodies.map(\.notificationType)
                    == (name == "refund-request-consumable" ? ["CONSUMPTION_REQUEST"] : [])
            )
            // The plan with no answer: Apple refunds.
            #expect(r.plan.emissions.map(\.v2Type).suffix(2) == ["CONSUMPTION_REQUEST", "REFUND"])
            #expect(r.plan.finalStates == [.revoked])
            #expect(r.lifecycle.final == [.revoked])
            #expect(try Self.kinds(r.plan, pki: r.h.pki).suffix(2) == [.consumptionRequest, .refund])
        }
    }

    @Test(arguments: names, [ConsumptionInformation.RefundPreference.grantFull, .grantProrated])
    func aGrantPreferenceIsRefunded(
        _ name: String,
        _ preference: ConsumptionInformation.RefundPreference
    )
        async throws
    {
        try await Self.withRequest(name) { r in
            if preference == .grantProrated, name == "refund-request-consumable" {
                // A prorated refund comes with the share consumed (a consumable's).
                let response = r.h.api(
                    "PUT",
                    "/inApps/v2/transactions/consumption/" + r.transactionID,
                    token: try r.h.token(),
                    body: Array(
                        #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":40000,"refundPreference":"GRANT_PRORATED"}"#
                            .utf8
                    )
                )
                #expect(response.status == 202)
            } else {
                try r.answer(preference)
            }
            let outcome = try await r.outcome()
            #expect(outcome.info?.refundPreference == preference.rawValue)
            #expect(outcome.info?.count == 1)
            #expect(outcome.decision == "REFUND")
            let refund = try #require(outcome.plan.emissions.last)
            #expect(refund.v2Type == "REFUND")
            let revoked = try #require(refund.subscription.transactions.last { $0.transactionID == r.transactionID })
            #expect(revoked.revocationDate == refund.at && revoked.revocationReason == 1)
            #expect(outcome.plan.finalStates == [.revoked])
            #expect(try Self.kinds(outcome.plan, pki: r.h.pki).last == .refund)
        }
    }

    @Test(arguments: names)
    func aDeclinePreferenceIsDeclined(_ name: String) async throws {
        try await Self.withRequest(name) { r in
            try r.answer(.decline)
            let outcome = try await r.outcome()
            #expect(outcome.info?.refundPreference == "DECLINE")
            #expect(outcome.decision == "REFUND_DECLINED")
            // The same story up to the request, then Apple's decision.
            #expect(
                outcome.plan.emissions.prefix(r.index + 1).map(\.v2NotificationUUID)
                    == r.plan.emissions.prefix(r.index + 1).map(\.v2NotificationUUID)
            )
            let declined = try #require(outcome.plan.emissions.last)
            #expect(declined.v2Type == "REFUND_DECLINED")
            #expect(declined.v1Bodies.isEmpty, "V1 has no REFUND_DECLINED")
            #expect(declined.subscription.transactions.allSatisfy { $0.revocationDate == nil })
            #expect(outcome.plan.finalStates == [.active])
            #expect(outcome.plan.refundAnswers == [r.transactionID: "DECLINE"])
            #expect(try Self.kinds(outcome.plan, pki: r.h.pki).last == .refundDeclined)
        }
    }

    @Test(arguments: names)
    func nothingWithinTheWaitIsRefunded(_ name: String) async throws {
        try await Self.withRequest(name) { r in
            let outcome = try await r.outcome(waitMillis: 100)
            #expect(outcome.info == nil)
            #expect(outcome.decision == "REFUND")
            #expect(outcome.waitedMillis >= 100)
            #expect(outcome.plan.emissions.map(\.v2NotificationUUID) == r.plan.emissions.map(\.v2NotificationUUID))
            #expect(outcome.plan.emissions.last?.v2Type == "REFUND")
        }
    }

    @Test func informationWithoutAPreferenceLeavesAppleToDecideARefund() async throws {
        try await Self.withRequest("refund-request-consumable") { r in
            try r.answer(nil)
            let outcome = try await r.outcome()
            #expect(outcome.info != nil && outcome.info?.refundPreference == nil)
            #expect(outcome.decision == "REFUND")
            #expect(outcome.plan.emissions.last?.v2Type == "REFUND")
        }
    }

    @Test func anAnswerArrivingDuringTheWaitEndsIt() async throws {
        try await Self.withRequest("refund-request-consumable") { r in
            let waiting = Task { try await r.outcome(waitMillis: 600_000) }
            try r.answer(.decline)
            let outcome = try await waiting.value
            #expect(outcome.decision == "REFUND_DECLINED")
            #expect(outcome.waitedMillis < 600_000)
        }
    }

    @Test func aStepThatIsNotARefundRequestIsRefused() async throws {
        try await Self.withRequest("refund-request-consumable") { r in
            await #expect(throws: SimulatorError.self) {
                try await r.lifecycle.awaitRefundAnswer(after: 0, of: r.plan, store: r.h.store, waitMillis: 0)
            }
        }
    }
}

extension Emission {
    /// The transaction of the step's V2 signed transaction info (decoded without verification).
    fileprivate var transactionIDAsked: String? {
        guard let token = v2SignedPayload,
            let payload = try? Sim.payload(token, as: NotificationPayloadV2.self),
            let transaction = payload.data?.signedTransactionInfo
        else { return nil }
        return (try? Sim.payload(transaction, as: TransactionPayload.self))?.transactionID
    }
}
