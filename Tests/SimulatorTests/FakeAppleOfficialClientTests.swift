import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V2Adapter

/// The fake answers requests shaped exactly as Apple's own Python library (`app-store-server-library` 3.1.2) sends
/// them (``PythonClient``: its token without `iat`, its query encoding, its JSON bodies), and as Apple's Java library
/// sends notification-history bodies (members it does not set written as `null`). `scripts/try-apple-client` runs
/// the library itself against `simulate serve-apple`.
@Suite struct FakeAppleOfficialClientTests {
    /// `get_all_subscription_statuses(id, [Status.ACTIVE, Status.BILLING_RETRY])`, then with `[Status.REVOKED]`.
    @Test func getAllSubscriptionStatusesWithAStatusFilter() throws {
        try FakeAppleServerAPITests.withHarness("refund") { h, s throws in
            let active = try h.python("GET", "/inApps/v1/subscriptions/\(s.originalTransactionID)?status=1&status=3")
            #expect(active.status == 200)
            #expect(
                try Sim.decode(StatusResponse.self, active).data.isEmpty,
                "refunded: not active, not in billing retry"
            )
            let revoked = try Sim.decode(
                StatusResponse.self,
                try h.python("GET", "/inApps/v1/subscriptions/\(s.originalTransactionID)?status=5")
            )
            let item = try #require(revoked.data.first?.lastTransactions.first)
            #expect(item.status == 5 && item.originalTransactionID == s.originalTransactionID)
            let t = try Sim.adapter(trusting: h.pki).verifyTransaction(
                Array(item.signedTransactionInfo.utf8),
                now: h.now
            )
            #expect(t.payload.revocationDate != nil)
        }
    }

    /// `get_transaction_history(id, None, TransactionHistoryRequest(…every filter…), GetTransactionHistoryVersion.V2)`:
    /// lists as repeated names, a space as `+`, `revoked` as Python's `False`.
    @Test func getTransactionHistoryWithEveryFilterAsPythonEncodesThem() throws {
        try FakeAppleFilterTests.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            let target =
                "/inApps/v2/history/\(s.originalTransactionID)?startDate=\(Sim.t0)&endDate=\(Sim.t0 + 100 * Sim.month)"
                + "&productId=sim.monthly&productId=sim.premium.monthly&productId=no+such+product&productType=AUTO_RENEWABLE&productType=CONSUMABLE"
                + "&sort=DESCENDING&subscriptionGroupIdentifier=\(Catalogue.groupID)&inAppOwnershipType=PURCHASED&revoked=False"
            let response = try h.python("GET", target)
            #expect(response.status == 200)
            #expect(try FakeAppleHarness.transactionIDs(response) == [ids[2], ids[0]])
            let page = try Sim.decode(HistoryResponse.self, response)
            #expect(page.bundleID == Sim.bundleID && page.environment == "Sandbox" && !page.hasMore)
        }
    }

    /// The library's default is still the deprecated v1 path, `?revision=` when it follows a page.
    @Test func getTransactionHistoryOnTheDefaultV1Path() throws {
        try FakeAppleFilterTests.withCustomer { h, s throws in
            let first = try h.python(
                "GET",
                "/inApps/v1/history/\(s.originalTransactionID)?productType=AUTO_RENEWABLE&sort=DESCENDING"
            )
            #expect(first.status == 200)
            #expect(try FakeAppleHarness.transactionIDs(first) == s.transactions[0...2].map(\.transactionID).reversed())
            let revision = try Sim.decode(HistoryResponse.self, first).revision
            let next = try h.python(
                "GET",
                "/inApps/v1/history/\(s.originalTransactionID)?revision=\(revision ?? "")&productType=AUTO_RENEWABLE&sort=DESCENDING"
            )
            #expect(try FakeAppleHarness.transactionIDs(next).isEmpty)
        }
    }

    /// `get_notification_history(token, NotificationHistoryRequest(…))`: `json.dumps` spacing, members not set left
    /// out, `paginationToken` in the query.
    @Test func getNotificationHistoryWithPythonBodies() throws {
        try FakeAppleFilterTests.withNotifications { h, s throws in
            let window = #""startDate": \#(Sim.t0), "endDate": \#(Sim.t0 + 100_000)"#
            let first = try h.python("POST", "/inApps/v1/notifications/history", body: "{\(window)}")
            let page = try Sim.decode(NotificationHistoryResponse.self, first)
            #expect(page.notificationHistory.count == 20 && page.hasMore)
            let token = try #require(page.paginationToken)
            let second = try Sim.decode(
                NotificationHistoryResponse.self,
                try h.python("POST", "/inApps/v1/notifications/history?paginationToken=\(token)", body: "{\(window)}")
            )
            #expect(second.notificationHistory.map(\.signedPayload) == (20..<40).map { "payload-\($0)" })

            let typed =
                #"{\#(window), "notificationType": "SUBSCRIBED", "notificationSubtype": "RESUBSCRIBE", "onlyFailures": true}"#
            #expect(try FakeAppleFilterTests.notificationPayloads(h, typed) == [5, 15, 25, 35].map { "payload-\($0)" })
            let mine = #"{\#(window), "transactionId": "\#(s.transactions[1].transactionID)", "onlyFailures": false}"#
            #expect(
                try FakeAppleFilterTests.notificationPayloads(h, mine)
                    == stride(from: 0, to: 45, by: 3).prefix(20).map { "payload-\($0)" }
            )
        }
    }

    /// Apple's Java library writes every member, unset ones as `null` (as a developer forum post shows it sending).
    @Test func notificationHistoryBodyWithNullsIsTheSameAsWithout() throws {
        try FakeAppleFilterTests.withNotifications { h, _ throws in
            let body =
                #"{"startDate":\#(Sim.t0),"endDate":\#(Sim.t0 + 100_000),"notificationType":"DID_RENEW","#
                + #""notificationSubtype":null,"transactionId":null,"onlyFailures":null}"#
            #expect(
                try FakeAppleFilterTests.notificationPayloads(h, body)
                    == stride(from: 0, to: 40, by: 2).map { "payload-\($0)" }
            )
        }
    }

    /// `request_test_notification()` (a POST with an empty body) and `get_test_notification_status(token)`.
    @Test func requestATestNotificationAndItsStatus() throws {
        try Sim.withPKI { pki throws in
            let h = FakeAppleHarness(pki: pki, now: Sim.t0)
            let requested = try h.python("POST", "/inApps/v1/notifications/test")
            #expect(requested.status == 200)
            let token = try Sim.decode(SendTestNotificationResponse.self, requested).testNotificationToken
            let status = try h.python("GET", "/inApps/v1/notifications/test/\(token)")
            #expect(status.status == 200)
            let n = try Sim.adapter(trusting: pki).verifyNotification(
                signedPayload: Array(try Sim.decode(CheckTestNotificationResponse.self, status).signedPayload.utf8),
                now: h.now
            )
            #expect(n.payload.notificationType == "TEST")
        }
    }

    /// The same token signed by another key, or living past an hour, is still refused.
    @Test func pythonShapedTokensAreStillChecked() throws {
        try FakeAppleFilterTests.withCustomer { h, s throws in
            let path = "/inApps/v1/subscriptions/\(s.originalTransactionID)"
            let other = try PythonClient.token(now: h.now, key: try PrivateKey.generateP256())
            #expect(h.apple.handle(PythonClient.request("GET", path, token: other)).status == 401)
            let tooLong = try CraftedJWT.make(
                payload:
                    #"{"bid":"\#(Sim.bundleID)","iss":"\#(SimulatorPKI.issuerID)","aud":"appstoreconnect-v1","exp":\#(h.now / 1000 + 3_601)}"#,
                key: h.pki.apiKey
            )
            #expect(h.apple.handle(PythonClient.request("GET", path, token: tooLong)).status == 401)
            #expect(try h.python("GET", path).status == 200)
        }
    }
}
