internal import AppStoreConnect
internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import Receipts
internal import V1Adapter
internal import V2Adapter
internal import WireJSON

/// One request to the fake Apple, whatever serves it.
public struct FakeAppleRequest: Sendable {
    /// One query member as sent (decoded): a name sent twice is two items.
    public struct QueryItem: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) { (self.name, self.value) = (name, value) }
    }

    public var method: String
    public var path: String
    /// Every query member in the order sent; Apple's clients repeat a name for a list (`status=1&status=3`).
    public var queryItems: [QueryItem]
    public var authorization: String?
    public var body: [UInt8]

    /// A request whose query names each member once.
    public init(
        method: String,
        path: String,
        query: [String: String] = [:],
        authorization: String? = nil,
        body: [UInt8] = []
    ) {
        self.init(
            method: method,
            path: path,
            queryItems: query.sorted { $0.key < $1.key }.map { QueryItem($0.key, $0.value) },
            authorization: authorization,
            body: body
        )
    }

    public init(method: String, path: String, queryItems: [QueryItem], authorization: String? = nil, body: [UInt8] = [])
    {
        (self.method, self.path, self.queryItems, self.authorization, self.body) = (
            method, path, queryItems, authorization, body
        )
    }

    /// The first value of each query member.
    public var query: [String: String] {
        queryItems.reduce(into: [:]) { query, item in if query[item.name] == nil { query[item.name] = item.value } }
    }

    /// Every value sent for `name`, in order.
    public func values(_ name: String) -> [String] { queryItems.filter { $0.name == name }.map(\.value) }

    /// The first value sent for `name`.
    public func value(_ name: String) -> String? { queryItems.first { $0.name == name }?.value }
}

public struct FakeAppleResponse: Sendable {
    public var status: Int
    /// Header fields beyond `Content-Type` (which whoever serves the fake sets for a JSON body): `Retry-After` on a 429.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// How long whoever serves the fake waits before answering (an App Store Connect that is slow to answer).
    public var delayMillis = 0
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8]) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }

    /// The first header named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Apple's `verifyReceipt` and the App Store Server API endpoints the gateway uses, answered from the simulated
/// App Store's state (shared with `simulate lifecycle` runs through ``SimStateStore``):
///
/// - `POST /verifyReceipt` (production): every simulated receipt is a sandbox receipt, so `21007`, as Apple does;
///   `POST /sandbox/verifyReceipt`: status 0 with `receipt`, `latest_receipt_info` (newest first) and
///   `pending_renewal_info`; `21004` when the password is not the app's shared secret, `21002` for a malformed
///   request, `21003` for an unknown receipt; queued faults (``SimWorld/verifyReceiptFaults``) answer first.
/// - `/inApps/...` (sandbox) behind an ES256 bearer token checked like Apple does (``AppStoreAPIToken``, `iat`
///   optional as with Apple's own clients): Get All Subscription Statuses (`status` filter), Get Transaction Info, Get
///   Transaction History v1 and v2 (pages of 20; every filter Apple documents, `sort`), Get Notification History
///   (pages of 20; every filter of its body), Request a Test Notification and Get Test Notification Status. `401` for
///   a missing or bad token; past ``SimWorld/apiRateLimit`` `429` with `Retry-After`; queued faults
///   (``SimWorld/apiFaults``, `POST /fake/api/faults`) next (429 with Apple's `4290000` and `Retry-After`, 400
///   `4000000`, 404 `4040010`, others `5000000`); a filter Apple would refuse is answered `400` with Apple's error
///   code (`FakeApple+Queries.swift`). Send Consumption Information checks its body as Apple does and records what it
///   accepts (`FakeApple+Consumption.swift`; `GET /fake/consumption` lists it). Request a Test Notification sends a V2 `TEST` notification to
///   the app's sandbox URL as App Store Connect holds it, when Apple effectively sends V2 there; when it sends V1
///   nothing is sent (there is no V1 test notification) and the status shows one attempt `OTHER`.
/// - `/v1/apps…` (App Store Connect API) and `/fake/asc/…` (its control endpoints): ``FakeAppStoreConnect``.
public struct FakeApple: Sendable {
    public let store: SimStateStore
    /// The fake App Store Connect: the apps' notification URLs and versions, which the fake's own sends follow.
    public let appStoreConnect: FakeAppStoreConnect
    let emitter: Emitter
    let apiKey: PublicKey
    /// Signs the receipts the fake issues and judges the ones it is sent (docs/simulator.md).
    let pki: SimulatorPKI
    let now: @Sendable () -> Int64
    /// Sends a test notification to `url`, the app's sandbox URL (nil: none is set), for whoever serves the fake;
    /// the result is recorded with ``SimStateStore/recordTestAttempt(token:result:at:)``.
    let deliverTest: (@Sendable (_ token: String, _ signedPayload: String, _ url: String?) -> Void)?
    /// Requests accepted per app, for ``SimWorld/apiRateLimit`` (in memory: a restarted fake starts afresh).
    let limiter = APIRateLimiter()
    /// Apple's rate limits (``SimWorld/appleRateLimits``) and the counts of `GET /fake/api/stats`.
    let appleLimiter = AppleRateLimiter()

    public static let pageSize = 20

    /// `deliverTest` gets each test notification sent, whatever the app's URL.
    public init(
        pki: SimulatorPKI,
        now: @escaping @Sendable () -> Int64,
        notifyURL: String? = nil,
        deliverTest: (@Sendable (_ token: String, _ signedPayload: String) -> Void)? = nil
    ) {
        var sendTest: (@Sendable (_ token: String, _ signedPayload: String, _ url: String?) -> Void)?
        if let deliverTest { sendTest = { token, payload, _ in deliverTest(token, payload) } }
        self.init(pki: pki, now: now, notifyURL: notifyURL, sendTest: sendTest)
    }

    /// - Parameters:
    ///   - notifyURL: where the fake sends notifications (`serve-apple --notify`): every app's URL until App Store
    ///     Connect sets another.
    ///   - sendTest: sends a test notification to the app's sandbox URL (nil when it has none).
    public init(
        pki: SimulatorPKI,
        now: @escaping @Sendable () -> Int64,
        notifyURL: String?,
        sendTest: (@Sendable (_ token: String, _ signedPayload: String, _ url: String?) -> Void)?
    ) {
        store = SimStateStore(folder: pki.folder)
        appStoreConnect = FakeAppStoreConnect(pki: pki, notifyURL: notifyURL, now: now)
        emitter = Emitter(pki: pki)
        apiKey = pki.apiKey.publicKey
        self.pki = pki
        self.now = now
        self.deliverTest = sendTest
    }

    public func handle(_ r: FakeAppleRequest) -> FakeAppleResponse {
        do {
            switch (r.method, r.path) {
            case ("POST", "/verifyReceipt"): return try verifyReceipt(r.body, sandbox: false)
            case ("POST", "/sandbox/verifyReceipt"): return try verifyReceipt(r.body, sandbox: true)
            case (_, "/verifyReceipt"), (_, "/sandbox/verifyReceipt"):
                return Self.receiptStatus(VerifyReceiptStatus.notPost)
            case ("GET", "/fake/receipt"): return try receiptControl(r)
            case (_, "/fake/consumption"): return try consumptionControl(r)
            case (_, "/fake/api/faults"): return try faultsControl(r)
            case (_, "/fake/api/stats"): return try statsControl(r)
            case (_, "/fake/api/apple-rate-limits"): return try appleRateLimitsControl(r)
            case (_, let path) where path.hasPrefix("/inApps/"): return try api(r)
            case (_, let path) where path == "/v1/apps" || path.hasPrefix("/v1/apps/") || path.hasPrefix("/fake/asc/"):
                return appStoreConnect.handle(r)
            default: return Self.apiError(404, 4_040_000, "Not found.")
            }
        } catch let refusal as AppleAPIError {
            return Self.apiError(refusal.status, refusal.code, refusal.message)
        } catch {
            return Self.apiError(500, 5_000_000, "An unknown error occurred.")
        }
    }

    // MARK: App receipts

    /// The app receipt of the subscription with `originalTransactionID` as its device holds it now, base64: signed by
    /// the simulator's receipt chain, what an app sends its backend (docs/simulator.md).
    public func receipt(originalTransactionID: String) throws -> String {
        let world = try store.read()
        guard let s = world.subscriptions[originalTransactionID] else {
            throw SimulatorError("unknown_subscription", "no simulated subscription \(originalTransactionID)")
        }
        return try pki.signedReceipt(s.appReceipt(createdAt: now()))
    }

    /// `GET /fake/receipt?original_transaction_id=ID`: `{"receipt_data": BASE64}`, the subscription's receipt now.
    func receiptControl(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        guard let otid = r.value("original_transaction_id"), !otid.isEmpty else {
            return FakeAppleResponse(status: 400, body: Array(#"{"error":"original_transaction_id is required"}"#.utf8))
        }
        do {
            let data = try receipt(originalTransactionID: otid)
            return FakeAppleResponse(
                status: 200,
                body: JSONValue.object(JSONObject([("receipt_data", .string(data))])).canonicalBytes()
            )
        } catch let e as SimulatorError {
            return FakeAppleResponse(
                status: 404,
                body: JSONValue.object(JSONObject([("error", .string(e.reason))])).canonicalBytes()
            )
        }
    }

    /// The subscription an app receipt the simulator signed is about (any of its purchases' original transaction
    /// ids); nil for a receipt that is not one, or not signed by the simulator's chain.
    func subscription(ofAppReceipt text: String, in world: SimWorld) throws -> SimSubscription? {
        guard let receipt = try? ReceiptReader.read(Array(text.utf8), trust: pki.receiptTrust), receipt.isAuthenticated,
            let purchases = receipt.app?.inApp
        else { return nil }
        return purchases.lazy.compactMap { $0.originalTransactionID ?? $0.transactionID }
            .compactMap { world.subscription(forTransaction: $0) }.first
    }

    // MARK: App Store Server API

    func api(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        guard let header = r.authorization, header.hasPrefix("Bearer ") else {
            return FakeAppleResponse(status: 401, body: [])
        }
        let token: AppStoreAPIToken
        let time = now()
        do {
            token = try AppStoreAPIToken.verify(String(header.dropFirst(7)), publicKey: apiKey, now: time / 1000)
        } catch {
            return FakeAppleResponse(status: 401, body: [])
        }
        // Apple matches the key id and issuer to the account's key as well.
        guard token.keyID == SimulatorPKI.apiKeyID, token.issuerID == SimulatorPKI.issuerID else {
            return FakeAppleResponse(status: 401, body: [])
        }
        let world = try store.read()
        let endpoint = AppleAPIEndpoint.of(method: r.method, path: r.path)
        let key = AppleRateLimiter.Key(
            bundleID: token.bundleID,
            endpoint: endpoint?.name ?? "other",
            environment: world.appleRateLimits?.environment ?? "sandbox"
        )
        if let limits = world.appleRateLimits, let endpoint,
            let until = appleLimiter.admit(key, endpoint: endpoint, limits: limits, at: time)
        {
            appleLimiter.record(key, status: 429, rateLimited: true)
            return Self.rateLimited(retryAfter: String(until))
        }
        let answer: FakeAppleResponse
        do {
            answer = try endpointAnswer(r, token: token, world: world, time: time)
        } catch let refusal as AppleAPIError {
            answer = Self.apiError(refusal.status, refusal.code, refusal.message)
        }
        appleLimiter.record(key, status: answer.status, rateLimited: false)
        return answer
    }

    /// Apple's `RateLimitExceededError`: HTTP 429, `{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}`.
    static func rateLimited(retryAfter: String) -> FakeAppleResponse {
        var limited = Self.apiError(429, 4_290_000, "Rate limit exceeded.")
        limited.headers.append((name: "Retry-After", value: retryAfter))
        return limited
    }

    /// The answer past Apple's rate limits: ``SimWorld/apiRateLimit``, a queued fault, then the endpoint itself.
    func endpointAnswer(
        _ r: FakeAppleRequest,
        token: AppStoreAPIToken,
        world: SimWorld,
        time: Int64
    ) throws -> FakeAppleResponse {
        if let limit = world.apiRateLimit, let wait = limiter.admit(token.bundleID, limit: limit, at: time) {
            return Self.rateLimited(retryAfter: String(wait))
        }
        if let fault = try store.popFault(\.apiFaults, seen: world) {
            return Self.faultAnswer(fault, retryAfterSeconds: world.apiFaultRetryAfterSeconds)
        }
        let parts = r.path.split(separator: "/").map(String.init)  // ["inApps", "v1", "subscriptions", id]
        switch (r.method, parts.dropFirst().joined(separator: "/")) {
        case ("GET", let p) where p.hasPrefix("v1/subscriptions/") && parts.count == 4:
            return try statuses(parts[3], bundleID: token.bundleID, only: try Self.statusFilter(r), in: world)
        case ("GET", let p) where p.hasPrefix("v1/transactions/") && parts.count == 4:
            guard let s = subscription(parts[3], bundleID: token.bundleID, in: world),
                let t = s.transactions.first(where: { $0.transactionID == parts[3] }) ?? s.latest
            else { return Self.apiError(404, 4_040_010, "Transaction id not found.") }
            return try Self.json(
                200,
                TransactionInfoResponse(signedTransactionInfo: try emitter.signedTransaction(s, t, at: time))
            )
        case ("GET", let p) where (p.hasPrefix("v2/history/") || p.hasPrefix("v1/history/")) && parts.count == 4:
            let query = try TransactionHistoryQuery(r, version: parts[1])
            return try history(parts[3], bundleID: token.bundleID, query: query, in: world)
        case ("POST", "v1/notifications/history"):
            let query = try NotificationHistoryQuery(r, now: time, retentionDays: world.notificationHistoryDays)
            return try notificationHistory(query, bundleID: token.bundleID, in: world)
        case ("PUT", let p) where p.hasPrefix("v2/transactions/consumption/") && parts.count == 5:
            return try sendConsumption(parts[4], bundleID: token.bundleID, body: r.body, in: world)
        case ("POST", "v1/notifications/test"):
            return try requestTest(bundleID: token.bundleID)
        case ("GET", let p) where p.hasPrefix("v1/notifications/test/") && parts.count == 5:
            guard let sent = world.testNotifications[parts[4]], sent.bundleID == token.bundleID else {
                return Self.apiError(404, 4_040_008, "Test notification not found.")
            }
            return try Self.json(
                200,
                CheckTestNotificationResponse(signedPayload: sent.signedPayload, sendAttempts: sent.sendAttempts)
            )
        default:
            return Self.apiError(404, 4_040_000, "Not found.")
        }
    }

    func subscription(_ transactionID: String, bundleID: String, in world: SimWorld) -> SimSubscription? {
        guard let s = world.subscription(forTransaction: transactionID), s.bundleID == bundleID else { return nil }
        return s
    }

    /// Get All Subscription Statuses; `only` (the `status` filter) leaves out the subscriptions in another status.
    func statuses(
        _ transactionID: String,
        bundleID: String,
        only: Set<Int>?,
        in world: SimWorld
    ) throws -> FakeAppleResponse {
        guard let s = subscription(transactionID, bundleID: bundleID, in: world), let latest = s.latest else {
            return Self.apiError(404, 4_040_010, "Transaction id not found.")
        }
        let time = now()
        let status = Emitter.status(s, at: time)
        var groups: [StatusResponse.Group] = []
        if only?.contains(status) ?? true {
            let item = StatusResponse.LastTransaction(
                status: status,
                originalTransactionID: s.originalTransactionID,
                signedTransactionInfo: try emitter.signedTransaction(s, latest, at: time),
                signedRenewalInfo: try emitter.signedRenewal(s, at: time)
            )
            groups.append(
                StatusResponse.Group(subscriptionGroupIdentifier: Catalogue.groupID, lastTransactions: [item])
            )
        }
        return try Self.json(
            200,
            StatusResponse(environment: "Sandbox", bundleID: s.bundleID, appAppleID: emitter.appAppleID, data: groups)
        )
    }

    /// Get Transaction History: the subscription's transactions that pass every filter, in `sort` order (by purchase
    /// date), from the `revision` on.
    func history(
        _ transactionID: String,
        bundleID: String,
        query: TransactionHistoryQuery,
        in world: SimWorld
    ) throws -> FakeAppleResponse {
        guard let s = subscription(transactionID, bundleID: bundleID, in: world) else {
            return Self.apiError(404, 4_040_010, "Transaction id not found.")
        }
        var all = s.transactions.filter(query.matches).sorted {
            ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID)
        }
        if query.descending { all.reverse() }
        let page = all.dropFirst(query.offset).prefix(Self.pageSize)
        let time = now()
        let signed = try page.map { try emitter.signedTransaction(s, $0, at: time) }
        let next = query.offset + page.count
        return try Self.json(
            200,
            HistoryResponse(
                revision: String(next),
                hasMore: next < all.count,
                bundleID: s.bundleID,
                appAppleID: emitter.appAppleID,
                environment: "Sandbox",
                signedTransactions: signed
            )
        )
    }

    func notificationHistory(
        _ query: NotificationHistoryQuery,
        bundleID: String,
        in world: SimWorld
    ) throws -> FakeAppleResponse {
        var wanted: String? = nil
        if let id = query.transactionID {
            guard let s = world.subscription(forTransaction: id) else {
                return Self.apiError(404, 4_040_010, "Transaction id not found.")
            }
            wanted = s.originalTransactionID
        }
        let matching = world.notifications.filter { n in
            n.bundleID == bundleID && query.matches(n) && (wanted == nil || n.originalTransactionID == wanted)
        }
        let items = matching.dropFirst(query.offset).prefix(Self.pageSize)
        let next = query.offset + items.count
        return try Self.json(
            200,
            NotificationHistoryResponse(
                paginationToken: next < matching.count ? String(next) : nil,
                hasMore: next < matching.count,
                notificationHistory: items.map {
                    NotificationHistoryResponse.Item(signedPayload: $0.signedPayload, sendAttempts: $0.sendAttempts)
                }
            )
        )
    }

    /// Request a Test Notification. The fake's App Store Server API is the sandbox one (everything it signs is
    /// Sandbox), so the notification goes to the app's sandbox URL, in the version Apple sends there now (a late
    /// PATCH counts it as one notification). In V2 it is sent; in V1 it is not — there is no V1 test notification —
    /// and Get Test Notification Status shows one attempt, `OTHER`, at once.
    func requestTest(bundleID: String) throws -> FakeAppleResponse {
        let time = now()
        let (sent, url) = try store.update { world -> (SimSentNotification, String?) in
            let uuid = LifecycleContext.uuid("test|\(bundleID)|\(world.newID())|\(time)")
            let payload = try emitter.notification(
                type: "TEST",
                subtype: nil,
                uuid: uuid,
                subscription: nil,
                transaction: nil,
                at: time
            ) {
                $0.bundleID = bundleID
            }
            var sent = SimSentNotification(
                notificationUUID: uuid,
                bundleID: bundleID,
                signedDate: time,
                notificationType: "TEST",
                subtype: nil,
                originalTransactionID: nil,
                signedPayload: payload
            )
            let (version, url) = appStoreConnect.send(&world, bundleID: bundleID, environment: .sandbox)
            if version != .v2 {
                sent.sendAttempts = [SendAttempt(attemptDate: time, sendAttemptResult: Self.noV1TestNotification)]
            }
            world.testNotifications[uuid] = sent
            return (sent, version == .v2 ? url : nil)
        }
        if sent.sendAttempts.isEmpty { deliverTest?(sent.notificationUUID, sent.signedPayload, url) }
        return try Self.json(200, SendTestNotificationResponse(testNotificationToken: sent.notificationUUID))
    }

    /// The `sendAttemptResult` of a test notification requested while Apple sends the app V1: nothing was sent
    /// (Apple's catch-all value).
    public static let noV1TestNotification = "OTHER"

    // MARK: Encoding

    /// Members in a fixed (sorted) order, so the same answer is the same bytes: Apple's error body reads
    /// `{"errorCode":…,"errorMessage":…}`.
    static func json<T: Encodable>(_ status: Int, _ value: T) throws -> FakeAppleResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return FakeAppleResponse(status: status, body: Array(try encoder.encode(value)))
    }

    static func apiError(_ status: Int, _ code: Int64, _ message: String) -> FakeAppleResponse {
        (try? json(status, AppStoreAPIErrorBody(errorCode: code, errorMessage: message)))
            ?? FakeAppleResponse(status: status, body: [])
    }
}

extension SimStateStore {
    /// Records how sending a test notification went.
    public func recordTestAttempt(token: String, result: String, at time: Int64) throws {
        try update { world in
            world.testNotifications[token]?.sendAttempts.append(
                SendAttempt(attemptDate: time, sendAttemptResult: result)
            )
        }
    }

    /// Takes the first queued fault, if any: `seen` is the state the caller already read, so a request with no fault
    /// queued neither reads nor rewrites the state again.
    func popFault(_ queue: WritableKeyPath<SimWorld, [Int]>, seen: SimWorld) throws -> Int? {
        guard !seen[keyPath: queue].isEmpty else { return nil }
        return try update { world in world[keyPath: queue].isEmpty ? nil : world[keyPath: queue].removeFirst() }
    }
}
