internal import Canonical
internal import Crypto
internal import FoundationEssentials
internal import V1Adapter
internal import V2Adapter
internal import WireJSON

/// One request to the fake Apple, whatever serves it.
public struct FakeAppleRequest: Sendable {
    public var method: String
    public var path: String
    public var query: [String: String]
    public var authorization: String?
    public var body: [UInt8]
    public init(method: String, path: String, query: [String: String] = [:], authorization: String? = nil, body: [UInt8] = []) {
        (self.method, self.path, self.query, self.authorization, self.body) = (method, path, query, authorization, body)
    }
}

public struct FakeAppleResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    public init(status: Int, body: [UInt8]) { (self.status, self.body) = (status, body) }
}

/// Apple's `verifyReceipt` and the App Store Server API endpoints the gateway uses, answered from the simulated
/// App Store's state (shared with `simulate lifecycle` runs through ``SimStateStore``):
///
/// - `POST /verifyReceipt` (production): every simulated receipt is a sandbox receipt, so `21007`, as Apple does;
///   `POST /sandbox/verifyReceipt`: status 0 with `receipt`, `latest_receipt_info` (newest first) and
///   `pending_renewal_info`; `21004` when the password is not the app's shared secret, `21002` for a malformed
///   request, `21003` for an unknown receipt; queued faults (``SimWorld/verifyReceiptFaults``) answer first.
/// - `/inApps/...` (sandbox) behind an ES256 bearer token checked like Apple does (``AppStoreAPIToken``): Get All
///   Subscription Statuses, Get Transaction Info, Get Transaction History v2 (pages of 20), Get Notification
///   History (pages of 20), Request a Test Notification and Get Test Notification Status; `401` for a missing or bad
///   token; queued faults (``SimWorld/apiFaults``) answer first (429 with Apple's `4290000`).
public struct FakeApple: Sendable {
    public let store: SimStateStore
    let emitter: Emitter
    let apiKey: PublicKey
    let now: @Sendable () -> Int64
    /// Sends a test notification to the app's URL (set by whoever serves the fake); the result is recorded with
    /// ``recordTestAttempt(token:result:)``.
    let deliverTest: (@Sendable (_ token: String, _ signedPayload: String) -> Void)?

    public static let pageSize = 20

    public init(pki: SimulatorPKI, now: @escaping @Sendable () -> Int64,
                deliverTest: (@Sendable (_ token: String, _ signedPayload: String) -> Void)? = nil) {
        store = SimStateStore(folder: pki.folder)
        emitter = Emitter(signer: pki.signer)
        apiKey = pki.apiKey.publicKey
        self.now = now
        self.deliverTest = deliverTest
    }

    public func handle(_ r: FakeAppleRequest) -> FakeAppleResponse {
        do {
            switch (r.method, r.path) {
            case ("POST", "/verifyReceipt"): return try verifyReceipt(r.body, sandbox: false)
            case ("POST", "/sandbox/verifyReceipt"): return try verifyReceipt(r.body, sandbox: true)
            case (_, let path) where path.hasPrefix("/inApps/"): return try api(r)
            default: return Self.apiError(404, 4040000, "Not found.")
            }
        } catch {
            return Self.apiError(500, 5000000, "An unknown error occurred.")
        }
    }

    // MARK: verifyReceipt

    func verifyReceipt(_ body: [UInt8], sandbox: Bool) throws -> FakeAppleResponse {
        let world = try store.read()
        if let fault = try store.popFault(\.verifyReceiptFaults, seen: world) {
            var answer = VerifyReceiptResponse(status: V1Scalar(integerLiteral: Int64(fault)))
            answer.environment = sandbox ? "Sandbox" : "Production"
            if (21100...21199).contains(fault) || fault == 21005 || fault == 21009 { answer.isRetryable = V1Scalar(integerLiteral: 1) }
            return try Self.json(200, answer)
        }
        guard case .object(let request)? = try? JSONParser.parse(body), let token = request["receipt-data"]?.stringValue else {
            return try Self.json(200, VerifyReceiptResponse(status: 21002))
        }
        guard var s = world.subscription(forReceipt: token) else {
            return try Self.json(200, VerifyReceiptResponse(status: 21003))
        }
        // Everything the simulator signs is Sandbox: production sends it on, as Apple does.
        guard sandbox else { return try Self.json(200, VerifyReceiptResponse(status: 21007)) }
        let password = request["password"]?.stringValue ?? ""
        if let digest = s.sharedSecretDigest,
           !Bytes.constantTimeEqual(Array(Hex.encode(SHA256.hash(Array(password.utf8))).utf8), Array(digest.utf8)) {
            return try Self.json(200, VerifyReceiptResponse(status: 21004))
        }
        for i in s.transactions.indices {
            // The skew comes from the state file: clamped, so no offset can overflow a date.
            if let e = s.transactions[i].expiresDate { s.transactions[i].expiresDate = e.clampedAdding(world.v1Skew.expiresOffsetMillis) }
            if world.v1Skew.hideRevocations { (s.transactions[i].revocationDate, s.transactions[i].revocationReason) = (nil, nil) }
        }
        let time = now()
        var answer = VerifyReceiptResponse(status: 0)
        answer.environment = "Sandbox"
        var receipt = V1ReceiptBody(bundleID: s.bundleID, inApp: s.transactions.map(Emitter.v1Transaction))
        receipt.receiptType = "ProductionSandbox"
        receipt.applicationVersion = V1Scalar(text: "1")
        receipt.requestDateMs = V1Scalar(time)
        answer.receipt = receipt
        answer.latestReceipt = s.receiptToken
        answer.latestReceiptInfo = OneOrMany(s.transactions.sorted { $0.purchaseDate > $1.purchaseDate }.map(Emitter.v1Transaction))
        answer.pendingRenewalInfo = Emitter.v1Renewal(s).map { [$0] }
        return try Self.json(200, answer)
    }

    // MARK: App Store Server API

    func api(_ r: FakeAppleRequest) throws -> FakeAppleResponse {
        guard let header = r.authorization, header.hasPrefix("Bearer ") else { return FakeAppleResponse(status: 401, body: []) }
        let token: AppStoreAPIToken
        do { token = try AppStoreAPIToken.verify(String(header.dropFirst(7)), publicKey: apiKey, now: now() / 1000) } catch {
            return FakeAppleResponse(status: 401, body: [])
        }
        // Apple matches the key id and issuer to the account's key as well.
        guard token.keyID == SimulatorPKI.apiKeyID, token.issuerID == SimulatorPKI.issuerID else {
            return FakeAppleResponse(status: 401, body: [])
        }
        let world = try store.read()
        if let fault = try store.popFault(\.apiFaults, seen: world) {
            return fault == 429 ? Self.apiError(429, 4290000, "Rate limit exceeded.") : Self.apiError(fault, 5000000, "An unknown error occurred.")
        }
        let parts = r.path.split(separator: "/").map(String.init)  // ["inApps", "v1", "subscriptions", id]
        switch (r.method, parts.dropFirst().joined(separator: "/")) {
        case ("GET", let p) where p.hasPrefix("v1/subscriptions/") && parts.count == 4:
            return try statuses(parts[3], bundleID: token.bundleID, in: world)
        case ("GET", let p) where p.hasPrefix("v1/transactions/") && parts.count == 4:
            guard let s = subscription(parts[3], bundleID: token.bundleID, in: world),
                  let t = s.transactions.first(where: { $0.transactionID == parts[3] }) ?? s.latest
            else { return Self.apiError(404, 4040010, "Transaction id not found.") }
            return try Self.json(200, TransactionInfoResponse(signedTransactionInfo: try emitter.signedTransaction(s, t, at: now())))
        case ("GET", let p) where p.hasPrefix("v2/history/") && parts.count == 4:
            return try history(parts[3], bundleID: token.bundleID, revision: r.query["revision"], in: world)
        case ("POST", "v1/notifications/history"):
            return try notificationHistory(r.body, bundleID: token.bundleID, page: r.query["paginationToken"], in: world)
        case ("POST", "v1/notifications/test"):
            return try requestTest(bundleID: token.bundleID)
        case ("GET", let p) where p.hasPrefix("v1/notifications/test/") && parts.count == 5:
            guard let sent = world.testNotifications[parts[4]], sent.bundleID == token.bundleID else {
                return Self.apiError(404, 4040008, "Test notification not found.")
            }
            return try Self.json(200, CheckTestNotificationResponse(signedPayload: sent.signedPayload, sendAttempts: sent.sendAttempts))
        default:
            return Self.apiError(404, 4040000, "Not found.")
        }
    }

    func subscription(_ transactionID: String, bundleID: String, in world: SimWorld) -> SimSubscription? {
        guard let s = world.subscription(forTransaction: transactionID), s.bundleID == bundleID else { return nil }
        return s
    }

    func statuses(_ transactionID: String, bundleID: String, in world: SimWorld) throws -> FakeAppleResponse {
        guard let s = subscription(transactionID, bundleID: bundleID, in: world), let latest = s.latest else {
            return Self.apiError(404, 4040010, "Transaction id not found.")
        }
        let time = now()
        let item = StatusResponse.LastTransaction(
            status: Emitter.status(s, at: time), originalTransactionID: s.originalTransactionID,
            signedTransactionInfo: try emitter.signedTransaction(s, latest, at: time), signedRenewalInfo: try emitter.signedRenewal(s, at: time))
        return try Self.json(200, StatusResponse(
            environment: "Sandbox", bundleID: s.bundleID, appAppleID: emitter.appAppleID,
            data: [StatusResponse.Group(subscriptionGroupIdentifier: Catalogue.groupID, lastTransactions: [item])]))
    }

    func history(_ transactionID: String, bundleID: String, revision: String?, in world: SimWorld) throws -> FakeAppleResponse {
        guard let s = subscription(transactionID, bundleID: bundleID, in: world) else {
            return Self.apiError(404, 4040010, "Transaction id not found.")
        }
        guard let offset = Self.offset(revision) else { return Self.apiError(400, 4000005, "Invalid revision.") }
        let all = s.transactions.sorted { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }
        let page = all.dropFirst(offset).prefix(Self.pageSize)
        let time = now()
        let signed = try page.map { try emitter.signedTransaction(s, $0, at: time) }
        let next = offset + page.count
        return try Self.json(200, HistoryResponse(
            revision: String(next), hasMore: next < all.count, bundleID: s.bundleID, appAppleID: emitter.appAppleID, environment: "Sandbox",
            signedTransactions: signed))
    }

    func notificationHistory(_ body: [UInt8], bundleID: String, page: String?, in world: SimWorld) throws -> FakeAppleResponse {
        guard let request = try? JSONDecoder().decode(NotificationHistoryRequest.self, from: Data(body)), request.endDate > request.startDate
        else { return Self.apiError(400, 4000011, "Invalid request.") }
        guard let offset = Self.offset(page) else { return Self.apiError(400, 4000003, "Invalid pagination token.") }
        var wanted: Set<String>? = nil
        if let id = request.transactionID {
            guard let s = world.subscription(forTransaction: id) else { return Self.apiError(404, 4040010, "Transaction id not found.") }
            wanted = [s.originalTransactionID]
        }
        let matching = world.notifications.filter { n in
            (request.startDate..<request.endDate).contains(n.signedDate)
                && (request.notificationType == nil || request.notificationType == n.notificationType)
                && (request.notificationSubtype == nil || request.notificationSubtype == n.subtype)
                && (wanted == nil || n.originalTransactionID.map { wanted!.contains($0) } == true)
                && n.bundleID == bundleID
                && (request.onlyFailures != true || n.sendAttempts.last?.sendAttemptResult != "SUCCESS")
        }
        let items = matching.dropFirst(offset).prefix(Self.pageSize)
        let next = offset + items.count
        return try Self.json(200, NotificationHistoryResponse(
            paginationToken: next < matching.count ? String(next) : nil, hasMore: next < matching.count,
            notificationHistory: items.map { NotificationHistoryResponse.Item(signedPayload: $0.signedPayload, sendAttempts: $0.sendAttempts) }))
    }

    func requestTest(bundleID: String) throws -> FakeAppleResponse {
        let time = now()
        let sent = try store.update { world -> SimSentNotification in
            let uuid = LifecycleContext.uuid("test|\(bundleID)|\(world.newID())|\(time)")
            let payload = try emitter.notification(type: "TEST", subtype: nil, uuid: uuid, subscription: nil, transaction: nil, at: time) {
                $0.bundleID = bundleID
            }
            let sent = SimSentNotification(notificationUUID: uuid, bundleID: bundleID, signedDate: time, notificationType: "TEST",
                                           subtype: nil, originalTransactionID: nil, signedPayload: payload)
            world.testNotifications[uuid] = sent
            return sent
        }
        deliverTest?(sent.notificationUUID, sent.signedPayload)
        return try Self.json(200, SendTestNotificationResponse(testNotificationToken: sent.notificationUUID))
    }

    // MARK: Encoding

    static func offset(_ token: String?) -> Int? {
        guard let token else { return 0 }
        guard let n = Int(token), n >= 0 else { return nil }
        return n
    }

    static func json<T: Encodable>(_ status: Int, _ value: T) throws -> FakeAppleResponse {
        FakeAppleResponse(status: status, body: Array(try JSONEncoder().encode(value)))
    }

    static func apiError(_ status: Int, _ code: Int64, _ message: String) -> FakeAppleResponse {
        FakeAppleResponse(status: status, body: (try? JSONEncoder().encode(AppStoreAPIErrorBody(errorCode: code, errorMessage: message))).map(Array.init) ?? [])
    }
}

extension SimStateStore {
    /// Records how sending a test notification went.
    public func recordTestAttempt(token: String, result: String, at time: Int64) throws {
        try update { world in world.testNotifications[token]?.sendAttempts.append(SendAttempt(attemptDate: time, sendAttemptResult: result)) }
    }

    /// Takes the first queued fault, if any: `seen` is the state the caller already read, so a request with no fault
    /// queued neither reads nor rewrites the state again.
    func popFault(_ queue: WritableKeyPath<SimWorld, [Int]>, seen: SimWorld) throws -> Int? {
        guard !seen[keyPath: queue].isEmpty else { return nil }
        return try update { world in world[keyPath: queue].isEmpty ? nil : world[keyPath: queue].removeFirst() }
    }
}
