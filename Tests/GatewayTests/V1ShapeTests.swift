import Canonical
import Store
import Testing
import WireJSON

@testable import Gateway

/// The V1 shape built from the store: as of its notification's moment, whatever the store holds when it is built.
@Suite struct V1ShapeTests {
    /// The `i`th monthly renewal of one subscription, its own notification (`uuid-i`).
    static func renewal(_ i: Int64) -> CanonicalEvent {
        let t0 = GatewayHarness.t - 400 * 2_592_000_000 / 10
        var e = CanonicalEvent(
            id: "uuid-\(i)",
            source: .v2,
            kind: i == 0 ? .purchase : .renewal,
            reason: i == 0 ? .initial : .auto,
            rawType: i == 0 ? "SUBSCRIBED" : "DID_RENEW",
            rawSubtype: i == 0 ? "INITIAL_BUY" : nil,
            eventDate: t0 + i * 86_400_000 + 1_000,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = "com.example.gateway"
        e.environment = .sandbox
        e.productID = "com.example.gateway.monthly"
        e.productType = .autoRenewable
        e.originalTransactionID = "2000000900000000"
        e.transactionID = String(2_000_000_900_000_000 + i)
        e.purchaseDate = t0 + i * 86_400_000
        e.originalPurchaseDate = t0
        e.expiresDate = t0 + (i + 1) * 86_400_000
        e.autoRenew = true
        e.autoRenewProductID = e.productID
        e.computeEntitlement()
        return e
    }

    static func transactionIDs(_ shape: V1Shape?) throws -> [String] {
        let body = try #require(shape?.body)
        let items = try #require(
            try JSONParser.parse(body).objectValue?["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue
        )
        return items.compactMap { $0.objectValue?["transaction_id"]?.stringValue }
    }

    @Test func aLongLivedSubscriptionsBodyListsItsRecentTransactionsNotItsOldest() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        // 300 daily periods on record; the notifications about the newest and about the 151st.
        let events = (0..<300).map { Self.renewal(Int64($0)) }
        let router = h.router
        _ = try h.store.write { tx in
            try tx.storeEvents(events, journalID: nil, routing: router.routing, now: GatewayHarness.t, authority: .v2)
        }
        let (newest, middle) = try h.store.read { tx in
            (
                try V1Shape.build(notificationKey: "uuid-299", journalBody: [], secretName: "APP_SECRET", in: tx),
                try V1Shape.build(notificationKey: "uuid-150", journalBody: [], secretName: "APP_SECRET", in: tx)
            )
        }
        let expected = { (last: Int) in (last - 99...last).reversed().map { String(2_000_000_900_000_000 + $0) } }
        #expect(try Self.transactionIDs(newest) == expected(299), "its own first, then the 99 before it")
        #expect(try Self.transactionIDs(middle) == expected(150), "nothing bought after the 151st period")
    }
}
