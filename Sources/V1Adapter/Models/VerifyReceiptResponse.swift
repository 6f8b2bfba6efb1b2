/// verifyReceipt's answer, iOS-7 style (`receipt.in_app[]`, `latest_receipt_info[]`, `pending_renewal_info[]`) or
/// iOS-6 style (`receipt` and `latest_receipt_info` single objects, top-level renewal fields, 21006 with
/// `latest_expired_receipt_info`).
public struct VerifyReceiptResponse: Sendable, Hashable, Codable {
    public var status: V1Scalar?
    /// `"Production"` / `"Sandbox"`; absent in 21006/21007 answers.
    public var environment: String?
    public var receipt: V1ReceiptBody?
    public var latestReceipt: String?
    public var latestReceiptInfo: OneOrMany<V1Transaction>?
    public var latestExpiredReceiptInfo: V1Transaction?
    public var pendingRenewalInfo: [V1PendingRenewal]?
    /// `is-retryable` (hyphen) on 211xx answers.
    public var isRetryable: V1Scalar?
    // iOS-6 top-level renewal fields.
    public var autoRenewStatus: V1Scalar?
    public var autoRenewProductID: String?
    public var expirationIntent: V1Scalar?
    public var isInBillingRetryPeriod: V1Scalar?

    public init(status: V1Scalar?) { self.status = status }

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case latestExpiredReceiptInfo = "latest_expired_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
        case isRetryable = "is-retryable"
        case autoRenewStatus = "auto_renew_status"
        case autoRenewProductID = "auto_renew_product_id"
        case expirationIntent = "expiration_intent"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
    }

    public var statusCode: Int? { status?.int64.map { Int($0) } }
}

/// The `receipt` object: iOS-7 app receipt (with `in_app[]`) or, iOS-6 style, one transaction's fields.
public struct V1ReceiptBody: Sendable, Hashable, Codable {
    public var receiptType: String?
    public var adamID: V1Scalar?
    public var appItemID: V1Scalar?
    public var bundleID: String?
    public var applicationVersion: V1Scalar?
    public var requestDateMs: V1Scalar?
    public var receiptCreationDateMs: V1Scalar?
    public var inApp: [V1Transaction]?
    /// iOS-6: the receipt is itself a transaction.
    public var transaction: V1Transaction

    enum CodingKeys: String, CodingKey {
        case receiptType = "receipt_type"
        case adamID = "adam_id"
        case appItemID = "app_item_id"
        case bundleID = "bundle_id"
        case applicationVersion = "application_version"
        case requestDateMs = "request_date_ms"
        case receiptCreationDateMs = "receipt_creation_date_ms"
        case inApp = "in_app"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        receiptType = try c.decodeIfPresent(String.self, forKey: .receiptType)
        adamID = try c.decodeIfPresent(V1Scalar.self, forKey: .adamID)
        appItemID = try c.decodeIfPresent(V1Scalar.self, forKey: .appItemID)
        bundleID = try c.decodeIfPresent(String.self, forKey: .bundleID)
        applicationVersion = try c.decodeIfPresent(V1Scalar.self, forKey: .applicationVersion)
        requestDateMs = try c.decodeIfPresent(V1Scalar.self, forKey: .requestDateMs)
        receiptCreationDateMs = try c.decodeIfPresent(V1Scalar.self, forKey: .receiptCreationDateMs)
        inApp = try c.decodeIfPresent([V1Transaction].self, forKey: .inApp)
        transaction = try V1Transaction(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try transaction.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(receiptType, forKey: .receiptType)
        try c.encodeIfPresent(adamID, forKey: .adamID)
        try c.encodeIfPresent(appItemID, forKey: .appItemID)
        try c.encodeIfPresent(bundleID, forKey: .bundleID)
        try c.encodeIfPresent(applicationVersion, forKey: .applicationVersion)
        try c.encodeIfPresent(requestDateMs, forKey: .requestDateMs)
        try c.encodeIfPresent(receiptCreationDateMs, forKey: .receiptCreationDateMs)
        try c.encodeIfPresent(inApp, forKey: .inApp)
    }

    public init(bundleID: String?, inApp: [V1Transaction]?) {
        self.bundleID = bundleID
        self.inApp = inApp
        self.transaction = V1Transaction()
    }
}
