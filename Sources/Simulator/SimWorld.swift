internal import Canonical
internal import FoundationEssentials
public import V2Adapter

#if canImport(Glibc)
import Glibc
#endif

/// A product of the simulated app.
public struct SimProduct: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case autoRenewable, consumable, nonConsumable }
    public var id: String
    public var kind: Kind
    /// Rank within the subscription group: higher is a better tier (upgrades are immediate, downgrades wait).
    public var level: Int
    /// Length in simulated months (0 for one-time products).
    public var months: Int
    public var priceMilli: Int64
    /// A group (multiseat) product's price per seat, tier by tier (nil: one price, ``priceMilli``, for every seat).
    public var seatPricing: [SimSeatPricing]?

    /// The price tiers of `count` seats bought when `already` seats of the period are paid for — a seat addition's
    /// seats are priced from where the period's seats end: one tier per step of ``seatPricing`` they reach, in the
    /// schedule's order (docs/simulator.md, "Group subscriptions").
    public func seatTiers(_ count: Int, after already: Int = 0) -> [SimSeatTier] {
        guard count > 0 else { return [] }
        guard let schedule = seatPricing, let last = schedule.last else {
            return [SimSeatTier(priceMilli: priceMilli, quantity: count)]
        }
        let (first, end) = (max(0, already), max(0, already).clampedAdding(count))
        var tiers: [SimSeatTier] = []
        var floor = 0
        for step in schedule {
            let cap = step.seats.map { floor.clampedAdding(max(0, $0)) } ?? Int.max
            let inStep = min(end, cap) - max(first, floor)
            if inStep > 0 { tiers.append(SimSeatTier(priceMilli: step.priceMilli, quantity: inStep)) }
            floor = cap
            if cap >= end { break }
        }
        // A schedule whose last step is bounded: the seats beyond it at the last step's price.
        if floor < end {
            let beyond = end - max(first, floor)
            if let i = tiers.indices.last, tiers[i].priceMilli == last.priceMilli {
                tiers[i].quantity += beyond
            } else {
                tiers.append(SimSeatTier(priceMilli: last.priceMilli, quantity: beyond))
            }
        }
        return tiers
    }
}

/// One step of a group product's per-seat pricing: up to `seats` seats (nil: every seat beyond the earlier steps) at
/// `priceMilli` each.
public struct SimSeatPricing: Sendable, Hashable, Codable {
    public var seats: Int?
    public var priceMilli: Int64
    public init(seats: Int?, priceMilli: Int64) { (self.seats, self.priceMilli) = (seats, priceMilli) }
}

/// One price tier of a group transaction or renewal (Apple's `MultiSeatPriceTier`): `quantity` seats at `priceMilli`
/// each, in milli-units of the transaction's currency.
public struct SimSeatTier: Sendable, Hashable, Codable {
    public var priceMilli: Int64
    public var quantity: Int
    public init(priceMilli: Int64, quantity: Int) { (self.priceMilli, self.quantity) = (priceMilli, quantity) }

    /// The average price of a seat over `tiers` (what Apple's `price` says of a multiseat purchase); nil without seats.
    public static func average(_ tiers: [SimSeatTier]) -> Int64? {
        let seats = tiers.reduce(0) { $0.clampedAdding(max(0, $1.quantity)) }
        guard seats > 0 else { return nil }
        let total = tiers.reduce(Int64(0)) {
            $0.clampedAdding($1.priceMilli.clampedMultiplied(by: Int64(max(0, $1.quantity))))
        }
        return total / Int64(seats)
    }
}

/// One transaction as the App Store records it.
public struct SimTransaction: Sendable, Hashable, Codable {
    public var transactionID: String
    public var originalTransactionID: String
    public var webOrderLineItemID: String?
    public var productID: String
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64
    public var expiresDate: Int64?
    public var offerType: Int?
    public var offerID: String?
    public var offerDiscountType: String?
    public var isTrial = false
    public var isIntro = false
    public var revocationDate: Int64?
    public var revocationReason: Int?
    public var revocationType: String?
    public var isUpgraded = false
    public var familyShared = false
    /// The price; for a group's transaction the average over its seats (``seatTiers`` say what each seat cost).
    public var priceMilli: Int64
    public var renewal = false

    // Group (multiseat) subscriptions (docs/simulator.md, "Group subscriptions"); nil on every other transaction.
    /// The seats this transaction covers: a seat addition's only the seats added; a member's the group's.
    public var seats: Int?
    public var seatTiers: [SimSeatTier]?
    /// The seats a seat refund revoked from this transaction (the purchaser's only).
    public var revokedSeats: Int?
    /// Who hosts the group's invitations: `APPLE` or `DEVELOPER`.
    public var invitationManagement: String?
    /// `SEAT_ADDITION`: one of several transactions that together represent the period.
    public var additionalTransactionReason: String?
    /// A member of an Apple-hosted group (Apple's `ASSIGNED` ownership): the purchaser's original transaction id.
    public var assignedBy: String?

    /// Apple's `inAppOwnershipType`: `ASSIGNED`, `FAMILY_SHARED` or `PURCHASED`.
    public var ownership: String { assignedBy != nil ? "ASSIGNED" : familyShared ? "FAMILY_SHARED" : "PURCHASED" }

    /// A group purchaser's transaction (a member's repeats the group's seats and is not one).
    public var isGroupPurchasers: Bool { seats != nil && assignedBy == nil }

    /// The seats it still covers: its seats less those refunded, none once it is revoked.
    public var seatsLeft: Int {
        revocationDate != nil ? 0 : max(0, (seats ?? 0).clampedSubtracting(revokedSeats ?? 0))
    }
}

/// What happens at the next renewal.
public struct SimRenewal: Sendable, Hashable, Codable {
    public var autoRenew = true
    public var autoRenewProductID: String
    public var expirationIntent: Int?
    public var inBillingRetry = false
    public var gracePeriodExpiresDate: Int64?
    /// 0 = not answered, 1 = accepted; nil when no price increase is pending.
    public var priceIncreaseStatus: Int?
    /// A group subscription: the seats at the next renewal (Apple's `renewalQuantity`); nil for any other.
    public var renewalSeats: Int?
}

/// One subscription (or one-time purchase) of the simulated customer.
public struct SimSubscription: Sendable, Hashable, Codable {
    public var bundleID: String
    public var originalTransactionID: String
    public var appAccountToken: String
    public var transactions: [SimTransaction]
    public var renewal: SimRenewal?
    /// An opaque stand-in for the subscription's receipt (`sim-receipt:<id>`, base64), what the simulator's V1 bodies
    /// carried before they carried real receipts; the fake verifyReceipt still maps it back here, so journals and
    /// state folders of those days keep working.
    public var receiptToken: String
    /// The last change to auto-renew (V1 `auto_renew_status_change_date_ms`).
    public var autoRenewChangedAt: Int64?
    /// SHA-256 (hex) of the app's shared secret: the fake verifyReceipt answers 21004 to any other password. The
    /// secret itself is never stored.
    public var sharedSecretDigest: String?

    public var latest: SimTransaction? {
        transactions.max { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }
    }

    /// A group purchaser's current period: the purchaser's transactions that end when the latest ends, oldest first
    /// (one, or several once seats were added); empty for any other subscription.
    public var groupPeriod: [SimTransaction] {
        guard let latest, latest.isGroupPurchasers, let end = latest.expiresDate else { return [] }
        return transactions.filter { $0.isGroupPurchasers && $0.expiresDate == end }
    }

    /// The group's seats in its current period: Σ seats − Σ refunded over the period's transactions not revoked.
    public var groupSeats: Int { groupPeriod.reduce(0) { $0.clampedAdding($1.seatsLeft) } }
}

/// A V2 notification the simulated App Store sent (for Get Notification History).
public struct SimSentNotification: Sendable, Hashable, Codable {
    public var notificationUUID: String
    /// The app it is about: Get Notification History and the test status answer only that app's key.
    public var bundleID: String
    public var signedDate: Int64
    public var notificationType: String
    public var subtype: String?
    public var originalTransactionID: String?
    public var signedPayload: String
    /// How delivering it went (Apple's `sendAttemptResult` values), oldest first.
    public var sendAttempts: [SendAttempt] = []

    enum CodingKeys: String, CodingKey {
        case notificationUUID, bundleID, signedDate, notificationType, subtype, originalTransactionID, signedPayload,
            sendAttempts
    }

    /// Tolerates state written before a member existed (an older simulator's `sim-state.json`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationUUID = try c.decode(String.self, forKey: .notificationUUID)
        bundleID = try c.decodeIfPresent(String.self, forKey: .bundleID) ?? ""
        signedDate = try c.decode(Int64.self, forKey: .signedDate)
        notificationType = try c.decode(String.self, forKey: .notificationType)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        originalTransactionID = try c.decodeIfPresent(String.self, forKey: .originalTransactionID)
        signedPayload = try c.decode(String.self, forKey: .signedPayload)
        sendAttempts = try c.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts) ?? []
    }

    public init(
        notificationUUID: String,
        bundleID: String,
        signedDate: Int64,
        notificationType: String,
        subtype: String?,
        originalTransactionID: String?,
        signedPayload: String
    ) {
        (
            self.notificationUUID, self.bundleID, self.signedDate, self.notificationType, self.subtype,
            self.originalTransactionID,
            self.signedPayload
        ) = (notificationUUID, bundleID, signedDate, notificationType, subtype, originalTransactionID, signedPayload)
    }
}

/// One Send Consumption Information request the fake App Store Server API accepted (`202`): what the developer told
/// Apple about a purchase whose customer asked for a refund.
public struct SimConsumptionInfo: Sendable, Hashable, Codable {
    /// The transaction id of the request's path.
    public var transactionID: String
    /// The app, from the bearer token's `bid`.
    public var bundleID: String
    /// `Sandbox`: the fake's App Store Server API is the sandbox one.
    public var environment: String
    public var customerConsented: Bool
    /// Apple's `deliveryStatus` (`DELIVERED`, `UNDELIVERED_…`).
    public var deliveryStatus: String
    public var sampleContentProvided: Bool
    /// Milliunits of a percent (100000: all of it); nil when not sent.
    public var consumptionPercentage: Int?
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`; nil when not sent.
    public var refundPreference: String?
    /// When the fake received it (ms, the fake's clock).
    public var receivedAt: Int64
    /// How many times consumption information about this transaction was accepted, this one included (1: the first).
    public var count: Int

    public init(
        transactionID: String,
        bundleID: String,
        environment: String,
        customerConsented: Bool,
        deliveryStatus: String,
        sampleContentProvided: Bool,
        consumptionPercentage: Int?,
        refundPreference: String?,
        receivedAt: Int64,
        count: Int
    ) {
        (self.transactionID, self.bundleID, self.environment) = (transactionID, bundleID, environment)
        (self.customerConsented, self.deliveryStatus, self.sampleContentProvided) = (
            customerConsented, deliveryStatus, sampleContentProvided
        )
        (self.consumptionPercentage, self.refundPreference) = (consumptionPercentage, refundPreference)
        (self.receivedAt, self.count) = (receivedAt, count)
    }
}

/// The simulated App Store: every subscription, what it sent, and faults to inject into its fake endpoints.
public struct SimWorld: Sendable, Codable {
    public var nextID: Int64 = 1
    public var subscriptions: [String: SimSubscription] = [:]
    public var notifications: [SimSentNotification] = []
    public var testNotifications: [String: SimSentNotification] = [:]
    /// verifyReceipt statuses to answer instead of the real one, first in first out (tests: 21005, 21002, …).
    public var verifyReceiptFaults: [Int] = []
    /// HTTP statuses for the App Store Server API to answer instead, first in first out (tests: 429, 500), each with
    /// Apple's error body for it (``FakeApple``); `POST /fake/api/faults` queues them from outside.
    public var apiFaults: [Int] = []
    /// The `Retry-After` (seconds) a queued `429` carries; nil: 1, as Apple sends it.
    public var apiFaultRetryAfterSeconds: Int?
    /// The consumption information the App Store Server API accepted (Send Consumption Information), oldest first.
    public var consumptionInfo: [SimConsumptionInfo] = []
    /// Deliberate inconsistencies of the fake verifyReceipt, to show what the compare ledger catches.
    public var v1Skew = V1Skew()
    /// The App Store Server API's rate limit per app (the token's `bid`); nil: none (the default). Past it the fake
    /// answers 429 with `Retry-After` (``FakeApple``). `simulate serve-apple --rate-limit` writes it.
    public var apiRateLimit: APIRateLimit?
    /// Apple's own rate limits of the App Store Server API, per app, endpoint and environment (``AppleRateLimits``);
    /// nil: none (the default). Past them the fake answers Apple's 429, `Retry-After` a UNIX time in milliseconds.
    /// `POST /fake/api/apple-rate-limits?set=` writes it.
    public var appleRateLimits: AppleRateLimits?
    /// How many days back Get Notification History reaches (Apple: 30 in sandbox, 180 in production); an older
    /// `startDate` is answered `4000012`. nil: no limit (the default).
    public var notificationHistoryDays: Int?
    /// What the simulated App Store Connect holds: per app the notification URL and version of each environment,
    /// the late-honoured PATCH, queued failures (``FakeAppStoreConnect``).
    public var appStoreConnect = SimAppStoreConnect()

    enum CodingKeys: String, CodingKey {
        case nextID, subscriptions, notifications, testNotifications, verifyReceiptFaults, apiFaults, v1Skew,
            apiRateLimit, appleRateLimits
        case notificationHistoryDays, appStoreConnect, apiFaultRetryAfterSeconds, consumptionInfo
    }

    /// Tolerates state written before a member existed (an older simulator's `sim-state.json`): a missing member
    /// keeps its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        nextID = try c.decodeIfPresent(Int64.self, forKey: .nextID) ?? 1
        subscriptions = try c.decodeIfPresent([String: SimSubscription].self, forKey: .subscriptions) ?? [:]
        notifications = try c.decodeIfPresent([SimSentNotification].self, forKey: .notifications) ?? []
        testNotifications = try c.decodeIfPresent([String: SimSentNotification].self, forKey: .testNotifications) ?? [:]
        verifyReceiptFaults = try c.decodeIfPresent([Int].self, forKey: .verifyReceiptFaults) ?? []
        apiFaults = try c.decodeIfPresent([Int].self, forKey: .apiFaults) ?? []
        v1Skew = try c.decodeIfPresent(V1Skew.self, forKey: .v1Skew) ?? V1Skew()
        apiRateLimit = try c.decodeIfPresent(APIRateLimit.self, forKey: .apiRateLimit)
        appleRateLimits = try c.decodeIfPresent(AppleRateLimits.self, forKey: .appleRateLimits)
        notificationHistoryDays = try c.decodeIfPresent(Int.self, forKey: .notificationHistoryDays)
        appStoreConnect =
            try c.decodeIfPresent(SimAppStoreConnect.self, forKey: .appStoreConnect) ?? SimAppStoreConnect()
        apiFaultRetryAfterSeconds = try c.decodeIfPresent(Int.self, forKey: .apiFaultRetryAfterSeconds)
        consumptionInfo = try c.decodeIfPresent([SimConsumptionInfo].self, forKey: .consumptionInfo) ?? []
    }

    /// At most ``requests`` accepted App Store Server API requests per app within any ``windowSeconds``.
    public struct APIRateLimit: Sendable, Codable, Hashable {
        public var requests: Int
        public var windowSeconds: Int64
        public init(requests: Int, windowSeconds: Int64) {
            (self.requests, self.windowSeconds) = (requests, windowSeconds)
        }
    }

    public struct V1Skew: Sendable, Codable, Hashable {
        /// Added to every `expires_date` verifyReceipt reports.
        public var expiresOffsetMillis: Int64 = 0
        /// verifyReceipt does not report refunds and revocations (no `cancellation_date`).
        public var hideRevocations = false
        public init() {}
    }

    public init() {}

    /// A fresh 16-digit id, the shape Apple's sandbox uses. `nextID` is read from the state file: past 15 digits
    /// the id just grows longer, and the counter stops at `Int64.max` instead of overflowing.
    public mutating func newID() -> String {
        defer { nextID = nextID.clampedAdding(1) }
        let digits = String(nextID)
        return "2" + String(repeating: "0", count: max(0, 15 - digits.count)) + digits
    }

    public func subscription(forReceipt token: String) -> SimSubscription? {
        subscriptions.values.first { $0.receiptToken == token }
    }

    /// The consumption information accepted about `transactionID` (every transaction's when nil), oldest first: its
    /// `count` says how often it was sent, `last` what was said last.
    public func consumptionInfo(transactionID: String?) -> [SimConsumptionInfo] {
        guard let transactionID else { return consumptionInfo }
        return consumptionInfo.filter { $0.transactionID == transactionID }
    }

    /// The subscription a transaction id belongs to (original or any of its transactions).
    public func subscription(forTransaction id: String) -> SimSubscription? {
        subscriptions[id] ?? subscriptions.values.first { $0.transactions.contains { $0.transactionID == id } }
    }
}

/// The world, kept as JSON in the PKI folder so `simulate lifecycle` runs and `simulate serve-apple` share it.
/// Read-modify-write happens under an exclusive `flock`, and the file is replaced atomically.
public struct SimStateStore: Sendable {
    public let path: String
    public init(folder: String) { path = folder + "/sim-state.json" }

    public func read() throws -> SimWorld {
        try locked { try load() }
    }

    @discardableResult
    public func update<T>(_ body: (inout SimWorld) throws -> T) throws -> T {
        try locked {
            var world = try load()
            let result = try body(&world)
            let data = try JSONEncoder().encode(world)
            let temp = path + ".tmp"
            guard FileManager.default.createFile(atPath: temp, contents: data) else {
                throw SimulatorError("state_unwritable", "cannot write \(temp)")
            }
            guard rename(temp, path) == 0 else { throw SimulatorError("state_unwritable", "cannot replace \(path)") }
            return result
        }
    }

    /// The consumption information the fake App Store Server API accepted about `transactionID` (every transaction's
    /// when nil), oldest first (``SimWorld/consumptionInfo(transactionID:)``).
    public func consumptionInfo(transactionID: String? = nil) throws -> [SimConsumptionInfo] {
        try read().consumptionInfo(transactionID: transactionID)
    }

    private func load() throws -> SimWorld {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return SimWorld() }
        return try JSONDecoder().decode(SimWorld.self, from: data)
    }

    private func locked<T>(_ body: () throws -> T) throws -> T {
        let fd = open(path + ".lock", O_CREAT | O_RDWR, 0o600)
        guard fd >= 0 else { throw SimulatorError("state_unwritable", "cannot open \(path).lock") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw SimulatorError("state_locked", "cannot lock \(path)") }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}
