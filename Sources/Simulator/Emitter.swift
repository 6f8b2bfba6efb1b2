public import Canonical
internal import Crypto
internal import FoundationEssentials
public import V1Adapter
public import V2Adapter

/// Turns the simulated App Store's state into what Apple would send: the V2 `signedPayload` (with signed
/// transaction and renewal info, everything `Sandbox`) and the V1 body (with `unified_receipt`, its `latest_receipt`
/// a real app receipt, and the shared secret) — and the App Store Server API's signed items.
public struct Emitter: Sendable {
    public let signer: AppleJWSSigner
    /// Signs the app receipt each V1 body carries (docs/simulator.md, "Receipts"). Without one (an emitter made for
    /// V2 alone) a V1 body carries the subscription's opaque ``SimSubscription/receiptToken``, as the simulator's
    /// first V1 bodies did.
    public let receiptSigner: SimReceiptSigner?
    public let appAppleID: Int64?

    public init(signer: AppleJWSSigner, receiptSigner: SimReceiptSigner? = nil, appAppleID: Int64? = nil) {
        (self.signer, self.receiptSigner, self.appAppleID) = (signer, receiptSigner, appAppleID)
    }

    /// The emitter of `pki`: its JWS chain signs V2, its receipt chain the V1 bodies' receipts.
    public init(pki: SimulatorPKI, appAppleID: Int64? = nil) {
        self.init(signer: pki.signer, receiptSigner: pki.receiptSigner, appAppleID: appAppleID)
    }

    // MARK: V2

    public func transactionPayload(
        _ t: SimTransaction,
        bundleID: String,
        appAccountToken: String,
        product: SimProduct?,
        signedDate: Int64
    )
        -> TransactionPayload
    {
        var p = TransactionPayload()
        p.transactionID = t.transactionID
        p.originalTransactionID = t.originalTransactionID
        p.webOrderLineItemID = t.webOrderLineItemID
        p.bundleID = bundleID
        p.productID = t.productID
        p.subscriptionGroupIdentifier = product?.kind == .autoRenewable ? Catalogue.groupID : nil
        p.purchaseDate = t.purchaseDate
        p.originalPurchaseDate = t.originalPurchaseDate
        p.expiresDate = t.expiresDate
        p.quantity = t.seats ?? 1
        p.type =
            switch product?.kind {
            case .consumable?: "Consumable"
            case .nonConsumable?: "Non-Consumable"
            default: "Auto-Renewable Subscription"
            }
        p.appAccountToken = appAccountToken
        p.inAppOwnershipType = t.ownership
        p.signedDate = signedDate
        p.revocationReason = t.revocationReason
        p.revocationDate = t.revocationDate
        p.revocationType = t.revocationType
        p.isUpgraded = t.isUpgraded ? true : nil
        p.offerType = t.offerType
        p.offerIdentifier = t.offerID
        p.offerDiscountType = t.offerDiscountType
        p.environment = "Sandbox"
        p.storefront = "USA"
        p.storefrontID = "143441"
        p.transactionReason = t.renewal ? "RENEWAL" : "PURCHASE"
        p.currency = "USD"
        p.price = t.priceMilli
        if t.seats != nil {
            // Group subscriptions (docs/simulator.md, "Group subscriptions"): `quantity` is the transaction's seats,
            // `price` their average; the tiers, the invitation model and the seats refunded sit in `multiSeatInfo`
            // (where StoreKit's `MultiSeatInfo` has them; the V2 adapter reads them beside it too).
            p.multiSeatInfo = TransactionMultiSeatInfo(
                priceTiers: t.seatTiers.map(Self.priceTiers),
                revokedSeatQuantity: t.revokedSeats,
                invitationManagement: t.invitationManagement
            )
            p.additionalTransactionReason = t.additionalTransactionReason
        }
        return p
    }

    static func priceTiers(_ tiers: [SimSeatTier]) -> [MultiSeatPriceTier] {
        tiers.map { MultiSeatPriceTier(price: $0.priceMilli, quantity: $0.quantity) }
    }

    public func renewalPayload(_ s: SimSubscription, signedDate: Int64) -> RenewalInfoPayload? {
        guard let r = s.renewal, let latest = s.latest else { return nil }
        var p = RenewalInfoPayload()
        p.originalTransactionID = s.originalTransactionID
        p.autoRenewProductID = r.autoRenewProductID
        p.productID = latest.productID
        p.autoRenewStatus = r.autoRenew ? 1 : 0
        p.expirationIntent = r.expirationIntent
        p.isInBillingRetryPeriod = r.inBillingRetry
        p.gracePeriodExpiresDate = r.gracePeriodExpiresDate
        p.priceIncreaseStatus = r.priceIncreaseStatus
        p.signedDate = signedDate
        p.environment = "Sandbox"
        p.recentSubscriptionStartDate = s.transactions.first?.purchaseDate
        p.renewalDate = latest.expiresDate
        p.currency = "USD"
        p.appAccountToken = s.appAccountToken
        if let seats = r.renewalSeats {
            // A group: the seats and their tiers at the next renewal; `renewalPrice` is the average per seat.
            let tiers = Catalogue.product(r.autoRenewProductID)?.seatTiers(seats) ?? []
            p.renewalQuantity = seats
            p.multiSeatInfo = RenewalMultiSeatInfo(renewalPriceTiers: Self.priceTiers(tiers))
            p.renewalPrice = SimSeatTier.average(tiers)
        }
        return p
    }

    public func signedTransaction(_ s: SimSubscription, _ t: SimTransaction, at time: Int64) throws -> String {
        try sign(
            transactionPayload(
                t,
                bundleID: s.bundleID,
                appAccountToken: s.appAccountToken,
                product: Catalogue.product(t.productID),
                signedDate: time
            )
        )
    }

    public func signedRenewal(_ s: SimSubscription, at time: Int64) throws -> String? {
        try renewalPayload(s, signedDate: time).map { try sign($0) }
    }

    /// Apple's subscription status code for the state at `time`.
    public static func status(_ s: SimSubscription, at time: Int64) -> Int {
        switch entitlement(s, at: time).state {
        case .active: 1
        case .gracePeriod: 4
        case .billingRetry: 3
        case .revoked: 5
        default: 2
        }
    }

    /// A group purchaser is revoked only when every transaction of the period is (``SimSubscription/groupPeriod``).
    public static func entitlement(_ s: SimSubscription, at time: Int64) -> Entitlement {
        let latest = s.latest
        let period = s.groupPeriod
        let standing = period.contains { $0.revocationDate == nil }
        return Entitlement.compute(
            expiresDate: latest?.expiresDate,
            revocationDate: standing ? nil : latest?.revocationDate,
            gracePeriodExpiresDate: s.renewal?.gracePeriodExpiresDate,
            inBillingRetry: s.renewal?.inBillingRetry,
            at: time
        )
    }

    /// The `signedPayload` of a V2 notification about `s` (or about no subscription, for TEST).
    public func notification(
        type: String,
        subtype: String?,
        uuid: String,
        subscription s: SimSubscription?,
        transaction: SimTransaction?,
        at time: Int64,
        unclaimSeatIDs: [String]? = nil,
        extra: (inout NotificationData) -> Void = { _ in }
    ) throws -> String {
        var data = NotificationData(
            appAppleID: appAppleID,
            bundleID: s?.bundleID ?? Catalogue.bundleID,
            bundleVersion: "1",
            environment: "Sandbox"
        )
        if let s, let t = transaction ?? s.latest {
            data.signedTransactionInfo = try signedTransaction(s, t, at: time)
            if Catalogue.product(t.productID)?.kind == .autoRenewable {
                data.signedRenewalInfo = try signedRenewal(s, at: time)
                data.status = Self.status(s, at: time)
            }
        }
        extra(&data)
        let payload = NotificationPayloadV2(
            notificationType: type,
            subtype: subtype,
            notificationUUID: uuid,
            data: data,
            unclaimInfo: unclaimSeatIDs.map { UnclaimInfo(unclaimSeatIDs: $0) },
            signedDate: time
        )
        return try sign(payload)
    }

    func sign<T: Encodable>(_ value: T) throws -> String {
        try signer.sign(payload: Array(try JSONEncoder().encode(value)))
    }

    // MARK: V1

    /// One `latest_receipt_info` entry: every value a string, each date as Apple's triplet (`x` in `Etc/GMT`, `x_ms`,
    /// `x_pst` in America/Los_Angeles), as in Apple's V1 bodies.
    public static func v1Transaction(_ t: SimTransaction) -> V1Transaction {
        var v = V1Transaction()
        func text(_ ms: Int64) -> V1Scalar { V1Scalar(text: Self.gmt(ms)) }
        func pst(_ ms: Int64) -> V1Scalar { V1Scalar(text: AppleDateText.pst(ms)) }
        v.transactionID = V1Scalar(text: t.transactionID)
        v.originalTransactionID = V1Scalar(text: t.originalTransactionID)
        v.webOrderLineItemID = t.webOrderLineItemID.map { V1Scalar(text: $0) }
        v.productID = t.productID
        v.purchaseDate = text(t.purchaseDate)
        v.purchaseDateMs = V1Scalar(t.purchaseDate)
        v.purchaseDatePst = pst(t.purchaseDate)
        v.originalPurchaseDate = text(t.originalPurchaseDate)
        v.originalPurchaseDateMs = V1Scalar(t.originalPurchaseDate)
        v.originalPurchaseDatePst = pst(t.originalPurchaseDate)
        if let e = t.expiresDate {
            v.expiresDate = text(e)
            v.expiresDateMs = V1Scalar(e)
            v.expiresDatePst = pst(e)
            v.subscriptionGroupIdentifier = V1Scalar(text: Catalogue.groupID)
        }
        if let r = t.revocationDate {
            v.cancellationDate = text(r)
            v.cancellationDateMs = V1Scalar(r)
            v.cancellationDatePst = pst(r)
            v.cancellationReason = V1Scalar(text: String(t.revocationReason ?? 0))
        }
        v.isTrialPeriod = V1Scalar(text: t.isTrial ? "true" : "false")
        v.isInIntroOfferPeriod = V1Scalar(text: t.isIntro && !t.isTrial ? "true" : "false")
        if t.isUpgraded { v.isUpgraded = "true" }
        if t.offerType == 2 { v.promotionalOfferID = t.offerID }
        if t.offerType == 3 { v.offerCodeRefName = t.offerID }
        // V1 never had `ASSIGNED`: a group member's transaction reads as V1's "access without being the purchaser",
        // what the gateway's own V1 formats say by default (`apps[].v1_assigned_ownership`).
        v.inAppOwnershipType = t.ownership == "ASSIGNED" ? "FAMILY_SHARED" : t.ownership
        v.quantity = V1Scalar(text: String(t.seats ?? 1))
        return v
    }

    public static func v1Renewal(_ s: SimSubscription) -> V1PendingRenewal? {
        guard let r = s.renewal, let latest = s.latest else { return nil }
        var p = V1PendingRenewal()
        p.autoRenewProductID = r.autoRenewProductID
        p.autoRenewStatus = V1Scalar(text: r.autoRenew ? "1" : "0")
        p.expirationIntent = r.expirationIntent.map { V1Scalar(text: String($0)) }
        p.isInBillingRetryPeriod = V1Scalar(text: r.inBillingRetry ? "1" : "0")
        if let g = r.gracePeriodExpiresDate {
            p.gracePeriodExpiresDate = V1Scalar(text: gmt(g))
            p.gracePeriodExpiresDateMs = V1Scalar(g)
            p.gracePeriodExpiresDatePst = V1Scalar(text: AppleDateText.pst(g))
        }
        p.originalTransactionID = V1Scalar(text: s.originalTransactionID)
        p.productID = latest.productID
        p.priceConsentStatus = r.priceIncreaseStatus.map { V1Scalar(text: String($0)) }
        return p
    }

    /// The receipt a V1 body about `s` sent at `time` carries as `unified_receipt.latest_receipt`: what Apple's is, the
    /// customer's app receipt as of the notification — every purchase of `s` made by then — signed by the simulator's
    /// receipt chain at that moment (docs/simulator.md, "Receipts"). Readable by the fake verifyReceipt, by the
    /// gateway's receipt reader (under `trust.extra_receipt_roots`) and by any V1-era backend that re-sends it. The
    /// opaque token of ``SimSubscription/receiptToken`` when the emitter has no receipt chain.
    public func v1Receipt(_ s: SimSubscription, at time: Int64) throws -> String {
        guard let receiptSigner else { return s.receiptToken }
        return try receiptSigner.sign(s.appReceipt(createdAt: time))
    }

    /// The V1 body Apple would send about `s` at `time`, its receipt signed then (``v1Receipt(_:at:)``).
    public func v1Body(
        type: String,
        subscription s: SimSubscription,
        sharedSecret: String,
        at time: Int64
    ) throws -> ResponseBodyV1 {
        Self.v1Body(
            type: type,
            subscription: s,
            sharedSecret: sharedSecret,
            latestReceipt: try v1Receipt(s, at: time),
            at: time
        )
    }

    /// The V1 body Apple would send about `s` carrying `latestReceipt` (newest transaction first).
    public static func v1Body(
        type: String,
        subscription s: SimSubscription,
        sharedSecret: String,
        latestReceipt: String,
        at time: Int64
    ) -> ResponseBodyV1 {
        var body = ResponseBodyV1(notificationType: type, password: sharedSecret, environment: "Sandbox")
        body.bid = s.bundleID
        body.bvrs = "1"
        body.originalTransactionID = V1Scalar(text: s.originalTransactionID)
        if let r = s.renewal {
            body.autoRenewStatus = V1Scalar(text: r.autoRenew ? "true" : "false")
            body.autoRenewProductID = r.autoRenewProductID
            body.expirationIntent = r.expirationIntent.map { V1Scalar(text: String($0)) }
        }
        if type == "DID_CHANGE_RENEWAL_STATUS", let changed = s.autoRenewChangedAt {
            body.autoRenewStatusChangeDate = V1Scalar(text: gmt(changed))
            body.autoRenewStatusChangeDateMs = V1Scalar(changed)
            body.autoRenewStatusChangeDatePst = V1Scalar(text: AppleDateText.pst(changed))
        }
        let transactions = s.transactions.sorted { $0.purchaseDate > $1.purchaseDate }.map(v1Transaction)
        body.unifiedReceipt = UnifiedReceipt(
            environment: "Sandbox",
            latestReceipt: latestReceipt,
            latestReceiptInfo: transactions,
            pendingRenewalInfo: v1Renewal(s).map { [$0] } ?? [],
            status: 0
        )
        return body
    }

    /// Apple's V1 text date: `2025-06-01 00:00:00 Etc/GMT`.
    public static func gmt(_ ms: Int64) -> String {
        let t = UTCTime(milliseconds: ms)
        return t.date + " " + t.time + " Etc/GMT"
    }
}
