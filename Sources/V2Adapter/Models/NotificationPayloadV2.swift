/// The decoded `signedPayload` (Apple's `ResponseBodyV2DecodedPayload`). Exactly one of `data`, `summary`,
/// `externalPurchaseToken`, `appData` is present. Enum-like values stay Apple's raw strings so that types Apple adds
/// later survive.
public struct NotificationPayloadV2: Codable, Sendable, Hashable {
    public var notificationType: String?
    public var subtype: String?
    public var notificationUUID: String?
    public var data: NotificationData?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: AppData?
    /// UNCLAIM_SEATS (developer-hosted group invitations): the seat claims Apple released.
    public var unclaimInfo: UnclaimInfo?
    public var version: String?
    /// Milliseconds since the epoch; absent in some early-2022 notifications.
    public var signedDate: Int64?

    public init(
        notificationType: String?,
        subtype: String? = nil,
        notificationUUID: String?,
        data: NotificationData? = nil,
        summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil,
        unclaimInfo: UnclaimInfo? = nil,
        version: String? = "2.0",
        signedDate: Int64?
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
        self.unclaimInfo = unclaimInfo
        self.version = version
        self.signedDate = signedDate
    }
}

/// `unclaimInfo` of an UNCLAIM_SEATS notification: the `seatClaimId`s (Claim Seat's answers) whose seats Apple has
/// already released; the team revokes the people it put on them.
public struct UnclaimInfo: Codable, Sendable, Hashable {
    public var unclaimSeatIDs: [String]?

    public init(unclaimSeatIDs: [String]?) { self.unclaimSeatIDs = unclaimSeatIDs }

    enum CodingKeys: String, CodingKey {
        case unclaimSeatIDs = "unclaimSeatIds"
    }
}

/// `data` of a notification about one app's transaction (Apple's `Data`).
public struct NotificationData: Codable, Sendable, Hashable {
    public var appAppleID: Int64?
    public var bundleID: String?
    public var bundleVersion: String?
    public var environment: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int?
    public var consumptionRequestReason: String?

    public init(
        appAppleID: Int64? = nil,
        bundleID: String?,
        bundleVersion: String? = nil,
        environment: String?,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        status: Int? = nil,
        consumptionRequestReason: String? = nil
    ) {
        self.appAppleID = appAppleID
        self.bundleID = bundleID
        self.bundleVersion = bundleVersion
        self.environment = environment
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }

    enum CodingKeys: String, CodingKey {
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
        case bundleVersion, environment, signedTransactionInfo, signedRenewalInfo, status, consumptionRequestReason
    }
}

/// `summary` of a RENEWAL_EXTENSION/SUMMARY notification.
public struct NotificationSummary: Codable, Sendable, Hashable {
    public var environment: String?
    public var appAppleID: Int64?
    public var bundleID: String?
    public var productID: String?
    public var requestIdentifier: String?
    public var storefrontCountryCodes: [String]?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    public init(
        environment: String?,
        appAppleID: Int64?,
        bundleID: String?,
        productID: String?,
        requestIdentifier: String?,
        storefrontCountryCodes: [String]?,
        succeededCount: Int64?,
        failedCount: Int64?
    ) {
        self.environment = environment
        self.appAppleID = appAppleID
        self.bundleID = bundleID
        self.productID = productID
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }

    enum CodingKeys: String, CodingKey {
        case environment
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
        case productID = "productId"
        case requestIdentifier, storefrontCountryCodes, succeededCount, failedCount
    }
}

/// `externalPurchaseToken` of an EXTERNAL_PURCHASE_TOKEN notification. It has no environment member: a token id
/// starting with `SANDBOX` is sandbox, anything else production.
public struct ExternalPurchaseToken: Codable, Sendable, Hashable {
    public var externalPurchaseID: String?
    public var tokenCreationDate: Int64?
    public var appAppleID: Int64?
    public var bundleID: String?
    /// Custom link tokens only: Apple's token type (`ACQUISITION`, `SERVICES`, …), kept verbatim.
    public var tokenType: String?
    /// Custom link tokens only: when the token expires (ms).
    public var tokenExpirationDate: Int64?

    public init(
        externalPurchaseID: String?,
        tokenCreationDate: Int64?,
        appAppleID: Int64?,
        bundleID: String?,
        tokenType: String? = nil,
        tokenExpirationDate: Int64? = nil
    ) {
        self.externalPurchaseID = externalPurchaseID
        self.tokenCreationDate = tokenCreationDate
        self.appAppleID = appAppleID
        self.bundleID = bundleID
        self.tokenType = tokenType
        self.tokenExpirationDate = tokenExpirationDate
    }

    /// `Sandbox` when the id has Apple's `SANDBOX` prefix, else `Production`.
    public var impliedEnvironment: String { (externalPurchaseID ?? "").hasPrefix("SANDBOX") ? "Sandbox" : "Production" }

    enum CodingKeys: String, CodingKey {
        case externalPurchaseID = "externalPurchaseId"
        case tokenCreationDate
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
        case tokenType, tokenExpirationDate
    }
}

/// `appData` of a RESCIND_CONSENT notification.
public struct AppData: Codable, Sendable, Hashable {
    public var appAppleID: Int64?
    public var bundleID: String?
    public var environment: String?
    public var signedAppTransactionInfo: String?

    public init(appAppleID: Int64?, bundleID: String?, environment: String?, signedAppTransactionInfo: String?) {
        self.appAppleID = appAppleID
        self.bundleID = bundleID
        self.environment = environment
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }

    enum CodingKeys: String, CodingKey {
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
        case environment, signedAppTransactionInfo
    }
}
