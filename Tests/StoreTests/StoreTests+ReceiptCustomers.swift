import Canonical
import Testing

@testable import Store

/// `receipts prefetch` reads an app's customers a page at a time (docs/commands.md): the journaled subscriptions and
/// the receipt ledger, each id once, in order, with the stored history's age.
extension StoreTests {
    static func subscription(
        _ otid: String,
        bundle: String = "com.example.gateway",
        environment: AppStoreEnvironment
    )
        -> CanonicalEvent
    {
        var e = event("e-\(bundle)-\(environment.rawValue)-\(otid)", date: 1_000)
        (e.bundleID, e.environment, e.originalTransactionID) = (bundle, environment, otid)
        return e
    }

    static func compared(
        _ otid: String,
        bundle: String = "com.example.gateway",
        environment: AppStoreEnvironment
    )
        -> ReceiptLedgerEntry
    {
        ReceiptLedgerEntry(
            subscription: SubscriptionKey(bundleID: bundle, environment: environment, originalTransactionID: otid),
            comparedAt: 1,
            outcome: .agree,
            fields: [],
            apple: nil,
            api: nil
        )
    }

    @Test(arguments: StoreKind.available) func customersArePagedInOrderFromBothSourcesEachOnce(_ kind: StoreKind) throws
    {
        let f = try Fixture(kind)
        // Journaled: 1, 3, 5 (5 on both paths); compared in shadow: 2, 3, 6; another app's and environment's ignored.
        var events = ["1", "3", "5"].map { Self.subscription($0, environment: .sandbox) }
        var v1 = Self.subscription("5", environment: .sandbox)
        (v1.id, v1.source) = ("e-v1-5", .v1)
        events += [v1, Self.subscription("4", bundle: "com.example.other", environment: .sandbox)]
        events.append(Self.subscription("7", environment: .production))
        try Self.storeEvents(f, events)
        _ = try f.store.write { tx in
            for otid in ["2", "3", "6"] { try tx.recordReceiptComparison(Self.compared(otid, environment: .sandbox)) }
            try tx.recordReceiptComparison(Self.compared("8", bundle: "com.example.other", environment: .sandbox))
            let key = ReceiptHistoryKey(bundleID: "com.example.gateway", environment: .sandbox, customer: "3")
            _ = try tx.claimReceiptHistory(key, owner: "me", until: 10, now: 1, freshSince: 0)
            try tx.settleReceiptHistory(key, json: Array("{}".utf8), fetchedAt: 42, owner: "me")
        }
        var pages: [[ReceiptCustomer]] = []
        var after = ""
        while true {
            let page = try f.store.read { [after] tx in
                try tx.receiptCustomers(bundleID: "com.example.gateway", environment: .sandbox, after: after, limit: 2)
            }
            guard let last = page.last else { break }
            pages.append(page)
            after = last.originalTransactionID
        }
        #expect(pages.map { $0.map(\.originalTransactionID) } == [["1", "2"], ["3", "5"], ["6"]])
        #expect(pages[1][0].historyFetchedAt == 42 && pages[0][0].historyFetchedAt == nil)
        let count = try f.store.read { tx in
            try tx.receiptCustomerCount(bundleID: "com.example.gateway", environment: .sandbox, after: "2")
        }
        #expect(count == 3)
    }
}
