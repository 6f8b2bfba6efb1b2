public import Canonical

extension VerifiedNotificationV2 {
    /// The canonical kind and reason for a V2 `notificationType` / `subtype` (docs/architecture.md, "The canonical event"). Types this build does
    /// not know map to `other`, never to an error. `renewalInfo` resolves DID_CHANGE_RENEWAL_STATUS without subtype.
    /// A group subscription's seat subtypes (INCREASE_QUANTITY, DECREASE_QUANTITY, SEATS) decide whatever type they
    /// come with: a seat change is never a plan change, a seat refund never a refund of the subscription.
    public static func classify(
        type: String,
        subtype: String?,
        renewalInfo: RenewalInfoPayload? = nil
    ) -> (kind: EventKind, reason: EventReason?) {
        switch (type, subtype) {
        case (_, "INCREASE_QUANTITY"): return (.seatsChanged, .increase)
        case (_, "DECREASE_QUANTITY"): return (.seatsChanged, .decrease)
        case (_, "SEATS"): return (.seatsRefunded, nil)
        case ("UNCLAIM_SEATS", _), (_, "UNCLAIM_SEATS"): return (.seatsUnclaimed, nil)
        case ("SUBSCRIBED", "INITIAL_BUY"): return (.purchase, .initial)
        case ("SUBSCRIBED", "RESUBSCRIBE"): return (.purchase, .resubscribe)
        case ("SUBSCRIBED", _): return (.purchase, nil)
        case ("OFFER_REDEEMED", "INITIAL_BUY"), ("OFFER_REDEEMED", nil): return (.purchase, .offerRedeemed)
        case ("OFFER_REDEEMED", "RESUBSCRIBE"): return (.purchase, .resubscribe)
        case ("OFFER_REDEEMED", "UPGRADE"): return (.planChange, .upgrade)
        case ("OFFER_REDEEMED", "DOWNGRADE"): return (.planChange, .downgrade)
        case ("OFFER_REDEEMED", _): return (.purchase, .offerRedeemed)
        case ("DID_RENEW", "BILLING_RECOVERY"): return (.renewal, .billingRecovery)
        case ("DID_RENEW", _): return (.renewal, .auto)
        case ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"): return (.planChange, .upgrade)
        case ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"): return (.planChange, .downgrade)
        case ("DID_CHANGE_RENEWAL_PREF", _): return (.planChange, .reverted)
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"): return (.autoRenewChanged, .enabled)
        case ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"): return (.autoRenewChanged, .disabled)
        case ("DID_CHANGE_RENEWAL_STATUS", _):
            switch renewalInfo?.autoRenewStatus {
            case 1?: return (.autoRenewChanged, .enabled)
            case 0?: return (.autoRenewChanged, .disabled)
            default: return (.autoRenewChanged, nil)
            }
        case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"): return (.renewalFailure, .gracePeriod)
        case ("DID_FAIL_TO_RENEW", _): return (.renewalFailure, .billingRetry)
        case ("GRACE_PERIOD_EXPIRED", _): return (.gracePeriodExpired, nil)
        case ("EXPIRED", "VOLUNTARY"): return (.expiration, .voluntary)
        case ("EXPIRED", "BILLING_RETRY"): return (.expiration, .billingRetry)
        case ("EXPIRED", "PRICE_INCREASE"): return (.expiration, .priceIncrease)
        case ("EXPIRED", "PRODUCT_NOT_FOR_SALE"): return (.expiration, .productNotForSale)
        case ("EXPIRED", _): return (.expiration, nil)
        case ("PRICE_INCREASE", "PENDING"): return (.priceIncrease, .pending)
        case ("PRICE_INCREASE", "ACCEPTED"): return (.priceIncrease, .accepted)
        case ("PRICE_INCREASE", _): return (.priceIncrease, nil)
        case ("REFUND", _): return (.refund, nil)
        case ("REFUND_DECLINED", _): return (.refundDeclined, nil)
        case ("REFUND_REVERSED", _): return (.refundReversed, nil)
        case ("REVOKE", _): return (.revocation, nil)
        case ("RENEWAL_EXTENDED", _): return (.renewalExtended, nil)
        case ("RENEWAL_EXTENSION", "FAILURE"): return (.renewalExtensionSummary, .failure)
        case ("RENEWAL_EXTENSION", _): return (.renewalExtensionSummary, nil)
        case ("CONSUMPTION_REQUEST", _): return (.consumptionRequest, nil)
        case ("ONE_TIME_CHARGE", _): return (.oneTimeCharge, nil)
        case ("TEST", _): return (.test, nil)
        case ("RESCIND_CONSENT", _): return (.consentRescinded, nil)
        case ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED"): return (.externalPurchaseToken, .unreported)
        case ("EXTERNAL_PURCHASE_TOKEN", "CREATED"): return (.externalPurchaseToken, .created)
        case ("EXTERNAL_PURCHASE_TOKEN", "ACTIVE_TOKEN_REMINDER"): return (.externalPurchaseToken, .activeTokenReminder)
        case ("EXTERNAL_PURCHASE_TOKEN", _): return (.externalPurchaseToken, nil)
        // The Advanced Commerce API's: about one subscription, with its signed transaction and renewal info.
        case ("METADATA_UPDATE", _): return (.metadataUpdate, nil)
        case ("MIGRATION", _): return (.migration, nil)
        case ("PRICE_CHANGE", _): return (.priceChange, nil)
        // Types added after this build
        default: return (.other, nil)
        }
    }

    /// The canonical events this notification stands for. Every V2 type maps to exactly one event today; the
    /// array (and the `:n` id suffix it would bring) is the contract for types that someday need more.
    /// `eventDate` is the validation time: `signedDate`, else the nested transaction's, else arrival.
    public func canonicalEvents() -> [CanonicalEvent] {
        let type = payload.notificationType ?? ""
        let (kind, reason) = Self.classify(type: type, subtype: payload.subtype, renewalInfo: renewalInfo)
        var e = CanonicalEvent(
            id: payload.notificationUUID ?? "",
            source: .v2,
            kind: kind,
            reason: reason,
            rawType: type,
            rawSubtype: payload.subtype,
            eventDate: signedTime,
            eventDateSource: signedTimeSource,
            verified: true
        )
        e.bundleID = bundleID
        e.appAppleID = appAppleID
        e.environment = environment
        e.productID = transaction?.productID ?? renewalInfo?.productID ?? payload.summary?.productID
        if let tx = transaction { e.apply(tx) }
        if let ri = renewalInfo { e.apply(ri) }
        if transaction != nil { e.computeEntitlement() }
        e.appTransactionID = appTransaction?.appTransactionID
        if kind == .consumptionRequest, let why = payload.data?.consumptionRequestReason, !why.isEmpty {
            // Apple's ConsumptionRequestReason in the canonical spelling (`UNINTENDED_PURCHASE` → `unintended_purchase`).
            e.consumptionRequestReason = why.lowercased()
        }
        if let token = payload.externalPurchaseToken { e.apply(token) }
        if let claims = payload.unclaimInfo?.unclaimSeatIDs { e.unclaimedSeatIDs = claims }
        return [e]
    }
}

extension CanonicalEvent {
    /// Copies what a signed transaction says.
    public mutating func apply(_ tx: TransactionPayload) {
        productType = tx.type.map(ProductType.init(appleValue:))
        originalTransactionID = tx.originalTransactionID
        transactionID = tx.transactionID
        webOrderLineItemID = tx.webOrderLineItemID
        subscriptionGroupID = tx.subscriptionGroupIdentifier
        purchaseDate = tx.purchaseDate
        originalPurchaseDate = tx.originalPurchaseDate
        expiresDate = tx.expiresDate
        revocationDate = tx.revocationDate
        revocationReason = tx.revocationReason.map(AppleCodes.revocationReason)
        offerType = tx.offerType.map(AppleCodes.offerType)
        offerID = tx.offerIdentifier
        isIntro = tx.offerType == 1
        // A free trial is an introductory offer with the FREE_TRIAL discount; tokens from before Apple added
        // offerDiscountType cannot say, so the answer is unknown rather than false.
        isTrial = tx.offerType == 1 ? tx.offerDiscountType.map { $0 == "FREE_TRIAL" } : false
        priceMilli = tx.price
        currency = tx.currency
        quantity = tx.quantity
        appAccountToken = tx.appAccountToken
        ownership = tx.inAppOwnershipType.map(AppleCodes.ownership)
        revokedSeats = tx.revokedSeats
        invitationManagement = tx.invitation.map(AppleCodes.invitationManagement)
        additionalTransactionReason = tx.additionalTransactionReason.map(AppleCodes.additionalTransactionReason)
        if let tiers = tx.multiSeatInfo?.priceTiers.map(Self.tiers) {
            seatPriceTiers = tiers
            amountMilli = SeatPriceTier.amount(tiers)
        }
    }

    /// Apple's price tiers in our shape; a tier without a price or a seat count says nothing and is left out.
    static func tiers(_ apple: [MultiSeatPriceTier]) -> [SeatPriceTier] {
        apple.compactMap { tier in
            guard let price = tier.price, let quantity = tier.quantity else { return nil }
            return SeatPriceTier(priceMilli: price, quantity: quantity)
        }
    }

    /// Copies what an external purchase token says (its app and bundle are the notification's).
    public mutating func apply(_ token: ExternalPurchaseToken) {
        externalPurchaseID = token.externalPurchaseID
        externalPurchaseTokenType = token.tokenType
        externalPurchaseTokenCreationDate = token.tokenCreationDate
        externalPurchaseTokenExpirationDate = token.tokenExpirationDate
    }

    /// Copies what signed renewal info says.
    public mutating func apply(_ ri: RenewalInfoPayload) {
        originalTransactionID = originalTransactionID ?? ri.originalTransactionID
        expirationIntent = ri.expirationIntent.map(AppleCodes.expirationIntent)
        autoRenew = ri.autoRenewStatus.map { $0 == 1 }
        autoRenewProductID = ri.autoRenewProductID
        inBillingRetry = ri.isInBillingRetryPeriod
        gracePeriodExpiresDate = ri.gracePeriodExpiresDate
        renewalQuantity = ri.renewalQuantity
        if let tiers = ri.multiSeatInfo?.renewalPriceTiers { renewalSeatPriceTiers = Self.tiers(tiers) }
    }
}
