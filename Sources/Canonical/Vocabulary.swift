/// Our vocabulary, not Apple's. Each is a struct over its wire string rather than an enum, so a value this build
/// does not know (a new Apple type, a newer gateway's kind) survives decoding and re-encoding instead of failing.
/// `Codable` comes from the standard library's `RawRepresentable` conformance: a bare JSON string.
public protocol WireString: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
}

extension WireString {
    public var description: String { rawValue }
}

/// What happened to the subscription or purchase (docs/architecture.md, "The canonical event").
public struct EventKind: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchase = Self(rawValue: "purchase")
    public static let renewal = Self(rawValue: "renewal")
    public static let renewalFailure = Self(rawValue: "renewal_failure")
    public static let gracePeriodExpired = Self(rawValue: "grace_period_expired")
    public static let expiration = Self(rawValue: "expiration")
    public static let autoRenewChanged = Self(rawValue: "auto_renew_changed")
    public static let planChange = Self(rawValue: "plan_change")
    public static let priceIncrease = Self(rawValue: "price_increase")
    public static let refund = Self(rawValue: "refund")
    public static let refundDeclined = Self(rawValue: "refund_declined")
    public static let refundReversed = Self(rawValue: "refund_reversed")
    public static let revocation = Self(rawValue: "revocation")
    public static let renewalExtended = Self(rawValue: "renewal_extended")
    public static let renewalExtensionSummary = Self(rawValue: "renewal_extension_summary")
    public static let consumptionRequest = Self(rawValue: "consumption_request")
    public static let oneTimeCharge = Self(rawValue: "one_time_charge")
    public static let test = Self(rawValue: "test")
    /// RESCIND_CONSENT: the customer rescinded a consent; about the app transaction (`app_transaction_id`), not a
    /// subscription.
    public static let consentRescinded = Self(rawValue: "consent_rescinded")
    /// EXTERNAL_PURCHASE_TOKEN: a token of the External Purchase API (`external_purchase_*`), not an App Store purchase.
    public static let externalPurchaseToken = Self(rawValue: "external_purchase_token")
    /// METADATA_UPDATE (Advanced Commerce API): the subscription's metadata changed.
    public static let metadataUpdate = Self(rawValue: "metadata_update")
    /// MIGRATION (Advanced Commerce API): a subscription moved to the Advanced Commerce API.
    public static let migration = Self(rawValue: "migration")
    /// PRICE_CHANGE (Advanced Commerce API): the subscription's price changes (its renewal info says to what).
    public static let priceChange = Self(rawValue: "price_change")
    /// A group (multiseat) subscription's seats change: `increase` (at once, a new transaction for the seats added)
    /// or `decrease` (at the next renewal).
    public static let seatsChanged = Self(rawValue: "seats_changed")
    /// A seat-based refund: some seats of the purchaser's transaction revoked (`revoked_seats`), the subscription
    /// going on with the others — never a revocation of the purchaser on its own.
    public static let seatsRefunded = Self(rawValue: "seats_refunded")
    /// UNCLAIM_SEATS: Apple released seat claims of a group whose invitations the developer hosts
    /// (`unclaimed_seat_ids`): the team revokes the people it put on them.
    public static let seatsUnclaimed = Self(rawValue: "seats_unclaimed")
    /// Anything else, including every Apple type added after this build: kept, never rejected.
    public static let other = Self(rawValue: "other")

    /// Every kind docs/architecture.md, "The canonical event" defines.
    public static let all: [EventKind] = [
        .purchase, .renewal, .renewalFailure, .gracePeriodExpired, .expiration, .autoRenewChanged, .planChange,
        .priceIncrease, .refund, .refundDeclined, .refundReversed, .revocation, .renewalExtended,
        .renewalExtensionSummary, .consumptionRequest, .oneTimeCharge, .test, .consentRescinded, .externalPurchaseToken,
        .metadataUpdate, .migration, .priceChange, .seatsChanged, .seatsRefunded, .seatsUnclaimed, .other,
    ]
}

/// Refines a kind; `nil` on the event when there is nothing to add.
public struct EventReason: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    // purchase
    public static let initial = Self(rawValue: "initial")
    public static let resubscribe = Self(rawValue: "resubscribe")
    public static let offerRedeemed = Self(rawValue: "offer_redeemed")
    // renewal
    public static let auto = Self(rawValue: "auto")
    public static let billingRecovery = Self(rawValue: "billing_recovery")
    public static let interactive = Self(rawValue: "interactive")
    // renewal_failure (and expiration's billing_retry)
    public static let gracePeriod = Self(rawValue: "grace_period")
    public static let billingRetry = Self(rawValue: "billing_retry")
    // expiration
    public static let voluntary = Self(rawValue: "voluntary")
    public static let priceIncrease = Self(rawValue: "price_increase")
    public static let productNotForSale = Self(rawValue: "product_not_for_sale")
    // auto_renew_changed
    public static let enabled = Self(rawValue: "enabled")
    public static let disabled = Self(rawValue: "disabled")
    // plan_change
    public static let upgrade = Self(rawValue: "upgrade")
    public static let downgrade = Self(rawValue: "downgrade")
    public static let reverted = Self(rawValue: "reverted")
    // price_increase
    public static let pending = Self(rawValue: "pending")
    public static let accepted = Self(rawValue: "accepted")
    // renewal_extension_summary: one subscription the mass extension could not extend
    public static let failure = Self(rawValue: "failure")
    // external_purchase_token: Apple's subtype
    public static let unreported = Self(rawValue: "unreported")
    public static let created = Self(rawValue: "created")
    public static let activeTokenReminder = Self(rawValue: "active_token_reminder")
    // seats_changed
    public static let increase = Self(rawValue: "increase")
    public static let decrease = Self(rawValue: "decrease")
}

/// Where an event's fields came from.
public struct EventSource: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A V1 notification (fields from the unsigned body only when the bundle opted out of verifyReceipt).
    public static let v1 = Self(rawValue: "v1")
    /// A signed V2 notification.
    public static let v2 = Self(rawValue: "v2")
    /// State fetched from the App Store Server API.
    public static let v2API = Self(rawValue: "v2-api")
    /// Apple's verifyReceipt answer.
    public static let v1Receipt = Self(rawValue: "v1-receipt")
}

/// How an event the gateway did not receive live was recovered (docs/operations.md, "Reconciliation"); nil on
/// live events and their replays.
public struct RecoveryMechanism: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple's signed state of a subscription (or verifyReceipt's answer) differed from the stored state.
    public static let reconciliation = Self(rawValue: "reconciliation")
    /// A notification found in Apple's notification history (the sweep, or `backfill`) that was never journaled.
    public static let history = Self(rawValue: "history")
}

/// Apple environment, normalized: V1's `PROD` / `Production` / `Sandbox` and V2's `Production` / `Sandbox` /
/// `Xcode` / `LocalTesting` all map here.
public struct AppStoreEnvironment: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production = Self(rawValue: "production")
    public static let sandbox = Self(rawValue: "sandbox")
    public static let xcode = Self(rawValue: "xcode")
    public static let localTesting = Self(rawValue: "local_testing")

    /// Normalizes any spelling Apple uses (case-insensitive), or our own; nil for anything else.
    public init?(appleValue: String) {
        switch appleValue.lowercased() {
        case "production", "prod": self = .production
        case "sandbox", "productionsandbox": self = .sandbox
        case "xcode": self = .xcode
        case "localtesting", "local_testing": self = .localTesting
        default: return nil
        }
    }
}

/// The product's type, normalized from V2's `type` strings (V1 does not carry it).
public struct ProductType: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let autoRenewable = Self(rawValue: "auto_renewable")
    public static let nonRenewing = Self(rawValue: "non_renewing")
    public static let consumable = Self(rawValue: "consumable")
    public static let nonConsumable = Self(rawValue: "non_consumable")

    /// Apple's V2 `type` value; an unknown one is kept verbatim.
    public init(appleValue: String) {
        switch appleValue {
        case "Auto-Renewable Subscription": self = .autoRenewable
        case "Non-Renewing Subscription": self = .nonRenewing
        case "Consumable": self = .consumable
        case "Non-Consumable": self = .nonConsumable
        default: self.init(rawValue: appleValue)
        }
    }
}

/// How `event_date` was obtained.
public struct EventDateSource: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// V2 `signedDate` of the notification.
    public static let signedDate = Self(rawValue: "signed_date")
    /// V2 notification without `signedDate` (early 2022): the nested transaction's `signedDate`.
    public static let transactionSignedDate = Self(rawValue: "transaction_signed_date")
    /// A date the V1 change carries (`auto_renew_status_change_date_ms`, `cancellation_date_ms`, `purchase_date_ms`).
    public static let notification = Self(rawValue: "notification")
    /// Nothing dated the event: the time the gateway received it.
    public static let arrival = Self(rawValue: "arrival")
}
