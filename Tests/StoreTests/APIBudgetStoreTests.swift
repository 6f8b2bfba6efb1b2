import Canonical
import Foundation
import TestSupport
import Testing

@testable import Store

/// The shared App Store Server API budget's table (PostgreSQL only): the arithmetic of one lease, done by the server in
/// one statement, and a pause. The arithmetic on the Swift side needs no server.
@Suite struct APIBudgetStoreTests {
    static let bucket = APIBudgetBucket(
        bundleID: "com.example.a",
        environment: .production,
        endpoint: "transaction_history"
    )
    /// 40 turns a second (one every 25 ms), at most 6 gathered: `transaction_history` in production, shared.
    static let refill = APIBudgetRefill(perSecond: 40, capacity: 6)
    static let t: Int64 = 1_700_000_000_000

    @Test func theRefillIsInBillionthsOfATurnAndNeverZero() {
        #expect(Self.refill.perMilli == 40_000_000 && Self.refill.capacity == 6_000_000_000)
        #expect(Self.refill.turnMillis == 25)
        let slowest = APIBudgetRefill(perSecond: 0.0005, capacity: 0.2)
        #expect(slowest.perMilli == 500 && slowest.capacity == APIBudgetRefill.turn, "at least one turn gathers")
        #expect(slowest.turnMillis == 2_000_000)
    }

    @Test func aLeaseSaysWhenTheNextWholeTurnGathers() {
        // Half a turn as of t: the other half takes 12.5 ms, rounded up.
        let half = APIBudgetLease(turns: 2, tokens: 500_000_000, updatedAt: Self.t, pausedUntil: 0, refill: Self.refill)
        #expect(half.nextTurnAt == Self.t + 13 && half.turns == 2)
        let whole = APIBudgetLease(
            turns: 0,
            tokens: 2_000_000_000,
            updatedAt: Self.t,
            pausedUntil: 0,
            refill: Self.refill
        )
        #expect(whole.nextTurnAt == Self.t)
        let paused = APIBudgetLease(
            turns: 0,
            tokens: 0,
            updatedAt: Self.t,
            pausedUntil: Self.t + 5_000,
            refill: Self.refill
        )
        #expect(paused.nextTurnAt == Self.t + 5_000)
        let far = APIBudgetLease(turns: 0, tokens: 0, updatedAt: .max - 1, pausedUntil: 0, refill: Self.refill)
        #expect(far.nextTurnAt == .max, "no overflow")
    }

    @Test func anSQLiteStoreHasNoSharedBudget() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: directory + "/gateway.db")
        defer { store.close() }
        #expect(!store.sharedByInstances)
        #expect(throws: (any Error).self) {
            try store.write { tx in try tx.leaseAPIBudget(Self.bucket, turns: 1, refill: Self.refill, at: Self.t) }
        }
    }

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func theServerLeasesWholeTurnsFromOneBucketFillingAtItsRate() async throws {
        let schema = try TestSchema()
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        func lease(_ turns: Int, at time: Int64) async throws -> APIBudgetLease {
            try await store.writeStatement { tx in
                try tx.leaseAPIBudget(Self.bucket, turns: turns, refill: Self.refill, at: time)
            }
        }
        // A bucket met for the first time starts full: 6 turns, no more.
        #expect(try await lease(4, at: Self.t).turns == 4)
        let rest = try await lease(4, at: Self.t)
        #expect(rest.turns == 2 && rest.nextTurnAt == Self.t + 25)
        // One turn every 25 ms; a time before the bucket's (another instance's clock behind) adds nothing.
        #expect(try await lease(4, at: Self.t + 24).turns == 0)
        #expect(try await lease(4, at: Self.t - 1_000).turns == 0)
        let two = try await lease(4, at: Self.t + 60)
        #expect(two.turns == 2 && two.nextTurnAt == Self.t + 75, "60 ms: 2.4 turns, the 0.4 kept")
        // A long quiet spell fills it to its capacity only.
        #expect(try await lease(100, at: Self.t + 3_600_000_000).turns == 6)
        let state = try #require(try await store.readStatement { tx in try tx.apiBudget(Self.bucket) })
        #expect(state.leased == 14 && state.tokens == 0 && state.updatedAt == Self.t + 3_600_000_000)
        // Other buckets are apart.
        let other = APIBudgetBucket(bundleID: "com.example.a", environment: .sandbox, endpoint: "transaction_history")
        #expect(
            try await store.writeStatement { tx in
                try tx.leaseAPIBudget(other, turns: 1, refill: Self.refill, at: Self.t)
            }.turns == 1
        )
    }

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func theBudgetsStatementsRunOnSessionsOfTheirOwnThatNeitherWaitForTheDiskNorHangOnALock() async throws {
        let schema = try TestSchema()
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        let settings = try await store.writeStatement { tx -> [String] in
            let row = try (tx as! PostgresTransaction).c.queryOne(
                "SELECT current_setting('synchronous_commit') AS s, current_setting('statement_timeout') AS t, current_setting('transaction_read_only') AS r",
                []
            )
            return [row?.string("s") ?? "", row?.string("t") ?? "", row?.string("r") ?? ""]
        }
        #expect(settings == ["off", "2s", "off"])
        // A closed store takes no more.
        store.close()
        await #expect(throws: (any Error).self) {
            try await store.writeStatement { tx in
                try tx.leaseAPIBudget(Self.bucket, turns: 1, refill: Self.refill, at: Self.t)
            }
        }
    }

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func aPauseEmptiesTheBucketUntilApplesInstantForEveryStore() async throws {
        let schema = try TestSchema()
        let (a, b) = (try PostgresStore(url: schema.url), try PostgresStore(url: schema.url))
        defer {
            a.close()
            b.close()
        }
        let until = Self.t + 10_000
        try await a.writeStatement { tx in try tx.pauseAPIBudget(Self.bucket, until: until, refill: Self.refill) }
        let held = try await b.writeStatement { tx in
            try tx.leaseAPIBudget(Self.bucket, turns: 4, refill: Self.refill, at: Self.t + 100)
        }
        #expect(held.turns == 0 && held.pausedUntil == until && held.nextTurnAt == until)
        #expect(
            try await b.writeStatement { tx in
                try tx.leaseAPIBudget(Self.bucket, turns: 4, refill: Self.refill, at: until - 1)
            }.turns == 0
        )
        // Exactly one turn has gathered at Apple's instant.
        let first = try await b.writeStatement { tx in
            try tx.leaseAPIBudget(Self.bucket, turns: 4, refill: Self.refill, at: until)
        }
        #expect(first.turns == 1 && first.nextTurnAt == until + 25)
        // An earlier pause does not shorten a later one on record.
        try await a.writeStatement { tx in
            try tx.pauseAPIBudget(Self.bucket, until: until + 20_000, refill: Self.refill)
        }
        try await a.writeStatement { tx in try tx.pauseAPIBudget(Self.bucket, until: until + 1, refill: Self.refill) }
        let state = try #require(try await b.readStatement { tx in try tx.apiBudget(Self.bucket) })
        #expect(state.pausedUntil == until + 20_000)
    }
}
