package import Canonical
package import Store
package import WireJSON

/// The shadow comparison (docs/operations.md, "Moving the receipt path"): Apple's verifyReceipt answer and the
/// gateway's, each read into one ``ReceiptOutcome`` per original transaction, compared field by field.
package enum ReceiptComparison {
    /// What an answer says per original transaction: its status, and for each subscription in
    /// `latest_receipt_info` the newest transaction's facts with its `pending_renewal_info`. Empty for an answer with
    /// no transactions (a status alone, a receipt without purchases).
    package static func outcomes(_ answer: [UInt8]) -> [String: ReceiptOutcome] {
        guard case .object(let o)? = try? JSONParser.parse(answer), let status = o["status"]?.int64Value else {
            return [:]
        }
        var newest: [String: JSONObject] = [:]
        for case .object(let t) in o["latest_receipt_info"]?.arrayValue ?? [] {
            guard let otid = t["original_transaction_id"]?.stringValue else { continue }
            if let seen = newest[otid], millis(seen["purchase_date_ms"]) >= millis(t["purchase_date_ms"]) { continue }
            newest[otid] = t
        }
        var renewals: [String: JSONObject] = [:]
        for case .object(let r) in o["pending_renewal_info"]?.arrayValue ?? [] {
            if let otid = r["original_transaction_id"]?.stringValue { renewals[otid] = r }
        }
        var out: [String: ReceiptOutcome] = [:]
        for (otid, t) in newest {
            var r = ReceiptOutcome(status: Int(status), originalTransactionID: otid)
            r.transactionID = t["transaction_id"]?.stringValue
            r.productID = t["product_id"]?.stringValue
            r.expiresDate = millisOrNil(t["expires_date_ms"])
            r.isTrial = flag(t["is_trial_period"])
            r.cancellationDate = millisOrNil(t["cancellation_date_ms"])
            if let renewal = renewals[otid] {
                r.autoRenew = flag(renewal["auto_renew_status"])
                r.inBillingRetry = flag(renewal["is_in_billing_retry_period"])
                r.expirationIntent = renewal["expiration_intent"]?.stringValue
            }
            out[otid] = r
        }
        return out
    }

    /// An answer's `status`: read from its first members without parsing the rest (an answer of Apple's may carry
    /// 100 KB of receipt), else from the whole document.
    package static func status(_ answer: [UInt8]) -> Int? {
        let prefix = Array(#"{"status":"#.utf8)
        if answer.starts(with: prefix) {
            let digits = answer.dropFirst(prefix.count).prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            if !digits.isEmpty, digits.count < 10, let n = Int(String(decoding: digits, as: UTF8.self)) { return n }
        }
        guard case .object(let o)? = try? JSONParser.parse(answer) else { return nil }
        return o["status"]?.int64Value.map(Int.init)
    }

    /// The ledger rows of one request: a row per original transaction in either answer.
    package static func entries(
        apple: [UInt8],
        api: [UInt8],
        bundleID: String,
        environment: AppStoreEnvironment,
        at time: Int64
    ) -> [ReceiptLedgerEntry] {
        let (a, b) = (outcomes(apple), outcomes(api))
        return Set(a.keys).union(b.keys).sorted().map { otid in
            let key = SubscriptionKey(bundleID: bundleID, environment: environment, originalTransactionID: otid)
            switch (a[otid], b[otid]) {
            case (let x?, let y?):
                let fields = ReceiptOutcome.disagreements(apple: x, api: y)
                return ReceiptLedgerEntry(
                    subscription: key,
                    comparedAt: time,
                    outcome: fields.isEmpty ? .agree : .disagree,
                    fields: fields,
                    apple: x,
                    api: y
                )
            case (let x, let y):
                return ReceiptLedgerEntry(
                    subscription: key,
                    comparedAt: time,
                    outcome: x == nil ? .v2Only : .v1Only,
                    fields: [],
                    apple: x,
                    api: y
                )
            }
        }
    }

    /// Apple's booleans in verifyReceipt: `"true"`/`"false"` in transactions, `"1"`/`"0"` in renewal info.
    package static func flag(_ v: JSONValue?) -> Bool? {
        switch v?.stringValue {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }

    package static func millisOrNil(_ v: JSONValue?) -> Int64? { v?.stringValue.flatMap { Int64($0) } }
    package static func millis(_ v: JSONValue?) -> Int64 { millisOrNil(v) ?? .min }
}
