import Canonical
import Foundation
@testable import Gateway
import TestSupport
import SQLite
import Store
import Testing

/// A disagreement between two observations made at different moments may only be the subscription changing in
/// between (the CI failure of 2026-11-29: verifyReceipt observed a billing retry, the App Store Server API 66 ms later
/// the expiry that followed it). The ledger records a disagreement only once it survives refetching the older side.
@Suite struct CompareConfirmationTests {
    static let delay: Int64 = 30_000

    final class Store {
        let folder: String
        let db: SQLiteDatabase
        init() throws {
            folder = try Scratch.directory()
            db = try GatewayStore.open(path: folder + "/gw.db", synchronous: .normal)
        }
        deinit { try? FileManager.default.removeItem(atPath: folder) }

        /// Stores `snapshot` on its path and compares, as a fetch job that followed `confirms` refetches would.
        func observe(_ snapshot: OutcomeSnapshot, confirms: Int, at time: Int64) throws -> CompareStore.Comparison {
            try db.write { c in
                try CompareStore.putSnapshot(snapshot, path: snapshot.source == .v1Receipt ? "v1" : "v2", in: c)
                return try CompareStore.compareIfReady(bundleID: "b", environment: "sandbox", otid: "1", tolerance: 600_000, confirms: confirms,
                                                       confirmDelay: CompareConfirmationTests.delay, at: time, in: c)
            }
        }

        var ledger: [String] {
            get throws {
                try db.read { c in
                    try c.query("SELECT outcome, fields FROM compare_ledger ORDER BY id").map {
                        ($0.string("outcome") ?? "") + ($0.string("fields").map { " " + $0 } ?? "")
                    }
                }
            }
        }

        /// The pending fetches: path, confirms, due time.
        var pending: [String] {
            get throws {
                try db.read { c in
                    try c.query("SELECT fetch, confirms, next_attempt_at FROM compare_jobs WHERE state = 'pending' ORDER BY id").map {
                        "\($0.string("fetch") ?? "") confirms=\($0.int("confirms") ?? -1) due=\($0.int64("next_attempt_at") ?? -1)"
                    }
                }
            }
        }

        func finishPending() throws { _ = try db.write { try $0.run("UPDATE compare_jobs SET state = 'done' WHERE state = 'pending'") } }
    }

    static let inRetry = CompareUnitTests.snapshot(.v1Receipt, expires: 500, grace: 900, retry: true, observed: 1_000)
    static func expired(_ source: EventSource, observed: Int64) -> OutcomeSnapshot {
        CompareUnitTests.snapshot(source, expires: 500, autoRenew: false, retry: false, observed: observed)
    }

    @Test func observationsThatStraddleAChangeAreConfirmedNotRecorded() throws {
        let store = try Store()
        #expect(try store.observe(Self.inRetry, confirms: 0, at: 1_000) == .waiting)
        // The API, 66 ms later, already sees the expiry: not recorded; verifyReceipt is asked again after the delay.
        #expect(try store.observe(Self.expired(.v2API, observed: 1_066), confirms: 0, at: 1_066) == .unconfirmed)
        #expect(try store.ledger == [])
        #expect(try store.pending == ["v1 confirms=1 due=\(1_066 + Self.delay)"])
        try store.finishPending()
        // Asked again, V1 has caught up: one agreement, nothing more to fetch.
        #expect(try store.observe(Self.expired(.v1Receipt, observed: 31_100), confirms: 1, at: 31_100) == .agree)
        #expect(try store.ledger == ["agree"])
        #expect(try store.pending == [])
    }

    @Test func aRealDisagreementIsRecordedOnceBothSidesWereFetchedAgain() throws {
        let store = try Store()
        let lateV1 = { (t: Int64) in CompareUnitTests.snapshot(.v1Receipt, expires: 2_000 + 86_400_000, observed: t) }
        #expect(try store.observe(lateV1(1_000), confirms: 0, at: 1_000) == .waiting)
        #expect(try store.observe(CompareUnitTests.snapshot(.v2API, observed: 1_500), confirms: 0, at: 1_500) == .unconfirmed)
        #expect(try store.pending == ["v1 confirms=1 due=\(1_500 + Self.delay)"])
        try store.finishPending()
        #expect(try store.observe(lateV1(31_500), confirms: 1, at: 31_500) == .unconfirmed)
        #expect(try store.pending == ["v2 confirms=2 due=\(31_500 + Self.delay)"])
        try store.finishPending()
        #expect(try store.observe(CompareUnitTests.snapshot(.v2API, observed: 61_500), confirms: 2, at: 61_500) == .disagree)
        #expect(try store.ledger == ["disagree entitlement,expires_date"])
        #expect(try store.pending == [])
    }

    @Test func simultaneousObservationsNeedNoConfirmation() throws {
        let store = try Store()
        _ = try store.observe(Self.inRetry, confirms: 0, at: 1_000)
        #expect(try store.observe(Self.expired(.v2API, observed: 1_000), confirms: 0, at: 1_000) == .disagree)
        #expect(try store.ledger == ["disagree entitlement,auto_renew,in_billing_retry,grace_period_expires_date"])
        #expect(try store.pending == [])
    }

    @Test func observationsTooFarApartFetchTheOlderSideAgainFirst() throws {
        let store = try Store()
        _ = try store.observe(Self.inRetry, confirms: 0, at: 1_000)
        #expect(try store.observe(Self.expired(.v2API, observed: 1_000 + 600_001), confirms: 0, at: 601_001) == .stale)
        #expect(try store.ledger == [])
        #expect(try store.pending == ["v1 confirms=0 due=601001"])
    }

    @Test func finishedFetchesArePurgedButPendingOnesStay() throws {
        let store = try Store()
        try store.db.write { c in
            for (otid, at) in [("1", Int64(1_000)), ("2", 1_000), ("3", 9_000)] {
                try CompareStore.enqueue(bundleID: "b", environment: "sandbox", otid: otid, fetch: "v1", v1EventID: nil, authority: nil,
                                         compare: true, at: at, in: c)
            }
            _ = try c.run("UPDATE compare_jobs SET state = 'done' WHERE original_transaction_id IN ('1', '3')")
        }
        #expect(try store.db.write { try GatewayStore.purgeFinishedFetches(olderThan: 5_000, in: $0) } == 1)
        let left = try store.db.read { c in try c.query("SELECT original_transaction_id AS o FROM compare_jobs ORDER BY o").map { $0.string("o") ?? "" } }
        #expect(left == ["2", "3"])  // pending (however old) and recent stay
    }
}
