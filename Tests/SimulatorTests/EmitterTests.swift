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

/// What the simulated App Store says about its state: V2 payload fields, status codes, V1 dates and bodies.
@Suite struct EmitterTests {
    // MARK: V2 transaction and renewal payloads

    @Test func transactionPayloadCarriesTheTransaction() throws {
        try Sim.withPKI { pki throws in
            let s = try Sim.finalSubscription("auto-renew", pki: pki)
            #expect(s.transactions.count == 3)
            let emitter = Emitter(pki: pki)
            let first = s.transactions[0]
            let p = emitter.transactionPayload(
                first,
                bundleID: s.bundleID,
                appAccountToken: s.appAccountToken,
                product: Catalogue.monthly,
                signedDate: Sim.t0 + 5
            )
            #expect(p.environment == "Sandbox")
            #expect(p.transactionID == first.transactionID)
            #expect(p.originalTransactionID == s.originalTransactionID)
            #expect(p.transactionID == p.originalTransactionID, "the first transaction is the original")
            #expect(p.webOrderLineItemID == first.webOrderLineItemID)
            #expect(p.bundleID == Sim.bundleID)
            #expect(p.productID == "sim.monthly")
            #expect(p.subscriptionGroupIdentifier == Catalogue.groupID)
            #expect(p.type == "Auto-Renewable Subscription")
            #expect(p.purchaseDate == Sim.t0)
            #expect(p.originalPurchaseDate == Sim.t0)
            #expect(p.expiresDate == Sim.t0 + Sim.month)
            #expect(p.signedDate == Sim.t0 + 5)
            #expect(p.quantity == 1)
            #expect(p.inAppOwnershipType == "PURCHASED")
            #expect(p.transactionReason == "PURCHASE")
            #expect(p.price == Catalogue.monthly.priceMilli)
            #expect(p.currency == "USD")
            #expect(p.appAccountToken == s.appAccountToken)
            #expect(p.revocationDate == nil && p.revocationReason == nil && p.revocationType == nil)
            #expect(p.isUpgraded == nil)

            let renewal = emitter.transactionPayload(
                s.transactions[2],
                bundleID: s.bundleID,
                appAccountToken: s.appAccountToken,
                product: Catalogue.monthly,
                signedDate: Sim.t0
            )
            #expect(renewal.transactionReason == "RENEWAL")
            #expect(renewal.originalTransactionID == s.originalTransactionID)
            #expect(renewal.transactionID != s.originalTransactionID)
            #expect(renewal.purchaseDate == Sim.t0 + 2 * Sim.month)
            #expect(renewal.originalPurchaseDate == Sim.t0)
        }
    }

    @Test func familySharedRevocationAndUpgradeFlags() throws {
        try Sim.withPKI { pki throws in
            let emitter = Emitter(pki: pki)
            let family = try Sim.finalSubscription("family-revoke", pki: pki)
            let latest = try #require(family.latest)
            let p = emitter.transactionPayload(
                latest,
                bundleID: family.bundleID,
                appAccountToken: family.appAccountToken,
                product: Catalogue.monthly,
                signedDate: Sim.t0
            )
            #expect(p.inAppOwnershipType == "FAMILY_SHARED")
            #expect(p.revocationType == "FAMILY_REVOKE")
            #expect(p.revocationDate == Sim.t0 + Int64(Double(Sim.month) * 0.3))

            let refunded = try Sim.finalSubscription("refund", pki: pki)
            let r = emitter.transactionPayload(
                try #require(refunded.latest),
                bundleID: refunded.bundleID,
                appAccountToken: refunded.appAccountToken,
                product: Catalogue.monthly,
                signedDate: Sim.t0
            )
            #expect(r.revocationReason == 1)
            #expect(r.revocationType == "REFUND_FULL")
            #expect(r.revocationDate == Sim.t0 + Int64(Double(Sim.month) * 0.2))

            let upgraded = try Sim.finalSubscription("upgrade", pki: pki)
            #expect(upgraded.transactions.count == 2)
            let old = emitter.transactionPayload(
                upgraded.transactions[0],
                bundleID: upgraded.bundleID,
                appAccountToken: upgraded.appAccountToken,
                product: Catalogue.monthly,
                signedDate: Sim.t0
            )
            let new = emitter.transactionPayload(
                upgraded.transactions[1],
                bundleID: upgraded.bundleID,
                appAccountToken: upgraded.appAccountToken,
                product: Catalogue.premium,
                signedDate: Sim.t0
            )
            #expect(old.isUpgraded == true)
            #expect(new.isUpgraded == nil)
            #expect(new.productID == "sim.premium.monthly")
            #expect(new.transactionReason == "PURCHASE", "an upgrade is a purchase, not a renewal")
        }
    }

    @Test func offersAndOneTimeProducts() throws {
        try Sim.withPKI { pki throws in
            let emitter = Emitter(pki: pki)
            func first(_ name: String) throws -> (SimSubscription, TransactionPayload) {
                let s = try #require(try Sim.plan(name, pki: pki).emissions.first).subscription
                let t = s.transactions[0]
                return (
                    s,
                    emitter.transactionPayload(
                        t,
                        bundleID: s.bundleID,
                        appAccountToken: s.appAccountToken,
                        product: Catalogue.product(t.productID),
                        signedDate: Sim.t0
                    )
                )
            }
            let (_, trial) = try first("initial-buy-free-trial")
            #expect(trial.offerType == 1 && trial.offerDiscountType == "FREE_TRIAL" && trial.price == 0)
            #expect(trial.expiresDate == Sim.t0 + Sim.month / 4, "a one-week trial")
            let (_, intro) = try first("initial-buy-intro-offer")
            #expect(
                intro.offerType == 1 && intro.offerDiscountType == "PAY_AS_YOU_GO"
                    && intro.price == Catalogue.monthly.priceMilli / 2
            )
            let (_, code) = try first("offer-code-buy")
            #expect(code.offerType == 3 && code.offerIdentifier == "SPRING")
            let (coinsSub, coins) = try first("consumable-consumption-request")
            #expect(coins.type == "Consumable")
            #expect(coins.subscriptionGroupIdentifier == nil)
            #expect(coins.expiresDate == nil)
            #expect(coinsSub.renewal == nil)
            #expect(emitter.renewalPayload(coinsSub, signedDate: Sim.t0) == nil, "no renewal info for a consumable")

            let lifetime = try JSONDecoder().decode(
                SimProduct.self,
                from: Data(
                    #"{"id":"sim.lifetime","kind":"nonConsumable","level":0,"months":0,"priceMilli":49990}"#.utf8
                )
            )
            var t = coinsSub.transactions[0]
            t.productID = lifetime.id
            let p = emitter.transactionPayload(
                t,
                bundleID: coinsSub.bundleID,
                appAccountToken: "",
                product: lifetime,
                signedDate: Sim.t0
            )
            #expect(p.type == "Non-Consumable")
            #expect(p.subscriptionGroupIdentifier == nil)
        }
    }

    @Test func renewalPayloadCarriesTheRenewalState() throws {
        try Sim.withPKI { pki throws in
            let emitter = Emitter(pki: pki)
            let downgrade = try Sim.plan("downgrade", pki: pki)
            // After the switch (step 2), before the renewal: the latest is premium, the next is monthly.
            let pending = downgrade.emissions[1].subscription
            let p = try #require(emitter.renewalPayload(pending, signedDate: Sim.t0 + 7))
            #expect(p.environment == "Sandbox")
            #expect(p.originalTransactionID == pending.originalTransactionID)
            #expect(p.productID == "sim.premium.monthly")
            #expect(p.autoRenewProductID == "sim.monthly")
            #expect(p.autoRenewStatus == 1)
            #expect(p.isInBillingRetryPeriod == false)
            #expect(p.expirationIntent == nil)
            #expect(p.signedDate == Sim.t0 + 7)
            #expect(p.renewalDate == pending.latest?.expiresDate)
            #expect(p.recentSubscriptionStartDate == Sim.t0)
            #expect(p.appAccountToken == pending.appAccountToken)

            let grace = try Sim.plan("billing-grace-recovery", pki: pki).emissions[1].subscription
            let g = try #require(emitter.renewalPayload(grace, signedDate: Sim.t0))
            #expect(g.isInBillingRetryPeriod == true)
            #expect(g.expirationIntent == 2)
            #expect(g.gracePeriodExpiresDate == Sim.t0 + Sim.month + Sim.month / 4)

            let off = try Sim.plan("auto-renew-off-then-expiry", pki: pki).emissions[1].subscription
            let o = try #require(emitter.renewalPayload(off, signedDate: Sim.t0))
            #expect(o.autoRenewStatus == 0)
            #expect(o.expirationIntent == 1)

            let price = try Sim.plan("price-increase-accepted", pki: pki)
            #expect(
                emitter.renewalPayload(price.emissions[1].subscription, signedDate: Sim.t0)?.priceIncreaseStatus == 0
            )
            #expect(
                emitter.renewalPayload(price.emissions[2].subscription, signedDate: Sim.t0)?.priceIncreaseStatus == 1
            )
            #expect(
                emitter.renewalPayload(price.emissions[0].subscription, signedDate: Sim.t0)?.priceIncreaseStatus == nil
            )
        }
    }

    @Test func signedTransactionAndRenewalVerify() throws {
        try Sim.withPKI { pki throws in
            let emitter = Emitter(pki: pki)
            let adapter = try Sim.adapter(trusting: pki)
            let s = try Sim.finalSubscription("auto-renew", pki: pki)
            let latest = try #require(s.latest)
            let t = try adapter.verifyTransaction(
                Array(try emitter.signedTransaction(s, latest, at: Sim.t0 + 9).utf8),
                now: Sim.t0
            )
            #expect(t.payload.transactionID == latest.transactionID)
            #expect(t.signedDate == Sim.t0 + 9)
            #expect(t.environment == .sandbox)
            let renewal = try #require(try emitter.signedRenewal(s, at: Sim.t0 + 9))
            let r = try adapter.verifyRenewalInfo(Array(renewal.utf8), now: Sim.t0)
            #expect(r.payload.originalTransactionID == s.originalTransactionID)
            #expect(r.payload.renewalDate == latest.expiresDate)
        }
    }

    @Test func notificationNestsSignedInfoAndStatus() throws {
        try Sim.withPKI { pki throws in
            let emitter = Emitter(pki: pki, appAppleID: 1_234_567)
            let adapter = try Sim.adapter(trusting: pki)
            let s = try Sim.finalSubscription("auto-renew", pki: pki)
            let at = Sim.t0 + 2 * Sim.month + 10
            let token = try emitter.notification(
                type: "DID_RENEW",
                subtype: nil,
                uuid: "11111111-2222-4333-8444-555555555555",
                subscription: s,
                transaction: nil,
                at: at
            )
            let n = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: at)
            #expect(n.payload.notificationType == "DID_RENEW")
            #expect(n.payload.subtype == nil)
            #expect(n.payload.notificationUUID == "11111111-2222-4333-8444-555555555555")
            #expect(n.payload.signedDate == at)
            #expect(n.payload.version == "2.0")
            #expect(n.payload.data?.status == 1)
            #expect(n.payload.data?.bundleVersion == "1")
            #expect(n.appAppleID == 1_234_567)
            #expect(
                n.transaction?.transactionID == s.latest?.transactionID,
                "the latest transaction when none is given"
            )
            #expect(n.renewalInfo?.originalTransactionID == s.originalTransactionID)

            // An explicit transaction wins; `extra` edits the data.
            let old = s.transactions[0]
            let explicit = try emitter.notification(
                type: "CONSUMPTION_REQUEST",
                subtype: nil,
                uuid: "u",
                subscription: s,
                transaction: old,
                at: at
            ) { $0.consumptionRequestReason = "UNINTENDED_PURCHASE" }
            let e = try adapter.verifyNotification(signedPayload: Array(explicit.utf8), now: at)
            #expect(e.transaction?.transactionID == old.transactionID)
            #expect(e.payload.data?.consumptionRequestReason == "UNINTENDED_PURCHASE")

            // TEST: no subscription, so no signed info and no status.
            let test = try emitter.notification(
                type: "TEST",
                subtype: nil,
                uuid: "t",
                subscription: nil,
                transaction: nil,
                at: at
            )
            let tn = try adapter.verifyNotification(signedPayload: Array(test.utf8), now: at)
            #expect(tn.payload.data?.signedTransactionInfo == nil)
            #expect(tn.payload.data?.signedRenewalInfo == nil)
            #expect(tn.payload.data?.status == nil)
            #expect(tn.bundleID == Catalogue.bundleID)
        }
    }

    // MARK: status

    /// A subscription in the given state at `Sim.t0 + 10 days` (its only period ran from t0 to t0 + 1 month).
    static func crafted(
        _ base: SimSubscription,
        expires: Int64?,
        grace: Int64? = nil,
        retry: Bool = false,
        revoked: Int64? = nil
    )
        -> SimSubscription
    {
        var s = base
        s.transactions[s.transactions.count - 1].expiresDate = expires
        s.transactions[s.transactions.count - 1].revocationDate = revoked
        s.renewal?.gracePeriodExpiresDate = grace
        s.renewal?.inBillingRetry = retry
        return s
    }

    @Test func statusCodes() throws {
        try Sim.withPKI { pki throws in
            let base = try Sim.finalSubscription("initial-buy", pki: pki)
            let at = Sim.t0 + 10 * 86_400_000
            let future = at + 86_400_000
            let past = at - 86_400_000
            #expect(Emitter.status(Self.crafted(base, expires: future), at: at) == 1, "active")
            #expect(
                Emitter.status(Self.crafted(base, expires: past, grace: future, retry: true), at: at) == 4,
                "grace period"
            )
            #expect(Emitter.status(Self.crafted(base, expires: past, retry: true), at: at) == 3, "billing retry")
            #expect(
                Emitter.status(Self.crafted(base, expires: past, grace: past, retry: true), at: at) == 3,
                "grace over, retrying"
            )
            #expect(Emitter.status(Self.crafted(base, expires: future, revoked: past), at: at) == 5, "revoked")
            #expect(Emitter.status(Self.crafted(base, expires: past), at: at) == 2, "expired")
            #expect(Emitter.status(Self.crafted(base, expires: at), at: at) == 2, "expiry is exclusive")
            #expect(Emitter.status(Self.crafted(base, expires: nil), at: at) == 1, "no expiry: active")
            #expect(
                Emitter.entitlement(Self.crafted(base, expires: future), at: at)
                    == Entitlement(state: .active, until: future)
            )
            #expect(
                Emitter.entitlement(Self.crafted(base, expires: past, grace: future, retry: true), at: at)
                    == Entitlement(state: .gracePeriod, until: future)
            )
        }
    }

    @Test func statusJudgesTheLatestTransaction() throws {
        try Sim.withPKI { pki throws in
            var s = try Sim.finalSubscription("auto-renew", pki: pki)
            // Only the earliest period is revoked: the latest one still decides.
            s.transactions[0].revocationDate = Sim.t0 + 1
            #expect(Emitter.status(s, at: Sim.t0 + 2 * Sim.month + 1) == 1)
            s.transactions[2].revocationDate = Sim.t0 + 2 * Sim.month
            #expect(Emitter.status(s, at: Sim.t0 + 2 * Sim.month + 1) == 5)
        }
    }

    // MARK: V1 dates

    @Test(arguments: [
        (Int64(0), "1970-01-01 00:00:00 Etc/GMT"),
        (1_748_736_000_000, "2025-06-01 00:00:00 Etc/GMT"),
        (1_748_736_000_999, "2025-06-01 00:00:00 Etc/GMT"),
        (1_709_210_096_000, "2024-02-29 12:34:56 Etc/GMT"),
        (951_782_400_000, "2000-02-29 00:00:00 Etc/GMT"),
        (1_704_067_199_000, "2023-12-31 23:59:59 Etc/GMT"),
        (-1, "1969-12-31 23:59:59 Etc/GMT"),
        (-1_000, "1969-12-31 23:59:59 Etc/GMT"),
        (-86_400_000, "1969-12-31 00:00:00 Etc/GMT"),
        (-2_203_891_200_000, "1900-03-01 00:00:00 Etc/GMT"),
        (253_402_300_799_000, "9999-12-31 23:59:59 Etc/GMT"),
    ])
    func gmt(ms: Int64, text: String) {
        #expect(Emitter.gmt(ms) == text)
    }

    @Test func gmtRoundTripsThroughTheV1Reader() {
        // Whole seconds from 1901 to 2100 in uneven steps: the V1 adapter reads back exactly what the emitter wrote.
        var ms: Int64 = -2_147_483_648_000
        var count = 0
        while ms < 4_102_444_800_000 {
            let text = Emitter.gmt(ms)
            if AppleDateText.millis(text) != ms {
                Issue.record("\(ms) → \(text) → \(String(describing: AppleDateText.millis(text)))")
                break
            }
            ms += 7_777_777_000 + Int64(count % 86_400) * 1000
            count += 1
        }
        #expect(count > 700)
    }

    // MARK: V1 transactions, renewal info and bodies

    @Test func v1TransactionFields() throws {
        try Sim.withPKI { pki throws in
            let s = try Sim.finalSubscription("auto-renew", pki: pki)
            let t = s.transactions[1]
            let v = Emitter.v1Transaction(t)
            #expect(v.transactionIDText == t.transactionID)
            #expect(v.originalTransactionIDText == s.originalTransactionID)
            #expect(v.webOrderLineItemID?.text == t.webOrderLineItemID)
            #expect(v.productID == "sim.monthly")
            #expect(v.purchaseMillis == t.purchaseDate)
            #expect(v.purchaseDate?.text == Emitter.gmt(t.purchaseDate))
            #expect(v.originalPurchaseMillis == Sim.t0)
            #expect(v.expiresMillis == t.expiresDate)
            #expect(v.expiresDate?.text == Emitter.gmt(try #require(t.expiresDate)))
            #expect(v.subscriptionGroupIdentifier?.text == Catalogue.groupID)
            #expect(v.isTrialPeriod?.text == "false")
            #expect(v.isInIntroOfferPeriod?.text == "false")
            #expect(v.inAppOwnershipType == "PURCHASED")
            #expect(v.quantity?.text == "1")
            #expect(v.cancellationDate == nil && v.isUpgraded == nil)

            let trial = Emitter.v1Transaction(
                try Sim.plan("initial-buy-free-trial", pki: pki).emissions[0].subscription.transactions[0]
            )
            #expect(trial.isTrialPeriod?.text == "true")
            #expect(trial.isInIntroOfferPeriod?.text == "false", "a trial is not reported as an intro price")
            let intro = Emitter.v1Transaction(
                try Sim.plan("initial-buy-intro-offer", pki: pki).emissions[0].subscription.transactions[0]
            )
            #expect(intro.isTrialPeriod?.text == "false" && intro.isInIntroOfferPeriod?.text == "true")
            let code = Emitter.v1Transaction(
                try Sim.plan("offer-code-buy", pki: pki).emissions[0].subscription.transactions[0]
            )
            #expect(code.offerCodeRefName == "SPRING" && code.promotionalOfferID == nil)

            let refunded = Emitter.v1Transaction(try #require(try Sim.finalSubscription("refund", pki: pki).latest))
            #expect(refunded.cancellationMillis == Sim.t0 + Int64(Double(Sim.month) * 0.2))
            #expect(refunded.cancellationReason?.text == "1")
            let upgraded = Emitter.v1Transaction(try Sim.finalSubscription("upgrade", pki: pki).transactions[0])
            #expect(upgraded.isUpgraded?.text == "true")
            let family = Emitter.v1Transaction(
                try #require(try Sim.finalSubscription("family-revoke", pki: pki).latest)
            )
            #expect(family.inAppOwnershipType == "FAMILY_SHARED")
            let coins = Emitter.v1Transaction(
                try Sim.finalSubscription("consumable-consumption-request", pki: pki).transactions[0]
            )
            #expect(coins.expiresDate == nil && coins.subscriptionGroupIdentifier == nil)
        }
    }

    @Test func v1PendingRenewalFields() throws {
        try Sim.withPKI { pki throws in
            let grace = try Sim.plan("billing-grace-recovery", pki: pki).emissions[1].subscription
            let g = try #require(Emitter.v1Renewal(grace))
            #expect(g.autoRenewStatus?.text == "1")
            #expect(g.isInBillingRetryPeriod?.text == "1")
            #expect(g.expirationIntent?.text == "2")
            #expect(g.gracePeriodExpiresMillis == grace.renewal?.gracePeriodExpiresDate)
            #expect(g.gracePeriodExpiresDate?.text == Emitter.gmt(try #require(grace.renewal?.gracePeriodExpiresDate)))
            #expect(g.originalTransactionID?.text == grace.originalTransactionID)
            #expect(g.productID == "sim.monthly" && g.autoRenewProductID == "sim.monthly")
            #expect(g.priceConsentStatus == nil)

            let off = try #require(
                Emitter.v1Renewal(try Sim.plan("auto-renew-off-then-expiry", pki: pki).emissions[1].subscription)
            )
            #expect(
                off.autoRenewStatus?.text == "0" && off.isInBillingRetryPeriod?.text == "0"
                    && off.expirationIntent?.text == "1"
            )
            let price = try #require(
                Emitter.v1Renewal(try Sim.plan("price-increase-accepted", pki: pki).emissions[1].subscription)
            )
            #expect(price.priceConsentStatus?.text == "0")
            #expect(Emitter.v1Renewal(try Sim.finalSubscription("consumable-consumption-request", pki: pki)) == nil)
        }
    }

    @Test func v1BodyRoundTripsAndCarriesTheReceipt() throws {
        try Sim.withPKI { pki throws in
            let s = try Sim.finalSubscription("auto-renew", pki: pki)
            let at = Sim.t0 + 2 * Sim.month
            let body = try Emitter(pki: pki).v1Body(
                type: "DID_RENEW",
                subscription: s,
                sharedSecret: Sim.secret,
                at: at
            )
            let decoded = try JSONDecoder().decode(ResponseBodyV1.self, from: try JSONEncoder().encode(body))
            #expect(decoded == body)
            #expect(decoded.notificationType == "DID_RENEW")
            #expect(decoded.password == Sim.secret)
            #expect(decoded.environment == "Sandbox")
            #expect(decoded.bid == Sim.bundleID)
            #expect(decoded.bundleID == Sim.bundleID)
            #expect(decoded.originalTransactionID?.text == s.originalTransactionID)
            #expect(decoded.subscriptionID == s.originalTransactionID)
            #expect(decoded.autoRenewStatus?.text == "true")
            #expect(decoded.autoRenewProductID == "sim.monthly")
            #expect(
                decoded.autoRenewStatusChangeDateMs == nil,
                "only DID_CHANGE_RENEWAL_STATUS says when auto-renew changed"
            )
            let receipt = try #require(decoded.unifiedReceipt)
            #expect(decoded.receiptData == receipt.latestReceipt)
            #expect(receipt.environment == "Sandbox")
            #expect(receipt.status?.int64 == 0)
            let info = try #require(receipt.latestReceiptInfo)
            #expect(info.count == 3)
            #expect(info.first?.transactionIDText == s.latest?.transactionID, "newest transaction first")
            let purchases = info.compactMap(\.purchaseMillis)
            #expect(purchases == purchases.sorted(by: >) && Set(purchases).count == 3)
            #expect(receipt.pendingRenewalInfo?.count == 1)
            #expect(receipt.pendingRenewalInfo?.first?.originalTransactionID?.text == s.originalTransactionID)

            // The receipt is the customer's app receipt at `at`, signed then by the simulator's receipt chain.
            let app = try ReceiptReader.read(Array(try #require(receipt.latestReceipt).utf8), trust: pki.receiptTrust)
            #expect(app.isAuthenticated && app.isSandbox)
            #expect(app.app?.bundleID == Sim.bundleID && app.app?.creationDate == at)
            #expect(app.app?.inApp.compactMap(\.transactionID) == s.transactions.map(\.transactionID))
        }
    }

    @Test func v1BodyForARenewalStatusChangeSaysWhen() throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan("auto-renew-off-then-expiry", pki: pki)
            let off = plan.emissions[1]
            let body = try #require(off.v1Bodies.first)
            #expect(body.notificationType == "DID_CHANGE_RENEWAL_STATUS")
            #expect(body.autoRenewStatus?.text == "false")
            #expect(body.expirationIntent?.text == "1")
            #expect(body.autoRenewStatusChangeDateMs?.int64 == off.at)
            #expect(body.autoRenewStatusChangeDate?.text == Emitter.gmt(off.at))
            let coins = try Sim.finalSubscription("consumable-consumption-request", pki: pki)
            let c = try Emitter(pki: pki).v1Body(
                type: "CONSUMPTION_REQUEST",
                subscription: coins,
                sharedSecret: Sim.secret,
                at: Sim.t0
            )
            #expect(c.autoRenewStatus == nil)
            #expect(c.unifiedReceipt?.pendingRenewalInfo == [])
            #expect(c.unifiedReceipt?.latestReceiptInfo?.count == 1)
        }
    }
}
