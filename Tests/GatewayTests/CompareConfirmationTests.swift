import Canonical
import Foundation
import Policy
import Store
import StoreTestSupport
import TestSupport
import Testing

@testable import Gateway

/// A disagreement between two observations made at different moments may only be the subscription changing in
/// between (the CI failure of 2026-11-29: verifyReceipt observed a billing retry, the App Store Server API 66 ms later
/// the expiry that followed it). The ledger records a disagreement only once it survives refetching the older side.
@Suite struct CompareConfirmationTests {
    static let delay: Int64 = 30_000

    /// A store on its own, and the subscription every test compares.
    final class Rig {
        static let key = CompareConfirmationTests.key("1")
        let folder: String
        let store: SQLiteStore
        init() throws {
            folder = try Scratch.directory()
            var options = SQLiteStore.Options()
            options.synchronous = .normal
            store = try SQLiteStore(path: folder + "/gw.db", options: options)
        }
        deinit {
            store.close()
            try? FileManager.default.removeItem(atPath: folder)
        }

        /// Stores `snapshot` on its path and compares, as a fetch job that followed `confirms` refetches would.
        func observe(_ snapshot: OutcomeSnapshot, confirms: Int, at time: Int64) throws -> ComparisonRule.Comparison {
            try store.write { tx in
                try tx.putSnapshot(snapshot, path: snapshot.source.generation)
                return try ComparisonRule.compareIfReady(
                    Rig.key,
                    tolerance: 600_000,
                    confirms: confirms,
                    confirmDelay: CompareConfirmationTests.delay,
                    at: time,
                    in: tx
                )
            }
        }

        /// The ledger's rows: outcome, and the fields that disagreed.
        var ledger: [String] {
            get throws {
                try store.ledger().map {
                    $0.outcome.rawValue + ($0.fields.isEmpty ? "" : " " + $0.fields.joined(separator: ","))
                }
            }
        }

        /// The pending fetches: path, confirms, due time.
        var pending: [String] {
            get throws {
                try store.read { try $0.fetchJobs(state: .pending) }.map {
                    "\($0.fetch.rawValue) confirms=\($0.confirms) due=\($0.nextAttemptAt)"
                }
            }
        }

        /// Marks the pending fetches done, as the worker does once it has fetched them.
        func finishPending() throws { try store.finishFetches { $0.state == .pending } }
    }

    static func key(_ otid: String) -> SubscriptionKey {
        SubscriptionKey(bundleID: "b", environment: .sandbox, originalTransactionID: otid)
    }

    static let inRetry = CompareUnitTests.snapshot(.v1Receipt, expires: 500, grace: 900, retry: true, observed: 1_000)
    static func expired(_ source: EventSource, observed: Int64) -> OutcomeSnapshot {
        CompareUnitTests.snapshot(source, expires: 500, autoRenew: false, retry: false, observed: observed)
    }

    @Test func observationsThatStraddleAChangeAreConfirmedNotRecorded() throws {
        let store = try Rig()
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
        let store = try Rig()
        let lateV1 = { (t: Int64) in CompareUnitTests.snapshot(.v1Receipt, expires: 2_000 + 86_400_000, observed: t) }
        #expect(try store.observe(lateV1(1_000), confirms: 0, at: 1_000) == .waiting)
        #expect(
            try store.observe(CompareUnitTests.snapshot(.v2API, observed: 1_500), confirms: 0, at: 1_500)
                == .unconfirmed
        )
        #expect(try store.pending == ["v1 confirms=1 due=\(1_500 + Self.delay)"])
        try store.finishPending()
        #expect(try store.observe(lateV1(31_500), confirms: 1, at: 31_500) == .unconfirmed)
        #expect(try store.pending == ["v2 confirms=2 due=\(31_500 + Self.delay)"])
        try store.finishPending()
        #expect(
            try store.observe(CompareUnitTests.snapshot(.v2API, observed: 61_500), confirms: 2, at: 61_500) == .disagree
        )
        #expect(try store.ledger == ["disagree entitlement,expires_date"])
        #expect(try store.pending == [])
    }

    @Test func simultaneousObservationsNeedNoConfirmation() throws {
        let store = try Rig()
        _ = try store.observe(Self.inRetry, confirms: 0, at: 1_000)
        #expect(try store.observe(Self.expired(.v2API, observed: 1_000), confirms: 0, at: 1_000) == .disagree)
        #expect(try store.ledger == ["disagree entitlement,auto_renew,in_billing_retry,grace_period_expires_date"])
        #expect(try store.pending == [])
    }

    @Test func observationsTooFarApartFetchTheOlderSideAgainFirst() throws {
        let store = try Rig()
        _ = try store.observe(Self.inRetry, confirms: 0, at: 1_000)
        #expect(try store.observe(Self.expired(.v2API, observed: 1_000 + 600_001), confirms: 0, at: 601_001) == .stale)
        #expect(try store.ledger == [])
        #expect(try store.pending == ["v1 confirms=0 due=601001"])
    }

    @Test func finishedFetchesArePurgedButPendingOnesStay() throws {
        let rig = try Rig()
        let store = rig.store
        try store.write { tx in
            for (otid, at) in [("1", Int64(1_000)), ("2", 1_000), ("3", 9_000)] {
                try tx.enqueueFetch(
                    FetchRequest(subscription: Self.key(otid), fetch: .v1, compare: true),
                    at: at,
                    due: nil
                )
            }
        }
        try store.finishFetches { ["1", "3"].contains($0.originalTransactionID) }
        #expect(try store.write { try $0.purgeFinishedFetches(olderThan: 5_000) } == 1)
        let left = try store.fetchJobs().map(\.originalTransactionID).sorted()
        #expect(left == ["2", "3"])  // pending (however old) and recent stay
    }
}
