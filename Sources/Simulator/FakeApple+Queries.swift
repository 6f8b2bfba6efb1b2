internal import Canonical
internal import WireJSON

/// A request the App Store Server API refuses, as Apple answers it: HTTP status, `errorCode`, `errorMessage`.
struct AppleAPIError: Error {
    let status: Int
    let code: Int64
    let message: String

    init(_ status: Int, _ code: Int64, _ message: String) {
        (self.status, self.code, self.message) = (status, code, message)
    }

    // Apple's codes (App Store Server API, "Error codes"), the ones the fake's endpoints answer.
    static let generalBadRequest = Self(400, 4_000_000, "Invalid request.")
    static let invalidRevision = Self(400, 4_000_005, "Invalid request revision.")
    static let invalidTransactionID = Self(400, 4_000_006, "Invalid transaction id.")
    static let startDateTooFarInPast = Self(
        400,
        4_000_012,
        "Invalid request. The start date is earlier than the allowed start date."
    )
    static let startDateAfterEndDate = Self(
        400,
        4_000_013,
        "Invalid request. The end date precedes the start date or the dates are the same."
    )
    static let invalidPaginationToken = Self(400, 4_000_014, "Invalid request. The pagination token is invalid.")
    static let invalidStartDate = Self(
        400,
        4_000_015,
        "Invalid request. The start date is not a timestamp value represented in milliseconds."
    )
    static let invalidEndDate = Self(
        400,
        4_000_016,
        "Invalid request. The end date is not a timestamp value represented in milliseconds."
    )
    static let invalidNotificationType = Self(
        400,
        4_000_018,
        "Invalid request. The notification type or subtype is invalid."
    )
    static let multipleFiltersSupplied = Self(400, 4_000_019, "Invalid request. Too many filters were supplied.")
    static let invalidSort = Self(400, 4_000_021, "Invalid request. The sort parameter is invalid.")
    static let invalidProductType = Self(400, 4_000_022, "Invalid request. The product type parameter is invalid.")
    static let invalidProductID = Self(400, 4_000_023, "Invalid request. The product id parameter is invalid.")
    static let invalidSubscriptionGroupIdentifier = Self(
        400,
        4_000_024,
        "Invalid request. The subscription group identifier is invalid."
    )
    static let invalidInAppOwnershipType = Self(
        400,
        4_000_026,
        "Invalid request. The in-app ownership type parameter is invalid."
    )
    static let invalidRevoked = Self(400, 4_000_030, "Invalid request. The revoked parameter is invalid.")
    static let invalidStatus = Self(400, 4_000_031, "Invalid request. The status parameter is invalid.")

    /// A page position (`revision`, `paginationToken`): absent is the first page; anything but what the fake hands
    /// out (a count of items already returned) is `invalid`.
    static func offset(_ token: String?, else invalid: AppleAPIError) throws(AppleAPIError) -> Int {
        guard let token else { return 0 }
        guard let n = Int(token), n >= 0 else { throw invalid }
        return n
    }
}

extension FakeApple {
    /// Get All Subscription Statuses' `status` filter (repeatable, `1`…`5`: active, expired, billing retry, grace
    /// period, revoked); nil when absent.
    static func statusFilter(_ r: FakeAppleRequest) throws(AppleAPIError) -> Set<Int>? {
        let values = r.values("status")
        guard !values.isEmpty else { return nil }
        var statuses = Set<Int>()
        for value in values {
            guard let status = Int(value), (1...5).contains(status) else { throw .invalidStatus }
            statuses.insert(status)
        }
        return statuses
    }
}

/// The query of Get Transaction History (`GET /inApps/v2/history/{id}`, and the deprecated v1 path), checked as Apple
/// checks it. Filters combine: a transaction is returned when it passes every one given.
struct TransactionHistoryQuery {
    var offset = 0
    /// Purchase dates in `[startDate, endDate)`, either end open.
    var startDate: Int64?
    var endDate: Int64?
    var productIDs: Set<String> = []
    var productTypes: Set<String> = []
    var descending = false
    var groupIDs: Set<String> = []
    var ownership: String?
    var revoked: Bool?
    /// v1 leaves out the consumables the app has finished: for the simulated app, every consumable not refunded.
    var hidesFinishedConsumables = false

    static let productTypeNames: Set<String> = ["AUTO_RENEWABLE", "NON_RENEWABLE", "CONSUMABLE", "NON_CONSUMABLE"]

    init(_ r: FakeAppleRequest, version: String) throws(AppleAPIError) {
        offset = try AppleAPIError.offset(r.value("revision"), else: .invalidRevision)
        startDate = try Self.date(r.value("startDate"), else: .invalidStartDate)
        endDate = try Self.date(r.value("endDate"), else: .invalidEndDate)
        if let start = startDate, let end = endDate, end <= start { throw .startDateAfterEndDate }
        productIDs = Set(r.values("productId"))
        if productIDs.contains("") { throw .invalidProductID }
        productTypes = Set(r.values("productType"))
        guard productTypes.isSubset(of: Self.productTypeNames) else { throw .invalidProductType }
        switch r.value("sort") {
        case nil, "ASCENDING": descending = false
        case "DESCENDING": descending = true
        default: throw .invalidSort
        }
        groupIDs = Set(r.values("subscriptionGroupIdentifier"))
        if groupIDs.contains("") { throw .invalidSubscriptionGroupIdentifier }
        ownership = r.value("inAppOwnershipType")
        // `ASSIGNED` (a group member's) is Apple's third ownership; its pages do not say the filter takes it, the fake
        // does.
        if let ownership, !["FAMILY_SHARED", "PURCHASED", "ASSIGNED"].contains(ownership) {
            throw .invalidInAppOwnershipType
        }
        // Apple's Python library sends Python's spelling (`True` / `False`); Apple takes it.
        switch r.value("revoked")?.lowercased() {
        case nil: revoked = nil
        case "true": revoked = true
        case "false": revoked = false
        default: throw .invalidRevoked
        }
        hidesFinishedConsumables = version == "v1"
    }

    /// A date in epoch milliseconds; nil when absent.
    static func date(_ text: String?, else invalid: AppleAPIError) throws(AppleAPIError) -> Int64? {
        guard let text else { return nil }
        guard let ms = Int64(text), ms >= 0 else { throw invalid }
        return ms
    }

    /// Apple's `productType` of a simulated product (nil for one the catalogue does not know).
    static func productType(_ product: SimProduct?) -> String? {
        switch product?.kind {
        case .autoRenewable?: "AUTO_RENEWABLE"
        case .consumable?: "CONSUMABLE"
        case .nonConsumable?: "NON_CONSUMABLE"
        case nil: nil
        }
    }

    func matches(_ t: SimTransaction) -> Bool {
        let product = Catalogue.product(t.productID)
        let type = Self.productType(product)
        let isRevoked = t.revocationDate != nil
        if hidesFinishedConsumables, type == "CONSUMABLE", !isRevoked { return false }
        if let startDate, t.purchaseDate < startDate { return false }
        if let endDate, t.purchaseDate >= endDate { return false }
        if !productIDs.isEmpty, !productIDs.contains(t.productID) { return false }
        if !productTypes.isEmpty, !(type.map(productTypes.contains) ?? false) { return false }
        if !groupIDs.isEmpty, !(product?.kind == .autoRenewable && groupIDs.contains(Catalogue.groupID)) {
            return false
        }
        if let ownership, ownership != t.ownership { return false }
        if let revoked, revoked != isRevoked { return false }
        return true
    }
}

/// The body of Get Notification History (`NotificationHistoryRequest`) and its `paginationToken`, checked as Apple
/// checks them: `startDate` and `endDate` required (an `endDate` in the future means now), `notificationType` and
/// `notificationSubtype` a valid pair, `transactionId` (or the older `originalTransactionId`) not together with a
/// type, `onlyFailures` a Boolean. A member sent as `null` counts as absent, as Apple's Java client sends them.
struct NotificationHistoryQuery {
    var offset: Int
    var startDate: Int64
    var endDate: Int64
    var notificationType: String?
    var notificationSubtype: String?
    var transactionID: String?
    var onlyFailures: Bool

    /// The subtypes each V2 notification type comes with (Apple: App Store Server Notifications, `notificationType`).
    /// Group subscriptions: `SEATS` comes with `REFUND`, `UNCLAIM_SEATS` is a type; Apple's pages do not pair
    /// `INCREASE_QUANTITY` and `DECREASE_QUANTITY` with a type, and the simulator sends them with
    /// `DID_CHANGE_RENEWAL_PREF` (docs/simulator.md, "Group subscriptions").
    static let subtypes: [String: Set<String>] = [
        "SUBSCRIBED": ["INITIAL_BUY", "RESUBSCRIBE"],
        "DID_CHANGE_RENEWAL_PREF": ["UPGRADE", "DOWNGRADE", "INCREASE_QUANTITY", "DECREASE_QUANTITY"],
        "DID_CHANGE_RENEWAL_STATUS": ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"],
        "OFFER_REDEEMED": ["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE"], "DID_RENEW": ["BILLING_RECOVERY"],
        "EXPIRED": ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"],
        "DID_FAIL_TO_RENEW": ["GRACE_PERIOD"],
        "GRACE_PERIOD_EXPIRED": [], "PRICE_INCREASE": ["PENDING", "ACCEPTED"], "REFUND": ["SEATS"],
        "REFUND_DECLINED": [],
        "REFUND_REVERSED": [], "CONSUMPTION_REQUEST": [], "RENEWAL_EXTENDED": [],
        "RENEWAL_EXTENSION": ["SUMMARY", "FAILURE"],
        "REVOKE": [], "TEST": [], "EXTERNAL_PURCHASE_TOKEN": ["UNREPORTED"], "ONE_TIME_CHARGE": [],
        "RESCIND_CONSENT": [],
        "METADATA_UPDATE": [], "MIGRATION": [], "PRICE_CHANGE": [], "UNCLAIM_SEATS": [],
    ]

    /// `now` bounds `endDate`; with `retentionDays`, an older `startDate` is refused.
    init(_ r: FakeAppleRequest, now: Int64, retentionDays: Int?) throws(AppleAPIError) {
        guard case .object(let body)? = try? JSONParser.parse(r.body) else { throw .generalBadRequest }
        func member(_ name: String) -> JSONValue? { body[name].flatMap { $0.isNull ? nil : $0 } }
        guard let start = member("startDate")?.int64Value, start >= 0 else { throw .invalidStartDate }
        guard let end = member("endDate")?.int64Value, end >= 0 else { throw .invalidEndDate }
        (startDate, endDate) = (start, min(end, now))
        guard startDate < endDate else { throw .startDateAfterEndDate }
        if let days = retentionDays {
            let (window, overflow) = Int64(max(0, days)).multipliedReportingOverflow(by: 86_400_000)
            if !overflow, startDate < now.clampedSubtracting(window) { throw .startDateTooFarInPast }
        }
        if let type = member("notificationType") {
            guard let name = type.stringValue, Self.subtypes[name] != nil else { throw .invalidNotificationType }
            notificationType = name
        }
        if let subtype = member("notificationSubtype") {
            guard let name = subtype.stringValue, let type = notificationType,
                Self.subtypes[type]?.contains(name) == true
            else {
                throw .invalidNotificationType
            }
            notificationSubtype = name
        }
        if let id = member("transactionId") ?? member("originalTransactionId") {
            guard let text = id.stringValue, !text.isEmpty else { throw .invalidTransactionID }
            guard notificationType == nil else { throw .multipleFiltersSupplied }
            transactionID = text
        }
        if let flag = member("onlyFailures") {
            guard let value = flag.boolValue else { throw .generalBadRequest }
            onlyFailures = value
        } else {
            onlyFailures = false
        }
        offset = try AppleAPIError.offset(r.value("paginationToken"), else: .invalidPaginationToken)
    }

    /// Whether a sent notification is in the window and passes the type filters; `onlyFailures` keeps the ones whose
    /// last delivery did not succeed (or that were never delivered).
    func matches(_ n: SimSentNotification) -> Bool {
        (startDate..<endDate).contains(n.signedDate)
            && (notificationType == nil || notificationType == n.notificationType)
            && (notificationSubtype == nil || notificationSubtype == n.subtype)
            && (!onlyFailures || n.sendAttempts.last?.sendAttemptResult != "SUCCESS")
    }
}
