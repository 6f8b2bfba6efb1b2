public import Canonical
public import Crypto
public import HTTPClient
internal import WireJSON

/// The App Store Server API endpoints the gateway uses (Apple: "App Store Server API"), with every signed item of an
/// answer verified like a notification, transient failures retried with exponential backoff and jitter (bounded),
/// and every failure one ``AppStoreAPIError`` with a stable code.
///
/// - Each HTTP attempt carries a fresh ES256 bearer token (``AppStoreAPIToken``): `iat` = now, `exp` = now +
///   ``Configuration/tokenLifetimeSeconds`` (at most 20 minutes).
/// - Retried: HTTP 429, 5xx, network failures, and Apple's retryable error codes 4040002, 4040004, 4040006, 5000001
///   and 4290000, with the configuration's ``Configuration/retry`` policy. A `Retry-After` (seconds or an HTTP-date,
///   read by `HTTPClient`'s `RetryAfter`) lengthens the wait; one longer than its ``RetryPolicy/retryAfterLimit``
///   (or than ``retryAfterCeiling``, which is what absurd values read as) ends the call at once (`rate_limited` with
///   ``AppStoreAPIError/retryAfter``) rather than holding a task for it.
/// - Never retried: 401 (`unauthorized`), 404 (`not_found`), 400 (`bad_request`), an answer that is not Apple's
///   JSON (`invalid_response`), a signed item that fails verification (`invalid_signature`).
/// - With a ``budget``, each HTTP attempt first waits its turn in the process's one plan of calls to Apple (per app,
///   endpoint and environment; `budget_exhausted` when none comes before the call's deadline), and a 429 holds every
///   caller of that app, endpoint and environment until Apple's `Retry-After`.
/// - Nothing secret reaches an error: the token, the `Authorization` header and the key stay in the request.
///
/// Not on the request path: the gateway calls it from background work (comparison, backfill, test notifications).
public struct AppStoreAPIClient: Sendable {
    public struct Configuration: Sendable, CustomStringConvertible {
        /// Base URLs; requests go to base + `/inApps/…`. A trailing `/` is ignored.
        public var productionURL: String
        public var sandboxURL: String
        /// The App Store Connect API key id (the token's `kid`).
        public var keyID: String
        /// The App Store Connect issuer id (`iss`).
        public var issuerID: String
        /// The app's bundle id (`bid`); answers for another bundle are refused.
        public var bundleID: String
        /// The `.p8` key (P-256).
        public var privateKey: PrivateKey
        /// Lifetime of each bearer token; kept within 1…``maxTokenLifetimeSeconds``.
        public var tokenLifetimeSeconds: Int64
        /// HTTP attempts per call (per page for paginated calls) for transient failures (at least 1), the backoff
        /// between them, and the longest `Retry-After` honoured by waiting (``RetryPolicy/retryAfterLimit``; a longer
        /// one fails the call with `rate_limited`): ``RetryPolicy/appStoreAPIClient`` unless the initializer's
        /// arguments say otherwise.
        public var retry: RetryPolicy
        public var timeoutMillis: Int
        public var maxResponseBytes: Int
        /// Upper bound on the pages ``transactionHistory(transactionID:environment:)`` fetches before giving up.
        /// Notification history has no such call: its callers take one page at a time (``notificationHistory(_:environment:paginationToken:)``)
        /// and bound their own runs, so that no history, however long, is ever held in memory whole.
        public var maxPages: Int

        public static let productionBaseURL = "https://api.storekit.apple.com"
        public static let sandboxBaseURL = "https://api.storekit-sandbox.apple.com"
        /// 20 minutes: the bound the gateway sets itself (Apple accepts up to 60).
        public static let maxTokenLifetimeSeconds: Int64 = 1200

        public init(
            productionURL: String = Self.productionBaseURL,
            sandboxURL: String = Self.sandboxBaseURL,
            keyID: String,
            issuerID: String,
            bundleID: String,
            privateKey: PrivateKey,
            tokenLifetimeSeconds: Int64 = 1200,
            maxAttempts: Int = RetryPolicy.appStoreAPIClient.maxAttempts,
            baseDelay: Duration = RetryPolicy.appStoreAPIClient.baseDelay,
            maxDelay: Duration = RetryPolicy.appStoreAPIClient.maxDelay,
            maxRetryAfter: Duration = RetryPolicy.appStoreAPIClient.retryAfterLimit,
            timeoutMillis: Int = 30_000,
            maxResponseBytes: Int = 8 * 1024 * 1024,
            maxPages: Int = 1000
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.keyID = keyID
            self.issuerID = issuerID
            self.bundleID = bundleID
            self.privateKey = privateKey
            self.tokenLifetimeSeconds = min(max(1, tokenLifetimeSeconds), Self.maxTokenLifetimeSeconds)
            self.retry = RetryPolicy.appStoreAPIClient
            (retry.maxAttempts, retry.baseDelay, retry.maxDelay) = (max(1, maxAttempts), baseDelay, maxDelay)
            retry.maxRetryAfter = maxRetryAfter
            self.timeoutMillis = timeoutMillis
            self.maxResponseBytes = maxResponseBytes
            self.maxPages = max(1, maxPages)
        }

        /// Everything but the key.
        public var description: String {
            "AppStoreAPIClient.Configuration(production: \(productionURL), sandbox: \(sandboxURL), keyID: \(keyID), "
                + "issuerID: \(issuerID), bundleID: \(bundleID), privateKey: <redacted>)"
        }
    }

    public let configuration: Configuration
    let transport: any HTTPTransport
    let adapter: V2Adapter
    let now: @Sendable () -> Int64
    let sleep: @Sendable (Duration) async -> Void
    let jitter: @Sendable () -> Double
    /// The process's plan of calls to Apple (docs/operations.md, "Apple's rate limits"); nil: calls go at once.
    public let budget: (any AppStoreAPIBudget)?
    /// The priority of its calls for the budget, unless the task's ``AppStoreAPICallContext`` says otherwise.
    public let priority: AppStoreAPICallPriority
    /// How long a call waits for its turn at most, unless the task's ``AppStoreAPICallContext`` says otherwise.
    public let budgetWaitMillis: Int64

    /// - Parameters:
    ///   - adapter: verifies every signed item of an answer (its trust anchors and app policy apply).
    ///   - now: the clock (ms since the epoch) for token dates and the verification fallback time.
    ///   - sleep, jitter: injected so tests run instantly and deterministically (`jitter` returns a value in [0, 1)).
    ///   - budget, priority, budgetWaitMillis: the shared plan each HTTP attempt waits its turn in (nil: none), the
    ///     calls' priority in it and their longest wait (a call given no turn in time fails `budget_exhausted`).
    public init(
        configuration: Configuration,
        transport: any HTTPTransport,
        adapter: V2Adapter,
        now: @escaping @Sendable () -> Int64,
        sleep: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        budget: (any AppStoreAPIBudget)? = nil,
        priority: AppStoreAPICallPriority = .background,
        budgetWaitMillis: Int64 = 60_000
    ) {
        self.configuration = configuration
        self.transport = transport
        self.adapter = adapter
        self.now = now
        self.sleep = sleep
        self.jitter = jitter
        self.budget = budget
        self.priority = priority
        self.budgetWaitMillis = max(0, budgetWaitMillis)
    }

    /// The same client making at most `maxAttempts` attempts per call (1: any failure, a 429 included, ends the call
    /// at once, for callers that reschedule themselves).
    public func with(maxAttempts: Int) -> AppStoreAPIClient {
        var c = configuration
        c.retry.maxAttempts = max(1, maxAttempts)
        return AppStoreAPIClient(
            configuration: c,
            transport: transport,
            adapter: adapter,
            now: now,
            sleep: sleep,
            jitter: jitter,
            budget: budget,
            priority: priority,
            budgetWaitMillis: budgetWaitMillis
        )
    }

    /// The same client with its calls at `priority` in the budget.
    public func with(priority: AppStoreAPICallPriority) -> AppStoreAPIClient {
        AppStoreAPIClient(
            configuration: configuration,
            transport: transport,
            adapter: adapter,
            now: now,
            sleep: sleep,
            jitter: jitter,
            budget: budget,
            priority: priority,
            budgetWaitMillis: budgetWaitMillis
        )
    }

    // MARK: Subscriptions and transactions

    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`) for any transaction id of the
    /// customer's subscriptions; every `signedTransactionInfo` and `signedRenewalInfo` verified.
    public func subscriptionStatuses(
        transactionID: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) -> SubscriptionStatuses {
        let path = "/inApps/v1/subscriptions/" + (try Self.segment(transactionID, what: "transaction id"))
        let body = try await perform(.get, path, .subscriptionStatuses, environment: environment)
        let answer = try Self.decode(StatusResponse.self, body, what: "Get All Subscription Statuses")
        try checkAnswer(bundleID: answer.bundleID, environment: answer.environment, asked: environment)
        var items: [SubscriptionStatus] = []
        for group in answer.data {
            for last in group.lastTransactions {
                let transaction = try verifyTransaction(last.signedTransactionInfo, environment: environment)
                var renewal: VerifiedTokenV2<RenewalInfoPayload>?
                if let signed = last.signedRenewalInfo {
                    let r = try verifyRenewalInfo(signed, environment: environment)
                    let otid = transaction.payload.originalTransactionID
                    if let a = r.payload.originalTransactionID, let otid, a != otid {
                        throw AppStoreAPIError(
                            .invalidResponse,
                            "renewal info and transaction name different subscriptions"
                        )
                    }
                    renewal = r
                }
                items.append(
                    SubscriptionStatus(
                        subscriptionGroupIdentifier: group.subscriptionGroupIdentifier,
                        status: last.status,
                        originalTransactionID: last.originalTransactionID,
                        transaction: transaction,
                        renewalInfo: renewal
                    )
                )
            }
        }
        return SubscriptionStatuses(
            environment: environment,
            bundleID: answer.bundleID,
            appAppleID: answer.appAppleID,
            items: items
        )
    }

    /// Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}`), every page followed through `revision`
    /// until `hasMore` is false (at most ``Configuration/maxPages`` pages); every transaction verified, in Apple's
    /// order.
    public func transactionHistory(
        transactionID: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) -> [VerifiedTokenV2<TransactionPayload>] {
        var transactions: [VerifiedTokenV2<TransactionPayload>] = []
        var revision: String?
        for _ in 0..<configuration.maxPages {
            let page = try await transactionHistoryPage(
                transactionID: transactionID,
                environment: environment,
                revision: revision
            )
            transactions += page.transactions
            guard page.hasMore else { return transactions }
            revision = page.revision
        }
        throw AppStoreAPIError(
            .invalidResponse,
            "Get Transaction History still had more after \(configuration.maxPages) pages"
        )
    }

    /// One page of Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}`): up to 20 transactions
    /// after `revision` (nil: the first page), each verified, in Apple's order (ascending by when Apple last changed
    /// them), with the revision that asks for the next page. `productTypes` (Apple's `productType`, repeated:
    /// `AUTO_RENEWABLE`, `NON_RENEWABLE`, `NON_CONSUMABLE`, `CONSUMABLE`; empty: every type) must be the same on every
    /// page of one walk, as Apple requires. The last page's revision (``TransactionHistoryPage/hasMore`` false) asks
    /// later for only what was added or changed since.
    public func transactionHistoryPage(
        transactionID: String,
        environment: AppStoreEnvironment,
        revision: String?,
        productTypes: [String] = []
    ) async throws(AppStoreAPIError) -> TransactionHistoryPage {
        let path = "/inApps/v2/history/" + (try Self.segment(transactionID, what: "transaction id"))
        let query = [("revision", revision)] + productTypes.map { ("productType", Optional($0)) }
        let body = try await perform(.get, path, .transactionHistory, query: query, environment: environment)
        let page = try Self.decode(HistoryResponse.self, body, what: "Get Transaction History")
        try checkAnswer(bundleID: page.bundleID, environment: page.environment, asked: environment)
        var transactions: [VerifiedTokenV2<TransactionPayload>] = []
        for signed in page.signedTransactions {
            transactions.append(try verifyTransaction(signed, environment: environment))
        }
        if page.hasMore {
            guard let next = page.revision, !next.isEmpty, next != revision else {
                throw AppStoreAPIError(.invalidResponse, "Get Transaction History has more pages but no new revision")
            }
        }
        return TransactionHistoryPage(
            transactions: transactions,
            revision: page.revision.flatMap { $0.isEmpty ? nil : $0 },
            hasMore: page.hasMore
        )
    }

    /// Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`), verified.
    public func transactionInfo(
        transactionID: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError)
        -> VerifiedTokenV2<TransactionPayload>
    {
        let path = "/inApps/v1/transactions/" + (try Self.segment(transactionID, what: "transaction id"))
        let body = try await perform(.get, path, .transactionInfo, environment: environment)
        let answer = try Self.decode(TransactionInfoResponse.self, body, what: "Get Transaction Info")
        return try verifyTransaction(answer.signedTransactionInfo, environment: environment)
    }

    // MARK: Notifications

    /// One page of Get Notification History (`POST /inApps/v1/notifications/history`). Pass the previous page's
    /// ``NotificationHistoryPage/nextPaginationToken`` to continue. Items are returned as Apple sent them.
    public func notificationHistory(
        _ request: NotificationHistoryRequest,
        environment: AppStoreEnvironment,
        paginationToken: String? = nil
    ) async throws(AppStoreAPIError) -> NotificationHistoryPage {
        let body = try await perform(
            .post,
            "/inApps/v1/notifications/history",
            .notificationHistory,
            query: [("paginationToken", paginationToken)],
            body: Self.encode(request),
            environment: environment
        )
        let page = try Self.decode(NotificationHistoryResponse.self, body, what: "Get Notification History")
        guard page.hasMore else {
            return NotificationHistoryPage(
                items: page.notificationHistory,
                nextPaginationToken: nil,
                byteCount: body.count
            )
        }
        guard let next = page.paginationToken, !next.isEmpty, next != paginationToken else {
            throw AppStoreAPIError(
                .invalidResponse,
                "Get Notification History has more pages but no new pagination token"
            )
        }
        return NotificationHistoryPage(
            items: page.notificationHistory,
            nextPaginationToken: next,
            byteCount: body.count
        )
    }

    /// Request a Test Notification (`POST /inApps/v1/notifications/test`): Apple sends a TEST notification to the
    /// app's configured URL. Returns the `testNotificationToken`.
    public func requestTestNotification(environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> String {
        let body = try await perform(
            .post,
            "/inApps/v1/notifications/test",
            .testNotification,
            environment: environment
        )
        let answer = try Self.decode(SendTestNotificationResponse.self, body, what: "Request a Test Notification")
        guard !answer.testNotificationToken.isEmpty else {
            throw AppStoreAPIError(.invalidResponse, "Request a Test Notification answered an empty token")
        }
        return answer.testNotificationToken
    }

    /// Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`): the answer to a
    /// CONSUMPTION_REQUEST for the purchase `transactionID`, of `productType`, checked first against Apple's rules for
    /// that product (``ConsumptionInformation/validated(for:)``; a breach is `bad_request` with no HTTP status, and
    /// nothing is sent). Apple answers 202 with no body.
    public func sendConsumptionInformation(
        transactionID: String,
        _ information: ConsumptionInformation,
        productType: ProductType?,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) {
        let body: ConsumptionInformation
        do { body = try information.validated(for: productType) } catch {
            throw AppStoreAPIError(.badRequest, "consumption information Apple would refuse: \(error.rawValue)")
        }
        let path = "/inApps/v2/transactions/consumption/" + (try Self.segment(transactionID, what: "transaction id"))
        _ = try await perform(
            .put,
            path,
            .consumptionInformation,
            body: JSONOutput.encode(body),
            environment: environment
        )
    }

    /// Get Test Notification Status (`GET /inApps/v1/notifications/test/{testNotificationToken}`). Nothing is
    /// verified: the `signedPayload` comes back raw, for the notification pipeline.
    public func testNotificationStatus(
        token: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError)
        -> CheckTestNotificationResponse
    {
        let path = "/inApps/v1/notifications/test/" + (try Self.segment(token, what: "test notification token"))
        let body = try await perform(.get, path, .testNotificationStatus, environment: environment)
        return try Self.decode(CheckTestNotificationResponse.self, body, what: "Get Test Notification Status")
    }

    // MARK: Verification

    func verifyTransaction(
        _ signed: String,
        environment: AppStoreEnvironment
    ) throws(AppStoreAPIError)
        -> VerifiedTokenV2<TransactionPayload>
    {
        let verified: VerifiedTokenV2<TransactionPayload>
        do { verified = try adapter.verifyTransaction(Array(signed.utf8), now: now()) } catch {
            throw AppStoreAPIError(
                .invalidSignature,
                "a signed transaction failed verification: \(error.code)",
                verificationError: error
            )
        }
        try checkAnswer(bundleID: verified.bundleID, environment: verified.payload.environment, asked: environment)
        return verified
    }

    func verifyRenewalInfo(
        _ signed: String,
        environment: AppStoreEnvironment
    ) throws(AppStoreAPIError)
        -> VerifiedTokenV2<RenewalInfoPayload>
    {
        let verified: VerifiedTokenV2<RenewalInfoPayload>
        do { verified = try adapter.verifyRenewalInfo(Array(signed.utf8), now: now()) } catch {
            throw AppStoreAPIError(
                .invalidSignature,
                "a signed renewal info failed verification: \(error.code)",
                verificationError: error
            )
        }
        try checkAnswer(bundleID: nil, environment: verified.payload.environment, asked: environment)
        return verified
    }

    /// An answer (or a signed item in it) for another app or environment than asked is refused.
    func checkAnswer(bundleID: String?, environment raw: String?, asked: AppStoreEnvironment) throws(AppStoreAPIError) {
        if let bundleID, bundleID != configuration.bundleID {
            throw AppStoreAPIError(
                .invalidResponse,
                "Apple answered for bundle \(bundleID), not \(configuration.bundleID)"
            )
        }
        if let raw, AppStoreEnvironment(appleValue: raw) != asked {
            throw AppStoreAPIError(.invalidResponse, "Apple answered for environment \(raw), not \(asked)")
        }
    }

    // MARK: Wire helpers

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], what: String) throws(AppStoreAPIError) -> T {
        do { return try JSONValueDecoder().decode(type, from: body) } catch {
            throw AppStoreAPIError(
                .invalidResponse,
                "\(what) answered something that is not its JSON (\(DecodingFailure.describe(error)))"
            )
        }
    }

    /// The request body with only the members that are set (Apple's libraries omit nil members too).
    static func encode(_ r: NotificationHistoryRequest) -> [UInt8] {
        var w = JSONObjectWriter()
        w.int("startDate", r.startDate)
        w.int("endDate", r.endDate)
        if let v = r.notificationType { w.string("notificationType", v) }
        if let v = r.notificationSubtype { w.string("notificationSubtype", v) }
        if let v = r.onlyFailures { w.bool("onlyFailures", v) }
        if let v = r.transactionID { w.string("transactionId", v) }
        return w.finish()
    }

    /// One path segment, percent-encoded (``URLEncoding/pathSegment(_:)``: everything but letters, digits, `-`, `_`,
    /// `~`), so an id can never change the path (`..`, `/`, `?`).
    static func segment(_ value: String, what: String) throws(AppStoreAPIError) -> String {
        guard !value.isEmpty else { throw AppStoreAPIError(.badRequest, "no \(what) to ask for") }
        return URLEncoding.pathSegment(value)
    }
}
