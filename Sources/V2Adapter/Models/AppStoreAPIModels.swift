/// Wire models of the App Store Server API endpoints the gateway uses (Apple's names in `CodingKeys`), shared by the
/// gateway's client and the simulator's fake so both speak exactly one dialect.

/// `GET /inApps/v1/subscriptions/{transactionId}` — Get All Subscription Statuses.
public struct StatusResponse: Sendable, Hashable, Codable {
    public struct Group: Sendable, Hashable, Codable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]
        public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransaction]) {
            (self.subscriptionGroupIdentifier, self.lastTransactions) = (subscriptionGroupIdentifier, lastTransactions)
        }
    }
    public struct LastTransaction: Sendable, Hashable, Codable {
        /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int
        public var originalTransactionID: String
        public var signedTransactionInfo: String
        public var signedRenewalInfo: String?
        enum CodingKeys: String, CodingKey {
            case status, signedTransactionInfo, signedRenewalInfo
            case originalTransactionID = "originalTransactionId"
        }
        public init(
            status: Int,
            originalTransactionID: String,
            signedTransactionInfo: String,
            signedRenewalInfo: String?
        ) {
            (self.status, self.originalTransactionID, self.signedTransactionInfo, self.signedRenewalInfo) =
                (status, originalTransactionID, signedTransactionInfo, signedRenewalInfo)
        }
    }
    public var environment: String?
    public var bundleID: String?
    public var appAppleID: Int64?
    public var data: [Group]
    enum CodingKeys: String, CodingKey {
        case environment, data
        case bundleID = "bundleId"
        case appAppleID = "appAppleId"
    }
    public init(environment: String?, bundleID: String?, appAppleID: Int64?, data: [Group]) {
        (self.environment, self.bundleID, self.appAppleID, self.data) = (environment, bundleID, appAppleID, data)
    }
}

/// `GET /inApps/v2/history/{transactionId}` — Get Transaction History (version 2).
public struct HistoryResponse: Sendable, Hashable, Codable {
    public var revision: String?
    public var hasMore: Bool
    public var bundleID: String?
    public var appAppleID: Int64?
    public var environment: String?
    public var signedTransactions: [String]
    enum CodingKeys: String, CodingKey {
        case revision, hasMore, environment, signedTransactions
        case bundleID = "bundleId"
        case appAppleID = "appAppleId"
    }
    public init(
        revision: String?,
        hasMore: Bool,
        bundleID: String?,
        appAppleID: Int64?,
        environment: String?,
        signedTransactions: [String]
    ) {
        (self.revision, self.hasMore, self.bundleID, self.appAppleID, self.environment, self.signedTransactions) =
            (revision, hasMore, bundleID, appAppleID, environment, signedTransactions)
    }
}

/// `GET /inApps/v1/transactions/{transactionId}` — Get Transaction Info.
public struct TransactionInfoResponse: Sendable, Hashable, Codable {
    public var signedTransactionInfo: String
    public init(signedTransactionInfo: String) { self.signedTransactionInfo = signedTransactionInfo }
}

/// The body of `POST /inApps/v1/notifications/history` — Get Notification History.
public struct NotificationHistoryRequest: Sendable, Hashable, Codable {
    public var startDate: Int64
    public var endDate: Int64
    public var notificationType: String?
    public var notificationSubtype: String?
    public var onlyFailures: Bool?
    public var transactionID: String?
    enum CodingKeys: String, CodingKey {
        case startDate, endDate, notificationType, notificationSubtype, onlyFailures
        case transactionID = "transactionId"
    }
    public init(
        startDate: Int64,
        endDate: Int64,
        notificationType: String? = nil,
        notificationSubtype: String? = nil,
        onlyFailures: Bool? = nil,
        transactionID: String? = nil
    ) {
        (
            self.startDate, self.endDate, self.notificationType, self.notificationSubtype, self.onlyFailures,
            self.transactionID
        ) =
            (startDate, endDate, notificationType, notificationSubtype, onlyFailures, transactionID)
    }
}

/// One delivery attempt of a notification, as Apple reports it.
public struct SendAttempt: Sendable, Hashable, Codable {
    public var attemptDate: Int64
    /// `SUCCESS`, `TIMED_OUT`, `SSL_ISSUE`, `CIRCULAR_REDIRECT`, `NO_RESPONSE`, `SOCKET_ISSUE`, `UNSUPPORTED_CHARSET`,
    /// `INVALID_RESPONSE`, `PREMATURE_CLOSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `OTHER`.
    public var sendAttemptResult: String
    public init(attemptDate: Int64, sendAttemptResult: String) {
        (self.attemptDate, self.sendAttemptResult) = (attemptDate, sendAttemptResult)
    }
}

public struct NotificationHistoryResponse: Sendable, Hashable, Codable {
    public struct Item: Sendable, Hashable, Codable {
        public var signedPayload: String
        public var sendAttempts: [SendAttempt]
        public init(signedPayload: String, sendAttempts: [SendAttempt]) {
            (self.signedPayload, self.sendAttempts) = (signedPayload, sendAttempts)
        }
    }
    public var paginationToken: String?
    public var hasMore: Bool
    public var notificationHistory: [Item]
    public init(paginationToken: String?, hasMore: Bool, notificationHistory: [Item]) {
        (self.paginationToken, self.hasMore, self.notificationHistory) = (paginationToken, hasMore, notificationHistory)
    }
}

/// `POST /inApps/v1/notifications/test` — Request a Test Notification.
public struct SendTestNotificationResponse: Sendable, Hashable, Codable {
    public var testNotificationToken: String
    public init(testNotificationToken: String) { self.testNotificationToken = testNotificationToken }
}

/// `GET /inApps/v1/notifications/test/{testNotificationToken}` — Get Test Notification Status.
public struct CheckTestNotificationResponse: Sendable, Hashable, Codable {
    public var signedPayload: String
    public var sendAttempts: [SendAttempt]
    public init(signedPayload: String, sendAttempts: [SendAttempt]) {
        (self.signedPayload, self.sendAttempts) = (signedPayload, sendAttempts)
    }
}

/// Apple's error body: `{"errorCode": 4040010, "errorMessage": "Transaction id not found."}`.
public struct AppStoreAPIErrorBody: Sendable, Hashable, Codable {
    public var errorCode: Int64
    public var errorMessage: String
    public init(errorCode: Int64, errorMessage: String) {
        (self.errorCode, self.errorMessage) = (errorCode, errorMessage)
    }
}
