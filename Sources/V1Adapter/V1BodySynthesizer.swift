public import Canonical
internal import WireJSON

/// The V1 shape of a V2 notification (docs/architecture.md, "The V1 shape of a V2 notification"): the body a team's
/// old backend — a `v1_passthrough` downstream — receives once Apple sends V2, and the body the gateway's own
/// ``V1EventBuilder`` reads when the V1 path is authoritative. Pure: the same arguments always give the same bytes.
///
/// Only wire-format knowledge lives here; when a body is built, where it goes and how its secret is restored are the
/// gateway's business.
public enum V1BodySynthesizer {
    /// The most transactions `unified_receipt.latest_receipt_info` carries, as in Apple's bodies.
    public static let maxTransactions = 100

    // MARK: The reverse mapping

    /// The V1 `notification_type` Apple sent for the event a V2 `notificationType` / `subtype` reports — the reverse of
    /// the V1 → V2 mapping (docs/architecture.md, "The canonical event", which joins Apple's V1 and V2 event tables) —
    /// or nil when V1 had no notification for it.
    ///
    /// Where Apple sent two V1 notifications for one event (an upgrade: `DID_CHANGE_RENEWAL_STATUS` and
    /// `INTERACTIVE_RENEWAL`; a refunded subscription: `CANCEL` and `DID_CHANGE_RENEWAL_STATUS`), the one that says what
    /// happened is chosen. A resubscription is `INTERACTIVE_RENEWAL` whatever the product, where Apple sent
    /// `DID_CHANGE_RENEWAL_STATUS` for the same product: the type and subtype alone decide, and `INTERACTIVE_RENEWAL`
    /// is the V1 purchase every backend grants on. A subtype this build does not know gives nil where the subtype
    /// decides the V1 type (SUBSCRIBED, OFFER_REDEEMED, DID_CHANGE_RENEWAL_PREF, EXPIRED, PRICE_INCREASE), and the
    /// type's counterpart elsewhere.
    ///
    /// - Parameter autoRenewable: whether the product is an auto-renewable subscription; it decides only `REFUND`:
    ///   `CANCEL` for a subscription, V1's `REFUND` for every other product.
    public static func v1NotificationType(v2Type: String, subtype: String?, autoRenewable: Bool = true) -> String? {
        switch (v2Type, subtype) {
        case (_, "INCREASE_QUANTITY"), (_, "DECREASE_QUANTITY"), (_, "SEATS"), ("UNCLAIM_SEATS", _),
            (_, "UNCLAIM_SEATS"):
            // A group subscription's seats: V1 never knew them, and a seat refund is no cancellation of the
            // subscription (docs/architecture.md, "Group subscriptions").
            nil
        case ("SUBSCRIBED", "INITIAL_BUY"), ("OFFER_REDEEMED", "INITIAL_BUY"):
            "INITIAL_BUY"
        case ("SUBSCRIBED", "RESUBSCRIBE"), ("OFFER_REDEEMED", "RESUBSCRIBE"), ("OFFER_REDEEMED", "UPGRADE"),
            ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"):
            "INTERACTIVE_RENEWAL"
        case ("DID_RENEW", "BILLING_RECOVERY"):
            "DID_RECOVER"
        case ("DID_RENEW", _):
            "DID_RENEW"
        case ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"), ("DID_CHANGE_RENEWAL_PREF", nil):
            "DID_CHANGE_RENEWAL_PREF"
        case ("DID_CHANGE_RENEWAL_STATUS", _), ("EXPIRED", "BILLING_RETRY"), ("EXPIRED", "PRICE_INCREASE"):
            "DID_CHANGE_RENEWAL_STATUS"
        case ("DID_FAIL_TO_RENEW", _):
            "DID_FAIL_TO_RENEW"
        case ("REFUND", _):
            autoRenewable ? "CANCEL" : "REFUND"
        case ("REVOKE", _):
            "REVOKE"
        case ("PRICE_INCREASE", "PENDING"):
            "PRICE_INCREASE_CONSENT"
        case ("CONSUMPTION_REQUEST", _):
            "CONSUMPTION_REQUEST"
        default:
            // OFFER_REDEEMED (none, DOWNGRADE), EXPIRED (VOLUNTARY, PRODUCT_NOT_FOR_SALE, none), GRACE_PERIOD_EXPIRED,
            // PRICE_INCREASE/ACCEPTED (V1 only flips price_consent_status), REFUND_DECLINED, REFUND_REVERSED,
            // RENEWAL_EXTENDED, RENEWAL_EXTENSION, TEST, ONE_TIME_CHARGE, EXTERNAL_PURCHASE_TOKEN, RESCIND_CONSENT,
            // METADATA_UPDATE, MIGRATION, PRICE_CHANGE, and every type added later.
            nil
        }
    }

    /// The V1 `notification_type` for the V2 notification whose canonical event is `event` (its `raw_type` and
    /// `raw_subtype`; its product decides `REFUND`), or nil when V1 had none — also for a group's partial revocation
    /// (``GroupPeriod/isPartialRevocation(_:)``: one transaction of a period that goes on), which V1 could only say as
    /// a cancellation of the whole subscription.
    public static func v1NotificationType(for event: CanonicalEvent) -> String? {
        guard !GroupPeriod.isPartialRevocation(event) else { return nil }
        return v1NotificationType(
            v2Type: event.rawType,
            subtype: event.rawSubtype,
            autoRenewable: isAutoRenewable(event)
        )
    }

    /// The product type when the event says it, else: an expiry date makes a subscription.
    static func isAutoRenewable(_ event: CanonicalEvent) -> Bool {
        event.productType.map { $0 == .autoRenewable } ?? (event.expiresDate != nil)
    }

    // MARK: The body

    /// The V1-shaped body of the V2 notification whose canonical event is `event`, as compact JSON; nil when its type
    /// has no V1 counterpart (``v1NotificationType(for:)``) or the event carries no transaction.
    ///
    /// - Parameters:
    ///   - history: earlier events of the same subscription (others are ignored): their transactions join the
    ///     notification's in `latest_receipt_info`, each as the newest of them describes it.
    ///   - latestReceipt: the last receipt stored for the subscription; without one `latest_receipt` is `""`, as in
    ///     some of Apple's own bodies, which every reader takes as "no receipt".
    ///   - password: written exactly as given — the caller passes the secret's marker (`iapgw-secret:NAME`) and the
    ///     delivery restores the secret, as for pass-through bodies.
    ///   - bundleVersion: `bvrs`, left out when nil.
    ///   - assignedOwnership: what `in_app_ownership_type` says for a transaction V2 calls `ASSIGNED` (a member of an
    ///     organization or a group): a value V1 had (``V1App/assignedOwnership``).
    public static func body(
        for event: CanonicalEvent,
        history: [CanonicalEvent],
        latestReceipt: String?,
        password: String,
        bundleVersion: String?,
        assignedOwnership: String = V1App.defaultAssignedOwnership
    ) -> [UInt8]? {
        guard let type = v1NotificationType(for: event), event.transactionID != nil else { return nil }
        let transactions = receiptTransactions(event, history: history)

        var top = Members()
        top.string("notification_type", type)
        top.string("password", password)
        top.string("environment", event.environment.map { $0 == .production ? "PROD" : "Sandbox" })
        top.string("bid", event.bundleID)
        top.string("bvrs", bundleVersion)
        top.string("original_transaction_id", event.originalTransactionID)
        top.string("auto_renew_status", event.autoRenew.map { $0 ? "true" : "false" })
        top.string("auto_renew_product_id", event.autoRenewProductID)
        top.string("expiration_intent", expirationIntentCode(event.expirationIntent))
        switch type {
        case "DID_CHANGE_RENEWAL_STATUS":
            // The change is dated by the notification: V2's signedDate.
            top.date("auto_renew_status_change_date", event.eventDate)
        case "CANCEL", "REFUND", "REVOKE":
            top.date("cancellation_date", event.revocationDate)
            top.string("web_order_line_item_id", event.webOrderLineItemID)
        default:
            break
        }

        var receipt = Members()
        receipt.int("status", 0)
        receipt.string("environment", event.environment.map { $0 == .production ? "Production" : "Sandbox" })
        receipt.string("latest_receipt", latestReceipt ?? "")
        let standing = periodsStanding(transactions)
        receipt.raw(
            "latest_receipt_info",
            array(
                transactions.map {
                    transaction(
                        $0,
                        upgraded: isUpgraded($0, among: transactions),
                        periodStands: standing.contains($0.transactionID ?? ""),
                        assignedOwnership: assignedOwnership
                    )
                }
            )
        )
        receipt.raw("pending_renewal_info", array(pendingRenewal(event, history: history).map { [$0] } ?? []))
        top.raw("unified_receipt", receipt.finish())
        return top.finish()
    }

    /// The notification's transaction and the subscription's other ones known at its moment: each transaction id
    /// once — the notification's own view of its transaction, else the view of the newest event about it (by event
    /// date, the later in `history` on a tie) — newest purchase first, at most ``maxTransactions``, the notification's
    /// always in. Events dated after the notification, and transactions bought after it, are left out: a body is true
    /// to its notification's moment, whenever it is built.
    static func receiptTransactions(_ event: CanonicalEvent, history: [CanonicalEvent]) -> [CanonicalEvent] {
        let moment = max(event.eventDate, event.purchaseDate ?? .min)
        var views: [String: CanonicalEvent] = [:]
        for e in history where e.originalTransactionID == event.originalTransactionID && e.eventDate <= moment {
            guard let id = e.transactionID, id != event.transactionID, (e.purchaseDate ?? .min) <= moment else {
                continue
            }
            if let seen = views[id], seen.eventDate > e.eventDate { continue }
            views[id] = e
        }
        let others = views.values.sorted(by: isNewer).prefix(maxTransactions - 1)
        return ([event] + others).sorted(by: isNewer)
    }

    // MARK: A customer's verifyReceipt answer

    /// `latest_receipt_info` and `pending_renewal_info` of a verifyReceipt answer (JSON arrays, Apple's V1 formats), from
    /// what is known of one customer's transactions (docs/architecture.md, "The receipt path"):
    ///
    /// - `transactions` may hold several views of a transaction (the App Store Server API's, then notifications'): the
    ///   newest by event date describes it, the later in the array on a tie.
    /// - Consumables are left out: Apple listed only those not yet finished, which the API cannot tell.
    /// - With `excludeOld`, only each subscription's newest transaction, as Apple did.
    /// - Newest purchase first (Apple's own order varied over the years; readers do not depend on it).
    /// - `pending_renewal_info`: one entry per auto-renewable subscription, from its newest event with renewal facts.
    public static func receiptInfo(
        transactions: [CanonicalEvent],
        excludeOld: Bool,
        assignedOwnership: String = V1App.defaultAssignedOwnership
    ) -> (latestReceiptInfo: [UInt8], pendingRenewalInfo: [UInt8]) {
        var views: [String: CanonicalEvent] = [:]
        for e in transactions where e.productType != .consumable {
            guard let id = e.transactionID else { continue }
            if let seen = views[id], seen.eventDate > e.eventDate { continue }
            views[id] = e
        }
        var bySubscription: [String: [CanonicalEvent]] = [:]
        for e in views.values {
            bySubscription[e.originalTransactionID ?? e.transactionID ?? "", default: []].append(e)
        }
        // Each entry written at once and sorted by its key alone: sorting the events themselves moves large values.
        var latest: [(key: (Int64, String), json: [UInt8])] = []
        var pending: [(String, [UInt8])] = []
        for (otid, group) in bySubscription {
            let kept = excludeOld ? group.max { isNewer($1, $0) }.map { [$0] } ?? [] : group
            let standing = periodsStanding(group)
            for t in kept {
                latest.append(
                    (
                        (t.purchaseDate ?? .min, t.transactionID ?? ""),
                        transaction(
                            t,
                            upgraded: isUpgraded(t, among: group),
                            periodStands: standing.contains(t.transactionID ?? ""),
                            assignedOwnership: assignedOwnership
                        )
                    )
                )
            }
            // The renewal facts: the newest event of the subscription that carries them.
            let withRenewal = transactions.filter {
                $0.originalTransactionID == otid && ($0.autoRenew != nil || $0.autoRenewProductID != nil)
                    && isAutoRenewable($0)
            }
            if let newest = withRenewal.max(by: { $0.eventDate < $1.eventDate }),
                let entry = pendingRenewal(newest, history: transactions.filter { $0.originalTransactionID == otid })
            {
                pending.append((otid, entry))
            }
        }
        latest.sort { $0.key > $1.key }
        pending.sort { $0.0 < $1.0 }
        return (array(latest.map(\.json)), array(pending.map(\.1)))
    }

    /// Purchase date, then transaction id: a total order (ids are unique in the list).
    static func isNewer(_ a: CanonicalEvent, _ b: CanonicalEvent) -> Bool {
        (a.purchaseDate ?? .min, a.transactionID ?? "") > (b.purchaseDate ?? .min, b.transactionID ?? "")
    }

    /// Apple marks `is_upgraded` on a period cut short by an upgrade: another product of the subscription bought after
    /// it began and before it was due to end. (The canonical event does not carry V2's `isUpgraded`; this is the
    /// same test ``V1EventBuilder`` applies to an `INTERACTIVE_RENEWAL`.) A refunded period is never marked.
    static func isUpgraded(_ t: CanonicalEvent, among all: [CanonicalEvent]) -> Bool {
        guard t.revocationDate == nil, let start = t.purchaseDate, let end = t.expiresDate else { return false }
        return all.contains { u in
            guard let bought = u.purchaseDate else { return false }
            return bought > start && bought < end && u.productID != t.productID
        }
    }

    /// The group purchaser's transactions, among `transactions`, whose period goes on: a period some transaction of
    /// which carries no revocation (``GroupPeriod``). Their own revocation, if any, is left out of the V1 formats: V1
    /// could only read it as the end of the whole subscription.
    static func periodsStanding(_ transactions: [CanonicalEvent]) -> Set<String> {
        var periods: [String: (ids: [String], standing: Bool)] = [:]
        for e in transactions where GroupPeriod.isPurchasers(e) {
            guard let id = e.transactionID, let end = e.expiresDate else { continue }
            let key = "\(e.originalTransactionID ?? "")|\(end)"
            periods[key, default: ([], false)].ids.append(id)
            if e.revocationDate == nil { periods[key]?.standing = true }
        }
        return Set(periods.values.filter(\.standing).flatMap(\.ids))
    }

    /// One `latest_receipt_info` entry in Apple's V1 formats: every value a string. `periodStands`: a group
    /// purchaser's transaction whose period goes on — no cancellation written, whatever became of its own seats.
    static func transaction(
        _ e: CanonicalEvent,
        upgraded: Bool,
        periodStands: Bool = false,
        assignedOwnership: String = V1App.defaultAssignedOwnership
    ) -> [UInt8] {
        var m = Members()
        m.string("quantity", String(e.quantity ?? 1))
        m.string("product_id", e.productID)
        m.string("transaction_id", e.transactionID)
        m.string("original_transaction_id", e.originalTransactionID)
        m.string("web_order_line_item_id", e.webOrderLineItemID)
        m.string("subscription_group_identifier", e.subscriptionGroupID)
        m.date("purchase_date", e.purchaseDate)
        m.date("original_purchase_date", e.originalPurchaseDate)
        m.date("expires_date", e.expiresDate)
        // V1 tells a free trial (`is_trial_period`) from a paid introductory price (`is_in_intro_offer_period`); V2
        // calls both an introductory offer.
        m.string("is_trial_period", e.isTrial == true ? "true" : "false")
        m.string("is_in_intro_offer_period", e.isIntro == true && e.isTrial != true ? "true" : "false")
        if let revoked = e.revocationDate, !periodStands {
            m.date("cancellation_date", revoked)
            // V1 always pairs a cancellation with its reason; a family revocation gives none, which is "0" (other).
            m.string("cancellation_reason", revocationReasonCode(e.revocationReason) ?? "0")
        }
        if upgraded { m.string("is_upgraded", "true") }
        switch e.offerType {
        case "offer_code": m.string("offer_code_ref_name", e.offerID)
        case "promotional": m.string("promotional_offer_id", e.offerID)
        default: break
        }
        m.string(
            "in_app_ownership_type",
            e.ownership.map { $0 == "assigned" ? assignedOwnership : ownershipValue($0) }
        )
        m.string("app_account_token", e.appAccountToken)
        return m.finish()
    }

    /// The `pending_renewal_info` entry of the notification's subscription, from the renewal facts its event carries;
    /// nil when it carries none (a one-time purchase).
    static func pendingRenewal(_ e: CanonicalEvent, history: [CanonicalEvent]) -> [UInt8]? {
        guard e.autoRenew != nil || e.autoRenewProductID != nil else { return nil }
        var m = Members()
        m.string("auto_renew_product_id", e.autoRenewProductID)
        m.string("auto_renew_status", e.autoRenew.map { $0 ? "1" : "0" })
        m.string("expiration_intent", expirationIntentCode(e.expirationIntent))
        m.string("is_in_billing_retry_period", e.inBillingRetry.map { $0 ? "1" : "0" })
        m.date("grace_period_expires_date", e.gracePeriodExpiresDate)
        m.string("original_transaction_id", e.originalTransactionID)
        m.string("product_id", e.productID)
        m.string("price_consent_status", priceConsentStatus(e, history: history))
        return m.finish()
    }

    /// `price_consent_status` while a price increase waits for the next renewal: "0" announced, "1" accepted — from
    /// the newest price-increase event of the subscription since its current period was bought, up to this event; nil
    /// when there is none.
    static func priceConsentStatus(_ e: CanonicalEvent, history: [CanonicalEvent]) -> String? {
        let since = e.purchaseDate ?? .min
        let newest = ([e] + history).filter {
            $0.kind == .priceIncrease && $0.originalTransactionID == e.originalTransactionID && $0.eventDate >= since
                && $0.eventDate <= e.eventDate
        }.max { $0.eventDate < $1.eventDate }
        return newest.map { $0.reason == .accepted ? "1" : "0" }
    }

    // MARK: Apple's codes, back from our words

    /// `expiration_intent` "1"…"5" from ``AppleCodes/expirationIntent(_:)``'s words (an unknown code kept as its digits).
    static func expirationIntentCode(_ word: String?) -> String? {
        guard let word else { return nil }
        if let code = (1...5).first(where: { AppleCodes.expirationIntent($0) == word }) { return String(code) }
        return Int64(word).map(String.init)
    }

    /// `cancellation_reason` "1" / "0" from ``AppleCodes/revocationReason(_:)``'s words.
    static func revocationReasonCode(_ word: String?) -> String? {
        guard let word else { return nil }
        if let code = [0, 1].first(where: { AppleCodes.revocationReason($0) == word }) { return String(code) }
        return Int64(word).map(String.init)
    }

    /// `in_app_ownership_type` from ``AppleCodes/ownership(_:)``'s words (an unknown value is Apple's own; `assigned` is
    /// the caller's choice of a V1 value).
    static func ownershipValue(_ word: String) -> String {
        ["PURCHASED", "FAMILY_SHARED"].first { AppleCodes.ownership($0) == word } ?? word
    }

    // MARK: Writing

    static func array(_ items: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += item
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// One JSON object's members, absent values left out (V1 omits what it does not know rather than writing null).
    struct Members {
        private var writer = JSONObjectWriter()

        mutating func string(_ key: String, _ value: String?) {
            if let value { writer.string(key, value) }
        }

        mutating func int(_ key: String, _ value: Int64) { writer.int(key, value) }

        mutating func raw(_ key: String, _ json: [UInt8]) { writer.raw(key, json) }

        /// Apple's three renderings of a date: `name` (`Etc/GMT`), `name_ms`, `name_pst`.
        mutating func date(_ name: String, _ ms: Int64?) {
            guard let ms else { return }
            string(name, AppleDateText.gmt(ms))
            string(name + "_ms", String(ms))
            string(name + "_pst", AppleDateText.pst(ms))
        }

        func finish() -> [UInt8] { writer.finish() }
    }
}
