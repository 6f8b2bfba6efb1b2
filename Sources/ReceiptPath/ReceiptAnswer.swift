package import Canonical
package import V1Adapter
package import WireJSON

/// The gateway's verifyReceipt answers, in Apple's shape (docs/operations.md, "Moving the receipt path"): Apple's
/// member order, Apple's status codes, HTTP 200 whatever the status.
package enum ReceiptAnswer {
    /// An answer that is a status alone; `retryable` adds Apple's `is-retryable`.
    package static func status(
        _ status: VerifyReceiptStatus,
        environment: AppStoreEnvironment? = nil,
        retryable: Bool = false
    ) -> [UInt8] {
        var w = JSONObjectWriter(keepingOrder: true)
        w.int("status", Int64(status.rawValue))
        if let environment { w.string("environment", name(environment)) }
        if retryable { w.bool("is-retryable", true) }
        return w.finish()
    }

    /// A whole answer: `receipt` (the receipt's own object), and — when the request carried the app's shared secret —
    /// `latest_receipt_info`, `latest_receipt` (the receipt sent, echoed: only Apple can sign a new one) and
    /// `pending_renewal_info` from what is known of the customer's transactions.
    package static func answer(
        environment: AppStoreEnvironment,
        receipt: JSONValue,
        latestReceipt: [UInt8]?,
        transactions: [CanonicalEvent]?,
        excludeOld: Bool,
        assignedOwnership: String = V1App.defaultAssignedOwnership
    ) -> [UInt8] {
        var w = JSONObjectWriter(keepingOrder: true)
        w.int("status", Int64(VerifyReceiptStatus.ok.rawValue))
        w.string("environment", name(environment))
        w.raw("receipt", receipt.text())
        if let transactions, let latestReceipt {
            let info = V1BodySynthesizer.receiptInfo(
                transactions: transactions,
                excludeOld: excludeOld,
                assignedOwnership: assignedOwnership
            )
            w.raw("latest_receipt_info", info.latestReceiptInfo)
            w.string("latest_receipt", String(decoding: latestReceipt, as: UTF8.self))
            w.raw("pending_renewal_info", info.pendingRenewalInfo)
        }
        return w.finish()
    }

    package static func name(_ environment: AppStoreEnvironment) -> String {
        environment == .production ? "Production" : "Sandbox"
    }
}
