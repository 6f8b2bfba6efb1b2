import Crypto
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V2Adapter

/// Every filter of the endpoints the fake serves, one at a time and together, and the 400 Apple answers (with its
/// error code) to a value it does not take: Get Transaction History (v2 and v1), Get All Subscription Statuses and Get
/// Notification History.
@Suite struct FakeAppleFilterTests {
    /// One customer's purchases in every shape the history filters tell apart, from t0 on:
    /// 0 `sim.monthly` bought, 1 its renewal (family shared), 2 `sim.premium.monthly`, 3 coins, 4 coins refunded.
    static func customer(_ pki: SimulatorPKI) throws -> SimSubscription {
        var s = try Sim.finalSubscription("auto-renew", pki: pki)
        try #require(s.transactions.count == 3)
        s.transactions[1].familyShared = true
        s.transactions[2].productID = Catalogue.premium.id
        for (i, months) in [(3, 2.5), (4, 2.7)] {
            var coins = s.transactions[0]
            coins.transactionID = "300000000000000\(i)"
            coins.webOrderLineItemID = nil
            coins.productID = Catalogue.coins.id
            coins.purchaseDate = Sim.t0 + Int64(Double(Sim.month) * months)
            coins.expiresDate = nil
            s.transactions.append(coins)
        }
        s.transactions[4].revocationDate = Sim.t0 + 3 * Sim.month - 1_000
        s.transactions[4].revocationReason = 1
        return s
    }

    /// The fake at t0 + 3 months with ``customer(_:)`` stored.
    static func withCustomer(_ body: (FakeAppleHarness, SimSubscription) throws -> Void) throws {
        try Sim.withPKI { pki throws in
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 3 * Sim.month)
            let s = try customer(pki)
            try h.put(s)
            try body(h, s)
        }
    }

    /// The transaction ids Get Transaction History answers for `query` (one page), asking for `transactionID`.
    static func history(
        _ h: FakeAppleHarness,
        _ s: SimSubscription,
        _ query: String,
        version: String = "v2"
    ) throws -> [String] {
        let response = try h.python(
            "GET",
            "/inApps/\(version)/history/\(s.originalTransactionID)" + (query.isEmpty ? "" : "?" + query)
        )
        try #require(response.status == 200, "\(query): \(String(decoding: response.body, as: UTF8.self))")
        return try FakeAppleHarness.transactionIDs(response)
    }

    // MARK: Get Transaction History

    @Test func historyWithoutFiltersIsEveryTransactionOldestFirst() throws {
        try Self.withCustomer { h, s throws in
            #expect(try Self.history(h, s, "") == s.transactions.map(\.transactionID))
            #expect(try Self.history(h, s, "sort=ASCENDING") == s.transactions.map(\.transactionID))
        }
    }

    @Test func sortDescendingIsNewestFirst() throws {
        try Self.withCustomer { h, s throws in
            #expect(try Self.history(h, s, "sort=DESCENDING") == s.transactions.map(\.transactionID).reversed())
        }
    }

    @Test func descendingPagesFollowTheRevision() throws {
        try Sim.withPKI { pki throws in
            let s = try Sim.withTransactions(try Sim.finalSubscription("auto-renew", pki: pki), count: 45)
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 50 * Sim.month)
            try h.put(s)
            var seen: [String] = []
            var revision: String?
            for _ in 0..<5 {
                let query = "sort=DESCENDING" + (revision.map { "&revision=" + $0 } ?? "")
                let response = try h.python("GET", "/inApps/v2/history/\(s.originalTransactionID)?" + query)
                let page = try Sim.decode(HistoryResponse.self, response)
                seen += try FakeAppleHarness.transactionIDs(response)
                revision = page.revision
                if !page.hasMore { break }
            }
            let newestFirst = s.transactions.sorted { $0.purchaseDate > $1.purchaseDate }.map(\.transactionID)
            #expect(seen == newestFirst, "every transaction once, newest first, across pages of 20")
        }
    }

    @Test func productIDFilterTakesOneOrMany() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            #expect(try Self.history(h, s, "productId=sim.premium.monthly") == [ids[2]])
            #expect(
                try Self.history(h, s, "productId=sim.monthly&productId=sim.coins100") == [
                    ids[0], ids[1], ids[3], ids[4],
                ]
            )
            #expect(try Self.history(h, s, "productId=sim.unknown").isEmpty)
        }
    }

    @Test func productTypeFilterTakesOneOrMany() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            #expect(try Self.history(h, s, "productType=AUTO_RENEWABLE") == Array(ids[0...2]))
            #expect(try Self.history(h, s, "productType=CONSUMABLE") == [ids[3], ids[4]])
            #expect(try Self.history(h, s, "productType=AUTO_RENEWABLE&productType=CONSUMABLE") == ids)
            #expect(try Self.history(h, s, "productType=NON_RENEWABLE").isEmpty)
            #expect(try Self.history(h, s, "productType=NON_CONSUMABLE&productType=NON_RENEWABLE").isEmpty)
        }
    }

    @Test func subscriptionGroupFilterTakesOneOrMany() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            #expect(try Self.history(h, s, "subscriptionGroupIdentifier=\(Catalogue.groupID)") == Array(ids[0...2]))
            #expect(try Self.history(h, s, "subscriptionGroupIdentifier=99999999").isEmpty)
            #expect(
                try Self.history(
                    h,
                    s,
                    "subscriptionGroupIdentifier=99999999&subscriptionGroupIdentifier=\(Catalogue.groupID)"
                )
                    == Array(ids[0...2])
            )
        }
    }

    @Test func ownershipFilter() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            #expect(try Self.history(h, s, "inAppOwnershipType=FAMILY_SHARED") == [ids[1]])
            #expect(try Self.history(h, s, "inAppOwnershipType=PURCHASED") == [ids[0], ids[2], ids[3], ids[4]])
        }
    }

    /// `revoked=true` only the revoked, `false` only the others; Python's `True` / `False` spelling works the same.
    @Test func revokedFilter() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            for yes in ["true", "True"] { #expect(try Self.history(h, s, "revoked=\(yes)") == [ids[4]]) }
            for no in ["false", "False"] { #expect(try Self.history(h, s, "revoked=\(no)") == Array(ids[0...3])) }
        }
    }

    /// Purchase dates in [startDate, endDate): the start included, the end not; either bound alone.
    @Test func dateFilters() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            let dates = s.transactions.map(\.purchaseDate)
            #expect(try Self.history(h, s, "startDate=\(dates[1])&endDate=\(dates[3])") == [ids[1], ids[2]])
            #expect(try Self.history(h, s, "startDate=\(dates[1] + 1)&endDate=\(dates[3] + 1)") == [ids[2], ids[3]])
            #expect(try Self.history(h, s, "startDate=\(dates[3])") == [ids[3], ids[4]])
            #expect(try Self.history(h, s, "endDate=\(dates[1])") == [ids[0]])
            #expect(
                try Self.history(h, s, "endDate=\(Sim.t0 + 100 * Sim.month)") == ids,
                "an end date in the future is fine"
            )
        }
    }

    @Test func filtersCombine() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            #expect(
                try Self.history(
                    h,
                    s,
                    "productType=AUTO_RENEWABLE&productType=CONSUMABLE&sort=DESCENDING&revoked=false"
                )
                    == [ids[3], ids[2], ids[1], ids[0]]
            )
            #expect(
                try Self.history(h, s, "productId=sim.monthly&inAppOwnershipType=PURCHASED&startDate=\(Sim.t0)") == [
                    ids[0]
                ]
            )
        }
    }

    /// The deprecated v1 path takes the same filters but leaves out the consumables the app has finished (the
    /// simulated app finishes every one it is not refunded for).
    @Test func historyV1LeavesOutFinishedConsumables() throws {
        try Self.withCustomer { h, s throws in
            let ids = s.transactions.map(\.transactionID)
            #expect(try Self.history(h, s, "", version: "v1") == [ids[0], ids[1], ids[2], ids[4]])
            #expect(try Self.history(h, s, "productType=CONSUMABLE", version: "v1") == [ids[4]])
            #expect(try Self.history(h, s, "sort=DESCENDING", version: "v1") == [ids[4], ids[2], ids[1], ids[0]])
        }
    }

    @Test(
        arguments: [
            ("sort=random", 4_000_021), ("sort=descending", 4_000_021), ("productType=SUBSCRIPTION", 4_000_022),
            ("productType=AUTO_RENEWABLE&productType=nope", 4_000_022), ("productId=", 4_000_023),
            ("subscriptionGroupIdentifier=", 4_000_024),
            ("inAppOwnershipType=GIFTED", 4_000_026), ("revoked=maybe", 4_000_030), ("revoked=", 4_000_030),
            ("startDate=yesterday", 4_000_015),
            ("startDate=-1", 4_000_015), ("endDate=1e12", 4_000_016), ("startDate=2000&endDate=1000", 4_000_013),
            ("startDate=1000&endDate=1000", 4_000_013),
            ("revision=abc", 4_000_005),
        ] as [(String, Int64)]
    )
    func historyRefusesInvalidFilters(query: String, code: Int64) throws {
        try Self.withCustomer { h, s throws in
            for version in ["v1", "v2"] {
                let response = try h.python("GET", "/inApps/\(version)/history/\(s.originalTransactionID)?" + query)
                #expect(response.status == 400, "\(version) \(query)")
                #expect(try FakeAppleHarness.errorCode(response) == code, "\(version) \(query)")
            }
        }
    }

    // MARK: Get All Subscription Statuses

    static func statuses(_ h: FakeAppleHarness, _ id: String, _ query: String) throws -> [Int] {
        let response = try h.python("GET", "/inApps/v1/subscriptions/\(id)" + (query.isEmpty ? "" : "?" + query))
        try #require(response.status == 200, "\(query)")
        return try Sim.decode(StatusResponse.self, response).data.flatMap(\.lastTransactions).map(\.status)
    }

    /// A refunded subscription is revoked (5): `status=1` (active) must not return it, `status=5` does.
    @Test func statusFilterOnARefundedSubscription() throws {
        try FakeAppleServerAPITests.withHarness("refund") { h, s throws in
            #expect(try Self.statuses(h, s.originalTransactionID, "") == [5])
            #expect(try Self.statuses(h, s.originalTransactionID, "status=1").isEmpty)
            #expect(try Self.statuses(h, s.originalTransactionID, "status=1&status=2&status=3&status=4").isEmpty)
            #expect(try Self.statuses(h, s.originalTransactionID, "status=5") == [5])
            #expect(try Self.statuses(h, s.originalTransactionID, "status=1&status=5") == [5])
            let empty = try Sim.decode(
                StatusResponse.self,
                try h.python("GET", "/inApps/v1/subscriptions/\(s.originalTransactionID)?status=1")
            )
            #expect(empty.data.isEmpty && empty.bundleID == Sim.bundleID && empty.environment == "Sandbox")
        }
    }

    @Test(arguments: [
        ("initial-buy", 0, 1), ("billing-grace-recovery", 1, 4), ("billing-retry-recovery", 1, 3),
        ("auto-renew-off-then-expiry", 2, 2),
    ])
    func statusFilterKeepsOnlyTheAskedStatus(name: String, step: Int, status: Int) throws {
        try Sim.withPKI { pki throws in
            let e = try Sim.plan(name, pki: pki).emissions[step]
            let h = FakeAppleHarness(pki: pki, now: e.at)
            try h.put(e.subscription)
            #expect(try Self.statuses(h, e.originalTransactionID, "status=\(status)") == [status])
            let others = (1...5).filter { $0 != status }.map { "status=\($0)" }.joined(separator: "&")
            #expect(try Self.statuses(h, e.originalTransactionID, others).isEmpty)
        }
    }

    @Test(arguments: ["status=0", "status=6", "status=active", "status=", "status=1&status=9"])
    func statusFilterRefusesOtherValues(query: String) throws {
        try Self.withCustomer { h, s throws in
            let response = try h.python("GET", "/inApps/v1/subscriptions/\(s.originalTransactionID)?" + query)
            #expect(response.status == 400)
            #expect(try FakeAppleHarness.errorCode(response) == 4_000_031)
        }
    }

    // MARK: Get Notification History

    /// Sent notifications of the customer, one a second from t0 (see FakeAppleServerAPITests.sentNotifications).
    static func withNotifications(_ body: (FakeAppleHarness, SimSubscription) throws -> Void) throws {
        try Self.withCustomer { h, s throws in
            try h.store.update {
                $0.notifications = FakeAppleServerAPITests.sentNotifications(otid: s.originalTransactionID)
            }
            try body(h, s)
        }
    }

    static func notificationPayloads(_ h: FakeAppleHarness, _ body: String) throws -> [String] {
        let response = try h.python("POST", "/inApps/v1/notifications/history", body: body)
        try #require(response.status == 200, "\(body): \(String(decoding: response.body, as: UTF8.self))")
        return try Sim.decode(NotificationHistoryResponse.self, response).notificationHistory.map(\.signedPayload)
    }

    /// The older body member `originalTransactionId` narrows to one customer like `transactionId`.
    @Test func notificationHistoryTakesTheLegacyOriginalTransactionID() throws {
        try Self.withNotifications { h, s throws in
            let window = #""startDate": \#(Sim.t0), "endDate": \#(Sim.t0 + 15_000)"#
            let expected = [0, 3, 6, 9, 12].map { "payload-\($0)" }
            #expect(
                try Self.notificationPayloads(
                    h,
                    "{\(window), \"originalTransactionId\": \"\(s.originalTransactionID)\"}"
                ) == expected
            )
            #expect(
                try Self.notificationPayloads(
                    h,
                    "{\(window), \"transactionId\": \"\(s.transactions[2].transactionID)\"}"
                ) == expected
            )
        }
    }

    /// An end date in the future means now: what was sent after now is not in the history yet.
    @Test func notificationHistoryEndsNow() throws {
        try Sim.withPKI { pki throws in
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 10_500)
            try h.store.update { $0.notifications = FakeAppleServerAPITests.sentNotifications(otid: nil) }
            let payloads = try Self.notificationPayloads(
                h,
                #"{"startDate": \#(Sim.t0), "endDate": \#(Sim.t0 + 100_000)}"#
            )
            #expect(payloads == (0...10).map { "payload-\($0)" })
            let future = try h.python(
                "POST",
                "/inApps/v1/notifications/history",
                body: #"{"startDate": \#(Sim.t0 + 11_000), "endDate": \#(Sim.t0 + 100_000)}"#
            )
            #expect(future.status == 400)
            #expect(try FakeAppleHarness.errorCode(future) == 4_000_013)
        }
    }

    /// With ``SimWorld/notificationHistoryDays`` set (Apple keeps 30 days in sandbox), an older start is 4000012.
    @Test func notificationHistoryRetention() throws {
        try Self.withNotifications { h, _ throws in
            let day: Int64 = 86_400_000
            let body = { (start: Int64) in #"{"startDate": \#(start), "endDate": \#(h.now)}"# }
            #expect(
                try h.python("POST", "/inApps/v1/notifications/history", body: body(Sim.t0)).status == 200,
                "no limit by default"
            )
            try h.store.update { $0.notificationHistoryDays = 30 }
            let old = try h.python("POST", "/inApps/v1/notifications/history", body: body(h.now - 31 * day))
            #expect(old.status == 400)
            #expect(try FakeAppleHarness.errorCode(old) == 4_000_012)
            #expect(
                try h.python("POST", "/inApps/v1/notifications/history", body: body(h.now - 30 * day)).status == 200
            )
        }
    }

    @Test(
        arguments: [
            (#""notificationSubtype": "RESUBSCRIBE""#, 4_000_018),  // a subtype needs its type
            (#""notificationType": "DID_RENEW", "notificationSubtype": "VOLUNTARY""#, 4_000_018),
            (#""notificationType": "RENEWED""#, 4_000_018), (#""notificationType": 7"#, 4_000_018),
            (#""notificationType": "DID_RENEW", "transactionId": "2000000000000001""#, 4_000_019),
            (#""transactionId": 2000000000000001"#, 4_000_006), (#""transactionId": """#, 4_000_006),
            (#""onlyFailures": "yes""#, 4_000_000),
        ] as [(String, Int64)]
    )
    func notificationHistoryRefusesInvalidFilters(members: String, code: Int64) throws {
        try Self.withNotifications { h, _ throws in
            let response = try h.python(
                "POST",
                "/inApps/v1/notifications/history",
                body: #"{"startDate": \#(Sim.t0), "endDate": \#(Sim.t0 + 100_000), \#(members)}"#
            )
            #expect(response.status == 400, "\(members)")
            #expect(try FakeAppleHarness.errorCode(response) == code, "\(members)")
        }
    }

    /// Every type and subtype the simulator sends can be asked for.
    @Test func everyPairTheSimulatorSendsIsAValidFilter() throws {
        try Sim.withPKI { pki throws in
            let h = FakeAppleHarness(pki: pki, now: Sim.t0 + 100 * Sim.month)
            for lifecycle in Lifecycles.all {
                for e in try Sim.plan(lifecycle.name, pki: pki).emissions {
                    guard let type = e.v2Type else { continue }
                    let subtype = e.v2Subtype.map { #", "notificationSubtype": "\#($0)""# } ?? ""
                    let body =
                        #"{"startDate": \#(Sim.t0), "endDate": \#(h.now), "notificationType": "\#(type)"\#(subtype)}"#
                    #expect(
                        try h.python("POST", "/inApps/v1/notifications/history", body: body).status == 200,
                        "\(type) \(e.v2Subtype ?? "")"
                    )
                }
            }
        }
    }
}
