import Canonical
import Store
import TestSupport
import Testing

@testable import Gateway

/// The report is counted in the store (index range counts, examples a page at a time): it must say exactly what a
/// walk over every ledger row of the window says — counts, rates per day, disagreements per field with their first
/// examples, one-sided rows with theirs — for windows on and off day boundaries.
@Suite struct CompareReportCountsTests {
    static let day: Int64 = 86_400_000

    /// What the report said when it walked every row (the reference).
    static func walked(_ rows: [LedgerEntry], examples: Int) -> CompareLedger.Tally {
        var t = CompareLedger.Tally()
        for entry in rows {
            let otid = entry.subscription.originalTransactionID
            let day = TimeText.day(entry.comparedAt)
            switch entry.outcome {
            case .agree, .disagree:
                let agree = entry.outcome == .agree
                t.pairs += 1
                if agree { t.agreements += 1 }
                t.daily[day, default: (0, 0)].pairs += 1
                if agree { t.daily[day, default: (0, 0)].agreements += 1 }
                for field in entry.fields {
                    var e = t.fields[field] ?? (0, [])
                    e.count += 1
                    if e.examples.count < examples, !e.examples.contains(otid) { e.examples.append(otid) }
                    t.fields[field] = e
                }
            case .v1Only, .v2Only:
                if entry.outcome == .v1Only { t.v1Only += 1 } else { t.v2Only += 1 }
                if t.oneSidedExamples.count < examples, !t.oneSidedExamples.contains(otid) {
                    t.oneSidedExamples.append(otid)
                }
            }
        }
        return t
    }

    @Test func theCountedReportIsTheReportOfEveryRow() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        var g = SeededGenerator(state: 7)
        let fieldSets = [
            ["expires_date"], ["auto_renew"], ["entitlement", "expires_date"], ["product_id"], ["revocation_date"],
        ]
        var entries: [LedgerEntry] = []
        for _ in 0..<2_500 {
            let outcome = [CompareOutcome.agree, .agree, .agree, .agree, .disagree, .v1Only, .v2Only][g.next(7)]
            entries.append(
                LedgerEntry(
                    subscription: SubscriptionKey(
                        bundleID: "com.example.gateway",
                        environment: [.production, .sandbox][g.next(2)],
                        originalTransactionID: "\(1_000_000 + g.next(300))"
                    ),
                    comparedAt: 20_000 * Self.day + Int64(g.next(10 * 24 * 60)) * 60_000 + Int64(g.next(2)),
                    outcome: outcome,
                    fields: outcome == .disagree ? fieldSets[g.next(fieldSets.count)] : [],
                    v1: nil,
                    v2: nil
                )
            )
        }
        let rows = entries
        try h.store.write { tx in for e in rows { try tx.recordComparison(e) } }
        let ledger = CompareLedger(store: h.store, config: h.config)
        let windows: [(Int64, Int64)] = [
            (20_000 * Self.day, 20_010 * Self.day), (20_001 * Self.day + 12_345, 20_008 * Self.day - 1),
            (20_003 * Self.day + 1, 20_003 * Self.day + 2 * 3_600_000), (0, 30_000 * Self.day),
        ]
        for env in [AppStoreEnvironment.production, .sandbox] {
            for (from, to) in windows {
                for examples in [0, 1, 3, 50] {
                    let counted = try h.store.read { tx in
                        try ledger.tally(
                            bundle: "com.example.gateway",
                            environment: env,
                            from: from,
                            to: to,
                            examples: examples,
                            in: tx
                        )
                    }
                    let all = try h.store.read { tx in
                        try tx.ledger(bundleID: "com.example.gateway", environment: env, from: from, to: to)
                    }
                    let reference = Self.walked(all, examples: examples)
                    let label = "\(env) [\(from), \(to)) examples \(examples)"
                    #expect(counted.pairs == reference.pairs && counted.agreements == reference.agreements, "\(label)")
                    #expect(counted.v1Only == reference.v1Only && counted.v2Only == reference.v2Only, "\(label)")
                    #expect(counted.fields.mapValues(\.count) == reference.fields.mapValues(\.count), "\(label)")
                    if examples > 0 {
                        #expect(
                            counted.fields.mapValues(\.examples) == reference.fields.mapValues(\.examples),
                            "\(label)"
                        )
                        #expect(counted.oneSidedExamples == reference.oneSidedExamples, "\(label)")
                        #expect(
                            counted.daily.mapValues { [$0.pairs, $0.agreements] }
                                == reference.daily.mapValues { [$0.pairs, $0.agreements] },
                            "\(label)"
                        )
                    }
                }
            }
        }
        // The whole report, as `report` and `/admin/report` build it, over the rule's window.
        let report = try ledger.report(since: 20_002 * Self.day, until: 20_009 * Self.day)
        let production = try #require(
            report.bundles.first { $0.bundleID == "com.example.gateway" && $0.environment == "production" }
        )
        let all = try h.store.read { tx in
            try tx.ledger(
                bundleID: "com.example.gateway",
                environment: .production,
                from: 20_002 * Self.day,
                to: 20_009 * Self.day
            )
        }
        let reference = Self.walked(all, examples: 3)
        #expect(production.pairs == reference.pairs && production.pairs > 500)
        #expect(production.daily.count == 7)
        #expect(production.disagreementsByField.mapValues(\.examples) == reference.fields.mapValues(\.examples))
    }
}
