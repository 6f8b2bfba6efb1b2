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
