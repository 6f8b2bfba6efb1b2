import Canonical
import Crypto
import Foundation
import HTTPClient
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing

@testable import V2Adapter

/// The client's retry and error semantics against a scripted transport: what is retried, how long it waits, what
/// is final, and that nothing secret ever reaches an error.
@Suite struct AppStoreAPIClientTests {
    typealias Script = [Result<HTTPResponse, HTTPClientError>]

    static let now = Sim.t0 + 3_600_000

    static func json(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> Result<HTTPResponse, HTTPClientError>
    {
        .success(
            HTTPResponse(
                status: status,
                headers: [HTTPHeader("Content-Type", "application/json")] + headers,
                body: Array(text.utf8)
            )
        )
    }

    static func appleError(
        _ status: Int,
        _ code: Int64,
        headers: [HTTPHeader] = []
    ) -> Result<HTTPResponse, HTTPClientError> {
        json(status, "{\"errorCode\":\(code),\"errorMessage\":\"scripted \(code)\"}", headers: headers)
    }

    static let testToken = json(200, #"{"testNotificationToken":"tok-1"}"#)

    /// A scripted client with a throw-away key and an adapter that trusts nothing but Apple (enough for calls that
    /// verify nothing); sleeps recorded, jitter fixed at 0.5.
    static func scripted(
        _ script: Script,
        maxAttempts: Int = 4,
        key: PrivateKey? = nil,
        adapter: V2Adapter? = nil,
        maxPages: Int = 1000
    ) throws -> (AppStoreAPIClient, ScriptedTransport, APIFixture.Sleeps) {
        let transport = ScriptedTransport(results: script)
        let sleeps = APIFixture.Sleeps()
        let client = APIFixture.client(
            APIFixture.configuration(
                key: try key ?? PrivateKey.generateP256(),
                maxAttempts: maxAttempts,
                maxPages: maxPages
            ),
            transport: transport,
            adapter: try adapter ?? V2Adapter(verifier: AppleJWSVerifier(anchors: .apple()), apps: nil),
            now: now,
            sleeps: sleeps
        )
        return (client, transport, sleeps)
    }

    static func requestTest(_ client: AppStoreAPIClient) async throws(AppStoreAPIError) -> String {
        try await client.requestTestNotification(environment: .sandbox)
    }

    // MARK: retries

    @Test func retryableInternalErrorThenSuccess() async throws {
        let (client, transport, sleeps) = try Self.scripted([Self.appleError(500, 5_000_001), Self.testToken])
        #expect(try await Self.requestTest(client) == "tok-1")
        #expect(transport.requests.count == 2)
        #expect(sleeps.all == [.milliseconds(750)])
    }

    @Test(arguments: [4_040_002, 4_040_004, 4_040_006] as [Int64])
    func retryableNotFoundCodesAreRetried(_ code: Int64) async throws {
        let (client, transport, _) = try Self.scripted([Self.appleError(404, code), Self.testToken])
        #expect(try await Self.requestTest(client) == "tok-1")
        #expect(transport.requests.count == 2)
    }

    @Test func retryableNotFoundThatPersistsIsNotFound() async throws {
        let (client, transport, _) = try Self.scripted(
            Array(repeating: Self.appleError(404, 4_040_002), count: 3),
            maxAttempts: 3
        )
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .notFound && error.appleErrorCode == 4_040_002)
        #expect(transport.requests.count == 3)
    }

    @Test(arguments: [1, 2, 4, 6])
    func serverErrorsUseUpExactlyMaxAttempts(_ attempts: Int) async throws {
        let script = Array(repeating: Self.appleError(500, 5_000_000), count: attempts)
        let (client, transport, sleeps) = try Self.scripted(script, maxAttempts: attempts)
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .appleUnavailable)
        #expect(error.httpStatus == 500)
        #expect(error.attempts == attempts)
        #expect(transport.requests.count == attempts)
        let waits = sleeps.all
        #expect(waits.count == attempts - 1)
        #expect(zip(waits, waits.dropFirst()).allSatisfy { $0 < $1 }, "exponential backoff")
    }

    @Test func backoffIsCappedAndJittered() throws {
        let (client, _, _) = try Self.scripted([])
        let retry = client.configuration.retry
        #expect(retry.delay(afterAttempt: 1, jitter: client.jitter()) == .milliseconds(750))
        #expect(retry.delay(afterAttempt: 3, jitter: client.jitter()) == .seconds(3))
        #expect(retry.delay(afterAttempt: 10, jitter: client.jitter()) == .seconds(22.5), "30 s cap times 0.75")
        let low = APIFixture.client(
            client.configuration,
            transport: ScriptedTransport(results: []),
            adapter: client.adapter,
            now: Self.now,
            jitter: 0
        )
        #expect(retry.delay(afterAttempt: 2, jitter: low.jitter()) == .seconds(1), "jitter 0 halves")
    }

    @Test func retryAfterIsHonoured() async throws {
        let (client, transport, sleeps) = try Self.scripted([
            Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", "7")]), Self.testToken,
        ])
        #expect(try await Self.requestTest(client) == "tok-1")
        #expect(transport.requests.count == 2)
        let waits = sleeps.all
        #expect(waits.count == 1)
        #expect(waits.allSatisfy { $0 >= .seconds(7) })
    }

    /// Apple's App Store Server API says when the next request may go as a UNIX time in milliseconds: read as a
    /// seconds count, it was a wait of 55,000 years (clamped to a day, the call ended and the app paused a day).
    @Test(
        arguments: [(2_000, Duration.seconds(2)), (90_500, .milliseconds(90_500)), (-5_000, .zero)]
            as [(Int64, Duration)]
    )
    func applesRetryAfterIsAnInstantInMilliseconds(_ ahead: Int64, _ wait: Duration) async throws {
        let (client, transport, sleeps) = try Self.scripted([
            Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", String(Self.now + ahead))]),
            Self.testToken,
        ])
        let once = client.with(maxAttempts: 1)
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(once) }
        )
        #expect(error.code == .rateLimited && error.retryAfter == wait)
        #expect(transport.requests.count == 1 && sleeps.all.isEmpty)
    }

    @Test func aOneAttemptCopyEndsAtTheFirst429WithAppleRetryAfter() async throws {
        let (client, transport, sleeps) = try Self.scripted([
            Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", "7")]), Self.testToken,
        ])
        let once = client.with(maxAttempts: 1)
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(once) }
        )
        #expect(error.code == .rateLimited && error.retryAfter == .seconds(7))
        #expect(transport.requests.count == 1)
        #expect(sleeps.all.isEmpty)
        // The original keeps its retries.
        #expect(try await Self.requestTest(client) == "tok-1")
    }

    @Test func retryAfterBeyondTheLimitEndsTheCallAtOnce() async throws {
        let (client, transport, sleeps) = try Self.scripted([
            Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", "3600")])
        ])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .rateLimited)
        #expect(error.retryAfter == .seconds(3600))
        #expect(transport.requests.count == 1)
        #expect(sleeps.all.isEmpty)
    }

    @Test(arguments: ["99999999999999999", "9223372036854775808", String(repeating: "9", count: 5_000), "86400"])
    func absurdRetryAfterEndsTheCallAtOnce(_ value: String) async throws {
        let (client, transport, sleeps) = try Self.scripted([
            Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", value)])
        ])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .rateLimited)
        #expect(error.retryAfter == AppStoreAPIClient.retryAfterCeiling)
        #expect(transport.requests.count == 1)
        #expect(sleeps.all.isEmpty)
    }

    @Test func junkRetryAfterLeavesTheBackoffInCharge() async throws {
        let (client, _, sleeps) = try Self.scripted([
            Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", "-7")]), Self.testToken,
        ])
        #expect(try await Self.requestTest(client) == "tok-1")
        #expect(sleeps.all == [.milliseconds(750)])
    }

    @Test func retryAfterAsAnHTTPDateCountsFromTheClientsClock() async throws {
        // The client's clock is 2025-06-01T01:00:00Z; Apple asks to come back 7 s later.
        let (client, _, sleeps) = try Self.scripted([
            Self.appleError(503, 5_000_001, headers: [HTTPHeader("Retry-After", "Sun, 01 Jun 2025 01:00:07 GMT")]),
            Self.testToken,
        ])
        #expect(try await Self.requestTest(client) == "tok-1")
        #expect(sleeps.all == [.seconds(7)])
    }

    @Test func absurdConfiguredDelaysDoNotTrapTheBackoff() throws {
        var configuration = APIFixture.configuration(key: try PrivateKey.generateP256())
        (configuration.retry.baseDelay, configuration.retry.maxDelay) = (.seconds(Int64.max), .seconds(Int64.max))
        let client = APIFixture.client(
            configuration,
            transport: ScriptedTransport(results: []),
            adapter: V2Adapter(verifier: AppleJWSVerifier(anchors: try .apple()), apps: nil),
            now: Self.now
        )
        for attempt in [1, 2, 21, 1000, Int.max] {
            #expect(
                client.configuration.retry.delay(afterAttempt: attempt, jitter: client.jitter()) <= .seconds(Int64.max)
            )
        }
    }

    @Test func rateLimitCodeWithoutA429IsRateLimited() async throws {
        let (client, transport, _) = try Self.scripted(
            Array(repeating: Self.appleError(400, 4_290_000), count: 2),
            maxAttempts: 2
        )
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .rateLimited)
        #expect(transport.requests.count == 2)
    }

    @Test func networkErrorsAreRetried() async throws {
        let (client, transport, sleeps) = try Self.scripted([
            .failure(HTTPClientError(.timeout, "scripted")), .failure(HTTPClientError(.connectionFailed, "scripted")),
            .failure(HTTPClientError(.tlsFailure, "scripted")), Self.testToken,
        ])
        #expect(try await Self.requestTest(client) == "tok-1")
        #expect(transport.requests.count == 4)
        #expect(sleeps.all.count == 3)
    }

    @Test func networkErrorsThatPersistAreAppleUnavailable() async throws {
        let (client, transport, _) = try Self.scripted(
            Array(repeating: .failure(HTTPClientError(.timeout, "scripted")), count: 4)
        )
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .appleUnavailable)
        #expect(error.message.contains("timeout"))
        #expect(error.httpStatus == nil)
        #expect(transport.requests.count == 4)
    }

    @Test func oversizedAnswerIsNotRetried() async throws {
        let (client, transport, _) = try Self.scripted([.failure(HTTPClientError(.responseTooLarge, "scripted"))])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .invalidResponse)
        #expect(transport.requests.count == 1)
    }

    // MARK: final answers

    @Test(
        arguments: [
            (401, nil, AppStoreAPIError.Code.unauthorized), (400, 4_000_006, .badRequest),
            (403, 4_030_004, .badRequest),
            (404, 4_040_010, .notFound), (302, nil, .invalidResponse),
        ] as [(Int, Int64?, AppStoreAPIError.Code)]
    )
    func finalAnswersAreNotRetried(_ status: Int, _ code: Int64?, _ expected: AppStoreAPIError.Code) async throws {
        let response = code.map { Self.appleError(status, $0) } ?? .success(HTTPResponse(status: status))
        let (client, transport, sleeps) = try Self.scripted([response])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == expected)
        #expect(error.httpStatus == status)
        #expect(error.appleErrorCode == code)
        #expect(transport.requests.count == 1)
        #expect(sleeps.all.isEmpty)
    }

    @Test(arguments: [
        "<html>maintenance</html>", "", "{\"testNotificationToken\":42}", "{}", "[1,2]",
        "{\"testNotificationToken\":\"\"}",
    ])
    func garbageIsAnInvalidResponse(_ body: String) async throws {
        let (client, transport, _) = try Self.scripted([.success(HTTPResponse(status: 200, body: Array(body.utf8)))])
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .invalidResponse)
        #expect(transport.requests.count == 1, "a 200 with garbage is not retried")
    }

    @Test func historyThatNeverEndsIsBounded() async throws {
        let pages: Script = (1...3).map {
            Self.json(200, "{\"revision\":\"r\($0)\",\"hasMore\":true,\"signedTransactions\":[]}")
        }
        let (client, transport, _) = try Self.scripted(pages, maxPages: 3)
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await client.transactionHistory(transactionID: "1", environment: .sandbox)
            }
        )
        #expect(error.code == .invalidResponse)
        #expect(error.message.contains("3 pages"))
        #expect(transport.requests.map(\.url).last == APIFixture.sandbox + "/inApps/v2/history/1?revision=r2")
        #expect(transport.requests.count == 3)
    }

    @Test func paginationThatDoesNotAdvanceIsAnInvalidResponse() async throws {
        let same: Script = [
            Self.json(200, #"{"revision":"r1","hasMore":true,"signedTransactions":[]}"#),
            Self.json(200, #"{"revision":"r1","hasMore":true,"signedTransactions":[]}"#),
        ]
        let (client, transport, _) = try Self.scripted(same)
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await client.transactionHistory(transactionID: "1", environment: .sandbox)
            }
        )
        #expect(error.code == .invalidResponse)
        #expect(transport.requests.count == 2)

        let noToken: Script = [Self.json(200, #"{"hasMore":true,"notificationHistory":[]}"#)]
        let (history, _, _) = try Self.scripted(noToken)
        let stuck = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await history.notificationHistory(
                    NotificationHistoryRequest(startDate: 1, endDate: 2),
                    environment: .sandbox
                )
            }
        )
        #expect(stuck.code == .invalidResponse)
    }

    /// One page per call, with the size of Apple's answer: a caller bounds its run by pages and bytes (`backfill`), the
    /// client never follows a history to its end by itself.
    @Test func notificationHistoryComesOnePageAtATimeWithItsSize() async throws {
        let bodies = (1...2).map {
            "{\"paginationToken\":\"p\($0)\",\"hasMore\":true,\"notificationHistory\":[{\"signedPayload\":\"x\($0)\",\"sendAttempts\":[]}]}"
        }
        let (client, transport, _) = try Self.scripted(bodies.map { Self.json(200, $0) })
        let request = NotificationHistoryRequest(startDate: 1, endDate: 2)
        let first = try await client.notificationHistory(request, environment: .sandbox)
        #expect(transport.requests.count == 1)
        #expect(
            first.items.map(\.signedPayload) == ["x1"] && first.nextPaginationToken == "p1"
                && first.byteCount == bodies[0].utf8.count
        )
        let second = try await client.notificationHistory(
            request,
            environment: .sandbox,
            paginationToken: first.nextPaginationToken
        )
        #expect(
            second.items.map(\.signedPayload) == ["x2"] && second.nextPaginationToken == "p2"
                && second.byteCount == bodies[1].utf8.count
        )
        #expect(transport.requests.map(\.url).last?.hasSuffix("?paginationToken=p1") == true)
    }

    // MARK: signed items

    /// A signed transaction of the simulated app, as the fake Apple would answer it.
    static func signedTransaction(_ pki: SimulatorPKI) throws -> String {
        let plan = try Sim.plan("initial-buy", pki: pki)
        let s = try #require(plan.emissions.last).subscription
        return try Emitter(signer: pki.signer).signedTransaction(s, try #require(s.latest), at: plan.end)
    }

    /// `jws` with its payload's `productId` changed and the signature kept.
    static func tampered(_ jws: String) throws -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let payload = String(decoding: try Base64.decode(Array(parts[1].utf8), alphabet: .url), as: UTF8.self)
        let changed = payload.replacingOccurrences(of: "sim.monthly", with: "sim.yearly")
        try #require(changed != payload)
        return parts[0] + "." + Base64.encode(Array(changed.utf8), alphabet: .url) + "." + parts[2]
    }

    @Test func verifiedTransactionInfoFromAScript() async throws {
        try await Sim.withPKI { pki in
            let signed = try Self.signedTransaction(pki)
            let (client, _, _) = try Self.scripted(
                [Self.json(200, "{\"signedTransactionInfo\":\"\(signed)\"}")],
                adapter: try Sim.adapter(trusting: pki)
            )
            let verified = try await client.transactionInfo(transactionID: "1", environment: .sandbox)
            #expect(verified.payload.productID == "sim.monthly")
        }
    }

    @Test func tamperedTransactionIsAnInvalidSignature() async throws {
        try await Sim.withPKI { pki in
            let signed = try Self.tampered(try Self.signedTransaction(pki))
            let (client, transport, _) = try Self.scripted(
                [Self.json(200, "{\"signedTransactionInfo\":\"\(signed)\"}")],
                adapter: try Sim.adapter(trusting: pki)
            )
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await client.transactionInfo(transactionID: "1", environment: .sandbox)
                }
            )
            #expect(error.code == .invalidSignature)
            #expect(error.verificationError?.code == .badSignature)
            #expect(error.message.contains("bad_signature"))
            #expect(transport.requests.count == 1, "a forged answer is not retried")
        }
    }

    @Test func tamperedStatusItemsAreInvalidSignatures() async throws {
        try await Sim.withPKI { pki in
            let signed = try Self.signedTransaction(pki)
            func statuses(transaction: String, renewal: String?) -> String {
                let r = renewal.map { ",\"signedRenewalInfo\":\"\($0)\"" } ?? ""
                return
                    "{\"environment\":\"Sandbox\",\"bundleId\":\"\(Sim.bundleID)\",\"data\":[{\"subscriptionGroupIdentifier\":\"g\","
                    + "\"lastTransactions\":[{\"status\":1,\"originalTransactionId\":\"1\",\"signedTransactionInfo\":\"\(transaction)\"\(r)}]}]}"
            }
            let adapter = try Sim.adapter(trusting: pki)
            let (ok, _, _) = try Self.scripted(
                [Self.json(200, statuses(transaction: signed, renewal: nil))],
                adapter: adapter
            )
            let answer = try await ok.subscriptionStatuses(transactionID: "1", environment: .sandbox)
            #expect(answer.items.first?.renewalInfo == nil)
            #expect(answer.snapshots(observedAt: Self.now).first?.autoRenew == nil, "no renewal info, no renewal facts")

            let (forged, _, _) = try Self.scripted(
                [Self.json(200, statuses(transaction: try Self.tampered(signed), renewal: nil))],
                adapter: adapter
            )
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await forged.subscriptionStatuses(transactionID: "1", environment: .sandbox)
                }
            )
            #expect(error.code == .invalidSignature && error.verificationError?.code == .badSignature)

            // A renewal info signed by a key Apple never certified.
            let (junk, _, _) = try Self.scripted(
                [Self.json(200, statuses(transaction: signed, renewal: "e30.e30.e30"))],
                adapter: adapter
            )
            let renewal = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await junk.subscriptionStatuses(transactionID: "1", environment: .sandbox)
                }
            )
            #expect(renewal.code == .invalidSignature)
            #expect(renewal.verificationError != nil)
        }
    }

    @Test func untrustedRootIsAnInvalidSignature() async throws {
        // The simulator's items against a verifier that trusts only Apple.
        try await Sim.withPKI { pki in
            let signed = try Self.signedTransaction(pki)
            let (client, _, _) = try Self.scripted([Self.json(200, "{\"signedTransactionInfo\":\"\(signed)\"}")])
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await client.transactionInfo(transactionID: "1", environment: .sandbox)
                }
            )
            #expect(error.code == .invalidSignature)
            #expect(error.verificationError?.code == .untrustedRoot)
        }
    }

    // MARK: requests

    @Test func environmentPicksTheBaseURLAndIdsAreEncoded() async throws {
        let (client, transport, _) = try Self.scripted([
            Self.testToken, Self.testToken, Self.json(200, #"{"signedPayload":"x","sendAttempts":[]}"#),
        ])
        _ = try await client.requestTestNotification(environment: .production)
        _ = try await client.requestTestNotification(environment: .sandbox)
        _ = try await client.testNotificationStatus(token: "../a/b?c=d", environment: .sandbox)
        #expect(
            transport.requests.map(\.url) == [
                APIFixture.production + "/inApps/v1/notifications/test",
                APIFixture.sandbox + "/inApps/v1/notifications/test",
                APIFixture.sandbox + "/inApps/v1/notifications/test/%2E%2E%2Fa%2Fb%3Fc%3Dd",
            ]
        )
        #expect(transport.requests.map(\.method) == [.post, .post, .get])
        #expect(transport.requests.allSatisfy { $0.timeoutMillis == 5_000 })
    }

    @Test func nothingIsSentForAnEmptyIdOrALocalEnvironment() async throws {
        let (client, transport, _) = try Self.scripted([])
        let empty = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in
                try await client.transactionInfo(transactionID: "", environment: .sandbox)
            }
        )
        #expect(empty.code == .badRequest)
        for environment in [AppStoreEnvironment.xcode, .localTesting, AppStoreEnvironment(rawValue: "staging")] {
            let error = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in
                    try await client.requestTestNotification(environment: environment)
                }
            )
            #expect(error.code == .unsupportedEnvironment)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test func aKeyThatCannotSignIsABadKey() async throws {
        let (client, transport, _) = try Self.scripted([Self.testToken], key: try PrivateKey.generateP384())
        let error = try #require(
            await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(client) }
        )
        #expect(error.code == .badKey)
        #expect(transport.requests.isEmpty)
    }

    // MARK: secrets

    @Test func noErrorOrDescriptionCarriesTheTokenOrTheKey() async throws {
        try await Sim.withPKI { pki in
            let key = try PrivateKey.generateP256()
            let pem = key.pemPKCS8
            let signed = try Self.signedTransaction(pki)
            let scripts: [Script] = [
                [Self.appleError(401, 4_010_000)], [Self.appleError(404, 4_040_010)], [Self.appleError(400, 4_000_006)],
                Array(repeating: Self.appleError(500, 5_000_001), count: 4),
                Array(repeating: Self.appleError(429, 4_290_000, headers: [HTTPHeader("Retry-After", "1")]), count: 4),
                Array(repeating: .failure(HTTPClientError(.timeout, "scripted")), count: 4),
                [Self.json(200, "not json")],
                [Self.json(200, "{\"signedTransactionInfo\":\"\(try Self.tampered(signed))\"}")],
            ]
            var texts: [String] = []
            var tokens: [String] = []
            for script in scripts {
                let (client, transport, _) = try Self.scripted(
                    script,
                    key: key,
                    adapter: try Sim.adapter(trusting: pki)
                )
                let error = try #require(
                    await APIFixture.error { () async throws(AppStoreAPIError) in
                        try await client.transactionInfo(transactionID: "1", environment: .sandbox)
                    }
                )
                texts += [error.message, error.description, String(reflecting: error), "\(error)"]
                tokens += try transport.requests.map(APIFixture.bearer)
            }
            let (p384, _, _) = try Self.scripted([], key: try PrivateKey.generateP384())
            let badKey = try #require(
                await APIFixture.error { () async throws(AppStoreAPIError) in try await Self.requestTest(p384) }
            )
            texts += [badKey.message, badKey.description, String(reflecting: badKey)]
            let configuration = APIFixture.configuration(key: key)
            texts += [configuration.description, "\(configuration)"]

            #expect(tokens.count >= 8)
            let pemBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
            try #require(!pemBody.isEmpty)
            for text in texts {
                #expect(!text.contains("Bearer"), "\(text)")
                #expect(!text.contains("PRIVATE KEY"), "\(text)")
                #expect(!pemBody.contains { text.contains($0) }, "\(text)")
                #expect(!tokens.contains { text.contains($0) || text.contains($0.split(separator: ".")[2]) }, "\(text)")
            }
        }
    }
}
