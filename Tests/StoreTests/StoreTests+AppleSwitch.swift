import Canonical
import Dispatch
import Synchronization
import Testing

@testable import Store

/// The switch's record: one run holds an app and environment at a time, on every implementation and across instances.
extension StoreTests {
    static func claim(_ id: String, step: AppleSwitchStep = .starting) -> AppleSwitchState {
        var s = AppleSwitchState(bundleID: bundle, environment: .sandbox)
        (s.migrationID, s.target, s.step, s.updatedAt) = (id, .v2, step, 1)
        return s
    }

    static func appleSwitch(_ f: Fixture) throws -> AppleSwitchState? {
        try f.store.read { tx in try tx.appleSwitch(bundleID: bundle, environment: .sandbox) }
    }

    @Test(arguments: StoreKind.available) func aSwitchRecordIsReplacedOnlyByTheRunThatHoldsIt(_ kind: StoreKind) throws
    {
        let f = try Fixture(kind)
        // The first claim takes it; one made from the same (now stale) reading does not.
        #expect(try f.store.write { tx in try tx.replaceAppleSwitch(Self.claim("a"), ifMigrationIs: nil) })
        #expect(try !f.store.write { tx in try tx.replaceAppleSwitch(Self.claim("b"), ifMigrationIs: nil) })
        #expect(try Self.appleSwitch(f)?.migrationID == "a")
        // The holder saves; another run cannot, nor renew its lease.
        #expect(
            try f.store.write { tx in try tx.replaceAppleSwitch(Self.claim("a", step: .patching), ifMigrationIs: "a") }
        )
        #expect(try !f.store.write { tx in try tx.replaceAppleSwitch(Self.claim("b"), ifMigrationIs: "b") })
        #expect(
            try !f.store.write { tx in
                try tx.renewAppleSwitch(bundleID: Self.bundle, environment: .sandbox, migrationID: "b", at: 5)
            }
        )
        #expect(
            try f.store.write { tx in
                try tx.renewAppleSwitch(bundleID: Self.bundle, environment: .sandbox, migrationID: "a", at: 7)
            }
        )
        // A read of Apple's settings leaves the run's own columns as they are.
        try f.store.write { tx in
            try tx.recordAppleRead(
                bundleID: Self.bundle,
                environment: .sandbox,
                appID: "123",
                version: .v2,
                url: "https://x.example/n",
                at: 9
            )
        }
        let record = try #require(try Self.appleSwitch(f))
        #expect(record.migrationID == "a" && record.step == .patching && record.updatedAt == 7)
        #expect(record.appID == "123" && record.appleVersion == .v2 && record.readAt == 9)
        // Taken over from the reading that names the holder.
        #expect(try f.store.write { tx in try tx.replaceAppleSwitch(Self.claim("c"), ifMigrationIs: "a") })
        #expect(try Self.appleSwitch(f)?.migrationID == "c")
    }

    @Test(arguments: StoreKind.available) func claimsRacingFromSeveralConnectionsLeaveOneHolder(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        // Eight claimants from the same reading (no record yet), each on a store of its own where the implementation
        // allows several (PostgreSQL: eight instances).
        let stores: [any GatewayStore] = try (0..<8).map { _ in
            guard let schema = f.schema else { return f.store }
            return try PostgresStore(url: schema.url)
        }
        defer { for s in stores where s as AnyObject !== f.store as AnyObject { s.close() } }
        let won = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: stores.count) { i in
            let took =
                (try? stores[i].write { tx in try tx.replaceAppleSwitch(Self.claim("run-\(i)"), ifMigrationIs: nil) })
            if took == true { won.add(1, ordering: .relaxed) }
        }
        #expect(won.load(ordering: .relaxed) == 1)
        #expect(try Self.appleSwitch(f)?.migrationID?.hasPrefix("run-") == true)
    }
}

/// The receipt path's tables: modes seeded and moved, one claim of a customer's fetch at a time, the ledger counted.
extension StoreTests {
    @Test(arguments: StoreKind.available) func receiptModesAreSeededAndACutoverWins(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let seed = [ReceiptModeEntry(bundleID: Self.bundle, environment: .sandbox, mode: .shadow, origin: .config)]
        _ = try f.store.write { tx in try tx.seedReceiptModes(seed, now: 1) }
        #expect(try f.store.read { tx in try tx.receiptMode(bundleID: Self.bundle, environment: .sandbox) } == .shadow)
        #expect(
            try f.store.read { tx in try tx.receiptMode(bundleID: Self.bundle, environment: .production) } == .apple
        )
        let record = CutoverRecord(
            at: 2,
            bundleID: Self.bundle,
            environment: "sandbox",
            from: "shadow",
            to: "api",
            who: "test",
            reason: nil,
            verdict: "ready",
            forced: false
        )
        try f.store.write { tx in try tx.recordReceiptCutover(record, to: .api) }
        // A restart seeds the config's mode again: the cutover wins.
        let modes = try f.store.write { tx in try tx.seedReceiptModes(seed, now: 3) }
        #expect(modes.map(\.mode) == [.api] && modes.map(\.origin) == [.cutover])
        let logged = try f.store.read { tx in try tx.cutovers(bundleID: Self.bundle, environment: .sandbox) }
        #expect(logged.map(\.origin) == ["receipts"] && logged.first?.to == "api")
    }

    @Test(arguments: StoreKind.available) func aCustomersFetchIsClaimedByOneOwnerAtATime(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let key = ReceiptHistoryKey(bundleID: Self.bundle, environment: .sandbox, customer: "1000")
        #expect(
            try f.store.write { tx in try tx.claimReceiptHistory(key, owner: "a", until: 100, now: 10, freshSince: 0) }
        )
        #expect(
            try !f.store.write { tx in try tx.claimReceiptHistory(key, owner: "b", until: 100, now: 50, freshSince: 0) }
        )
        // Past its claim, another owner may take it; a settle by an owner that lost it changes nothing.
        #expect(
            try f.store.write { tx in try tx.claimReceiptHistory(key, owner: "b", until: 300, now: 150, freshSince: 0) }
        )
        try f.store.write { tx in try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: "a") }
        #expect(try f.store.read { tx in try tx.receiptHistory(key) }?.claimedBy == "b")
        try f.store.write { tx in try tx.settleReceiptHistory(key, json: Array("{}".utf8), fetchedAt: 160, owner: "b") }
        let stored = try #require(try f.store.read { tx in try tx.receiptHistory(key) })
        #expect(stored.json == Array("{}".utf8) && stored.fetchedAt == 160 && stored.claimedBy == nil)
        // A history fetched since the caller looked is not fetched again; an older one is.
        #expect(
            try !f.store.write { tx in
                try tx.claimReceiptHistory(key, owner: "c", until: 400, now: 170, freshSince: 100)
            }
        )
        #expect(
            try f.store.write { tx in try tx.claimReceiptHistory(key, owner: "c", until: 400, now: 170, freshSince: 165)
            }
        )
        try f.store.write { tx in try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: "c") }
        #expect(try f.store.write { tx in try tx.purgeReceiptHistories(fetchedBefore: 100, limit: 10) } == 0)
        #expect(try f.store.write { tx in try tx.purgeReceiptHistories(fetchedBefore: 200, limit: 10) } == 1)
        #expect(try f.store.read { tx in try tx.receiptHistory(key) } == nil)
    }

    @Test(arguments: StoreKind.available) func aCustomersPagesAreKeptForTheClaimsOwnerAndItsCallsCountedPerHour(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let key = ReceiptHistoryKey(bundleID: Self.bundle, environment: .sandbox, customer: "2000")
        #expect(
            try f.store.write { tx in try tx.claimReceiptHistory(key, owner: "a", until: 100, now: 10, freshSince: 0) }
        )
        @Sendable func page(_ n: Int, _ after: String?, _ next: String, more: Bool = true) -> StoredReceiptHistoryPage {
            StoredReceiptHistoryPage(
                page: n,
                askedWith: after,
                revision: next,
                hasMore: more,
                askedAt: 20 + Int64(n),
                json: Array(#"{"transactions":[{"transactionId":"\#(n)"}]}"#.utf8)
            )
        }
        #expect(
            try f.store.write { tx in try tx.addReceiptHistoryPage(key, page(0, nil, "20"), owner: "a", until: 150) }
        )
        #expect(
            try f.store.write { tx in try tx.addReceiptHistoryPage(key, page(1, "20", "40"), owner: "a", until: 160) }
        )
        // Another owner adds nothing while the claim is a's; the claim was held longer with each page.
        #expect(
            try !f.store.write { tx in try tx.addReceiptHistoryPage(key, page(2, "40", "60"), owner: "b", until: 1) }
        )
        #expect(try f.store.read { tx in try tx.receiptHistory(key) }?.claimedUntil == 160)
        #expect(
            try f.store.read { tx in try tx.receiptHistoryPages(key) } == [page(0, nil, "20"), page(1, "20", "40")]
        )
        // Released, the pages stay for whoever claims next; settled, they become the history and go.
        try f.store.write { tx in try tx.settleReceiptHistory(key, json: nil, fetchedAt: 0, owner: "a") }
        #expect(try f.store.read { tx in try tx.receiptHistoryPages(key) }.count == 2)
        #expect(
            try f.store.write { tx in try tx.claimReceiptHistory(key, owner: "b", until: 300, now: 170, freshSince: 0) }
        )
        #expect(
            try f.store.write { tx in try tx.addReceiptHistoryPage(key, page(2, "40", "60"), owner: "b", until: 310) }
        )
        try f.store.write { tx in try tx.settleReceiptHistory(key, json: Array("{}".utf8), fetchedAt: 180, owner: "b") }
        #expect(try f.store.read { tx in try tx.receiptHistoryPages(key) }.isEmpty)
        // Three calls an hour: the fourth refused until the hour that began with the first has passed.
        let hour: Int64 = 3_600_000
        for time in [1_000, 2_000, 3_000] as [Int64] {
            #expect(try f.store.write { tx in try tx.countReceiptHistoryCall(key, now: time, limit: 3) })
        }
        #expect(try !f.store.write { tx in try tx.countReceiptHistoryCall(key, now: 1_000 + hour - 1, limit: 3) })
        let counted = try #require(try f.store.read { tx in try tx.receiptHistory(key) })
        #expect(counted.calls == 3 && counted.callsSince == 1_000)
        #expect(try f.store.write { tx in try tx.countReceiptHistoryCall(key, now: 1_000 + hour, limit: 3) })
        let again = try #require(try f.store.read { tx in try tx.receiptHistory(key) })
        #expect(again.calls == 1 && again.callsSince == 1_000 + hour)
        // Pages never finished are purged once old.
        _ = try f.store.write { tx in
            try tx.claimReceiptHistory(key, owner: "c", until: 9_000, now: 5_000, freshSince: 200)
        }
        #expect(
            try f.store.write { tx in try tx.addReceiptHistoryPage(key, page(0, nil, "20"), owner: "c", until: 9_000) }
        )
        _ = try f.store.write { tx in try tx.purgeReceiptHistories(fetchedBefore: 21, limit: 10) }
        #expect(try f.store.read { tx in try tx.receiptHistoryPages(key) }.isEmpty)
    }

    @Test(arguments: StoreKind.available) func theReceiptLedgerIsCountedApartFromTheNotificationsOne(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        @Sendable func entry(
            _ otid: String,
            _ outcome: CompareOutcome,
            at: Int64,
            fields: [String] = []
        ) -> ReceiptLedgerEntry {
            var o = ReceiptOutcome(status: 0, originalTransactionID: otid)
            o.expiresDate = at
            return ReceiptLedgerEntry(
                subscription: SubscriptionKey(
                    bundleID: Self.bundle,
                    environment: .sandbox,
                    originalTransactionID: otid
                ),
                comparedAt: at,
                outcome: outcome,
                fields: fields,
                apple: outcome == .v2Only ? nil : o,
                api: outcome == .v1Only ? nil : o
            )
        }
        try f.store.write { tx in
            try tx.recordReceiptComparison(entry("1", .agree, at: 10))
            try tx.recordReceiptComparison(entry("2", .disagree, at: 20, fields: ["expires_date", "is_trial"]))
            try tx.recordReceiptComparison(entry("3", .v1Only, at: 30))
        }
        let tally = try f.store.read { tx in
            try tx.ledgerTally(
                bundleID: Self.bundle,
                environment: .sandbox,
                from: 0,
                to: 100,
                byDay: true,
                in: .receipts
            )
        }
        #expect(tally.outcomes[.agree] == 1 && tally.outcomes[.disagree] == 1 && tally.outcomes[.v1Only] == 1)
        #expect(tally.fieldSets == ["expires_date,is_trial": 1])
        let notifications = try f.store.read { tx in
            try tx.ledgerTally(
                bundleID: Self.bundle,
                environment: .sandbox,
                from: 0,
                to: 100,
                byDay: false,
                in: .notifications
            )
        }
        #expect(notifications.outcomes.values.allSatisfy { $0 == 0 })
        let rows = try f.store.read { tx in
            try tx.receiptLedger(bundleID: Self.bundle, environment: .sandbox, from: 0, to: 100)
        }
        #expect(rows.map(\.subscription.originalTransactionID) == ["1", "2", "3"])
        #expect(rows[1].apple?.expiresDate == 20 && rows[2].api == nil)
    }
}
