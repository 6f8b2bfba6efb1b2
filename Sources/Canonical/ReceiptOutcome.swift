/// How the gateway answers `POST /verifyReceipt` for a bundle and environment (docs/operations.md, "Moving the receipt
/// path"): Apple's answer passed through, Apple's answer with the gateway's own compared beside it, or the gateway's
/// own answer from the App Store Server API.
public enum ReceiptMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// A transparent proxy to Apple's verifyReceipt: Apple's answer returned unchanged.
    case apple
    /// Apple's answer returned; the gateway's answer built after replying and compared with it.
    case shadow
    /// The gateway's answer alone, from the App Store Server API.
    case api

    /// Whether Apple's verifyReceipt is asked (and its answer returned).
    public var asksApple: Bool { self != .api }
}

/// What one verifyReceipt answer — Apple's or the gateway's — says about one subscription (an original transaction): the
/// facts the receipt comparison is made on (docs/architecture.md, "The receipt path").
public struct ReceiptOutcome: Sendable, Hashable, Codable {
    /// The answer's `status` (0 when it answered).
    public var status: Int
    public var originalTransactionID: String
    /// Of the subscription's newest transaction (by purchase date) in `latest_receipt_info`.
    public var transactionID: String?
    public var productID: String?
    public var expiresDate: Int64?
    public var isTrial: Bool?
    public var cancellationDate: Int64?
    /// From the subscription's `pending_renewal_info` entry.
    public var autoRenew: Bool?
    public var inBillingRetry: Bool?
    public var expirationIntent: String?

    public init(status: Int, originalTransactionID: String) {
        (self.status, self.originalTransactionID) = (status, originalTransactionID)
    }

    enum CodingKeys: String, CodingKey {
        case status
        case originalTransactionID = "original_transaction_id"
        case transactionID = "transaction_id"
        case productID = "product_id"
        case expiresDate = "expires_date"
        case isTrial = "is_trial"
        case cancellationDate = "cancellation_date"
        case autoRenew = "auto_renew"
        case inBillingRetry = "in_billing_retry"
        case expirationIntent = "expiration_intent"
    }

    // Every key always present, null when unknown (the snapshots' contract).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(originalTransactionID, forKey: .originalTransactionID)
        try c.encode(transactionID, forKey: .transactionID)
        try c.encode(productID, forKey: .productID)
        try c.encode(expiresDate, forKey: .expiresDate)
        try c.encode(isTrial, forKey: .isTrial)
        try c.encode(cancellationDate, forKey: .cancellationDate)
        try c.encode(autoRenew, forKey: .autoRenew)
        try c.encode(inBillingRetry, forKey: .inBillingRetry)
        try c.encode(expirationIntent, forKey: .expirationIntent)
    }

    /// The fields compared, in report order.
    public static let fields = [
        "status", "expires_date", "product_id", "is_trial", "cancellation_date", "auto_renew", "in_billing_retry",
        "expiration_intent",
    ]

    /// The names of the fields on which Apple's answer and the gateway's disagree; empty when they agree. Both come
    /// from the same signed data at about the same moment, so dates must be equal to the millisecond, and a fact one
    /// answer leaves out that the other states is a disagreement (an old backend reads an absent
    /// `cancellation_date` as "not refunded").
    public static func disagreements(apple: ReceiptOutcome, api: ReceiptOutcome) -> [String] {
        var out: [String] = []
        if apple.status != api.status { out.append("status") }
        if apple.expiresDate != api.expiresDate { out.append("expires_date") }
        if apple.productID != api.productID { out.append("product_id") }
        if (apple.isTrial ?? false) != (api.isTrial ?? false) { out.append("is_trial") }
        if apple.cancellationDate != api.cancellationDate { out.append("cancellation_date") }
        if apple.autoRenew != api.autoRenew { out.append("auto_renew") }
        if (apple.inBillingRetry ?? false) != (api.inBillingRetry ?? false) { out.append("in_billing_retry") }
        if apple.expirationIntent != api.expirationIntent { out.append("expiration_intent") }
        return out
    }
}
