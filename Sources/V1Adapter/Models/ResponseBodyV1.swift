/// A V1 notification body (`responseBodyV1`), in both shapes Apple has used: the current one with
/// `unified_receipt`, and the pre-2021 one with top-level `latest_receipt` / `latest_receipt_info` (and `bid` only
/// inside them). Members are kept verbatim; `password` is the app's shared secret.
public struct ResponseBodyV1: Sendable, Hashable, Codable {
    public var notificationType: String?
    public var password: String?
    /// `"PROD"` or `"Sandbox"` at this level.
    public var environment: String?
    public var bid: String?
    public var bvrs: V1Scalar?
    /// `"true"` / `"false"` at this level.
    public var autoRenewStatus: V1Scalar?
    public var autoRenewProductID: String?
    public var autoRenewAdamID: V1Scalar?
    public var autoRenewStatusChangeDate: V1Scalar?
    public var autoRenewStatusChangeDateMs: V1Scalar?
    public var autoRenewStatusChangeDatePst: V1Scalar?
    public var expirationIntent: V1Scalar?
    public var originalTransactionID: V1Scalar?
    public var unifiedReceipt: UnifiedReceipt?
    public var deprecation: V1Scalar?
    // Pre-2021 shape.
    public var latestReceipt: String?
    public var latestReceiptInfo: OneOrMany<V1Transaction>?
    public var latestExpiredReceipt: String?
    public var latestExpiredReceiptInfo: V1Transaction?
    public var isInBillingRetryPeriod: V1Scalar?

    public init(notificationType: String?, password: String?, environment: String?) {
        (self.notificationType, self.password, self.environment) = (notificationType, password, environment)
    }

    enum CodingKeys: String, CodingKey {
        case notificationType = "notification_type"
        case password, environment, bid, bvrs
        case autoRenewStatus = "auto_renew_status"
        case autoRenewProductID = "auto_renew_product_id"
        case autoRenewAdamID = "auto_renew_adam_id"
        case autoRenewStatusChangeDate = "auto_renew_status_change_date"
        case autoRenewStatusChangeDateMs = "auto_renew_status_change_date_ms"
        case autoRenewStatusChangeDatePst = "auto_renew_status_change_date_pst"
        case expirationIntent = "expiration_intent"
        case originalTransactionID = "original_transaction_id"
        case unifiedReceipt = "unified_receipt"
        case deprecation
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case latestExpiredReceipt = "latest_expired_receipt"
        case latestExpiredReceiptInfo = "latest_expired_receipt_info"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
    }

    /// The bundle: top-level `bid`, else the pre-2021 `latest_receipt_info`'s `bid` (the first when it is an
    /// array), else `latest_expired_receipt_info`'s. The one rule for "which bundle does this V1 body claim":
    /// ``V1Adapter/claimedBundle(body:)`` applies it to bytes that were not (or cannot be) authenticated.
    public var bundleID: String? {
        bid ?? latestReceiptInfo?.items.first?.bid ?? latestExpiredReceiptInfo?.bid
    }

    /// The receipt to send to verifyReceipt: `unified_receipt.latest_receipt`, else the pre-2021 top-level one.
    public var receiptData: String? {
        for candidate in [unifiedReceipt?.latestReceipt, latestReceipt, latestExpiredReceipt] {
            if let c = candidate, !c.isEmpty { return c }
        }
        return nil
    }

    /// The subscription the notification is about: top-level `original_transaction_id`, else the body's latest one.
    public var subscriptionID: String? {
        originalTransactionID?.text ?? unifiedReceipt?.latestReceiptInfo?.first?.originalTransactionIDText
            ?? latestReceiptInfo?.items.first?.originalTransactionIDText
            ?? latestExpiredReceiptInfo?.originalTransactionIDText
    }
}

/// `unified_receipt`: the same data verifyReceipt returns, unsigned.
public struct UnifiedReceipt: Sendable, Hashable, Codable {
    /// `"Production"` or `"Sandbox"` at this level.
    public var environment: String?
    public var latestReceipt: String?
    public var latestReceiptInfo: [V1Transaction]?
    public var pendingRenewalInfo: [V1PendingRenewal]?
    public var status: V1Scalar?

    public init(
        environment: String?,
        latestReceipt: String?,
        latestReceiptInfo: [V1Transaction]?,
        pendingRenewalInfo: [V1PendingRenewal]?,
        status: V1Scalar? = 0
    ) {
        self.environment = environment
        self.latestReceipt = latestReceipt
        self.latestReceiptInfo = latestReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
        self.status = status
    }

    enum CodingKeys: String, CodingKey {
        case environment
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
        case status
    }
}
