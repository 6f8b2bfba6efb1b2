import Canonical
import Crypto
import Foundation
import Receipts
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import V2Adapter

/// Every lifecycle played into a plan: time only moves forward, ids hang together, each generation sends what the
/// step declares, V2 payloads verify and classify as expected, and the story ends where it says.
@Suite struct LifecyclePlanTests {
    static let names = Lifecycles.all.map(\.name)

    @Test func catalogueOfLifecycles() {
        #expect(Lifecycles.all.count >= 20)
        #expect(Set(Self.names).count == Self.names.count, "names are unique")
        for lifecycle in Lifecycles.all {
            #expect(Lifecycles.named(lifecycle.name)?.name == lifecycle.name)
            #expect(!lifecycle.summary.isEmpty)
            #expect(!lifecycle.final.isEmpty)
            #expect(lifecycle.v1Complete == (lifecycle.v1Final == nil))
            #expect((lifecycle.v1Gap == nil) == (lifecycle.v1Final == nil), "\(lifecycle.name): a V1 gap is explained")
            if let v1 = lifecycle.v1Final {
                #expect(v1.count == lifecycle.final.count)
                #expect(v1 != lifecycle.final, "\(lifecycle.name): a V1 gap changes the outcome")
            }
        }
        #expect(Lifecycles.named("no-such-lifecycle") == nil)
    }

    @Test(arguments: names)
    func planIsConsistent(name: String) throws {
        try Sim.withPKI { pki throws in
            let lifecycle = try #require(Lifecycles.named(name))
            let plan = try Sim.plan(name, pki: pki)
            let emissions = plan.emissions
            try #require(!emissions.isEmpty)

            // Time.
            #expect(emissions[0].at >= Sim.t0)
            for (a, b) in zip(emissions, emissions.dropFirst()) {
                #expect(a.at < b.at, "\(name): '\(a.step)' then '\(b.step)'")
            }
            let last = try #require(emissions.last)
            #expect(plan.end >= last.at)

            // Ids.
            var otids: [String] = []
            for e in emissions where !otids.contains(e.originalTransactionID) { otids.append(e.originalTransactionID) }
            #expect(plan.originalTransactionIDs == otids)
            #expect(otids.first == "2000000000000001", "ids start at firstID in Apple's sandbox shape")
            var allIDs: Set<String> = []
            for otid in otids {
                let last = try #require(emissions.last { $0.originalTransactionID == otid }).subscription
                let ids = last.transactions.map(\.transactionID)
                #expect(Set(ids).count == ids.count, "\(name): transaction ids are unique")
                #expect(last.transactions.first?.transactionID == otid, "the first transaction is the original")
                allIDs.formUnion(ids)
                allIDs.formUnion(last.transactions.compactMap(\.webOrderLineItemID))
            }
            #expect(allIDs.allSatisfy { $0.count == 16 && $0.hasPrefix("2") && $0.allSatisfy(\.isNumber) })
            #expect(plan.nextID == 1 + Int64(allIDs.count), "every id drawn is used exactly once")
            for e in emissions {
                #expect(e.subscription.originalTransactionID == e.originalTransactionID)
                #expect(e.subscription.bundleID == Sim.bundleID)
                #expect(e.subscription.transactions.allSatisfy { $0.originalTransactionID == e.originalTransactionID })
                #expect(e.subscription.sharedSecretDigest == SHA256.hex(Array(Sim.secret.utf8)))

                // What each generation sends.
                let v2 = e.v2Type != nil
                #expect(
                    (e.v2SignedPayload != nil) == v2 && (e.v2NotificationUUID != nil) == v2
                        && (e.expectedV2 != nil) == v2
                )
                #expect(e.v2Subtype == nil || v2)
                #expect(e.v1Bodies.count == e.expectedV1.count, "\(name): '\(e.step)'")
                for body in e.v1Bodies {
                    #expect(body.password == Sim.secret)
                    #expect(body.bid == Sim.bundleID)
                    #expect(body.environment == "Sandbox")
                    #expect(body.subscriptionID == e.originalTransactionID)
                    // The customer's app receipt at the step, signed then: every purchase made by then.
                    let receipt = try ReceiptReader.read(
                        Array((body.unifiedReceipt?.latestReceipt ?? "").utf8),
                        trust: pki.receiptTrust
                    )
                    // Receipt dates are whole seconds.
                    #expect(
                        receipt.isAuthenticated && receipt.app?.creationDate == e.at - e.at % 1000,
                        "\(name): '\(e.step)'"
                    )
                    #expect(
                        Set(receipt.app?.inApp.compactMap(\.transactionID) ?? [])
                            == Set(e.subscription.transactions.map(\.transactionID)),
                        "\(name): '\(e.step)'"
                    )
                    #expect(body.unifiedReceipt?.latestReceiptInfo?.count == e.subscription.transactions.count)
                }
            }

            // Where the story ends (what the gateway's V2 path must conclude).
            #expect(lifecycle.final.count == otids.count)
            let finals = try otids.map { otid in
                Emitter.entitlement(
                    try #require(emissions.last { $0.originalTransactionID == otid }).subscription,
                    at: plan.end
                ).state
            }
            #expect(finals == lifecycle.final, "\(name): final entitlement")
        }
    }

    @Test(arguments: names)
    func v2PayloadsVerifyAndClassify(name: String) throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan(name, pki: pki)
            let adapter = try Sim.adapter(trusting: pki)
            var uuids: Set<String> = []
            for e in plan.emissions {
                guard let token = e.v2SignedPayload else { continue }
                let n = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: e.at)
                #expect(n.environment == .sandbox)
                #expect(n.bundleID == Sim.bundleID)
                #expect(n.payload.notificationType == e.v2Type)
                #expect(n.payload.subtype == e.v2Subtype)
                #expect(n.payload.notificationUUID == e.v2NotificationUUID)
                #expect(n.payload.signedDate == e.at)
                #expect(n.transaction?.originalTransactionID == e.originalTransactionID)
                // The subscription's latest transaction; a group's period refunded whole is told transaction by
                // transaction.
                #expect(n.transaction?.transactionID == e.v2TransactionID)
                let told = try #require(e.subscription.transactions.first { $0.transactionID == e.v2TransactionID })
                #expect(
                    told.transactionID == e.subscription.latest?.transactionID
                        || (e.v2Type == "REFUND" && told.isGroupPurchasers),
                    "\(name): '\(e.step)'"
                )
                #expect(n.transaction?.signedDate == e.at)
                let autoRenewable = Catalogue.product(e.subscription.latest?.productID ?? "")?.kind == .autoRenewable
                #expect(
                    n.payload.data?.status == (autoRenewable ? Emitter.status(e.subscription, at: e.at) : nil),
                    "\(name): '\(e.step)'"
                )
                #expect((n.renewalInfo != nil) == autoRenewable)

                let event = try #require(n.canonicalEvents().first)
                let expected = try #require(e.expectedV2)
                #expect(ExpectedEvent(event.kind, event.reason) == expected, "\(name): '\(e.step)'")
                let classified = VerifiedNotificationV2.classify(type: try #require(e.v2Type), subtype: e.v2Subtype)
                #expect(classified.kind == expected.kind && classified.reason == expected.reason)
                #expect(event.id == e.v2NotificationUUID)
                #expect(event.originalTransactionID == e.originalTransactionID)
                #expect(event.entitlement?.state == Emitter.entitlement(e.subscription, at: e.at).state)

                let uuid = try #require(e.v2NotificationUUID)
                #expect(uuid.count == 36 && Array(uuid)[14] == "4" && Array(uuid)[19] == "8", "a version-4 shaped UUID")
                #expect(uuid.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
                uuids.insert(uuid)
            }
            #expect(uuids.count == plan.emissions.filter { $0.v2Type != nil }.count, "notification UUIDs are unique")
        }
    }

    @Test func plansAreDeterministic() throws {
        try Sim.withPKI { pki throws in
            for name in ["auto-renew", "billing-grace-expired-retry-expired", "upgrade"] {
                let a = try Sim.plan(name, pki: pki)
                let b = try Sim.plan(name, pki: pki)
                #expect(a.emissions.map(\.v2NotificationUUID) == b.emissions.map(\.v2NotificationUUID))
                #expect(a.emissions.map(\.at) == b.emissions.map(\.at))
                #expect(a.emissions.map(\.step) == b.emissions.map(\.step))
                #expect(a.emissions.map(\.subscription) == b.emissions.map(\.subscription))
                #expect(a.end == b.end && a.nextID == b.nextID && a.originalTransactionIDs == b.originalTransactionIDs)

                let c = try Sim.plan(name, pki: pki, firstID: 1_000)
                let aUUIDs = Set(a.emissions.compactMap(\.v2NotificationUUID))
                let cUUIDs = Set(c.emissions.compactMap(\.v2NotificationUUID))
                #expect(aUUIDs.isDisjoint(with: cUUIDs), "another firstID gives other UUIDs")
                #expect(c.originalTransactionIDs == ["2000000000001000"])
                #expect(c.nextID - 1_000 == a.nextID - 1)
                #expect(c.emissions.map(\.at) == a.emissions.map(\.at), "ids do not change the timing")

                let later = try Sim.plan(name, pki: pki, start: Sim.t0 + 1)
                #expect(
                    Set(later.emissions.compactMap(\.v2NotificationUUID)).isDisjoint(with: aUUIDs),
                    "another start gives other UUIDs"
                )
            }
        }
    }

    @Test func planShiftsWithItsStart() throws {
        try Sim.withPKI { pki throws in
            let a = try Sim.plan("price-increase-accepted", pki: pki)
            let b = try Sim.plan("price-increase-accepted", pki: pki, start: Sim.t0 + 12_345)
            #expect(b.emissions.map { $0.at - 12_345 } == a.emissions.map(\.at))
            #expect(b.end - 12_345 == a.end)
        }
    }

    @Test(arguments: [Int64(1_000), 60_000])
    func planEndingAtEndsMarginBeforeNow(margin: Int64) throws {
        try Sim.withPKI { pki throws in
            let now = Sim.t0 + 365 * 86_400_000
            let emitter = Emitter(pki: pki)
            for lifecycle in Lifecycles.all {
                let plan = try lifecycle.planEndingAt(
                    now,
                    margin: margin,
                    bundleID: Sim.bundleID,
                    sharedSecret: Sim.secret,
                    emitter: emitter,
                    monthMillis: Sim.month
                )
                #expect(plan.end == now - margin, "\(lifecycle.name)")
                #expect(plan.emissions.allSatisfy { $0.at <= now - margin })
                // The same story as one started explicitly at that moment.
                let start = try #require(plan.emissions.first).at
                let direct = try lifecycle.plan(
                    bundleID: Sim.bundleID,
                    sharedSecret: Sim.secret,
                    emitter: emitter,
                    start: start,
                    monthMillis: Sim.month
                )
                #expect(direct.emissions.map(\.v2NotificationUUID) == plan.emissions.map(\.v2NotificationUUID))
            }
            let lifecycle = try #require(Lifecycles.named("auto-renew"))
            let defaulted = try lifecycle.planEndingAt(
                now,
                bundleID: Sim.bundleID,
                sharedSecret: Sim.secret,
                emitter: emitter,
                monthMillis: Sim.month
            )
            #expect(defaulted.end == now - 1_000, "the default margin is one second")
        }
    }

    @Test func planMonthLengthScalesTheStory() throws {
        try Sim.withPKI { pki throws in
            let lifecycle = try #require(Lifecycles.named("auto-renew"))
            let plan = try lifecycle.plan(
                bundleID: Sim.bundleID,
                sharedSecret: Sim.secret,
                emitter: Emitter(pki: pki),
                start: Sim.t0,
                monthMillis: 60_000
            )
            #expect(plan.emissions.map(\.at) == [Sim.t0, Sim.t0 + 60_000, Sim.t0 + 120_000])
            #expect(plan.end == Sim.t0 + 120_000)
            #expect(plan.emissions.last?.subscription.latest?.expiresDate == Sim.t0 + 180_000)
        }
    }

    static func play(_ body: @escaping @Sendable (inout LifecycleContext) throws -> Void) throws -> Lifecycle.Plan {
        try Sim.withPKI { pki throws in
            try Lifecycle("custom", "a story written by the test", final: [.active], body).plan(
                bundleID: Sim.bundleID,
                sharedSecret: Sim.secret,
                emitter: Emitter(pki: pki),
                start: Sim.t0,
                monthMillis: Sim.month
            )
        }
    }

    @Test func stepsAtTheSameMomentGetIncreasingSignedDates() throws {
        let plan = try Self.play { c in
            let s = try c.buy(Catalogue.monthly)
            try c.setAutoRenew(s, on: false)
            try c.setAutoRenew(s, on: true)
            try c.priceIncrease(s)
        }
        #expect(plan.emissions.map(\.at) == [Sim.t0, Sim.t0 + 1, Sim.t0 + 2, Sim.t0 + 3])
        #expect(plan.end == Sim.t0 + 3)
        #expect(Set(plan.emissions.compactMap(\.v2NotificationUUID)).count == 4)
        #expect(
            plan.emissions.map(\.v2Subtype) == ["INITIAL_BUY", "AUTO_RENEW_DISABLED", "AUTO_RENEW_ENABLED", "PENDING"]
        )
    }

    @Test func customStoriesTrackSeveralSubscriptions() throws {
        let plan = try Self.play { c in
            let a = try c.buy(Catalogue.monthly)
            c.advance(months: 0.25)
            let b = try c.buy(Catalogue.yearly, offer: .freeTrial, familyShared: true)
            try c.renew(a)
            try c.refund(b)
        }
        #expect(plan.originalTransactionIDs.count == 2)
        #expect(
            plan.emissions.map(\.originalTransactionID) == [
                plan.originalTransactionIDs[0], plan.originalTransactionIDs[1],
                plan.originalTransactionIDs[0], plan.originalTransactionIDs[1],
            ]
        )
        #expect(plan.emissions[2].subscription.transactions.count == 2)
        #expect(plan.emissions[3].subscription.latest?.familyShared == true)
        #expect(plan.emissions[3].subscription.latest?.revocationType == "REFUND_FULL")
        #expect(plan.emissions[3].v1Bodies.map(\.notificationType) == ["CANCEL", "DID_CHANGE_RENEWAL_STATUS"])
        #expect(
            plan.emissions.map(\.at) == [Sim.t0, Sim.t0 + Sim.month / 4, Sim.t0 + Sim.month, Sim.t0 + Sim.month + 1]
        )
    }

    @Test func impossibleStepsThrowBadStep() throws {
        let cases: [@Sendable (inout LifecycleContext) throws -> Void] = [
            { c in try c.renew("2999999999999999") },
            { c in try c.renew(try c.buy(Catalogue.coins)) },
            { c in try c.gracePeriodExpired(try c.buy(Catalogue.monthly)) },
            { c in try c.billingFailure(try c.buy(Catalogue.coins), grace: true) },
            { c in try c.extendRenewalDate(try c.buy(Catalogue.coins), days: 3) },
            { c in try c.refundDeclined("nope") },
        ]
        for (i, body) in cases.enumerated() {
            let error = #expect(throws: SimulatorError.self, "case \(i)") { _ = try Self.play(body) }
            #expect(error?.code == "bad_step", "case \(i)")
        }
    }

    @Test func stepsRecordWhatEachGenerationSends() throws {
        try Sim.withPKI { pki throws in
            let upgrade = try Sim.plan("upgrade", pki: pki)
            let step = upgrade.emissions[1]
            #expect(step.v2Type == "DID_CHANGE_RENEWAL_PREF" && step.v2Subtype == "UPGRADE")
            #expect(step.v1Bodies.map(\.notificationType) == ["DID_CHANGE_RENEWAL_STATUS", "INTERACTIVE_RENEWAL"])
            #expect(
                step.expectedV1 == [ExpectedEvent(.autoRenewChanged, .enabled), ExpectedEvent(.planChange, .upgrade)]
            )

            let grace = try Sim.plan("billing-grace-expired-retry-expired", pki: pki)
            #expect(
                grace.emissions.map(\.v2Type) == ["SUBSCRIBED", "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED"]
            )
            #expect(grace.emissions[2].v1Bodies.isEmpty, "V1 says nothing when the grace period ends")
            #expect(grace.emissions.map { $0.v1Bodies.count } == [1, 1, 0, 1])

            let coins = try Sim.plan("consumable-consumption-request", pki: pki)
            #expect(coins.emissions.map(\.v2Type) == ["ONE_TIME_CHARGE", "CONSUMPTION_REQUEST"])
            #expect(coins.emissions[0].v1Bodies.isEmpty)
            #expect(coins.emissions[0].expectedV2 == ExpectedEvent(.oneTimeCharge))
            #expect(ExpectedEvent(.purchase, .initial).description == "purchase[initial]")
            #expect(ExpectedEvent(.refund).description == "refund")
        }
    }
}
