import Canonical
import Foundation
import Policy
import TestSupport
import Testing

@testable import Store

/// The recovery runs' part of the store's contract (docs/operations.md, "Reconciliation").
extension StoreTests {
    static func expiring(
        _ id: String,
        otid: String,
        expires: Int64,
        date: Int64,
        source: EventSource = .v2,
        recoveredBy: RecoveryMechanism? = nil
    ) -> CanonicalEvent {
        var e = event(id, date: date, source: source)
        e.originalTransactionID = otid
        e.expiresDate = expires
        e.recoveredBy = recoveredBy
        e.computeEntitlement()
        return e
    }

    static func store(_ f: Fixture, _ events: [CanonicalEvent], now: Int64) throws {
        _ = try f.store.write { tx in
            try tx.storeEvents(events, journalID: nil, routing: TestRouting.routing(), now: now, authority: nil)
        }
    }

    @Test(arguments: StoreKind.available) func runsAreScheduledOnceClaimedWhenDueAndSettledWithTheirTotals(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let history = ReconcileRunKey(bundleID: "com.example.gateway", environment: .sandbox, kind: .history)
        let subscriptions = ReconcileRunKey(
            bundleID: "com.example.gateway",
            environment: .sandbox,
            kind: .subscriptions
        )
        try f.store.write { tx in try tx.scheduleReconcileRuns([(history, 100), (subscriptions, 200)]) }
        // Scheduling again keeps the schedule.
        try f.store.write { tx in try tx.scheduleReconcileRuns([(history, 999), (subscriptions, 999)]) }
        #expect(try f.store.read { tx in try tx.reconcileRuns() }.map(\.nextRunAt).sorted() == [100, 200])

        let due = try f.store.write { tx in try tx.claimDueReconcileRuns(at: 150, limit: 10, lease: Self.lease) }
        #expect(due.map(\.key) == [history])
        let run = try #require(due.first)
        #expect(run.watermark == nil && run.attempts == 0)
        try f.store.write { tx in
            try tx.settleReconcileRun(
                id: run.id,
                ReconcileRunOutcome(
                    nextRunAt: 3_700,
                    watermark: 150,
                    attempts: 0,
                    error: nil,
                    checked: 4,
                    recovered: 2,
                    calls: 1
                ),
                now: 150
            )
        }
        try f.store.write { tx in
            try tx.settleReconcileRun(
                id: run.id,
                ReconcileRunOutcome(
                    nextRunAt: 7_300,
                    watermark: nil,
                    attempts: 1,
                    error: "rate_limited",
                    checked: 1,
                    recovered: 0,
                    calls: 1
                ),
                now: 3_700
            )
        }
        let settled = try #require(try f.store.read { tx in try tx.reconcileRuns() }.first { $0.key == history })
        // A failed run keeps the last watermark; the totals add up.
        #expect(
            settled.watermark == 150 && settled.nextRunAt == 7_300 && settled.attempts == 1
                && settled.lastError == "rate_limited"
        )
        #expect(settled.checked == 5 && settled.recovered == 2 && settled.calls == 2 && settled.lastRunAt == 3_700)
        #expect(
            try f.store.write { tx in try tx.claimDueReconcileRuns(at: 7_299, limit: 10, lease: Self.lease) }.map(\.key)
                == [subscriptions]
        )
    }

    @Test(arguments: StoreKind.available) func theRuleSelectsSilentSubscriptionsNearTheirExpiryOnceAPeriod(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let day: Int64 = 86_400_000
        let now = 10 * day
        // Stored two days ago (silent), expiring tomorrow: selected.
        try Self.store(
            f,
            [Self.expiring("a", otid: "soon", expires: now + day, date: now - 2 * day)],
            now: now - 2 * day
        )
        // Silent, expired an hour ago: selected (it may have renewed unseen).
        try Self.store(
            f,
            [Self.expiring("b", otid: "just-expired", expires: now - 3_600_000, date: now - 2 * day)],
            now: now - 2 * day
        )
        // Expiring in a week: not yet.
        try Self.store(
            f,
            [Self.expiring("c", otid: "later", expires: now + 7 * day, date: now - 2 * day)],
            now: now - 2 * day
        )
        // Changed an hour ago: not silent.
        try Self.store(
            f,
            [Self.expiring("d", otid: "fresh", expires: now + day, date: now - 3_600_000)],
            now: now - 3_600_000
        )
        // The V1 path's state is its own selection.
        try Self.store(
            f,
            [Self.expiring("e", otid: "soon", expires: now + day, date: now - 2 * day, source: .v1)],
            now: now - 2 * day
        )

        func select(_ path: Generation, at time: Int64 = now) throws -> [String] {
            let s = ReconcileSelection(
                bundleID: "com.example.gateway",
                environment: .sandbox,
                path: path,
                expiresFrom: time - 2 * day,
                expiresUntil: time + 2 * day,
                silentSince: time - day,
                checkedBefore: time - day,
                limit: 10
            )
            return try f.store.read { tx in try tx.reconcileCandidates(s) }.map(\.originalTransactionID)
        }
        #expect(try select(.v2) == ["just-expired", "soon"])  // soonest expiry first
        #expect(try select(.v1) == ["soon"])
        try f.store.write { tx in
            try tx.markReconciled(path: .v2, environment: .sandbox, originalTransactionID: "soon", at: now)
        }
        #expect(try select(.v2) == ["just-expired"])
        #expect(try select(.v1) == ["soon"])
        // Checked again once a period has passed.
        #expect(try select(.v2, at: now + day).contains("soon"))
        // The candidate carries the stored state's event.
        let s = ReconcileSelection(
            bundleID: "com.example.gateway",
            environment: .sandbox,
            path: .v2,
            expiresFrom: 0,
            expiresUntil: .max,
            silentSince: .max,
            checkedBefore: .max,
            limit: 1
        )
        let first = try #require(try f.store.read { tx in try tx.reconcileCandidates(s) }.first)
        #expect(first.eventID == "b" && first.expiresDate == now - 3_600_000)
    }

    @Test(arguments: StoreKind.available) func recoveredEventsAreCountedPerDayAndMechanism(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let day: Int64 = 86_400_000
        try Self.store(f, [Self.expiring("live", otid: "o1", expires: 5, date: 1)], now: day + 5)
        try Self.store(f, [Self.expiring("h1", otid: "o2", expires: 5, date: 2, recoveredBy: .history)], now: day + 6)
        try Self.store(f, [Self.expiring("h2", otid: "o3", expires: 5, date: 3, recoveredBy: .history)], now: day + 7)
        try Self.store(
            f,
            [Self.expiring("r1", otid: "o4", expires: 5, date: 4, recoveredBy: .reconciliation)],
            now: 2 * day + 1
        )
        let counts = try f.store.read { tx in try tx.recoveredEventCounts(since: 0, until: 3 * day) }
        #expect(
            counts.map { "\($0.day / day) \($0.mechanism.rawValue) \($0.count)" } == [
                "1 history 2", "2 reconciliation 1",
            ]
        )
        #expect(counts.allSatisfy { $0.bundleID == "com.example.gateway" && $0.environment == .sandbox })
        #expect(
            try f.store.read { tx in try tx.recoveredEventCounts(since: 2 * day, until: 3 * day) }.map(\.count) == [1]
        )
        // The event's JSON carries the field (null when live).
        // Storing says how many events were new: a second store of the same id changes nothing.
        let again = Self.expiring("h1", otid: "o2", expires: 5, date: 2, recoveredBy: .history)
        #expect(
            try f.store.write { tx in
                try tx.storeEvents(
                    [again],
                    journalID: nil,
                    routing: TestRouting.routing(),
                    now: 3 * day,
                    authority: nil
                )
            } == 0
        )
        let fresh = Self.expiring("r2", otid: "o5", expires: 5, date: 5, recoveredBy: .reconciliation)
        #expect(
            try f.store.write { tx in
                try tx.storeEvents(
                    [fresh, again],
                    journalID: nil,
                    routing: TestRouting.routing(),
                    now: 3 * day,
                    authority: nil
                )
            } == 1
        )
        let live = try #require(
            try f.store.read { tx in try tx.events(id: "live", originalTransactionID: nil, limit: 1) }.first
        )
        let recovered = try #require(
            try f.store.read { tx in try tx.events(id: "h1", originalTransactionID: nil, limit: 1) }.first
        )
        #expect(live.event.recoveredBy == nil && recovered.event.recoveredBy == .history)
    }
}
