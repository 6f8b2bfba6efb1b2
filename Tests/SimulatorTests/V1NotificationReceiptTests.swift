import Canonical
import Crypto
import Foundation
import Receipts
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import WireJSON

/// The receipt a simulated V1 notification carries (docs/simulator.md, "Receipts"): Apple's
/// `unified_receipt.latest_receipt` is the customer's app receipt as of the notification, so the simulator's is a real
/// one, signed by its receipt chain — readable by the receipt reader, by the fake verifyReceipt and by a V1-era
/// backend that re-sends it.
@Suite struct V1NotificationReceiptTests {
    /// A monthly subscription bought, then renewed twelve times: the last DID_RENEW's receipt holds 13 purchases.
    static let twelveRenewals = Lifecycle("twelve-renewals", "buy, then renew twelve times", final: [.active]) { c in
        let s = try c.buy(Catalogue.monthly)
        for _ in 0..<12 { try c.renew(s) }
    }

    static func plan(_ lifecycle: Lifecycle, pki: SimulatorPKI) throws -> Lifecycle.Plan {
        try lifecycle.plan(
            bundleID: Sim.bundleID,
            sharedSecret: Sim.secret,
            emitter: Emitter(pki: pki),
            start: Sim.t0,
            monthMillis: Sim.month
        )
    }

    /// The receipt of `body`, read under the simulator's receipt root.
    static func receipt(_ body: ResponseBodyV1, pki: SimulatorPKI) throws -> DecodedReceipt {
        let data = try #require(body.unifiedReceipt?.latestReceipt)
        return try ReceiptReader.read(Array(data.utf8), trust: pki.receiptTrust)
    }

    @Test func aLongLifecyclesV1BodyCarriesAnAuthenticatedReceiptOfEveryPurchase() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan(Self.twelveRenewals, pki: pki)
            let last = try #require(plan.emissions.last)
            let body = try #require(last.v1Bodies.first)
            #expect(body.notificationType == "DID_RENEW")
            let decoded = try Self.receipt(body, pki: pki)
            #expect(decoded.isAuthenticated, "\(decoded.signature)")
            #expect(decoded.signature.judgedAt == last.at, "signed at the notification's moment")
            #expect(decoded.isSandbox)
            let app = try #require(decoded.app)
            #expect(app.bundleID == Sim.bundleID && app.creationDate == last.at)
            #expect(app.inApp.count == 13)
            #expect(
                app.inApp.compactMap(\.transactionID).sorted()
                    == last.subscription.transactions.map(\.transactionID).sorted()
            )
            #expect(app.inApp.allSatisfy { $0.originalTransactionID == last.originalTransactionID })
            #expect(app.inApp.map(\.expiresDate) == last.subscription.transactions.map(\.expiresDate))

            // Not readable as authentic without the simulator's root: Apple's alone refuses it.
            let apple = try ReceiptReader.read(
                Array(try #require(body.unifiedReceipt?.latestReceipt).utf8),
                trust: ReceiptTrust()
            )
            #expect(!apple.isAuthenticated)

            // Well under the gateway's 1 MiB for a V1 body. What it was with the opaque token and no `_pst` dates:
            // the same body with those taken back out.
            let bytes = try JSONEncoder().encode(body)
            var old = body
            var unified = try #require(body.unifiedReceipt)
            unified.latestReceipt = last.subscription.receiptToken
            unified.latestReceiptInfo = unified.latestReceiptInfo?.map { t in
                var t = t
                (t.purchaseDatePst, t.originalPurchaseDatePst, t.expiresDatePst, t.cancellationDatePst) = (
                    nil, nil, nil, nil
                )
                return t
            }
            old.unifiedReceipt = unified
            let before = try JSONEncoder().encode(old)
            let receiptBytes = body.unifiedReceipt?.latestReceipt?.utf8.count ?? 0
            print(
                "V1 body after 12 renewals: \(before.count) bytes with the token, \(bytes.count) with the receipt "
                    + "(\(receiptBytes) bytes of base64)"
            )
            #expect(bytes.count < 64 * 1024, "\(bytes.count) bytes")
        }
    }

    @Test func eachStepsReceiptHoldsThePurchasesAsOfThatStep() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan(Self.twelveRenewals, pki: pki)
            var counts: [Int] = []
            for e in plan.emissions {
                let bodies = e.v1Bodies
                guard let first = bodies.first else { continue }
                #expect(Set(bodies.map(\.unifiedReceipt?.latestReceipt)).count == 1, "one receipt per step")
                let app = try #require(try Self.receipt(first, pki: pki).app)
                #expect(app.creationDate == e.at - e.at % 1000, "receipt dates are whole seconds")
                #expect(app.inApp.allSatisfy { ($0.purchaseDate ?? .max) <= e.at })
                counts.append(app.inApp.count)
            }
            #expect(counts == Array(1...13))
        }
    }

    @Test func aV1BodysReceiptReSentToTheFakeVerifyReceiptIsAnsweredAboutItsSubscription() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan(Self.twelveRenewals, pki: pki)
            let first = try #require(plan.emissions.first)
            let final = try #require(plan.emissions.last).subscription
            let h = FakeAppleHarness(pki: pki, now: plan.end + 1_000)
            try h.put(final)
            // The INITIAL_BUY's receipt, sent after the whole story: Apple reads it as it was and answers with today's.
            let data = try #require(first.v1Bodies.first?.unifiedReceipt?.latestReceipt)
            let answer = try h.verifyReceipt(sandbox: true, receipt: data)
            #expect(answer.statusCode == 0)
            #expect(answer.receipt?.inApp?.count == 1, "the receipt sent, as it was")
            #expect(answer.receipt?.receiptCreationDateMs?.int64 == first.at)
            #expect(answer.latestReceiptInfo?.items.count == 13, "every transaction to date")
            let latest = try #require(answer.latestReceipt)
            #expect(latest != data)
            let now = try ReceiptReader.read(Array(latest.utf8), trust: pki.receiptTrust)
            #expect(now.isAuthenticated && now.app?.inApp.count == 13)
            // On the production URL it is a sandbox receipt, as Apple says.
            #expect(try h.verifyReceipt(sandbox: false, receipt: data).statusCode == 21007)
        }
    }

    @Test func anEarlierV1BodysOpaqueTokenIsStillAnswered() throws {
        try Sim.withPKI { pki throws in
            let plan = try Self.plan(Self.twelveRenewals, pki: pki)
            let final = try #require(plan.emissions.last).subscription
            let h = FakeAppleHarness(pki: pki, now: plan.end + 1_000)
            try h.put(final)
            let token = String(
                decoding: try Base64.decode(Array(final.receiptToken.utf8), alphabet: .standard),
                as: UTF8.self
            )
            #expect(token == "sim-receipt:\(final.originalTransactionID)")
            let answer = try h.verifyReceipt(sandbox: true, receipt: final.receiptToken)
            #expect(answer.statusCode == 0)
            #expect(answer.receipt?.inApp?.count == 13, "the subscription's receipt as of now")
        }
    }

    @Test func anEmitterWithoutAReceiptChainWritesTheOpaqueToken() throws {
        try Sim.withPKI { pki throws in
            let s = try Sim.finalSubscription("auto-renew", pki: pki)
            let body = try Emitter(signer: pki.signer).v1Body(
                type: "DID_RENEW",
                subscription: s,
                sharedSecret: Sim.secret,
                at: Sim.t0 + 2 * Sim.month
            )
            #expect(body.unifiedReceipt?.latestReceipt == s.receiptToken)
        }
    }

    /// Apple's `_pst` renderings beside every date of `latest_receipt_info`, with the keys of a real V1 body's
    /// entries (`Fixtures/v1/v1-notif-did-change-renewal-status-2020-imdhemy.json`).
    @Test func latestReceiptInfoEntriesHaveTheKeysAndDateFormsOfApplesV1Bodies() throws {
        let real = try #require(
            try JSONParser.parse(try Fixtures.bytes("v1/v1-notif-did-change-renewal-status-2020-imdhemy.json"))
                .objectValue
        )
        let realEntries = try #require(real["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue)
        // The keys every entry of Apple's has (`is_upgraded` only where it applies).
        let realKeys =
            realEntries.compactMap { $0.objectValue.map { Set($0.keys) } }.reduce(nil) {
                (all: Set<String>?, keys) in all?.intersection(keys) ?? keys
            } ?? []
        #expect(realKeys.contains("expires_date_pst") && realKeys.contains("purchase_date_pst"))
        // Apple's own `_pst` text is what the simulator writes for the same instant.
        for case .object(let e) in realEntries {
            for name in ["purchase_date", "original_purchase_date", "expires_date"] {
                let ms = try #require(e[name + "_ms"]?.stringValue.flatMap { Int64($0) })
                #expect(e[name + "_pst"]?.stringValue == AppleDateText.pst(ms), "\(name)")
            }
        }
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan("refund", pki: pki)
            for e in plan.emissions {
                for body in e.v1Bodies {
                    let encoded = try JSONEncoder().encode(body)
                    let o = try #require(try JSONParser.parse(Array(encoded)).objectValue)
                    let entries = try #require(o["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue)
                    for case .object(let t) in entries {
                        let keys = Set(t.keys)
                        #expect(realKeys.isSubset(of: keys), "\(realKeys.subtracting(keys)) missing")
                        for ms in keys where ms.hasSuffix("_date_ms") {
                            let name = String(ms.dropLast(3))
                            let millis = try #require(t[ms]?.stringValue.flatMap { Int64($0) })
                            #expect(t[name]?.stringValue == AppleDateText.gmt(millis))
                            #expect(t[name + "_pst"]?.stringValue == AppleDateText.pst(millis), "\(name)_pst")
                        }
                    }
                }
            }
            #expect(plan.emissions.contains { $0.v1Bodies.contains { $0.notificationType == "CANCEL" } })
        }
    }
}
