import AppStoreConnect
import Canonical
import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter

/// The fake App Store Server API: bearer tokens checked like Apple does, statuses, transaction info and history,
/// notification history, test notifications and injected faults.
@Suite struct FakeAppleServerAPITests {
    static func withHarness(
        _ name: String = "auto-renew",
        _ body: (FakeAppleHarness, SimSubscription) throws -> Void
    ) throws {
        try Sim.withPKI { pki throws in
            let plan = try Sim.plan(name, pki: pki)
            let s = try #require(plan.emissions.last).subscription
            let harness = FakeAppleHarness(pki: pki, now: plan.end + 1_000)
            try harness.put(s)
            try body(harness, s)
        }
    }

    static func statusPath(_ id: String) -> String { "/inApps/v1/subscriptions/\(id)" }

    // MARK: authentication

    @Test func missingOrNonBearerAuthorizationIs401() throws {
        try Self.withHarness { h, s throws in
            #expect(h.api("GET", Self.statusPath(s.originalTransactionID), token: nil).status == 401)
            let basic = h.apple.handle(
                FakeAppleRequest(
                    method: "GET",
                    path: Self.statusPath(s.originalTransactionID),
                    authorization: "Basic dXNlcjpwYXNz"
                )
            )
            #expect(basic.status == 401)
            let bare = h.apple.handle(
                FakeAppleRequest(
                    method: "GET",
                    path: Self.statusPath(s.originalTransactionID),
                    authorization: try h.token()
                )
            )
            #expect(bare.status == 401, "the token must follow 'Bearer '")
            #expect(h.api("GET", Self.statusPath(s.originalTransactionID), token: "not.a.jwt").status == 401)
            #expect(h.api("GET", Self.statusPath(s.originalTransactionID), token: try h.token()).status == 200)
        }
    }

    @Test func tokenSignedByAnotherKeyIs401() throws {
        try Self.withHarness { h, s throws in
            let other = try PrivateKey.generateP256()
            #expect(
                h.api("GET", Self.statusPath(s.originalTransactionID), token: try h.token(key: other)).status == 401
            )
            // The leaf key of the simulator's PKI is not the API key either.
            #expect(
                h.api("GET", Self.statusPath(s.originalTransactionID), token: try h.token(key: h.pki.leafKey)).status
                    == 401
            )
        }
    }

    @Test func badClaimsAre401() throws {
        try Self.withHarness { h, s throws in
            let now = h.now / 1000
            let path = Self.statusPath(s.originalTransactionID)
            func status(_ token: AppStoreAPIToken) throws -> Int {
                h.api("GET", path, token: try token.signed(with: h.pki.apiKey)).status
            }
            func token(iat: Int64, exp: Int64) -> AppStoreAPIToken {
                AppStoreAPIToken(
                    keyID: SimulatorPKI.apiKeyID,
                    issuerID: SimulatorPKI.issuerID,
                    bundleID: Sim.bundleID,
                    issuedAt: iat,
                    expiresAt: exp
                )
            }
            #expect(try status(token(iat: now - 600, exp: now - 1)) == 401, "expired")
            #expect(try status(token(iat: now - 600, exp: now)) == 401, "expires now")
            #expect(try status(token(iat: now - 10, exp: now - 10 + 3_601)) == 401, "lives longer than an hour")
            #expect(try status(token(iat: now + 120, exp: now + 600)) == 401, "issued in the future")
            #expect(try status(token(iat: now - 10, exp: now - 10 + 3_600)) == 200, "exactly an hour is fine")
            let wrongAudience = try CraftedJWT.make(
                payload: CraftedJWT.claims(iat: now - 10, exp: now + 600, aud: "appstoreconnect-v2"),
                key: h.pki.apiKey
            )
            #expect(h.api("GET", path, token: wrongAudience).status == 401)
            let noAudience = try CraftedJWT.make(
                payload: CraftedJWT.claims(iat: now - 10, exp: now + 600, aud: nil),
                key: h.pki.apiKey
            )
            #expect(h.api("GET", path, token: noAudience).status == 401)
            let hs256 = try CraftedJWT.make(
                header: #"{"alg":"HS256","kid":"SIMKEY0001","typ":"JWT"}"#,
                payload: CraftedJWT.claims(iat: now - 10, exp: now + 600),
                key: h.pki.apiKey
            )
            #expect(h.api("GET", path, token: hs256).status == 401)
            let crafted = try CraftedJWT.make(
                payload: CraftedJWT.claims(iat: now - 10, exp: now + 600),
                key: h.pki.apiKey
            )
            #expect(h.api("GET", path, token: crafted).status == 200, "the crafting itself is sound")
        }
    }

    @Test func keyIDAndIssuerAreChecked() throws {
        // Apple answers 401 to a token naming another key or issuer, even when its signature verifies.
        try Self.withHarness { h, s throws in
            let now = h.now / 1000
            let path = Self.statusPath(s.originalTransactionID)
            let otherKid = try AppStoreAPIToken(
                keyID: "OTHERKEY01",
                issuerID: SimulatorPKI.issuerID,
                bundleID: Sim.bundleID,
                issuedAt: now - 10,
                expiresAt: now + 600
            ).signed(with: h.pki.apiKey)
            let otherIssuer = try AppStoreAPIToken(
                keyID: SimulatorPKI.apiKeyID,
                issuerID: "11111111-0000-4000-8000-000000000000",
                bundleID: Sim.bundleID,
                issuedAt: now - 10,
                expiresAt: now + 600
            ).signed(with: h.pki.apiKey)
            #expect(h.api("GET", path, token: otherKid).status == 401)
            #expect(h.api("GET", path, token: otherIssuer).status == 401)
        }
    }

    // MARK: Get All Subscription Statuses

    @Test func statusesAnswerSignedItemsAndTheStatus() throws {
        try Self.withHarness { h, s throws in
            let response = try h.get(Self.statusPath(s.originalTransactionID))
            #expect(response.status == 200)
            let answer = try Sim.decode(StatusResponse.self, response)
            #expect(answer.environment == "Sandbox")
            #expect(answer.bundleID == Sim.bundleID)
            #expect(answer.appAppleID == nil)
            #expect(answer.data.count == 1)
            let group = try #require(answer.data.first)
            #expect(group.subscriptionGroupIdentifier == Catalogue.groupID)
            let item = try #require(group.lastTransactions.first)
            #expect(group.lastTransactions.count == 1)
            #expect(item.originalTransactionID == s.originalTransactionID)
            #expect(item.status == 1)
            #expect(item.status == Emitter.status(s, at: h.now))

            let adapter = try Sim.adapter(trusting: h.pki)
            let t = try adapter.verifyTransaction(Array(item.signedTransactionInfo.utf8), now: h.now)
            #expect(t.payload.transactionID == s.latest?.transactionID)
            #expect(t.payload.signedDate == h.now)
            #expect(t.environment == .sandbox)
            let r = try adapter.verifyRenewalInfo(Array(try #require(item.signedRenewalInfo).utf8), now: h.now)
            #expect(r.payload.originalTransactionID == s.originalTransactionID)
            #expect(r.payload.autoRenewStatus == 1)

            // Any transaction id of the subscription finds it.
            let byRenewal = try Sim.decode(
                StatusResponse.self,
                try h.get(Self.statusPath(s.transactions[1].transactionID))
            )
            #expect(byRenewal.data.first?.lastTransactions.first?.originalTransactionID == s.originalTransactionID)
        }
    }

    /// The status the API reports at a lifecycle step's moment.
    @Test(arguments: [
        ("initial-buy", 0, 1),
        ("billing-grace-recovery", 1, 4),
        ("billing-retry-recovery", 1, 3),
        ("refund", 1, 5),
        ("auto-renew-off-then-expiry", 2, 2),
    ])
    func statusesFollowTheSubscription(name: String, step: Int, status: Int) throws {
        try Sim.withPKI { pki throws in
            let e = try Sim.plan(name, pki: pki).emissions[step]
            let h = FakeAppleHarness(pki: pki, now: e.at)
            try h.put(e.subscription)
            let answer = try Sim.decode(StatusResponse.self, try h.get(Self.statusPath(e.originalTransactionID)))
            let item = try #require(answer.data.first?.lastTransactions.first)
            #expect(item.status == status)
            let renewal = try Sim.payload(try #require(item.signedRenewalInfo), as: RenewalInfoPayload.self)
            #expect(renewal.isInBillingRetryPeriod == e.subscription.renewal?.inBillingRetry)
        }
    }

    @Test func anotherBundleOrAnUnknownIdIs404() throws {
        try Self.withHarness { h, s throws in
            let other = try h.get(Self.statusPath(s.originalTransactionID), bundleID: "com.example.other")
            #expect(other.status == 404)
            #expect(try FakeAppleHarness.errorCode(other) == 4_040_010)
            let unknown = try h.get(Self.statusPath("2999999999999999"))
            #expect(unknown.status == 404)
            #expect(try FakeAppleHarness.errorCode(unknown) == 4_040_010)
            for path in [
                "/inApps/v1/transactions/\(s.originalTransactionID)", "/inApps/v2/history/\(s.originalTransactionID)",
            ] {
                let response = try h.get(path, bundleID: "com.example.other")
                #expect(response.status == 404, "\(path)")
                #expect(try FakeAppleHarness.errorCode(response) == 4_040_010, "\(path)")
            }
        }
    }

    @Test func unknownEndpointsAre404() throws {
        try Self.withHarness { h, s throws in
            for (method, path) in [
                ("GET", "/inApps/v1/nothing"), ("POST", Self.statusPath(s.originalTransactionID)),
                ("GET", "/inApps/v1/subscriptions/\(s.originalTransactionID)/extra"),
                ("DELETE", "/inApps/v1/notifications/test"),
            ] {
                let response = h.api(method, path, token: try h.token())
                #expect(response.status == 404, "\(method) \(path)")
                #expect(try FakeAppleHarness.errorCode(response) == 4_040_000)
            }
            let root = h.apple.handle(FakeAppleRequest(method: "GET", path: "/"))
            #expect(root.status == 404)
            // verifyReceipt answers another method as Apple does: HTTP 200, status 21000.
            let get = h.apple.handle(FakeAppleRequest(method: "GET", path: "/verifyReceipt"))
            #expect(get.status == 200 && String(decoding: get.body, as: UTF8.self) == #"{"status":21000}"#)
        }
    }

    // MARK: Get Transaction Info

    @Test func transactionInfoAnswersTheAskedTransaction() throws {
        try Self.withHarness { h, s throws in
            let adapter = try Sim.adapter(trusting: h.pki)
            for t in s.transactions {
                let response = try h.get("/inApps/v1/transactions/\(t.transactionID)")
                #expect(response.status == 200)
                let info = try Sim.decode(TransactionInfoResponse.self, response)
                let verified = try adapter.verifyTransaction(Array(info.signedTransactionInfo.utf8), now: h.now)
                #expect(verified.payload.transactionID == t.transactionID)
                #expect(verified.payload.purchaseDate == t.purchaseDate)
                #expect(verified.payload.originalTransactionID == s.originalTransactionID)
            }
            let missing = try h.get("/inApps/v1/transactions/2999999999999999")
            #expect(missing.status == 404)
            #expect(try FakeAppleHarness.errorCode(missing) == 4_040_010)
        }
    }

    // MARK: Get Transaction History

    @Test func historyPaginatesByTwenty() throws {
        try Self.withHarness { h, base throws in
            let s = try Sim.withTransactions(base, count: 45)
            try h.put(s)
            let adapter = try Sim.adapter(trusting: h.pki)
            var revision: String?
            var pages: [Int] = []
            var seen: [String] = []
            repeat {
                var query: [String: String] = [:]
                query["revision"] = revision
                let response = try h.get("/inApps/v2/history/\(s.originalTransactionID)", query: query)
                #expect(response.status == 200)
                let page = try Sim.decode(HistoryResponse.self, response)
                #expect(page.bundleID == Sim.bundleID && page.environment == "Sandbox")
                pages.append(page.signedTransactions.count)
                for token in page.signedTransactions {
                    seen.append(
                        try #require(try adapter.verifyTransaction(Array(token.utf8), now: h.now).payload.transactionID)
                    )
                }
                revision = page.revision
                if !page.hasMore { break }
                try #require(pages.count < 10, "pagination ends")
            } while true
            #expect(pages == [20, 20, 5])
            #expect(seen.count == 45 && Set(seen).count == 45, "every transaction exactly once")
            let expected = s.transactions.sorted {
                ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID)
            }
            #expect(seen == expected.map(\.transactionID), "oldest first")
            #expect(Set(seen) == Set(s.transactions.map(\.transactionID)))

            // A revision past the end is an empty last page; a bad one is refused.
            let past = try Sim.decode(
                HistoryResponse.self,
                try h.get("/inApps/v2/history/\(s.originalTransactionID)", query: ["revision": "45"])
            )
            #expect(past.signedTransactions.isEmpty && !past.hasMore)
            for bad in ["abc", "-1"] {
                let response = try h.get("/inApps/v2/history/\(s.originalTransactionID)", query: ["revision": bad])
                #expect(response.status == 400)
                #expect(try FakeAppleHarness.errorCode(response) == 4_000_005)
            }
        }
    }

    @Test func shortHistoryIsOnePage() throws {
        try Self.withHarness { h, s throws in
            let page = try Sim.decode(
                HistoryResponse.self,
                try h.get("/inApps/v2/history/\(s.transactions[2].transactionID)")
            )
            #expect(page.signedTransactions.count == 3)
            #expect(!page.hasMore)
            #expect(page.revision == "3")
        }
    }

    // MARK: Get Notification History

    /// 45 sent notifications one second apart from t0: even ones DID_RENEW, odd ones SUBSCRIBED/RESUBSCRIBE.
    static func sentNotifications(otid: String?) -> [SimSentNotification] {
        (0..<45).map { i in
            var n = SimSentNotification(
                notificationUUID: "uuid-\(i)",
                bundleID: Sim.bundleID,
                signedDate: Sim.t0 + Int64(i) * 1_000,
                notificationType: i % 2 == 0 ? "DID_RENEW" : "SUBSCRIBED",
                subtype: i % 2 == 0 ? nil : "RESUBSCRIBE",
                originalTransactionID: i % 3 == 0 ? otid : nil,
                signedPayload: "payload-\(i)"
            )
            n.sendAttempts = [
                SendAttempt(attemptDate: n.signedDate, sendAttemptResult: i % 5 == 0 ? "TIMED_OUT" : "SUCCESS")
            ]
            return n
        }
    }

    static func history(
        _ h: FakeAppleHarness,
        _ request: NotificationHistoryRequest,
        bundleID: String = Sim.bundleID
    ) throws -> [String] {
        var token: String?
        var payloads: [String] = []
        for _ in 0..<10 {
            var query: [String: String] = [:]
            query["paginationToken"] = token
            let response = try h.post(
                "/inApps/v1/notifications/history",
                query: query,
                body: try Sim.json(request),
                bundleID: bundleID
            )
            try #require(response.status == 200)
            let page = try Sim.decode(NotificationHistoryResponse.self, response)
            #expect(page.notificationHistory.count <= FakeApple.pageSize)
            payloads += page.notificationHistory.map(\.signedPayload)
            #expect(page.hasMore == (page.paginationToken != nil))
            guard page.hasMore else { return payloads }
            token = page.paginationToken
        }
        Issue.record("pagination never ended")
        return payloads
    }

    @Test func notificationHistoryPaginates() throws {
        try Self.withHarness { h, s throws in
            try h.store.update { $0.notifications = Self.sentNotifications(otid: s.originalTransactionID) }
            let all = NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 100_000)
            let first = try Sim.decode(
                NotificationHistoryResponse.self,
                try h.post("/inApps/v1/notifications/history", body: try Sim.json(all))
            )
            #expect(first.notificationHistory.count == 20 && first.hasMore && first.paginationToken == "20")
            #expect(
                first.notificationHistory.first?.sendAttempts == [
                    SendAttempt(attemptDate: Sim.t0, sendAttemptResult: "TIMED_OUT")
                ]
            )
            let payloads = try Self.history(h, all)
            #expect(payloads == (0..<45).map { "payload-\($0)" }, "every notification once, in order")
        }
    }

    @Test func notificationHistoryFilters() throws {
        try Self.withHarness { h, s throws in
            try h.store.update { $0.notifications = Self.sentNotifications(otid: s.originalTransactionID) }
            // [start, end): end is exclusive.
            let window = try Self.history(
                h,
                NotificationHistoryRequest(startDate: Sim.t0 + 10_000, endDate: Sim.t0 + 20_000)
            )
            #expect(window == (10..<20).map { "payload-\($0)" })
            let renewals = try Self.history(
                h,
                NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 100_000, notificationType: "DID_RENEW")
            )
            #expect(renewals == stride(from: 0, to: 45, by: 2).map { "payload-\($0)" })
            #expect(renewals.count == 23)
            let resubscribes = try Self.history(
                h,
                NotificationHistoryRequest(
                    startDate: Sim.t0,
                    endDate: Sim.t0 + 10_000,
                    notificationType: "SUBSCRIBED",
                    notificationSubtype: "RESUBSCRIBE"
                )
            )
            #expect(resubscribes == [1, 3, 5, 7, 9].map { "payload-\($0)" })
            let failures = try Self.history(
                h,
                NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 100_000, onlyFailures: true)
            )
            #expect(failures == stride(from: 0, to: 45, by: 5).map { "payload-\($0)" })
            // By transaction: any id of the subscription names it.
            let mine = try Self.history(
                h,
                NotificationHistoryRequest(
                    startDate: Sim.t0,
                    endDate: Sim.t0 + 100_000,
                    transactionID: s.transactions[1].transactionID
                )
            )
            #expect(mine == stride(from: 0, to: 45, by: 3).map { "payload-\($0)" })
            let nothing = try Self.history(
                h,
                NotificationHistoryRequest(startDate: Sim.t0 + 100_000, endDate: Sim.t0 + 200_000)
            )
            #expect(nothing.isEmpty)
            let unknown = try h.post(
                "/inApps/v1/notifications/history",
                body: try Sim.json(
                    NotificationHistoryRequest(
                        startDate: Sim.t0,
                        endDate: Sim.t0 + 100_000,
                        transactionID: "2999999999999999"
                    )
                )
            )
            #expect(unknown.status == 404)
            #expect(try FakeAppleHarness.errorCode(unknown) == 4_040_010)
        }
    }

    @Test func notificationHistoryKeepsOtherBundlesOut() throws {
        try Self.withHarness { h, s throws in
            var foreign = s
            foreign.bundleID = "com.example.other"
            foreign.originalTransactionID = "2888888888888888"
            try h.put(foreign)
            try h.store.update {
                $0.notifications = [
                    SimSentNotification(
                        notificationUUID: "a",
                        bundleID: s.bundleID,
                        signedDate: Sim.t0,
                        notificationType: "DID_RENEW",
                        subtype: nil,
                        originalTransactionID: s.originalTransactionID,
                        signedPayload: "mine"
                    ),
                    SimSentNotification(
                        notificationUUID: "b",
                        bundleID: foreign.bundleID,
                        signedDate: Sim.t0 + 1,
                        notificationType: "DID_RENEW",
                        subtype: nil,
                        originalTransactionID: foreign.originalTransactionID,
                        signedPayload: "theirs"
                    ),
                ]
            }
            let request = NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 10)
            #expect(try Self.history(h, request) == ["mine"])
            #expect(try Self.history(h, request, bundleID: "com.example.other") == ["theirs"])
        }
    }

    /// Apple's codes: a body that is not JSON is a general bad request (4000000), a missing or non-numeric start
    /// date 4000015, an end date not after the start 4000013, a pagination token it did not hand out 4000014.
    @Test func notificationHistoryRefusesBadRequests() throws {
        try Self.withHarness { h, _ throws in
            for (body, code) in [
                ("", 4_000_000), ("not json", 4_000_000), ("[]", 4_000_000), ("{}", 4_000_015),
                (#"{"startDate":"yesterday","endDate":2}"#, 4_000_015), (#"{"startDate":1}"#, 4_000_016),
            ] as [(String, Int64)] {
                let response = try h.post("/inApps/v1/notifications/history", body: Array(body.utf8))
                #expect(response.status == 400, "\(body)")
                #expect(try FakeAppleHarness.errorCode(response) == code, "\(body)")
            }
            let backwards = try h.post(
                "/inApps/v1/notifications/history",
                body: try Sim.json(
                    NotificationHistoryRequest(startDate: Sim.t0 + 10, endDate: Sim.t0)
                )
            )
            #expect(backwards.status == 400)
            #expect(try FakeAppleHarness.errorCode(backwards) == 4_000_013)
            let empty = try h.post(
                "/inApps/v1/notifications/history",
                body: try Sim.json(NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0))
            )
            #expect(empty.status == 400, "an empty window")
            #expect(try FakeAppleHarness.errorCode(empty) == 4_000_013)
            let badToken = try h.post(
                "/inApps/v1/notifications/history",
                query: ["paginationToken": "next"],
                body: try Sim.json(NotificationHistoryRequest(startDate: Sim.t0, endDate: Sim.t0 + 1))
            )
            #expect(badToken.status == 400)
            #expect(try FakeAppleHarness.errorCode(badToken) == 4_000_014)
        }
    }

    // MARK: Test notifications

    @Test func testNotificationIsSentAndCanBeChecked() throws {
        try Sim.withPKI { pki throws in
            let delivered = Mutex<[(String, String)]>([])
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 5_000) { token, payload in
                delivered.withLock { $0.append((token, payload)) }
            }
            // Apple sends test notifications in V2 only: the app's sandbox notifications are V2.
            try h.apple.appStoreConnect.setVersion(
                .v2,
                bundleID: Sim.bundleID,
                environment: .sandbox,
                immediately: true
            )
            let response = try h.post("/inApps/v1/notifications/test")
            #expect(response.status == 200)
            let token = try Sim.decode(SendTestNotificationResponse.self, response).testNotificationToken
            #expect(!token.isEmpty)
            let calls = delivered.withLock { $0 }
            #expect(calls.count == 1)
            #expect(calls.first?.0 == token)

            let check = try h.get("/inApps/v1/notifications/test/\(token)")
            #expect(check.status == 200)
            let status = try Sim.decode(CheckTestNotificationResponse.self, check)
            #expect(status.signedPayload == calls.first?.1)
            #expect(status.sendAttempts.isEmpty)
            let n = try Sim.adapter(trusting: pki).verifyNotification(
                signedPayload: Array(status.signedPayload.utf8),
                now: h.now
            )
            #expect(n.payload.notificationType == "TEST")
            #expect(n.payload.notificationUUID == token)
            #expect(n.payload.signedDate == h.now)
            #expect(n.bundleID == Sim.bundleID)
            #expect(n.environment == .sandbox)
            #expect(n.canonicalEvents().first?.kind == .test)

            // Recorded attempts show in the status.
            try h.store.recordTestAttempt(token: token, result: "SUCCESS", at: h.now + 1)
            let after = try Sim.decode(
                CheckTestNotificationResponse.self,
                try h.get("/inApps/v1/notifications/test/\(token)")
            )
            #expect(after.sendAttempts == [SendAttempt(attemptDate: h.now + 1, sendAttemptResult: "SUCCESS")])

            // Each request is a new notification.
            let second = try Sim.decode(SendTestNotificationResponse.self, try h.post("/inApps/v1/notifications/test"))
                .testNotificationToken
            #expect(second != token)
            #expect(delivered.withLock { $0.count } == 2)
            #expect(try h.store.read().testNotifications.count == 2)

            let missing = try h.get("/inApps/v1/notifications/test/00000000-0000-4000-8000-000000000000")
            #expect(missing.status == 404)
            #expect(try FakeAppleHarness.errorCode(missing) == 4_040_008)
        }
    }

    @Test func testNotificationIsForTheTokensBundle() throws {
        try Sim.withPKI { pki throws in
            let h = FakeAppleHarness(pki: pki, now: Sim.t0)
            let token = try Sim.decode(
                SendTestNotificationResponse.self,
                try h.post("/inApps/v1/notifications/test", bundleID: "com.example.other")
            ).testNotificationToken
            let status = try Sim.decode(
                CheckTestNotificationResponse.self,
                try h.get("/inApps/v1/notifications/test/\(token)", bundleID: "com.example.other")
            )
            let adapter = try Sim.adapter(sandboxRoots: [pki.root.der])
            let n = try adapter.verifyNotification(signedPayload: Array(status.signedPayload.utf8), now: h.now)
            #expect(n.bundleID == "com.example.other")
            // Without a deliverTest closure nothing is sent, but the notification is still recorded.
            #expect(try h.store.read().testNotifications[token] != nil)
        }
    }

    @Test func testNotificationStatusIsScopedToTheBundle() throws {
        try Sim.withPKI { pki throws in
            let h = FakeAppleHarness(pki: pki, now: Sim.t0)
            let token = try Sim.decode(
                SendTestNotificationResponse.self,
                try h.post("/inApps/v1/notifications/test", bundleID: "com.example.other")
            ).testNotificationToken
            #expect(try h.get("/inApps/v1/notifications/test/\(token)", bundleID: "com.example.other").status == 200)
            // Apple answers for the token's own app only.
            let foreign = try h.get("/inApps/v1/notifications/test/\(token)", bundleID: Sim.bundleID)
            #expect(foreign.status == 404)
        }
    }

    // MARK: faults

    @Test func queuedRateLimitAnswersFirstThenNormal() throws {
        try Self.withHarness { h, s throws in
            try h.store.update { $0.apiFaults = [429] }
            let path = Self.statusPath(s.originalTransactionID)
            // A refused token does not consume the fault.
            #expect(h.api("GET", path, token: nil).status == 401)
            let limited = try h.get(path)
            #expect(limited.status == 429)
            #expect(try FakeAppleHarness.errorCode(limited) == 4_290_000)
            #expect(try h.store.read().apiFaults.isEmpty)
            #expect(try h.get(path).status == 200)
        }
    }

    @Test func queuedServerErrorsAnswerInOrder() throws {
        try Self.withHarness { h, s throws in
            try h.store.update { $0.apiFaults = [500, 503, 429] }
            let path = "/inApps/v2/history/\(s.originalTransactionID)"
            let first = try h.get(path)
            #expect(first.status == 500)
            #expect(try FakeAppleHarness.errorCode(first) == 5_000_000)
            #expect(try h.get(path).status == 503)
            #expect(try h.get(path).status == 429)
            #expect(try h.get(path).status == 200)
        }
    }
}
