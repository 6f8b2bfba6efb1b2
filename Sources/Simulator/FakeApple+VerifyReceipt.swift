internal import Canonical
internal import Crypto
internal import Receipts
internal import V1Adapter
internal import WireJSON

/// verifyReceipt's statuses the fake answers (Apple: App Store Receipts, `status`).
enum VerifyReceiptStatus {
    static let ok = 0
    /// Not an HTTP POST, or a body that is not the JSON object verifyReceipt takes ("The App Store could not read the
    /// JSON object you provided", Apple's older text for 21000).
    static let notPost = 21000
    /// `receipt-data` missing, or not a receipt.
    static let malformed = 21002
    /// A receipt whose signature does not hold.
    static let notAuthenticated = 21003
    /// A password given that is not the app's shared secret.
    static let wrongSecret = 21004
    /// A sandbox receipt on the production URL.
    static let sandboxReceipt = 21007
    /// A production receipt on the sandbox URL.
    static let productionReceipt = 21008
}

extension FakeApple {
    /// `POST /verifyReceipt` and `POST /sandbox/verifyReceipt`, answered as Apple answers (docs/simulator.md, "The
    /// fake verifyReceipt"): HTTP 200 whatever the status; members in Apple's order (`status`, `environment`,
    /// `receipt`, `latest_receipt_info`, `latest_receipt`, `pending_renewal_info`).
    ///
    /// - Queued faults (``SimWorld/verifyReceiptFaults``) answer first.
    /// - A body that is not a JSON object: 21000. `receipt-data` missing, not base64, not a receipt: 21002. A receipt
    ///   whose signature does not hold under the simulator's receipt root (or Apple's): 21003. The receipt decides the
    ///   environment: a sandbox receipt on the production URL 21007, a production one on the sandbox URL 21008.
    /// - `password` given and not the app's shared secret: 21004. No `password` (or an empty one): status 0 with the
    ///   `receipt` alone — Apple returns `latest_receipt`, `latest_receipt_info` and `pending_renewal_info` only to a
    ///   request carrying the shared secret, which it requires for receipts with subscriptions.
    /// - Otherwise status 0: `receipt` is the receipt sent, decoded (Apple's 18 keys, `request_date` now);
    ///   `latest_receipt` a new app receipt signed now by the simulator's receipt chain, with every purchase to date
    ///   (re-sendable here and to the gateway); `latest_receipt_info` every transaction but consumables (Apple leaves
    ///   out finished ones; the simulated app finishes them all), newest first, or with `exclude-old-transactions`
    ///   only each subscription's newest; `pending_renewal_info` the subscription's renewal.
    ///
    /// The simulator's V1 notifications carry real receipts (``Emitter/v1Receipt(_:at:)``), read as any other; the
    /// opaque `sim-receipt:` tokens its earlier V1 notifications carried (``SimSubscription/receiptToken``, still in
    /// older state folders and journals) are read as the subscription's receipt as of now.
    func verifyReceipt(_ body: [UInt8], sandbox: Bool) throws -> FakeAppleResponse {
        let world = try store.read()
        if let fault = try store.popFault(\.verifyReceiptFaults, seen: world) {
            var answer = VerifyReceiptResponse(status: V1Scalar(integerLiteral: Int64(fault)))
            answer.environment = sandbox ? "Sandbox" : "Production"
            if (21100...21199).contains(fault) || fault == 21005 || fault == 21009 {
                answer.isRetryable = V1Scalar(integerLiteral: 1)
            }
            return try Self.json(200, answer)
        }
        guard case .object(let request)? = try? JSONParser.parse(body) else {
            return Self.receiptStatus(VerifyReceiptStatus.notPost)
        }
        guard let data = request["receipt-data"]?.stringValue, !data.isEmpty else {
            return Self.receiptStatus(VerifyReceiptStatus.malformed)
        }
        let time = now()
        // The receipt sent, decoded; an earlier V1 notification's token stands for the subscription's receipt now.
        let decoded: DecodedReceipt
        var known: SimSubscription?
        if let s = world.subscription(forReceipt: data) {
            known = s
            decoded = try ReceiptReader.read(
                Array(try pki.signedReceipt(s.appReceipt(createdAt: time)).utf8),
                trust: pki.receiptTrust
            )
        } else {
            do {
                decoded = try ReceiptReader.read(Array(data.utf8), trust: pki.receiptTrust)
            } catch {
                return Self.receiptStatus(VerifyReceiptStatus.malformed)
            }
            guard decoded.isAuthenticated else { return Self.receiptStatus(VerifyReceiptStatus.notAuthenticated) }
            known = Self.subscription(of: decoded, in: world)
        }
        let environment = decoded.isSandbox ? "Sandbox" : "Production"
        if decoded.isSandbox != sandbox {
            return Self.receiptStatus(
                sandbox ? VerifyReceiptStatus.productionReceipt : VerifyReceiptStatus.sandboxReceipt
            )
        }
        let password = request["password"]
        let given = password.map { $0.stringValue.map { !$0.isEmpty } ?? !$0.isNull } ?? false
        if given, let digest = known?.sharedSecretDigest {
            let text = password?.stringValue ?? ""
            let hash = Array(Hex.encode(SHA256.hash(Array(text.utf8))).utf8)
            guard Bytes.constantTimeEqual(hash, Array(digest.utf8)) else {
                return Self.receiptStatus(VerifyReceiptStatus.wrongSecret)
            }
        }
        var w = JSONObjectWriter(keepingOrder: true)
        w.int("status", Int64(VerifyReceiptStatus.ok))
        w.string("environment", environment)
        w.raw("receipt", decoded.receiptObject(requestDate: time).text())
        if given, var s = known {
            s.transactions = s.transactions.map { Self.skewed($0, world.v1Skew) }
            let excludeOld = request["exclude-old-transactions"]?.boolValue == true
            w.raw("latest_receipt_info", Self.latestReceiptInfo(s, excludeOld: excludeOld))
            w.string("latest_receipt", try pki.signedReceipt(s.appReceipt(createdAt: time)))
            w.raw("pending_renewal_info", Self.array(Emitter.v1Renewal(s).map { [Self.pendingRenewal($0)] } ?? []))
        }
        return FakeAppleResponse(status: 200, body: w.finish())
    }

    /// An answer that is a status alone, as Apple's error answers are.
    static func receiptStatus(_ status: Int) -> FakeAppleResponse {
        var w = JSONObjectWriter(keepingOrder: true)
        w.int("status", Int64(status))
        return FakeAppleResponse(status: 200, body: w.finish())
    }

    /// The subscription an app receipt is about (any of its purchases' original transaction ids); nil when the
    /// simulated App Store knows none of them.
    static func subscription(of receipt: DecodedReceipt, in world: SimWorld) -> SimSubscription? {
        guard let purchases = receipt.app?.inApp else { return nil }
        return purchases.lazy.compactMap { $0.originalTransactionID ?? $0.transactionID }
            .compactMap { world.subscription(forTransaction: $0) }.first
    }

    /// A transaction as the V1 side reports it under ``SimWorld/v1Skew`` (clamped: the skew comes from the state file).
    static func skewed(_ t: SimTransaction, _ skew: SimWorld.V1Skew) -> SimTransaction {
        var t = t
        if let e = t.expiresDate { t.expiresDate = e.clampedAdding(skew.expiresOffsetMillis) }
        if skew.hideRevocations { (t.revocationDate, t.revocationReason) = (nil, nil) }
        return t
    }

    /// `latest_receipt_info`: every transaction but consumables, newest purchase first; with `excludeOld` only the
    /// newest of each original transaction.
    static func latestReceiptInfo(_ s: SimSubscription, excludeOld: Bool) -> [UInt8] {
        var kept = s.transactions.filter { SimSubscription.receiptProductType($0) != 1 }
            .sorted { ($0.purchaseDate, $0.transactionID) > ($1.purchaseDate, $1.transactionID) }
        if excludeOld {
            var seen = Set<String>()
            kept = kept.filter { seen.insert($0.originalTransactionID).inserted }
        }
        return array(kept.map { receiptTransaction($0, appAccountToken: s.appAccountToken) })
    }

    /// One `latest_receipt_info` entry in Apple's keys, order and formats: every value a string, each date as
    /// Apple's triplet (`x` in `Etc/GMT`, `x_ms`, `x_pst` in America/Los_Angeles), absent values left out.
    static func receiptTransaction(_ t: SimTransaction, appAccountToken: String) -> [UInt8] {
        var w = JSONObjectWriter(keepingOrder: true)
        text(&w, "quantity", String(t.seats ?? 1))
        text(&w, "product_id", t.productID)
        text(&w, "transaction_id", t.transactionID)
        text(&w, "original_transaction_id", t.originalTransactionID)
        date(&w, "purchase_date", t.purchaseDate)
        date(&w, "original_purchase_date", t.originalPurchaseDate)
        date(&w, "expires_date", t.expiresDate)
        text(&w, "web_order_line_item_id", t.webOrderLineItemID)
        text(&w, "is_trial_period", t.isTrial ? "true" : "false")
        if SimSubscription.receiptProductType(t) == 3 {
            text(&w, "is_in_intro_offer_period", t.isIntro && !t.isTrial ? "true" : "false")
        }
        if let revoked = t.revocationDate {
            date(&w, "cancellation_date", revoked)
            text(&w, "cancellation_reason", String(t.revocationReason ?? 0))
        }
        if t.isUpgraded { text(&w, "is_upgraded", "true") }
        if t.offerType == 2 { text(&w, "promotional_offer_id", t.offerID) }
        if t.offerType == 3 { text(&w, "offer_code_ref_name", t.offerID) }
        // V1 never had `ASSIGNED`: a group member's transaction reads as V1's "access without being the purchaser".
        text(&w, "in_app_ownership_type", t.ownership == "ASSIGNED" ? "FAMILY_SHARED" : t.ownership)
        if t.expiresDate != nil { text(&w, "subscription_group_identifier", Catalogue.groupID) }
        if !appAccountToken.isEmpty { text(&w, "app_account_token", appAccountToken.lowercased()) }
        return w.finish()
    }

    /// One `pending_renewal_info` entry in the order of Apple's answers, with the grace period's date triplet.
    static func pendingRenewal(_ p: V1PendingRenewal) -> [UInt8] {
        var w = JSONObjectWriter(keepingOrder: true)
        text(&w, "expiration_intent", p.expirationIntent?.text)
        text(&w, "auto_renew_product_id", p.autoRenewProductID)
        text(&w, "is_in_billing_retry_period", p.isInBillingRetryPeriod?.text)
        text(&w, "product_id", p.productID)
        text(&w, "original_transaction_id", p.originalTransactionID?.text)
        text(&w, "auto_renew_status", p.autoRenewStatus?.text)
        date(&w, "grace_period_expires_date", p.gracePeriodExpiresDateMs?.int64)
        text(&w, "price_consent_status", p.priceConsentStatus?.text)
        return w.finish()
    }

    /// A string member; none when `value` is nil (Apple leaves out what it does not know, never writing null).
    static func text(_ w: inout JSONObjectWriter, _ key: String, _ value: String?) {
        if let value { w.string(key, value) }
    }

    /// Apple's three renderings of a date: `name` (`Etc/GMT`), `name_ms`, `name_pst` (America/Los_Angeles).
    static func date(_ w: inout JSONObjectWriter, _ name: String, _ ms: Int64?) {
        guard let ms else { return }
        w.string(name, AppleDateText.gmt(ms))
        w.string(name + "_ms", String(ms))
        w.string(name + "_pst", AppleDateText.pst(ms))
    }

    static func array(_ items: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += item
        }
        out.append(UInt8(ascii: "]"))
        return out
    }
}
