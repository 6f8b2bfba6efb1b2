internal import Canonical
public import WireJSON

extension DecodedReceipt {
    /// verifyReceipt's `receipt` object for this receipt, in Apple's keys, order and formats (docs/architecture.md,
    /// "The receipt reader"), with `request_date*` at `requestDate` (ms). Checked key by key against Apple's own
    /// answer for a real receipt (`Fixtures/receipts`).
    ///
    /// An app (or Xcode) receipt: `receipt_type`; `adam_id`, `app_item_id` (attribute 1), `download_id` (15),
    /// `version_external_identifier` (16) as JSON numbers; `bundle_id`, `application_version`; the date triplets
    /// `receipt_creation_date`, `request_date`, `original_purchase_date` (`x` = `YYYY-MM-DD HH:MM:SS Etc/GMT`, `x_ms`
    /// = milliseconds as a string, `x_pst` = Cupertino's wall clock); `original_application_version`;
    /// `expiration_date` (a triplet; only VPP and Xcode receipts carry it); `in_app`, in the receipt's encoded order —
    /// the order Apple's answer has (the fixture shows it), not chronological. Every other value is a string; what
    /// the receipt does not carry is left out, never null.
    ///
    /// A transaction receipt: its `purchase-info` entries with `-` spelled `_`, in their order, every value a string
    /// (a key met again is left out) — the flat `receipt` object verifyReceipt answered iOS 6 receipts with.
    public func receiptObject(requestDate: Int64) -> JSONValue {
        if let app { return Self.receiptObject(app, requestDate: requestDate) }
        if let transaction {
            // A key written twice (or as both `a-b` and `a_b`) appears once, with its first value: JSON objects
            // have unique keys.
            var seen = Set<String>()
            var members: [(key: String, value: JSONValue)] = []
            for f in transaction.purchaseInfo {
                let key = String(decoding: f.key.utf8.map { $0 == 0x2D ? 0x5F : $0 }, as: UTF8.self)
                if seen.insert(key).inserted { members.append((key, .string(f.value))) }
            }
            return .object(JSONObject(members))
        }
        return .object(JSONObject())
    }

    static func receiptObject(_ r: AppReceipt, requestDate: Int64) -> JSONValue {
        var o = Members()
        o.string("receipt_type", r.receiptType)
        o.number("adam_id", r.appItemID)
        o.number("app_item_id", r.appItemID)
        o.string("bundle_id", r.bundleID)
        o.string("application_version", r.applicationVersion)
        o.number("download_id", r.downloadID)
        o.number("version_external_identifier", r.versionExternalIdentifier)
        o.date("receipt_creation_date", r.creationDate)
        o.date("request_date", requestDate)
        o.date("original_purchase_date", r.originalPurchaseDate)
        o.string("original_application_version", r.originalApplicationVersion)
        // Where Apple put it in a 2014 production answer (after original_application_version); that answer wrote the
        // milliseconds alone, Apple's documentation the triplet, which is what is written here.
        o.date("expiration_date", r.expirationDate)
        o.members.append(("in_app", .array(r.inApp.map(inAppObject))))
        return .object(JSONObject(o.members))
    }

    /// One `in_app` entry. The order of the keys Apple's 2020 answer has (RevenueCat's fixture); where it has no
    /// example — `cancellation_date*`, `promotional_offer_id` — after them (our reading). `web_order_line_item_id` is
    /// left out when 0 and `is_in_intro_offer_period` for products that are not auto-renewable, as Apple's answers
    /// leave them out for consumables (our reading of a 2022 sandbox answer).
    static func inAppObject(_ p: ReceiptPurchase) -> JSONValue {
        var o = Members()
        o.string("quantity", p.quantity.map { String($0) })
        o.string("product_id", p.productID)
        o.string("transaction_id", p.transactionID)
        o.string("original_transaction_id", p.originalTransactionID)
        o.date("purchase_date", p.purchaseDate)
        o.date("original_purchase_date", p.originalPurchaseDate)
        o.date("expires_date", p.expiresDate)
        o.string("web_order_line_item_id", p.webOrderLineItemID == "0" ? nil : p.webOrderLineItemID)
        o.string("is_trial_period", p.isTrialPeriod.map { $0 ? "true" : "false" })
        let intro = (p.productType.map { $0 == 3 } ?? true) ? p.isInIntroOfferPeriod : nil
        o.string("is_in_intro_offer_period", intro.map { $0 ? "true" : "false" })
        o.date("cancellation_date", p.cancellationDate)
        o.string("promotional_offer_id", p.promotionalOfferID)
        return .object(JSONObject(o.members))
    }

    /// What `iap-gateway receipt decode` prints (and the fixtures' `*.expected.json` hold): `format`, `signature`
    /// (`valid`, `signer`, `digest`, `judged_at` as ISO-8601, `root`, `failure`; null where unknown),
    /// ``receiptObject(requestDate:)`` as `receipt`, and ``lookupTransactionID`` as `transaction_id` (null when none).
    public func report(requestDate: Int64) -> JSONValue {
        func text(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        let signature: [(key: String, value: JSONValue)] = [
            ("valid", .bool(self.signature.valid)),
            ("signer", text(self.signature.signer)),
            ("digest", text(self.signature.digest)),
            ("judged_at", text(self.signature.judgedAt.map { UTCTime(milliseconds: $0).iso8601 })),
            ("root", text(self.signature.root)),
            ("failure", text(self.signature.failure)),
        ]
        return .object(
            JSONObject([
                ("format", .string(format.rawValue)),
                ("signature", .object(JSONObject(signature))),
                ("receipt", receiptObject(requestDate: requestDate)),
                ("transaction_id", text(lookupTransactionID)),
            ])
        )
    }

    /// An object's members in order; absent values are left out.
    struct Members {
        var members: [(key: String, value: JSONValue)] = []

        mutating func string(_ key: String, _ value: String?) {
            if let value { members.append((key, .string(value))) }
        }

        mutating func number(_ key: String, _ value: Int64?) {
            if let value { members.append((key, .number(String(value)))) }
        }

        /// Apple's three renderings of a date: `name` (`Etc/GMT`), `name_ms`, `name_pst`.
        mutating func date(_ name: String, _ ms: Int64?) {
            guard let ms else { return }
            string(name, AppleDateText.gmt(ms))
            string(name + "_ms", String(ms))
            string(name + "_pst", AppleDateText.pst(ms))
        }
    }
}
