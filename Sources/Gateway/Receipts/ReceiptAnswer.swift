internal import Canonical
internal import V1Adapter
internal import WireJSON

/// The gateway's verifyReceipt answers, in Apple's shape (docs/operations.md, "Moving the receipt path"): Apple's
/// member order, Apple's status codes, HTTP 200 whatever the status.
enum ReceiptAnswer {
    /// Apple's statuses the gateway answers with.
    enum Status {
        static let ok = 0
        /// The request body is not the JSON object verifyReceipt takes.
        static let unreadable = 21000
        /// `receipt-data` is not a receipt.
        static let malformed = 21002
        /// The receipt is not authenticated (its signature, an Xcode receipt, a transaction receipt not allowed).
        static let notAuthenticated = 21003
        /// The password is not the app's shared secret.
        static let wrongSecret = 21004
        /// The receipt server (here: the App Store Server API) cannot answer now; retry.
        static let unavailable = 21005
        /// A sandbox receipt on the production URL.
        static let sandboxReceipt = 21007
        /// A production receipt on the sandbox URL.
        static let productionReceipt = 21008
        /// The receipt could not be authorized: no app of this gateway's, or an environment it does not take.
        static let notAuthorized = 21010
    }

    /// An answer that is a status alone; `retryable` adds Apple's `is-retryable`.
    static func status(_ status: Int, environment: AppStoreEnvironment? = nil, retryable: Bool = false) -> [UInt8] {
        var w = JSONObjectWriter(keepingOrder: true)
        w.int("status", Int64(status))
        if let environment { w.string("environment", name(environment)) }
        if retryable { w.bool("is-retryable", true) }
        return w.finish()
    }

    /// A whole answer: `receipt` (the receipt's own object), and — when the request carried the app's shared secret —
    /// `latest_receipt_info`, `latest_receipt` (the receipt sent, echoed: only Apple can sign a new one) and
    /// `pending_renewal_info` from what is known of the customer's transactions.
    static func answer(
        environment: AppStoreEnvironment,
        receipt: JSONValue,
        latestReceipt: [UInt8]?,
        transactions: [CanonicalEvent]?,
        excludeOld: Bool,
        assignedOwnership: String = V1App.defaultAssignedOwnership
    ) -> [UInt8] {
        var w = JSONObjectWriter(keepingOrder: true)
        w.int("status", Int64(Status.ok))
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

    static func name(_ environment: AppStoreEnvironment) -> String {
        environment == .production ? "Production" : "Sandbox"
    }
}
