import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// The fake `verifyReceipt`, production and sandbox, answered from the simulated App Store's state.
@Suite struct FakeAppleVerifyReceiptTests {
    /// A harness holding the "auto-renew" subscription (three transactions), its clock after the story.
    static func withHarness(_ body: (FakeAppleHarness, SimSubscription) throws -> Void) throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan("auto-renew", pki: pki)
            let s = try #require(plan.emissions.last).subscription
            let harness = FakeAppleHarness(pki: pki, now: plan.end + 1_000)
            try harness.put(s)
            try body(harness, s)
        }
    }

    @Test func productionAnswers21007ForASandboxReceipt() throws {
        try Self.withHarness { h, s throws in
            let answer = try h.verifyReceipt(sandbox: false, receipt: s.receiptToken)
            #expect(answer.statusCode == 21007)
            #expect(answer.receipt == nil && answer.latestReceiptInfo == nil)
        }
    }

    @Test func sandboxAnswersTheReceipt() throws {
        try Self.withHarness { h, s throws in
            let answer = try h.verifyReceipt(sandbox: true, receipt: s.receiptToken)
            #expect(answer.statusCode == 0)
            #expect(answer.environment == "Sandbox")
            let receipt = try #require(answer.receipt)
            #expect(receipt.bundleID == Sim.bundleID)
            #expect(receipt.receiptType == "ProductionSandbox")
            #expect(receipt.requestDateMs?.int64 == h.now)
            #expect(receipt.inApp?.count == 3)
            #expect(answer.latestReceipt != s.receiptToken, "a new receipt, signed now")
            let info = try #require(answer.latestReceiptInfo).items
            #expect(info.count == 3)
            #expect(info.map(\.transactionIDText) == s.transactions.reversed().map(\.transactionID), "newest first")
            #expect(info.compactMap(\.purchaseMillis) == s.transactions.map(\.purchaseDate).sorted(by: >))
            #expect(info.allSatisfy { $0.originalTransactionIDText == s.originalTransactionID })
            #expect(info.first?.expiresMillis == s.latest?.expiresDate)
            let pending = try #require(answer.pendingRenewalInfo)
            #expect(pending.count == 1)
            #expect(pending.first?.originalTransactionID?.text == s.originalTransactionID)
            #expect(pending.first?.autoRenewProductID == "sim.monthly")
            #expect(pending.first?.autoRenewStatus?.text == "1")
            #expect(answer.isRetryable == nil)
            // Apple's wire names.
            let raw = try #require(
                try JSONParser.parse(
                    h.verifyReceipt(
                        sandbox: true,
                        body: try Sim.json(
                            ["receipt-data": s.receiptToken, "password": Sim.secret])
                    )
                    .body
                ).objectValue
            )
            #expect(raw["latest_receipt_info"]?.arrayValue?.count == 3)
            #expect(raw["pending_renewal_info"]?.arrayValue?.count == 1)
            #expect(raw["receipt"]?.objectValue?["bundle_id"]?.stringValue == Sim.bundleID)
        }
    }

    @Test func wrongPasswordAnswers21004() throws {
        try Self.withHarness { h, s throws in
            #expect(
                try h.verifyReceipt(sandbox: true, receipt: s.receiptToken, password: "not-the-secret").statusCode
                    == 21004
            )
            #expect(
                try h.verifyReceipt(sandbox: true, receipt: s.receiptToken, password: Sim.secret + " ").statusCode
                    == 21004
            )
            #expect(try h.verifyReceipt(sandbox: true, receipt: s.receiptToken).statusCode == 0)
        }
    }

    @Test(arguments: ["{}", #"{"password":"x"}"#, #"{"receipt-data":42}"#, #"{"receipt-data":""}"#])
    func malformedRequestAnswers21002(body: String) throws {
        try Self.withHarness { h, _ throws in
            for sandbox in [true, false] {
                let response = h.verifyReceipt(sandbox: sandbox, body: Array(body.utf8))
                #expect(response.status == 200)
                #expect(try Sim.decode(VerifyReceiptResponse.self, response).statusCode == 21002)
            }
        }
    }

    /// An opaque token the simulated App Store never issued is not a receipt: 21002 on either URL.
    @Test func unknownTokenAnswers21002() throws {
        try Self.withHarness { h, _ throws in
            let unknown = Base64.encode(Array("sim-receipt:2999999999999999".utf8), alphabet: .standard)
            #expect(try h.verifyReceipt(sandbox: true, receipt: unknown).statusCode == 21002)
            #expect(try h.verifyReceipt(sandbox: false, receipt: unknown).statusCode == 21002)
        }
    }

    @Test func receiptsMapToTheirOwnSubscription() throws {
        try Sim.withPKI { pki throws in
            let a = try Sim.finalSubscription("auto-renew", pki: pki)
            let b = try #require(try Sim.plan("refund", pki: pki, firstID: 100).emissions.last).subscription
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 3 * Sim.month)
            try h.put(a)
            try h.put(b)
            let answerA = try h.verifyReceipt(sandbox: true, receipt: a.receiptToken)
            let answerB = try h.verifyReceipt(sandbox: true, receipt: b.receiptToken)
            #expect(answerA.latestReceiptInfo?.items.first?.originalTransactionIDText == a.originalTransactionID)
            #expect(answerB.latestReceiptInfo?.items.first?.originalTransactionIDText == b.originalTransactionID)
            #expect(answerB.latestReceiptInfo?.items.first?.cancellationMillis != nil, "the refund shows")
            // Each latest_receipt is that subscription's own receipt: re-sent, it answers for the same one.
            let againA = try h.verifyReceipt(sandbox: true, receipt: try #require(answerA.latestReceipt))
            let againB = try h.verifyReceipt(sandbox: true, receipt: try #require(answerB.latestReceipt))
            #expect(againA.latestReceiptInfo?.items.first?.originalTransactionIDText == a.originalTransactionID)
            #expect(againB.latestReceiptInfo?.items.first?.originalTransactionIDText == b.originalTransactionID)
        }
    }

    @Test func queuedFaultsAnswerFirstInOrder() throws {
        try Self.withHarness { h, s throws in
            try h.store.update { $0.verifyReceiptFaults = [21005, 21100] }
            let first = h.verifyReceipt(
                sandbox: true,
                body: try Sim.json(["receipt-data": s.receiptToken, "password": Sim.secret])
            )
            let firstAnswer = try Sim.decode(VerifyReceiptResponse.self, first)
            #expect(first.status == 200)
            #expect(firstAnswer.statusCode == 21005)
            #expect(firstAnswer.isRetryable?.bool == true)
            #expect(firstAnswer.environment == "Sandbox")
            let second = try h.verifyReceipt(sandbox: true, receipt: s.receiptToken)
            #expect(second.statusCode == 21100)
            #expect(second.isRetryable?.bool == true)
            #expect(second.receipt == nil)
            #expect(try h.store.read().verifyReceiptFaults.isEmpty)
            let normal = try h.verifyReceipt(sandbox: true, receipt: s.receiptToken)
            #expect(normal.statusCode == 0)
            #expect(normal.latestReceiptInfo?.items.count == 3)
        }
    }

    @Test func faultsPreemptEvenMalformedRequestsAndSayIfRetryable() throws {
        try Self.withHarness { h, s throws in
            try h.store.update { $0.verifyReceiptFaults = [21010, 21199, 21009] }
            let first = try Sim.decode(
                VerifyReceiptResponse.self,
                h.verifyReceipt(sandbox: false, body: Array("garbage".utf8))
            )
            #expect(first.statusCode == 21010)
            #expect(first.isRetryable == nil, "21010 is final")
            #expect(first.environment == "Production")
            let raw = try #require(try JSONParser.parse(h.verifyReceipt(sandbox: false, body: []).body).objectValue)
            #expect(raw["status"]?.stringValue == "21199" || raw["status"]?.int64Value == 21199)
            #expect(raw["is-retryable"] != nil, "Apple's hyphenated member")
            #expect(try h.verifyReceipt(sandbox: true, receipt: s.receiptToken).isRetryable?.bool == true)
            #expect(try h.verifyReceipt(sandbox: false, receipt: s.receiptToken).statusCode == 21007)
        }
    }

    @Test func statusIsAJSONNumberAsApplesIs() throws {
        // Apple writes `"status": 0`, a JSON number, queued faults included.
        try Self.withHarness { h, s throws in
            let ok = try #require(
                try JSONParser.parse(
                    h.verifyReceipt(
                        sandbox: true,
                        body: try Sim.json(
                            ["receipt-data": s.receiptToken, "password": Sim.secret])
                    ).body
                ).objectValue
            )
            #expect(ok["status"]?.int64Value == 0)
            let bad = try #require(
                try JSONParser.parse(h.verifyReceipt(sandbox: true, body: Array("x".utf8)).body).objectValue
            )
            #expect(bad["status"]?.int64Value == 21000)
            try h.store.update { $0.verifyReceiptFaults = [21005] }
            let fault = try #require(try JSONParser.parse(h.verifyReceipt(sandbox: true, body: []).body).objectValue)
            #expect(fault["status"] != nil)
            #expect(fault["status"]?.int64Value == 21005)
        }
    }

    @Test func answersFollowTheStateAsItChanges() throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan("auto-renew", pki: pki)
            let h = FakeAppleHarness(pki: pki, now: plan.end)
            for (i, e) in plan.emissions.enumerated() {
                try h.put(e.subscription)
                let answer = try h.verifyReceipt(sandbox: true, receipt: e.subscription.receiptToken)
                #expect(answer.latestReceiptInfo?.items.count == i + 1)
            }
        }
    }
}
