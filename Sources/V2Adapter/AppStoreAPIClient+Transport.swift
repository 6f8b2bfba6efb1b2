internal import BearerToken
internal import Canonical
internal import HTTPClient
internal import WireJSON

extension AppStoreAPIClient {
    /// Apple's error codes that mean "try again" (its libraries call them retryable), besides any 429 and 5xx.
    public static let retryableAppleErrorCodes: Set<Int64> = [4_040_002, 4_040_004, 4_040_006, 5_000_001, 4_290_000]

    /// The longest `Retry-After` this client reads (a day; Apple's rate limits reset within the hour). A longer
    /// or absurd value (`99999999999999999`) reads as this, which always ends the call (`rate_limited`).
    public static let retryAfterCeiling: Duration = .seconds(86_400)

    /// How one HTTP attempt ended, when it did not succeed.
    struct Failure {
        var error: AppStoreAPIError
        var retryable: Bool
        var retryAfter: Duration?
    }

    /// Sends one call with retries; the body of a 2xx answer, or the last failure. Each attempt first waits for its
    /// turn in the ``budget`` (`budget_exhausted` when none comes before the deadline), and Apple's 429 holds every
    /// caller of the app, endpoint and environment until its `Retry-After`.
    func perform(
        _ method: HTTPRequest.Method,
        _ path: String,
        _ endpoint: AppStoreAPIEndpoint,
        query: [(String, String?)] = [],
        body: [UInt8]? = nil,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) -> [UInt8] {
        let url = try url(path, query: query, environment: environment)
        let retry = configuration.retry
        let call = AppStoreAPICall(bundleID: configuration.bundleID, endpoint: endpoint, environment: environment)
        let context = AppStoreAPICallContext.current
        let priority = context?.priority ?? self.priority
        let deadline = context?.deadline ?? now().clampedAdding(budgetWaitMillis)
        var attempt = 0
        while true {
            attempt += 1
            if let budget,
                case .expired(let nextAt) = await budget.acquire(call, priority: priority, deadline: deadline)
            {
                let wait = max(0, nextAt.clampedSubtracting(now()))
                throw AppStoreAPIError(
                    .budgetExhausted,
                    "no turn in the gateway's budget for \(endpoint) before the call's deadline",
                    retryAfter: .milliseconds(wait),
                    attempts: attempt - 1
                )
            }
            var headers = [
                HTTPHeader("Authorization", "Bearer " + (try bearerToken())),
                HTTPHeader("Accept", "application/json"),
            ]
            if body != nil { headers.append(HTTPHeader("Content-Type", "application/json")) }
            let request = HTTPRequest(
                method: method,
                url: url,
                headers: headers,
                body: body ?? [],
                timeoutMillis: configuration.timeoutMillis,
                maxResponseBytes: configuration.maxResponseBytes
            )
            var failure: Failure
            do {
                let response = try await transport.send(request)
                if (200..<300).contains(response.status) { return response.body }
                failure = Self.judge(response, now: now())
            } catch {
                failure = Self.judge(error)
            }
            failure.error.attempts = attempt
            if failure.error.code == .rateLimited, let budget {
                budget.rateLimited(call, until: failure.retryAfter.map { now().clampedAdding(Self.millis($0)) })
            }
            guard failure.retryable, retry.allowsRetry(afterAttempt: attempt), !Task.isCancelled else {
                throw failure.error
            }
            if let wanted = failure.retryAfter {
                guard wanted <= retry.retryAfterLimit, wanted < Self.retryAfterCeiling else {
                    failure.error.message += "; Apple asked to wait \(wanted.components.seconds) s, longer than allowed"
                    throw failure.error
                }
            }
            await sleep(retry.delay(afterAttempt: attempt, jitter: jitter(), retryAfter: failure.retryAfter))
        }
    }

    /// `duration` in whole milliseconds.
    static func millis(_ duration: Duration) -> Int64 {
        duration.components.seconds.clampedMultiplied(by: 1000)
            .clampedAdding(duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// A fresh bearer token: `iat` now, `exp` after the configured lifetime.
    func bearerToken() throws(AppStoreAPIError) -> String {
        let (issuedAt, expiresAt) = ES256BearerToken.validity(
            nowMillis: now(),
            lifetimeSeconds: configuration.tokenLifetimeSeconds,
            maxLifetimeSeconds: Configuration.maxTokenLifetimeSeconds
        )
        let token = AppStoreAPIToken(
            keyID: configuration.keyID,
            issuerID: configuration.issuerID,
            bundleID: configuration.bundleID,
            issuedAt: issuedAt,
            expiresAt: expiresAt
        )
        do { return try token.signed(with: configuration.privateKey) } catch {
            throw AppStoreAPIError(
                .badKey,
                "the App Store Server API key cannot make an ES256 token (\(error.code)): it must be a P-256 .p8 key"
            )
        }
    }

    /// Base URL of `environment` + `path` + the query members that are set (percent-encoded).
    func url(
        _ path: String,
        query: [(String, String?)],
        environment: AppStoreEnvironment
    ) throws(AppStoreAPIError)
        -> String
    {
        var base: String
        switch environment {
        case .production: base = configuration.productionURL
        case .sandbox: base = configuration.sandboxURL
        default:
            throw AppStoreAPIError(
                .unsupportedEnvironment,
                "the \(environment) environment has no App Store Server API"
            )
        }
        while base.hasSuffix("/") { base.removeLast() }
        let members = query.compactMap { name, value in value.map { name + "=" + URLEncoding.percentEncoded($0) } }
        return base + path + (members.isEmpty ? "" : "?" + members.joined(separator: "&"))
    }

    // MARK: Judging answers

    /// What a non-2xx answer means, and whether another attempt may cure it. `now` (ms) dates a `Retry-After`
    /// given as an HTTP-date.
    static func judge(_ response: HTTPResponse, now: Int64) -> Failure {
        let status = response.status
        let apple = try? JSONValueDecoder().decode(AppStoreAPIErrorBody.self, from: response.body)
        let code = apple?.errorCode
        let said = apple.map { ": \(Self.printable($0.errorMessage))" } ?? ""
        // Apple's Retry-After is the UNIX time in milliseconds when the next request may go (delta-seconds still read).
        let retryAfter = response.retryAfter(maximum: Self.retryAfterCeiling, now: now, epochMilliseconds: true)
        func failure(_ c: AppStoreAPIError.Code, _ message: String, retryable: Bool) -> Failure {
            Failure(
                error: AppStoreAPIError(c, message, httpStatus: status, appleErrorCode: code, retryAfter: retryAfter),
                retryable: retryable,
                retryAfter: retryAfter
            )
        }
        let retryableCode = code.map { retryableAppleErrorCodes.contains($0) } ?? false
        switch status {
        case 401:
            return failure(
                .unauthorized,
                "Apple refused the API token: the key id, issuer id or private key is wrong "
                    + "(or the key was revoked, or the clock is off)",
                retryable: false
            )
        case 429:
            return failure(.rateLimited, "Apple's rate limit was exceeded\(said)", retryable: true)
        case _ where code == 4_290_000:
            return failure(.rateLimited, "Apple's rate limit was exceeded\(said)", retryable: true)
        case 500...599:
            return failure(.appleUnavailable, "the App Store Server API failed\(said)", retryable: true)
        case 404:
            return failure(.notFound, "Apple does not know it\(said)", retryable: retryableCode)
        case 400...499:
            if retryableCode { return failure(.appleUnavailable, "Apple asked to try again\(said)", retryable: true) }
            return failure(.badRequest, "Apple refused the request\(said)", retryable: false)
        default:
            return failure(.invalidResponse, "the App Store Server API answered an unexpected status", retryable: false)
        }
    }

    /// A transport failure: retried unless it cannot get better by itself.
    static func judge(_ error: HTTPClientError) -> Failure {
        switch error.code {
        case .invalidURL:
            return Failure(
                error: AppStoreAPIError(.appleUnavailable, "the configured App Store Server API URL is unusable"),
                retryable: false
            )
        case .responseTooLarge:
            return Failure(
                error: AppStoreAPIError(.invalidResponse, "the App Store Server API answer is larger than allowed"),
                retryable: false
            )
        default:
            return Failure(
                error: AppStoreAPIError(.appleUnavailable, "the App Store Server API is unreachable (\(error.code))"),
                retryable: true
            )
        }
    }

    /// Apple's own words, kept short and to printable ASCII.
    static func printable(_ text: String) -> String {
        String(decoding: text.utf8.prefix(200).map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
