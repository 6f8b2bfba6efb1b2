public import Canonical
internal import Crypto
internal import FoundationEssentials
public import V1Adapter
internal import V2Adapter

/// What one generation should make of one step: the canonical kind and reason.
public struct ExpectedEvent: Sendable, Hashable, CustomStringConvertible {
    public var kind: EventKind
    public var reason: EventReason?
    public init(_ kind: EventKind, _ reason: EventReason? = nil) { (self.kind, self.reason) = (kind, reason) }
    public var description: String { reason.map { "\(kind)[\($0)]" } ?? kind.rawValue }
}

/// One step of a lifecycle: what the App Store sends for it in each generation.
public struct Emission: Sendable {
    public var step: String
    /// Simulated time of the step (ms): the V2 `signedDate`.
    public var at: Int64
    public var originalTransactionID: String
    /// The subscription as the App Store knows it after the step (the fake endpoints answer from it).
    public var subscription: SimSubscription
    public var v2Type: String?
    public var v2Subtype: String?
    public var v2NotificationUUID: String?
    /// The V2 `signedPayload` (nil when V2 sends nothing for this step).
    public var v2SignedPayload: String?
    /// The transaction the V2 notification carries: the subscription's latest, but where a step is told once per
    /// transaction (a group's period refunded whole).
    public var v2TransactionID: String?
    /// The V1 bodies Apple would send (empty when V1 sends nothing for this step).
    public var v1Bodies: [ResponseBodyV1]
    public var expectedV2: ExpectedEvent?
    public var expectedV1: [ExpectedEvent]
    /// The transaction whose consumption information Apple waits for once this step is sent (a CONSUMPTION_REQUEST
    /// of a refund request, ``LifecycleContext/refundRequest(_:reason:)``); nil for every other step.
    public var awaitsConsumptionInfo: String?
}

/// A named subscription story, played by a ``LifecycleContext``.
public struct Lifecycle: Sendable {
    public var name: String
    public var summary: String
    /// Where each subscription of the story stands when it ends, by V2 (what the gateway's V2 path must conclude).
    public var final: [Entitlement.State]
    /// Where V1 traffic leaves it, when Apple's V1 notifications cannot tell (nil: the same as ``final``).
    public var v1Final: [Entitlement.State]?
    /// Why V1 ends elsewhere, when it does.
    public var v1Gap: String?
    let play: @Sendable (inout LifecycleContext) throws -> Void

    public init(
        _ name: String,
        _ summary: String,
        final: [Entitlement.State],
        v1Final: [Entitlement.State]? = nil,
        v1Gap: String? = nil,
        _ play: @escaping @Sendable (inout LifecycleContext) throws -> Void
    ) {
        self.name = name
        self.summary = summary
        self.final = final
        self.v1Final = v1Final
        self.v1Gap = v1Gap
        self.play = play
    }

    /// True when V1 carries enough for both generations to end in the same entitlement.
    public var v1Complete: Bool { v1Final == nil }

    /// A played lifecycle: every step's emissions and the moment the story ends (its entitlements are judged then).
    public struct Plan: Sendable {
        public var emissions: [Emission]
        /// Simulated end of the story (ms): at or after the last step.
        public var end: Int64
        public var nextID: Int64
        /// The story's subscriptions in the order they were bought.
        public var originalTransactionIDs: [String]
        /// Simulated start of the story (ms): playing it again from here with other refund answers changes only the
        /// steps after the answer.
        public var start: Int64 = 0
        /// The refund preferences Apple had heard when the story was played (``LifecycleContext/refundAnswers``).
        public var refundAnswers: [String: String] = [:]
        /// What it was played with, to play it again with other answers (``Lifecycle/awaitRefundAnswer(after:of:store:waitMillis:)``).
        var inputs: Inputs?

        struct Inputs: Sendable {
            var bundleID: String
            var sharedSecret: String
            var emitter: Emitter
            var monthMillis: Int64
            var firstID: Int64
        }

        /// Where each of the story's subscriptions stands when it ends, as the App Store knows it.
        public var finalStates: [Entitlement.State] {
            originalTransactionIDs.compactMap { otid in
                emissions.last { $0.originalTransactionID == otid }.map {
                    Emitter.entitlement($0.subscription, at: end).state
                }
            }
        }
    }

    /// The longest simulated month: a leap year. With it, no story's arithmetic comes near `Int64`'s ends.
    public static let maxMonthMillis: Int64 = 366 * 86_400_000
    /// Where a story may start (ms): the years 0000 to 9999, the ones Apple's date formats can write.
    public static let startRange: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// Plays the lifecycle from `start` (ms) with `monthMillis` per simulated month. Both come from the command line
    /// (`--speed`) and the clock: outside 1…``maxMonthMillis`` and ``startRange`` they are refused (`bad_argument`)
    /// rather than left to overflow the story's date arithmetic. `refundAnswers` is what Apple heard back about the
    /// story's refund requests (``LifecycleContext/refundAnswers``; none: Apple decides alone).
    public func plan(
        bundleID: String,
        sharedSecret: String,
        emitter: Emitter,
        start: Int64,
        monthMillis: Int64,
        firstID: Int64 = 1,
        refundAnswers: [String: String] = [:]
    )
        throws -> Plan
    {
        guard (1...Self.maxMonthMillis).contains(monthMillis) else {
            throw SimulatorError("bad_argument", "a simulated month must last from 1 ms to 366 days")
        }
        guard Self.startRange.contains(start) else {
            throw SimulatorError("bad_argument", "a story must start between the years 0000 and 9999")
        }
        var context = LifecycleContext(
            bundleID: bundleID,
            sharedSecret: sharedSecret,
            emitter: emitter,
            now: start,
            monthMillis: monthMillis,
            nextID: firstID
        )
        context.refundAnswers = refundAnswers
        try play(&context)
        var ids: [String] = []
        for e in context.emissions where !ids.contains(e.originalTransactionID) { ids.append(e.originalTransactionID) }
        return Plan(
            emissions: context.emissions,
            end: max(context.now, context.emissions.last?.at ?? start),
            nextID: context.world.nextID,
            originalTransactionIDs: ids,
            start: start,
            refundAnswers: refundAnswers,
            inputs: Plan.Inputs(
                bundleID: bundleID,
                sharedSecret: sharedSecret,
                emitter: emitter,
                monthMillis: monthMillis,
                firstID: firstID
            )
        )
    }

    /// Plays the lifecycle so that it ends `margin` ms before `now`: every date lies in the past, as in Apple's
    /// history, and the story can be sent as fast as the gateway takes it.
    public func planEndingAt(
        _ now: Int64,
        margin: Int64 = 1_000,
        bundleID: String,
        sharedSecret: String,
        emitter: Emitter,
        monthMillis: Int64,
        firstID: Int64 = 1
    ) throws -> Plan {
        let dry = try plan(
            bundleID: bundleID,
            sharedSecret: sharedSecret,
            emitter: emitter,
            start: 0,
            monthMillis: monthMillis,
            firstID: firstID
        )
        // Clamped: an absurd `now` or `margin` makes an out-of-range start, which `plan` refuses.
        let start = now.clampedSubtracting(margin).clampedSubtracting(dry.end)
        return try plan(
            bundleID: bundleID,
            sharedSecret: sharedSecret,
            emitter: emitter,
            start: start,
            monthMillis: monthMillis,
            firstID: firstID
        )
    }
}

/// The subscription model lifecycles are written in: operations change the simulated App Store's state at the
/// context's clock and record what each generation sends for them.
public struct LifecycleContext {
    public let bundleID: String
    let sharedSecret: String
    let emitter: Emitter
    /// The simulated clock (ms).
    public var now: Int64
    public let monthMillis: Int64
    /// What Apple heard back about a refund request, by transaction id: the `refundPreference` of the consumption
    /// information it received (``refundRequest(_:reason:)`` decides by it). A transaction without one: Apple decides
    /// alone.
    public var refundAnswers: [String: String] = [:]
    var world = SimWorld()
    public var emissions: [Emission] = []

    init(bundleID: String, sharedSecret: String, emitter: Emitter, now: Int64, monthMillis: Int64, nextID: Int64) {
        self.bundleID = bundleID
        self.sharedSecret = sharedSecret
        self.emitter = emitter
        self.now = now
        self.monthMillis = monthMillis
        world.nextID = nextID
    }

    /// Moves the clock forward by a fraction of a simulated month.
    public mutating func advance(months: Double) { now += max(1, Int64(Double(monthMillis) * months)) }

    func period(_ p: SimProduct) -> Int64 { Int64(p.months) * monthMillis }

    // MARK: Purchases

    public enum Offer: Sendable {
        case none, freeTrial, introPrice
        case offerCode(String)
    }

    @discardableResult
    public mutating func buy(_ product: SimProduct, offer: Offer = .none, familyShared: Bool = false) throws -> String {
        let otid = world.newID()
        var t = SimTransaction(
            transactionID: otid,
            originalTransactionID: otid,
            webOrderLineItemID: world.newID(),
            productID: product.id,
            purchaseDate: now,
            originalPurchaseDate: now,
            expiresDate: product.kind == .autoRenewable ? now + period(product) : nil,
            priceMilli: product.priceMilli
        )
        t.familyShared = familyShared
        var expectedV1 = ExpectedEvent(.purchase, .initial)
        switch offer {
        case .none: break
        case .freeTrial:
            (t.offerType, t.offerDiscountType, t.isTrial, t.isIntro, t.priceMilli) = (1, "FREE_TRIAL", true, true, 0)
            t.expiresDate = now + monthMillis / 4  // a one-week trial
        case .introPrice:
            (t.offerType, t.offerDiscountType, t.isIntro, t.priceMilli) = (
                1, "PAY_AS_YOU_GO", true, product.priceMilli / 2
            )
        case .offerCode(let code):
            (t.offerType, t.offerID, t.offerDiscountType) = (3, code, "PAY_AS_YOU_GO")
            expectedV1 = ExpectedEvent(.purchase, .offerRedeemed)
        }
        world.subscriptions[otid] = newSubscription(
            t,
            renewal: product.kind == .autoRenewable ? SimRenewal(autoRenewProductID: product.id) : nil
        )
        if product.kind == .autoRenewable {
            if case .offerCode = offer {
                try emit(
                    "buy \(product.id) with an offer code",
                    otid,
                    v2: ("OFFER_REDEEMED", "INITIAL_BUY"),
                    v1: ["INITIAL_BUY"],
                    expectV2: ExpectedEvent(.purchase, .offerRedeemed),
                    expectV1: [expectedV1]
                )
            } else {
                try emit(
                    "buy \(product.id)",
                    otid,
                    v2: ("SUBSCRIBED", "INITIAL_BUY"),
                    v1: ["INITIAL_BUY"],
                    expectV2: ExpectedEvent(.purchase, .initial),
                    expectV1: [expectedV1]
                )
            }
        } else {
            // A consumable: V2 sends ONE_TIME_CHARGE, V1 nothing.
            try emit(
                "buy \(product.id)",
                otid,
                v2: ("ONE_TIME_CHARGE", nil),
                v1: [],
                expectV2: ExpectedEvent(.oneTimeCharge),
                expectV1: []
            )
        }
        return otid
    }

    /// A new subscription whose first transaction (and original) is `t`, as the App Store opens it: its customer's
    /// account token, receipt and the app's shared secret (its digest).
    func newSubscription(_ t: SimTransaction, renewal: SimRenewal?) -> SimSubscription {
        let otid = t.originalTransactionID
        var s = SimSubscription(
            bundleID: bundleID,
            originalTransactionID: otid,
            appAccountToken: Self.uuid("account|\(bundleID)|\(otid)"),
            transactions: [t],
            renewal: renewal,
            receiptToken: Base64.encode(Array("sim-receipt:\(otid)".utf8), alphabet: .standard)
        )
        s.sharedSecretDigest = Hex.encode(SHA256.hash(Array(sharedSecret.utf8)))
        return s
    }

    // MARK: Renewals and billing

    /// Renews at the end of the current period (the clock moves there) into the auto-renew product.
    public mutating func renew(_ otid: String) throws {
        var s = try sub(otid)
        guard let latest = s.latest, let end = latest.expiresDate, let r = s.renewal,
            let next = Catalogue.product(r.autoRenewProductID)
        else {
            throw SimulatorError("bad_step", "\(otid) cannot renew")
        }
        now = max(now, end)
        s.transactions.append(renewalTransaction(s, next, start: end))
        s.renewal?.priceIncreaseStatus = nil
        world.subscriptions[otid] = s
        try emit(
            "renew into \(next.id)",
            otid,
            v2: ("DID_RENEW", nil),
            v1: ["DID_RENEW"],
            expectV2: ExpectedEvent(.renewal, .auto),
            expectV1: [ExpectedEvent(.renewal, .auto)]
        )
    }

    mutating func renewalTransaction(_ s: SimSubscription, _ product: SimProduct, start: Int64) -> SimTransaction {
        var t = SimTransaction(
            transactionID: world.newID(),
            originalTransactionID: s.originalTransactionID,
            webOrderLineItemID: world.newID(),
            productID: product.id,
            purchaseDate: start,
            originalPurchaseDate: s.transactions.first?.originalPurchaseDate ?? start,
            expiresDate: start + period(product),
            priceMilli: product.priceMilli
        )
        t.renewal = true
        t.familyShared = s.latest?.familyShared ?? false
        if let latest = s.latest, latest.seats != nil {
            // A group renews as one transaction for the seats the renewal info holds (a reduction applies here).
            let seats = s.renewal?.renewalSeats ?? s.groupSeats
            let tiers = product.seatTiers(seats)
            t.seats = seats
            t.seatTiers = tiers
            t.priceMilli = SimSeatTier.average(tiers) ?? product.priceMilli
            t.invitationManagement = latest.invitationManagement
            t.assignedBy = latest.assignedBy
        }
        return t
    }

    public mutating func setAutoRenew(_ otid: String, on: Bool) throws {
        var s = try sub(otid)
        s.renewal?.autoRenew = on
        s.renewal?.expirationIntent = on ? nil : 1
        s.autoRenewChangedAt = now
        world.subscriptions[otid] = s
        let reason: EventReason = on ? .enabled : .disabled
        try emit(
            "auto-renew \(on ? "on" : "off")",
            otid,
            v2: ("DID_CHANGE_RENEWAL_STATUS", on ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED"),
            v1: ["DID_CHANGE_RENEWAL_STATUS"],
            expectV2: ExpectedEvent(.autoRenewChanged, reason),
            expectV1: [ExpectedEvent(.autoRenewChanged, reason)]
        )
    }

    /// The renewal at the end of the period fails (the clock moves there); with `grace`, access continues for
    /// `graceMonths`.
    public mutating func billingFailure(_ otid: String, grace: Bool, graceMonths: Double = 0.25) throws {
        var s = try sub(otid)
        guard let end = s.latest?.expiresDate else { throw SimulatorError("bad_step", "\(otid) has no period") }
        now = max(now, end)
        s.renewal?.inBillingRetry = true
        s.renewal?.expirationIntent = 2
        s.renewal?.gracePeriodExpiresDate = grace ? end + Int64(Double(monthMillis) * graceMonths) : nil
        world.subscriptions[otid] = s
        let reason: EventReason = grace ? .gracePeriod : .billingRetry
        try emit(
            "renewal fails\(grace ? " (grace period)" : "")",
            otid,
            v2: ("DID_FAIL_TO_RENEW", grace ? "GRACE_PERIOD" : nil),
            v1: ["DID_FAIL_TO_RENEW"],
            expectV2: ExpectedEvent(.renewalFailure, reason),
            expectV1: [ExpectedEvent(.renewalFailure, reason)]
        )
    }

    /// The grace period ends with billing still failing (the clock moves there). V1 sends nothing.
    public mutating func gracePeriodExpired(_ otid: String) throws {
        let s = try sub(otid)
        guard let grace = s.renewal?.gracePeriodExpiresDate else {
            throw SimulatorError("bad_step", "\(otid) has no grace period")
        }
        now = max(now, grace)
        try emit(
            "grace period ends",
            otid,
            v2: ("GRACE_PERIOD_EXPIRED", nil),
            v1: [],
            expectV2: ExpectedEvent(.gracePeriodExpired),
            expectV1: []
        )
    }

    /// Billing retry succeeds now: a new period starts.
    public mutating func recover(_ otid: String) throws {
        var s = try sub(otid)
        guard let r = s.renewal, let product = Catalogue.product(r.autoRenewProductID) else {
            throw SimulatorError("bad_step", "no renewal")
        }
        s.transactions.append(renewalTransaction(s, product, start: now))
        s.renewal?.inBillingRetry = false
        s.renewal?.gracePeriodExpiresDate = nil
        s.renewal?.expirationIntent = nil
        world.subscriptions[otid] = s
        try emit(
            "billing recovers",
            otid,
            v2: ("DID_RENEW", "BILLING_RECOVERY"),
            v1: ["DID_RECOVER"],
            expectV2: ExpectedEvent(.renewal, .billingRecovery),
            expectV1: [ExpectedEvent(.renewal, .billingRecovery)]
        )
    }

    public enum ExpiryReason: Sendable { case voluntary, billingRetry, priceIncrease, productNotForSale }

    /// The subscription expires (at the end of the period when it is still ahead).
    public mutating func expire(_ otid: String, _ why: ExpiryReason) throws {
        var s = try sub(otid)
        if let end = s.latest?.expiresDate { now = max(now, end) }
        s.renewal?.autoRenew = false
        s.renewal?.inBillingRetry = false
        s.renewal?.gracePeriodExpiresDate = nil
        switch why {
        case .voluntary:
            s.renewal?.expirationIntent = 1
            world.subscriptions[otid] = s
            try emit(
                "expires (auto-renew was off)",
                otid,
                v2: ("EXPIRED", "VOLUNTARY"),
                v1: [],
                expectV2: ExpectedEvent(.expiration, .voluntary),
                expectV1: []
            )
        case .billingRetry:
            s.renewal?.expirationIntent = 2
            s.autoRenewChangedAt = now
            world.subscriptions[otid] = s
            // Apple's V1 table: churn after billing retries is a DID_CHANGE_RENEWAL_STATUS.
            try emit(
                "expires after billing retries",
                otid,
                v2: ("EXPIRED", "BILLING_RETRY"),
                v1: ["DID_CHANGE_RENEWAL_STATUS"],
                expectV2: ExpectedEvent(.expiration, .billingRetry),
                expectV1: [ExpectedEvent(.expiration, .billingRetry)]
            )
        case .priceIncrease:
            s.renewal?.expirationIntent = 3
            s.autoRenewChangedAt = now
            world.subscriptions[otid] = s
            try emit(
                "expires: price increase not accepted",
                otid,
                v2: ("EXPIRED", "PRICE_INCREASE"),
                v1: ["DID_CHANGE_RENEWAL_STATUS"],
                expectV2: ExpectedEvent(.expiration, .priceIncrease),
                expectV1: [ExpectedEvent(.expiration, .priceIncrease)]
            )
        case .productNotForSale:
            s.renewal?.expirationIntent = 4
            world.subscriptions[otid] = s
            try emit(
                "expires: product removed from sale",
                otid,
                v2: ("EXPIRED", "PRODUCT_NOT_FOR_SALE"),
                v1: [],
                expectV2: ExpectedEvent(.expiration, .productNotForSale),
                expectV1: []
            )
        }
    }

    /// Buys the same subscription again after it expired.
    public mutating func resubscribe(_ otid: String) throws {
        var s = try sub(otid)
        guard let product = Catalogue.product(s.renewal?.autoRenewProductID ?? s.latest?.productID ?? "") else {
            throw SimulatorError("bad_step", "no product")
        }
        var t = renewalTransaction(s, product, start: now)
        t.renewal = false
        s.transactions.append(t)
        s.renewal = SimRenewal(autoRenewProductID: product.id)
        s.autoRenewChangedAt = now
        world.subscriptions[otid] = s
        // Apple's V1 table: an expired subscription bought again (same product) is a DID_CHANGE_RENEWAL_STATUS.
        try emit(
            "resubscribe to \(product.id)",
            otid,
            v2: ("SUBSCRIBED", "RESUBSCRIBE"),
            v1: ["DID_CHANGE_RENEWAL_STATUS"],
            expectV2: ExpectedEvent(.purchase, .resubscribe),
            expectV1: [ExpectedEvent(.purchase, .resubscribe)]
        )
    }

    // MARK: Plan changes

    /// An immediate upgrade: the current period is refunded pro rata and a new one starts with `product`.
    public mutating func upgrade(_ otid: String, to product: SimProduct) throws {
        var s = try sub(otid)
        guard let index = s.transactions.indices.last else { throw SimulatorError("bad_step", "nothing to upgrade") }
        s.transactions[index].isUpgraded = true
        var t = renewalTransaction(s, product, start: now)
        t.renewal = false
        s.transactions.append(t)
        s.renewal?.autoRenewProductID = product.id
        s.autoRenewChangedAt = now
        world.subscriptions[otid] = s
        // Apple's V1 table: active + upgrade → DID_CHANGE_RENEWAL_STATUS and INTERACTIVE_RENEWAL.
        try emit(
            "upgrade to \(product.id)",
            otid,
            v2: ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"),
            v1: ["DID_CHANGE_RENEWAL_STATUS", "INTERACTIVE_RENEWAL"],
            expectV2: ExpectedEvent(.planChange, .upgrade),
            expectV1: [ExpectedEvent(.autoRenewChanged, .enabled), ExpectedEvent(.planChange, .upgrade)]
        )
    }

    /// A downgrade or a crossgrade to another duration: takes effect at the next renewal.
    public mutating func changeAtNextRenewal(_ otid: String, to product: SimProduct) throws {
        var s = try sub(otid)
        s.renewal?.autoRenewProductID = product.id
        world.subscriptions[otid] = s
        try emit(
            "switch to \(product.id) at the next renewal",
            otid,
            v2: ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"),
            v1: ["DID_CHANGE_RENEWAL_PREF"],
            expectV2: ExpectedEvent(.planChange, .downgrade),
            expectV1: [ExpectedEvent(.planChange, .downgrade)]
        )
    }

    // MARK: Refunds and revocation

    public mutating func refund(_ otid: String) throws {
        var s = try sub(otid)
        guard let index = s.transactions.indices.last else { throw SimulatorError("bad_step", "nothing to refund") }
        s.transactions[index].revocationDate = now
        s.transactions[index].revocationReason = 1
        s.transactions[index].revocationType = "REFUND_FULL"
        let autoRenewable = Catalogue.product(s.transactions[index].productID)?.kind == .autoRenewable
        if autoRenewable {
            s.renewal?.autoRenew = false
            s.autoRenewChangedAt = now
        }
        world.subscriptions[otid] = s
        // Apple's V1 table: a refunded subscription is CANCEL + DID_CHANGE_RENEWAL_STATUS; other products REFUND.
        try emit(
            "refund",
            otid,
            v2: ("REFUND", nil),
            v1: autoRenewable ? ["CANCEL", "DID_CHANGE_RENEWAL_STATUS"] : ["REFUND"],
            expectV2: ExpectedEvent(.refund),
            expectV1: autoRenewable
                ? [ExpectedEvent(.refund), ExpectedEvent(.autoRenewChanged, .disabled)] : [ExpectedEvent(.refund)]
        )
    }

    public mutating func refundDeclined(_ otid: String) throws {
        _ = try sub(otid)
        try emit(
            "refund request declined",
            otid,
            v2: ("REFUND_DECLINED", nil),
            v1: [],
            expectV2: ExpectedEvent(.refundDeclined),
            expectV1: []
        )
    }

    public mutating func refundReversed(_ otid: String) throws {
        var s = try sub(otid)
        guard let index = s.transactions.indices.last else { throw SimulatorError("bad_step", "nothing to reverse") }
        s.transactions[index].revocationDate = nil
        s.transactions[index].revocationReason = nil
        s.transactions[index].revocationType = nil
        world.subscriptions[otid] = s
        try emit(
            "refund reversed",
            otid,
            v2: ("REFUND_REVERSED", nil),
            v1: [],
            expectV2: ExpectedEvent(.refundReversed),
            expectV1: []
        )
    }

    /// A family member loses access to a family-shared subscription.
    public mutating func revokeFamilySharing(_ otid: String) throws {
        var s = try sub(otid)
        guard let index = s.transactions.indices.last else { throw SimulatorError("bad_step", "nothing to revoke") }
        s.transactions[index].revocationDate = now
        s.transactions[index].revocationType = "FAMILY_REVOKE"
        world.subscriptions[otid] = s
        try emit(
            "family sharing revoked",
            otid,
            v2: ("REVOKE", nil),
            v1: ["REVOKE"],
            expectV2: ExpectedEvent(.revocation),
            expectV1: [ExpectedEvent(.revocation)]
        )
    }

    // MARK: Prices, extensions, consumables

    public mutating func priceIncrease(_ otid: String) throws {
        var s = try sub(otid)
        s.renewal?.priceIncreaseStatus = 0
        world.subscriptions[otid] = s
        try emit(
            "price increase announced",
            otid,
            v2: ("PRICE_INCREASE", "PENDING"),
            v1: ["PRICE_INCREASE_CONSENT"],
            expectV2: ExpectedEvent(.priceIncrease, .pending),
            expectV1: [ExpectedEvent(.priceIncrease, .pending)]
        )
    }

    /// The customer accepts: V1 sends nothing (only `price_consent_status` flips).
    public mutating func acceptPriceIncrease(_ otid: String) throws {
        var s = try sub(otid)
        s.renewal?.priceIncreaseStatus = 1
        world.subscriptions[otid] = s
        try emit(
            "price increase accepted",
            otid,
            v2: ("PRICE_INCREASE", "ACCEPTED"),
            v1: [],
            expectV2: ExpectedEvent(.priceIncrease, .accepted),
            expectV1: []
        )
    }

    /// The developer extends the current period by `days` simulated days. V1 sends nothing.
    public mutating func extendRenewalDate(_ otid: String, days: Int) throws {
        var s = try sub(otid)
        guard let index = s.transactions.indices.last, let end = s.transactions[index].expiresDate else {
            throw SimulatorError("bad_step", "nothing to extend")
        }
        s.transactions[index].expiresDate = end + Int64(days) * monthMillis / 30
        world.subscriptions[otid] = s
        try emit(
            "renewal date extended by \(days) days",
            otid,
            v2: ("RENEWAL_EXTENDED", nil),
            v1: [],
            expectV2: ExpectedEvent(.renewalExtended),
            expectV1: []
        )
    }

    /// Apple asks for consumption information about a refund request (`reason`: Apple's `consumptionRequestReason`).
    /// V1 sends its CONSUMPTION_REQUEST for consumables only.
    public mutating func consumptionRequest(_ otid: String, reason: String = "UNINTENDED_PURCHASE") throws {
        let s = try sub(otid)
        let consumable = s.latest.flatMap { Catalogue.product($0.productID) }?.kind == .consumable
        try emit(
            "consumption request",
            otid,
            v2: ("CONSUMPTION_REQUEST", nil),
            v1: consumable ? ["CONSUMPTION_REQUEST"] : [],
            expectV2: ExpectedEvent(.consumptionRequest),
            expectV1: consumable ? [ExpectedEvent(.consumptionRequest)] : [],
            extra: { $0.consumptionRequestReason = reason }
        )
    }

    /// The customer asks Apple for a refund of `otid`'s latest purchase: Apple sends a CONSUMPTION_REQUEST, waits for
    /// the developer's consumption information about that transaction (``Emission/awaitsConsumptionInfo``; what it
    /// heard is ``refundAnswers``), then decides: `DECLINE` declines (REFUND_DECLINED); `GRANT_FULL`,
    /// `GRANT_PRORATED`, no preference or no answer at all refund (REFUND, which revokes the purchase).
    public mutating func refundRequest(_ otid: String, reason: String = "UNINTENDED_PURCHASE") throws {
        guard let transactionID = try sub(otid).latest?.transactionID else {
            throw SimulatorError("bad_step", "nothing to refund")
        }
        try consumptionRequest(otid, reason: reason)
        emissions[emissions.count - 1].awaitsConsumptionInfo = transactionID
        advance(months: 0.05)
        if Self.refundDecision(refundAnswers[transactionID]) == "REFUND_DECLINED" {
            try refundDeclined(otid)
        } else {
            try refund(otid)
        }
    }

    /// Apple's decision on a refund request given the developer's `refundPreference` (nil: none received):
    /// `REFUND_DECLINED` for `DECLINE`, else `REFUND`.
    public static func refundDecision(_ preference: String?) -> String {
        preference == "DECLINE" ? "REFUND_DECLINED" : "REFUND"
    }

    // MARK: Emission

    /// A notification UUID derived from what makes the step unique (ids come from the shared state, so two runs
    /// never collide), keeping plans deterministic.
    static func uuid(_ seed: String) -> String {
        var hex = Array(Hex.encode(SHA256.hash(Array(seed.utf8))).utf8.prefix(32))
        hex[12] = UInt8(ascii: "4")
        hex[16] = UInt8(ascii: "8")
        let h = String(decoding: hex, as: UTF8.self)
        func part(_ from: Int, _ to: Int) -> Substring { h.dropFirst(from).prefix(to - from) }
        return "\(part(0, 8))-\(part(8, 12))-\(part(12, 16))-\(part(16, 20))-\(part(20, 32))"
    }

    func sub(_ otid: String) throws -> SimSubscription {
        guard let s = world.subscriptions[otid] else { throw SimulatorError("bad_step", "no subscription \(otid)") }
        return s
    }

    mutating func emit(
        _ step: String,
        _ otid: String,
        v2: (type: String, subtype: String?)?,
        v1: [String],
        expectV2: ExpectedEvent?,
        expectV1: [ExpectedEvent],
        transaction: SimTransaction? = nil,
        unclaimSeatIDs: [String]? = nil,
        extra: @escaping (inout NotificationData) -> Void = { _ in }
    ) throws {
        let s = try sub(otid)
        // Strictly increasing signed dates keep the steps' order unambiguous downstream.
        if let last = emissions.last, now <= last.at { now = last.at + 1 }
        var e = Emission(
            step: step,
            at: now,
            originalTransactionID: otid,
            subscription: s,
            v1Bodies: [],
            expectedV2: expectV2,
            expectedV1: expectV1
        )
        if let v2 {
            let uuid = Self.uuid("\(bundleID)|\(otid)|\(emissions.count)|\(now)")
            e.v2Type = v2.type
            e.v2Subtype = v2.subtype
            e.v2NotificationUUID = uuid
            e.v2TransactionID = (transaction ?? s.latest)?.transactionID
            e.v2SignedPayload = try emitter.notification(
                type: v2.type,
                subtype: v2.subtype,
                uuid: uuid,
                subscription: s,
                transaction: transaction ?? s.latest,
                at: now,
                unclaimSeatIDs: unclaimSeatIDs,
                extra: extra
            )
        }
        if !v1.isEmpty {
            // One receipt for the step, signed at its moment: every V1 body of the step carries it.
            let receipt = try emitter.v1Receipt(s, at: now)
            e.v1Bodies = v1.map {
                Emitter.v1Body(type: $0, subscription: s, sharedSecret: sharedSecret, latestReceipt: receipt, at: now)
            }
        }
        emissions.append(e)
    }
}
