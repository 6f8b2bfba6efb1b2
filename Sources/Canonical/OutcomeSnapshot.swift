/// What one path (V1: notifications + verifyReceipt; V2: notifications + App Store Server API) says about one
/// subscription at one moment: the facts the two generations are compared on (docs/architecture.md, "Authority and comparison").
public struct OutcomeSnapshot: Sendable, Hashable, Codable {
    public var schema: Int = CanonicalEvent.schemaVersion
    /// `v1-receipt` (verifyReceipt), `v2-api` (Get All Subscription Statuses), `v1` / `v2` (a notification's data).
    public var source: EventSource
    public var bundleID: String?
    public var environment: AppStoreEnvironment?
    public var originalTransactionID: String
    public var productID: String?
    /// The latest transaction's id.
    public var transactionID: String?
    public var expiresDate: Int64?
    public var revocationDate: Int64?
    public var gracePeriodExpiresDate: Int64?
    public var autoRenew: Bool?
    public var autoRenewProductID: String?
    public var inBillingRetry: Bool?
    public var expirationIntent: String?
    /// When the path was observed (ms since the epoch); the entitlement is computed at this time.
    public var observedAt: Int64
    public var entitlement: Entitlement

    public init(
        source: EventSource,
        bundleID: String?,
        environment: AppStoreEnvironment?,
        originalTransactionID: String,
        productID: String?,
        transactionID: String?,
        expiresDate: Int64?,
        revocationDate: Int64?,
        gracePeriodExpiresDate: Int64?,
        autoRenew: Bool?,
        autoRenewProductID: String?,
        inBillingRetry: Bool?,
        expirationIntent: String?,
        observedAt: Int64
    ) {
        self.source = source
        self.bundleID = bundleID
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.transactionID = transactionID
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.autoRenew = autoRenew
        self.autoRenewProductID = autoRenewProductID
        self.inBillingRetry = inBillingRetry
        self.expirationIntent = expirationIntent
        self.observedAt = observedAt
        self.entitlement = Entitlement.compute(
            expiresDate: expiresDate,
            revocationDate: revocationDate,
            gracePeriodExpiresDate: gracePeriodExpiresDate,
            inBillingRetry: inBillingRetry,
            at: observedAt
        )
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case schema, source
        case bundleID = "bundle_id"
        case environment
        case originalTransactionID = "original_transaction_id"
        case productID = "product_id"
        case transactionID = "transaction_id"
        case expiresDate = "expires_date"
        case revocationDate = "revocation_date"
        case gracePeriodExpiresDate = "grace_period_expires_date"
        case autoRenew = "auto_renew"
        case autoRenewProductID = "auto_renew_product_id"
        case inBillingRetry = "in_billing_retry"
        case expirationIntent = "expiration_intent"
        case observedAt = "observed_at"
        case entitlement
    }

    // Every key always present, null when unknown — the same contract as CanonicalEvent.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(source, forKey: .source)
        try c.encode(bundleID, forKey: .bundleID)
        try c.encode(environment, forKey: .environment)
        try c.encode(originalTransactionID, forKey: .originalTransactionID)
        try c.encode(productID, forKey: .productID)
        try c.encode(transactionID, forKey: .transactionID)
        try c.encode(expiresDate, forKey: .expiresDate)
        try c.encode(revocationDate, forKey: .revocationDate)
        try c.encode(gracePeriodExpiresDate, forKey: .gracePeriodExpiresDate)
        try c.encode(autoRenew, forKey: .autoRenew)
        try c.encode(autoRenewProductID, forKey: .autoRenewProductID)
        try c.encode(inBillingRetry, forKey: .inBillingRetry)
        try c.encode(expirationIntent, forKey: .expirationIntent)
        try c.encode(observedAt, forKey: .observedAt)
        try c.encode(entitlement, forKey: .entitlement)
    }
}
