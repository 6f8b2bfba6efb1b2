public import Canonical

/// V1 → canonical (docs/architecture.md, "The canonical event"): one V1 notification becomes one event, its fields taken from a set of
/// transactions and renewal infos — Apple's verifyReceipt answer normally, the unsigned body only for bundles that
/// opted out (then `verified: false`). Ambiguous V1 types are resolved from those transactions, and the entitlement
/// is computed from dates, never from the type.
public struct V1EventBuilder: Sendable {
    /// What the builder reads: every transaction known for the notification's subscription and its renewal info.
    public struct Facts: Sendable {
        public var transactions: [V1Transaction]
        public var pendingRenewal: V1PendingRenewal?
        public var environment: AppStoreEnvironment?
        public var bundleID: String?
        /// The app's Apple ID when the data names it (`receipt.adam_id`).
        public var appAppleID: Int64?
        public var verified: Bool

        public init(
            transactions: [V1Transaction],
            pendingRenewal: V1PendingRenewal?,
            environment: AppStoreEnvironment?,
            bundleID: String?,
            appAppleID: Int64? = nil,
            verified: Bool
        ) {
            self.transactions = transactions
            self.pendingRenewal = pendingRenewal
            self.environment = environment
            self.bundleID = bundleID
            self.appAppleID = appAppleID
            self.verified = verified
        }
    }

    public init() {}

    // MARK: Facts

    /// Facts from the body alone (`unified_receipt`, or the pre-2021 top-level members).
    public static func facts(fromBody body: ResponseBodyV1, subscription: String?) -> Facts {
        var all = body.unifiedReceipt?.latestReceiptInfo ?? []
        all += body.latestReceiptInfo?.items ?? []
        if let expired = body.latestExpiredReceiptInfo { all.append(expired) }
        let pending =
            pick(body.unifiedReceipt?.pendingRenewalInfo ?? [], subscription: subscription)
            ?? synthesizedRenewal(
                autoRenewStatus: body.autoRenewStatus,
                productID: body.autoRenewProductID,
                expirationIntent: body.expirationIntent,
                retry: body.isInBillingRetryPeriod,
                subscription: subscription
            )
        return Facts(
            transactions: filter(all, subscription: subscription),
            pendingRenewal: pending,
            environment: V1Adapter.environment(body),
            bundleID: body.bundleID,
            verified: false
        )
    }

    /// Facts from Apple's verifyReceipt answer (iOS-7 arrays, iOS-6 single objects, 21006 expired receipts).
    public static func facts(fromReceipt r: VerifyReceiptResponse, subscription: String?) -> Facts {
        var all = r.latestReceiptInfo?.items ?? []
        if let e = r.latestExpiredReceiptInfo { all.append(e) }
        all += r.receipt?.inApp ?? []
        if let t = r.receipt?.transaction, t.transactionID != nil { all.append(t) }
        let pending =
            pick(r.pendingRenewalInfo ?? [], subscription: subscription)
            ?? synthesizedRenewal(
                autoRenewStatus: r.autoRenewStatus,
                productID: r.autoRenewProductID,
                expirationIntent: r.expirationIntent,
                retry: r.isInBillingRetryPeriod,
                subscription: subscription
            )
        let bundle = r.receipt?.bundleID ?? r.receipt?.transaction.bid ?? all.first?.bid
        return Facts(
            transactions: filter(all, subscription: subscription),
            pendingRenewal: pending,
            environment: r.environment.flatMap(AppStoreEnvironment.init(appleValue:))
                ?? r.receipt?.receiptType.flatMap(AppStoreEnvironment.init(appleValue:)),
            bundleID: bundle,
            appAppleID: (r.receipt?.adamID?.int64).flatMap { $0 > 0 ? $0 : nil },
            verified: true
        )
    }

    /// The subscription's transactions (all of them when `subscription` is nil), each once, oldest first.
    static func filter(_ all: [V1Transaction], subscription: String?) -> [V1Transaction] {
        var seen: Set<String> = []
        var out: [V1Transaction] = []
        for t in all where subscription == nil || t.originalTransactionIDText == subscription {
            let key = t.transactionIDText ?? "\(t.purchaseMillis ?? 0)"
            if seen.insert(key).inserted { out.append(t) }
        }
        return out.sorted(by: Self.isOlder)
    }

    /// Purchase date, then expiry, then transaction id: a total order that does not depend on Apple's list order.
    static func isOlder(_ a: V1Transaction, _ b: V1Transaction) -> Bool {
        let ka = (a.purchaseMillis ?? 0, a.expiresMillis ?? 0, a.transactionIDText ?? "")
        let kb = (b.purchaseMillis ?? 0, b.expiresMillis ?? 0, b.transactionIDText ?? "")
        return ka < kb
    }

    static func pick(_ infos: [V1PendingRenewal], subscription: String?) -> V1PendingRenewal? {
        if let subscription, let match = infos.first(where: { $0.originalTransactionID?.text == subscription }) {
            return match
        }
        return infos.count == 1 && infos[0].originalTransactionID == nil
            ? infos[0] : (subscription == nil ? infos.first : nil)
    }

    /// Older bodies and iOS-6 answers carry renewal state at the top level.
    static func synthesizedRenewal(
        autoRenewStatus: V1Scalar?,
        productID: String?,
        expirationIntent: V1Scalar?,
        retry: V1Scalar?,
        subscription: String?
    ) -> V1PendingRenewal? {
        guard autoRenewStatus != nil || productID != nil || expirationIntent != nil || retry != nil else { return nil }
        var p = V1PendingRenewal()
        p.autoRenewStatus = autoRenewStatus
        p.autoRenewProductID = productID
        p.expirationIntent = expirationIntent
        p.isInBillingRetryPeriod = retry
        p.originalTransactionID = subscription.map { V1Scalar(text: $0) }
        return p
    }

    // MARK: Events

    /// The event for `notification`, built from `facts`. `arrival` (ms) dates events whose change carries no date.
    public func event(
        for notification: ResponseBodyV1,
        id: String,
        facts: Facts,
        arrival: Int64
    ) -> CanonicalEvent {
        let type = notification.notificationType ?? ""
        let latest = facts.transactions.last
        let previous = facts.transactions.dropLast().last
        // The transaction a CANCEL / REFUND / REVOKE is about: the latest one carrying a cancellation date.
        let cancelled = facts.transactions.last { $0.cancellationMillis != nil }
        let subject = ["CANCEL", "REFUND", "REVOKE"].contains(type) ? (cancelled ?? latest) : latest

        let (eventDate, dateSource) = Self.eventDate(type: type, body: notification, subject: subject, arrival: arrival)
        let (kind, reason) = Self.classify(
            type: type,
            body: notification,
            latest: latest,
            previous: previous,
            subject: subject,
            renewal: facts.pendingRenewal,
            at: eventDate
        )

        var e = CanonicalEvent(
            id: id,
            source: .v1,
            kind: kind,
            reason: reason,
            rawType: type,
            rawSubtype: nil,
            eventDate: eventDate,
            eventDateSource: dateSource,
            verified: facts.verified
        )
        e.bundleID = facts.bundleID ?? notification.bundleID
        e.environment = facts.environment
        // `app_item_id` (the app's Apple ID) appears on some transactions only (iOS-6 style, older bodies).
        e.appAppleID =
            facts.appAppleID
            ?? ([subject] + facts.transactions.reversed()).lazy.compactMap { $0?.appItemID?.int64 }.first { $0 > 0 }
        if let t = subject { e.apply(t) }
        e.originalTransactionID = e.originalTransactionID ?? notification.subscriptionID
        if let r = facts.pendingRenewal { e.apply(r) }
        if subject != nil { e.computeEntitlement() }
        return e
    }

    /// docs/architecture.md, "The canonical event": the date the change carries, else arrival.
    static func eventDate(
        type: String,
        body: ResponseBodyV1,
        subject: V1Transaction?,
        arrival: Int64
    ) -> (Int64, EventDateSource) {
        let carried: Int64?
        switch type {
        case "DID_CHANGE_RENEWAL_STATUS":
            carried = V1Transaction.millis(body.autoRenewStatusChangeDateMs, body.autoRenewStatusChangeDate)
        case "CANCEL", "REFUND", "REVOKE":
            carried = subject?.cancellationMillis
        case "INITIAL_BUY", "DID_RENEW", "DID_RECOVER", "RENEWAL", "INTERACTIVE_RENEWAL":
            carried = subject?.purchaseMillis
        case "DID_FAIL_TO_RENEW":
            // The renewal that failed was due when the last paid period ended.
            carried = subject?.expiresMillis
        default:
            carried = nil
        }
        // A change cannot postdate the notification about it. A later date means verifyReceipt already described a
        // newer state (the receipt was fetched late, after a renewal say): dating the event then would let it outrank
        // the events that really came after it.
        if let carried, carried <= arrival { return (carried, .notification) }
        return (arrival, .arrival)
    }

    /// Kind and reason, resolving the V1 types that stand for several V2 events from the transactions.
    static func classify(
        type: String,
        body: ResponseBodyV1,
        latest: V1Transaction?,
        previous: V1Transaction?,
        subject: V1Transaction?,
        renewal: V1PendingRenewal?,
        at time: Int64
    ) -> (EventKind, EventReason?) {
        switch type {
        case "INITIAL_BUY":
            return (.purchase, latest?.offerCodeRefName != nil ? .offerRedeemed : .initial)
        case "DID_RENEW":
            return (.renewal, .auto)
        case "DID_RECOVER", "RENEWAL":
            return (.renewal, .billingRecovery)
        case "INTERACTIVE_RENEWAL":
            // Expired before the new purchase → a resubscription; active and another product → an upgrade.
            guard let latest else { return (.purchase, .resubscribe) }
            guard let previous, let prevEnd = previous.expiresMillis, let start = latest.purchaseMillis else {
                return (.purchase, .resubscribe)
            }
            if prevEnd <= start { return (.purchase, .resubscribe) }
            if previous.productID != latest.productID || previous.isUpgraded?.bool == true {
                return (.planChange, .upgrade)
            }
            return (.renewal, .interactive)
        case "DID_CHANGE_RENEWAL_PREF":
            if let next = renewal?.autoRenewProductID ?? body.autoRenewProductID, let current = latest?.productID,
                next != current
            {
                return (.planChange, .downgrade)
            }
            return (.planChange, .reverted)
        case "DID_CHANGE_RENEWAL_STATUS":
            let on = renewal?.autoRenewStatus?.bool ?? body.autoRenewStatus?.bool
            if on == true, let latest, let start = latest.purchaseMillis, let previous,
                let prevEnd = previous.expiresMillis,
                prevEnd <= start, start.clampedSubtracting(time).magnitude <= 120_000
            {
                // Apple's V1 table: an expired subscription resubscribed to the same product. (Both dates are
                // Apple's text: the distance is clamped, and `magnitude` has no `abs(Int64.min)` trap.)
                return (.purchase, .resubscribe)
            }
            if on == false, renewal?.isInBillingRetryPeriod?.bool != true, let end = latest?.expiresMillis, end <= time
            {
                switch renewal?.expirationIntent?.int64 {
                case 2?:
                    // Churn after Apple gave up retrying the payment.
                    return (.expiration, .billingRetry)
                case 3?:
                    // The period ended without the customer's consent to a price increase: Apple's V1 counterpart of
                    // V2's EXPIRED/PRICE_INCREASE.
                    return (.expiration, .priceIncrease)
                default:
                    break
                }
            }
            return (.autoRenewChanged, on.map { $0 ? .enabled : .disabled })
        case "DID_FAIL_TO_RENEW":
            if let grace = renewal?.gracePeriodExpiresMillis, grace > time { return (.renewalFailure, .gracePeriod) }
            return (.renewalFailure, .billingRetry)
        case "CANCEL":
            if subject?.isUpgraded?.bool == true { return (.planChange, .upgrade) }
            return (.refund, nil)
        case "REFUND":
            return (.refund, nil)
        case "REVOKE":
            return (.revocation, nil)
        case "PRICE_INCREASE_CONSENT":
            return (.priceIncrease, renewal?.priceConsentStatus?.bool == true ? .accepted : .pending)
        case "CONSUMPTION_REQUEST":
            return (.consumptionRequest, nil)
        default:
            return (.other, nil)
        }
    }

    // MARK: Snapshots

    /// What verifyReceipt says about every subscription in its answer, observed at `observedAt` (ms). A 21006
    /// answer describes an expired subscription: it is never reported as granting access.
    public static func snapshots(from r: VerifyReceiptResponse, observedAt: Int64) -> [OutcomeSnapshot] {
        let all = facts(fromReceipt: r, subscription: nil)
        var ids: [String] = []
        for t in all.transactions {
            if let id = t.originalTransactionIDText, !ids.contains(id) { ids.append(id) }
        }
        return ids.map { id in
            let f = facts(fromReceipt: r, subscription: id)
            let latest = f.transactions.last
            let renewal = f.pendingRenewal
            var s = OutcomeSnapshot(
                source: .v1Receipt,
                bundleID: f.bundleID,
                environment: f.environment,
                originalTransactionID: id,
                productID: latest?.productID,
                transactionID: latest?.transactionIDText,
                expiresDate: latest?.expiresMillis,
                revocationDate: latest?.cancellationMillis,
                gracePeriodExpiresDate: renewal?.gracePeriodExpiresMillis,
                autoRenew: renewal?.autoRenewStatus?.bool,
                autoRenewProductID: renewal?.autoRenewProductID,
                inBillingRetry: renewal?.isInBillingRetryPeriod?.bool,
                expirationIntent: renewal?.expirationIntent?.int64.map { AppleCodes.expirationIntent(Int($0)) },
                observedAt: observedAt
            )
            if r.statusCode == VerifyReceiptStatus.expired.rawValue, s.entitlement.grantsAccess {
                s.entitlement = Entitlement(state: .expired, until: nil)
            }
            return s
        }
    }
}

extension CanonicalEvent {
    /// Copies what a V1 transaction says. V1 carries no price; the product type is only known to be an
    /// auto-renewable subscription when the transaction has an expiry.
    mutating func apply(_ t: V1Transaction) {
        productID = t.productID
        productType = t.expiresMillis != nil ? .autoRenewable : nil
        originalTransactionID = t.originalTransactionIDText
        transactionID = t.transactionIDText
        webOrderLineItemID = t.webOrderLineItemID?.text
        subscriptionGroupID = t.subscriptionGroupIdentifier?.text
        purchaseDate = t.purchaseMillis
        originalPurchaseDate = t.originalPurchaseMillis
        expiresDate = t.expiresMillis
        revocationDate = t.cancellationMillis
        revocationReason = t.cancellationReason?.int64.map { AppleCodes.revocationReason(Int($0)) }
        isTrial = t.isTrialPeriod?.bool
        isIntro = t.isInIntroOfferPeriod?.bool
        if let promo = t.promotionalOfferID {
            (offerType, offerID) = ("promotional", promo)
        } else if let code = t.offerCodeRefName {
            (offerType, offerID) = ("offer_code", code)
        } else if isIntro == true || isTrial == true {
            offerType = "introductory"
        }
        quantity = t.quantity?.int64.map { Int($0) }
        appAccountToken = t.appAccountToken
        ownership = t.inAppOwnershipType.map(AppleCodes.ownership)
    }

    /// Copies what V1 renewal info says.
    mutating func apply(_ r: V1PendingRenewal) {
        autoRenew = r.autoRenewStatus?.bool
        autoRenewProductID = r.autoRenewProductID
        expirationIntent = r.expirationIntent?.int64.map { AppleCodes.expirationIntent(Int($0)) }
        inBillingRetry = r.isInBillingRetryPeriod?.bool
        gracePeriodExpiresDate = r.gracePeriodExpiresMillis
    }
}
