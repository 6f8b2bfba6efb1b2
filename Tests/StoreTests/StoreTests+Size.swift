import Canonical
import Foundation
import Policy
import TestSupport
import Testing

@testable import Store

/// The reads that must stay bounded as the store grows (docs/operations.md, "Size"): the report's counts and
/// examples, replay and retention a page at a time, and the status read off the newest ids — each checked against the
/// rows it stands for, and the statements against the indexes that answer them.
extension StoreTests {
    static let day: Int64 = 86_400_000

    /// 700 ledger rows over two bundles, both environments and nine days, many sharing a millisecond.
    static func seedLedger(_ f: Fixture) throws {
        var g = SeededGenerator(state: 42)
        let fieldSets = [["expires_date"], ["auto_renew"], ["entitlement", "expires_date"], ["product_id"]]
        var entries: [LedgerEntry] = []
        for _ in 0..<700 {
            let outcome = [CompareOutcome.agree, .agree, .agree, .disagree, .v1Only, .v2Only][g.next(6)]
            let key = SubscriptionKey(
                bundleID: ["com.example.a", "com.example.b"][g.next(2)],
                environment: [.production, .sandbox][g.next(2)],
                originalTransactionID: "otid-\(g.next(40))"
            )
            entries.append(
                LedgerEntry(
                    subscription: key,
                    comparedAt: 10 * day + Int64(g.next(9 * 24)) * 3_600_000 + Int64(g.next(3)),
                    outcome: outcome,
                    fields: outcome == .disagree ? fieldSets[g.next(fieldSets.count)] : [],
                    v1: nil,
                    v2: nil
                )
            )
        }
        let rows = entries
        try f.store.write { tx in for e in rows { try tx.recordComparison(e) } }
    }

    @Test(arguments: StoreKind.available) func theLedgerTallyCountsExactlyTheRowsOfItsRange(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        try Self.seedLedger(f)
        let windows: [(Int64, Int64)] = [
            (0, .max / 2), (10 * Self.day, 19 * Self.day), (11 * Self.day + 1_234, 15 * Self.day - 7),
            (12 * Self.day, 12 * Self.day), (13 * Self.day + 5, 13 * Self.day + 3_600_000),
        ]
        for bundle in ["com.example.a", "com.example.b"] {
            for env in [AppStoreEnvironment.production, .sandbox] {
                for (from, to) in windows {
                    let rows = try f.store.read { tx in
                        try tx.ledger(bundleID: bundle, environment: env, from: from, to: to)
                    }
                    let tally = try f.store.read { tx in
                        try tx.ledgerTally(
                            bundleID: bundle,
                            environment: env,
                            from: from,
                            to: to,
                            byDay: true,
                            in: .notifications
                        )
                    }
                    for outcome in CompareOutcome.allCases {
                        #expect(
                            (tally.outcomes[outcome] ?? 0) == rows.filter { $0.outcome == outcome }.count,
                            "\(bundle) \(env) [\(from), \(to)) \(outcome)"
                        )
                    }
                    var days: [Int64: (Int, Int)] = [:]
                    var sets: [String: Int] = [:]
                    for r in rows where r.outcome == .agree || r.outcome == .disagree {
                        let d = r.comparedAt / Self.day * Self.day
                        days[d, default: (0, 0)].0 += r.outcome == .agree ? 1 : 0
                        days[d, default: (0, 0)].1 += r.outcome == .disagree ? 1 : 0
                        if r.outcome == .disagree { sets[r.fields.joined(separator: ","), default: 0] += 1 }
                    }
                    #expect(
                        tally.daily.map { [$0.start, Int64($0.agreements), Int64($0.disagreements)] }
                            == days.keys.sorted().map { [$0, Int64(days[$0]!.0), Int64(days[$0]!.1)] }
                    )
                    #expect(tally.fieldSets == sets)
                }
            }
        }
    }

    @Test(arguments: StoreKind.available) func ledgerExamplesPageThroughOneOutcomeInLedgerOrder(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.seedLedger(f)
        let (from, to) = (11 * Self.day + 77, 17 * Self.day)
        for outcome in CompareOutcome.allCases {
            let expected = try f.store.read { tx in
                try tx.ledger(bundleID: "com.example.a", environment: .production, from: from, to: to)
            }.filter { $0.outcome == outcome }
            var seen: [LedgerExample] = []
            var after = (comparedAt: from, id: Int64.min)
            while true {
                let cursor = after
                let page = try f.store.read { tx in
                    try tx.ledgerExamples(
                        bundleID: "com.example.a",
                        environment: .production,
                        outcome: outcome,
                        to: to,
                        after: cursor,
                        limit: 7,
                        in: .notifications
                    )
                }
                seen += page
                guard let last = page.last, page.count == 7 else { break }
                after = (last.comparedAt, last.id)
            }
            #expect(!expected.isEmpty)
            #expect(seen.map(\.originalTransactionID) == expected.map(\.subscription.originalTransactionID))
            #expect(seen.map(\.comparedAt) == expected.map(\.comparedAt))
            #expect(seen.map(\.fields) == expected.map(\.fields))
        }
    }

    @Test(arguments: StoreKind.available) func aTimeRangeIsReplayedAPageAtATime(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        for (i, now) in [Int64(10), 10, 10, 20, 30].enumerated() {
            _ = try f.store.write { tx in
                try tx.storeEvents(
                    [Self.event("e\(i)", date: 1_000 + Int64(i))],
                    journalID: nil,
                    routing: TestRouting.routing(),
                    now: now,
                    authority: nil
                )
            }
        }
        let all = try Self.deliveries(f)
        #expect(all.count == 10)  // "main" and "shadow" for each
        let inRange = all.filter { $0.createdAt >= 10 && $0.createdAt < 30 }.count
        var (total, pages, after) = (0, 0, (createdAt: Int64(10), id: Int64.min))
        while true {
            let cursor = after
            let (n, last) = try f.store.write { tx in
                try tx.redeliverPage(since: 10, until: 30, after: cursor, limit: 3, now: 99)
            }
            (total, pages) = (total + n, pages + 1)
            guard let last else { break }
            after = last
        }
        #expect(total == inRange && inRange == 8)
        #expect(pages == 3)
        let rearmed = try Self.deliveries(f).filter { $0.nextAttemptAt == 99 }
        #expect(rearmed.count == 8 && rearmed.allSatisfy { $0.createdAt < 30 && $0.state == .pending })
    }

    @Test(arguments: StoreKind.available) func bodiesArePurgedAPageAtATimeOldestFirst(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        for i in 0..<5 {
            var item = JournalItem(key: "k\(i)", version: .v2, receivedAt: 100 + Int64(i), body: Array("{}".utf8))
            item.bundleID = "com.example.gateway"
            let journaled = item
            _ = try f.store.write { tx in try tx.journal(journaled, routing: TestRouting.routing(), now: 100 + Int64(i))
            }
        }
        #expect(try f.store.write { tx in try tx.purgeBodies(olderThan: 104, now: 200, limit: 3) } == 3)
        #expect(try f.store.write { tx in try tx.purgeBodies(olderThan: 104, now: 200, limit: 3) } == 1)
        #expect(try f.store.write { tx in try tx.purgeBodies(olderThan: 104, now: 200, limit: 3) } == 0)
        let kept = try f.store.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 10) }
        #expect(kept.map { $0.body != nil } == [false, false, false, false, true])
    }

    @Test(arguments: StoreKind.available) func theStatusReadsTheNewestIDsInsteadOfCountingRows(_ kind: StoreKind) throws
    {
        let f = try Fixture(kind)
        #expect(try f.store.read { tx in try tx.statusCounts() }.journal == 0)
        for i in 0..<4 {
            var item = JournalItem(key: "k\(i)", version: .v2, receivedAt: 100, body: Array("{}".utf8))
            item.bundleID = "com.example.gateway"
            let journaled = item
            _ = try f.store.write { tx in try tx.journal(journaled, routing: TestRouting.routing(), now: 100) }
        }
        try Self.storeEvents(f, [Self.event("e1", date: 1_000), Self.event("e2", date: 2_000)])
        let counted = try f.store.read { tx in try tx.counts() }
        let status = try f.store.read { tx in try tx.statusCounts() }
        let deliveries = try f.store.read { tx in try tx.deliveryCounts() }
        #expect(status.exact == (kind == .sqlite))
        if status.exact {
            #expect(status.journal == counted.journal && status.events == counted.events)
            #expect(status.deliveries == deliveries)
        } else {
            #expect(status.journal >= counted.journal && status.events >= counted.events)
            #expect(status.deliveries[.pending] == deliveries[.pending])
        }
    }

    /// The statements the report, replay and retention run on a big store are answered by the indexes made for them
    /// (SQLite's plan; PostgreSQL chooses by its statistics, which a test's few rows do not reflect).
    @Test func theBoundedReadsAreAnsweredByTheirIndexes() throws {
        let f = try Fixture(.sqlite)
        let store = try #require(f.store as? SQLiteStore)
        let expected: [(SQL, parameters: Int, String)] = [
            (LedgerStatements.notifications.count, 5, "USING COVERING INDEX compare_ledger_outcome"),
            (LedgerStatements.notifications.next, 5, "USING COVERING INDEX compare_ledger_outcome"),
            (LedgerStatements.notifications.fieldSets, 4, "USING COVERING INDEX compare_ledger_outcome"),
            (LedgerStatements.notifications.examples, 7, "USING INDEX compare_ledger_outcome"),
            (LedgerStatements.receipts.count, 5, "USING COVERING INDEX receipt_ledger_outcome"),
            (LedgerStatements.receipts.next, 5, "USING COVERING INDEX receipt_ledger_outcome"),
            (LedgerStatements.receipts.fieldSets, 4, "USING COVERING INDEX receipt_ledger_outcome"),
            (LedgerStatements.receipts.examples, 7, "USING INDEX receipt_ledger_outcome"),
            (.eventCountBySource, 5, "USING COVERING INDEX events_bundle_source"),
            (.redeliveryPage, 5, "USING COVERING INDEX outbox_created"),
            (.purgeBodies, 3, "journal_unpurged"),
            // One row by its key, on the hot paths (a pass-through delivery, a V1 view, a comparison, reconciliation).
            (.eventByID, 2, "USING INDEX sqlite_autoindex_events_1 (id=?)"),
            (.subscriptionEvents, 2, "USING INDEX events_subscription (original_transaction_id=?)"),
            (.subscriptionEventsCreatedAfter, 3, "USING INDEX events_subscription (original_transaction_id=?)"),
            (.journalEntryByID, 2, "USING INTEGER PRIMARY KEY (rowid=?)"),
            (.journalEntryByKey, 2, "USING INDEX sqlite_autoindex_journal_1 (notification_key=?)"),
            (.receiptJobsInState, 1, "USING COVERING INDEX receipt_jobs_due (state=?)"),
            // The status's queue counts and the dead letters' listing, on the outbox's partial indexes.
            (.pendingDeliveryCount, 0, "USING INDEX outbox_pending"),
            (.deadDeliveryCount, 0, "USING INDEX outbox_dead"),
            (.deadDeliveryList, 3, "USING INDEX outbox_dead"),
            (.pendingDeliveryList, 3, "USING INDEX outbox_pending"),
            // Per V2 notification that may stand alone: the switch by its key, the other version's newest on its index.
            (
                .standsAlone, 4,
                "USING COVERING INDEX journal_generation (bundle_id=? AND environment=? AND version=? AND received_at>?)"
            ),
        ]
        for (sql, parameters, index) in expected {
            let plan = try store.writer.perform { c in
                try c.query("EXPLAIN QUERY PLAN " + sql.sqlite, Array(repeating: .integer(1), count: parameters))
                    .compactMap { $0.string("detail") }.joined(separator: "\n")
            }
            #expect(plan.contains(index), "\(sql.sqlite)\n\(plan)")
            // Never a walk over a whole table.
            #expect(
                !plan.split(separator: "\n").contains {
                    $0.hasPrefix("SCAN") && !$0.contains("USING") && $0 != "SCAN CONSTANT ROW"
                },
                "\(sql.sqlite)\n\(plan)"
            )
        }
        // A delivery claim reads the due rows of its downstream in order, on the pending rows' index.
        let claim = try store.writer.perform { c in
            try c.query(
                "EXPLAIN QUERY PLAN " + SQLiteTransaction.claimDueDeliveries,
                [.integer(1), .integer(1), .text("d"), .integer(1), .text("[]"), .integer(1)]
            ).compactMap { $0.string("detail") }
        }
        #expect(
            claim.contains { $0.contains("SEARCH o USING INDEX outbox_pending (downstream=? AND next_attempt_at<?)") }
        )
        #expect(!claim.contains { $0.contains("TEMP B-TREE") }, "\(claim)")
        // The silence check's last event of each path: a lookup on the index for each source, never a walk over the
        // bundle's events.
        let activity = try store.writer.perform { c in
            try c.query("EXPLAIN QUERY PLAN " + SQL.authorityActivity.sqlite, []).compactMap { $0.string("detail") }
        }
        #expect(
            activity.filter { $0.contains("events_bundle_source (bundle_id=? AND environment=? AND source=?)") }.count
                == EventSource.written.count,
            "\(activity)"
        )
    }
}
