import Canonical
import Foundation
import Policy
import Postgres
import TestSupport
import Testing
import WireJSON

@testable import Store

/// `migrate-store`'s copier: an SQLite store with real content, written through the store interface, moved into a
/// fresh PostgreSQL schema and read back through the interface of a `PostgresStore` on it.
@Suite(.serialized) struct StoreMigrationTests {
    static let bundle = "com.example.gateway"
    static let subscription = SubscriptionKey(bundleID: bundle, environment: .sandbox, originalTransactionID: "otid-1")
    static let customer = ReceiptHistoryKey(bundleID: bundle, environment: .sandbox, customer: "otid-1")
    /// A customer whose history is being fetched: pages kept, calls counted.
    static let fetching = ReceiptHistoryKey(bundleID: bundle, environment: .sandbox, customer: "otid-2")

    /// Everything the interface shows of a store, in a comparable form.
    struct Contents: Equatable {
        var journal: [JournalEntry]
        var events: [StoredEvent]
        var states: [StoredSubscriptionState]
        var deliveries: [Delivery]
        var receiptJobs: [ReceiptJobStatus]
        var fetches: [FetchJob]
        var ledger: [LedgerEntry]
        var quarantine: [String]
        var usage: [String]
        var authorities: [AuthorityEntry]
        var cutovers: [CutoverRecord]
        var receipt: StoredReceipt?
        var snapshots: [OutcomeSnapshot?]
        var reconcileRuns: [ReconcileRun]
        var receiptModes: [ReceiptModeEntry]
        var receiptHistory: StoredReceiptHistory?
        var receiptPages: [StoredReceiptHistoryPage]
        var fetching: StoredReceiptHistory?
        var receiptLedger: [ReceiptLedgerEntry]
        var refundRequests: [ConsumptionJobStatus]

        init(_ store: any GatewayStore) throws {
            reconcileRuns = try store.read { tx in try tx.reconcileRuns() }
            refundRequests = try store.read { tx in try tx.consumptionJobs(state: nil, limit: 1_000) }
            (receiptModes, receiptHistory, receiptLedger) = try store.read { tx in
                (
                    try tx.receiptModes(), try tx.receiptHistory(StoreMigrationTests.customer),
                    try tx.receiptLedger(bundleID: nil, environment: nil, from: 0, to: .max)
                )
            }
            (receiptPages, fetching) = try store.read { tx in
                (
                    try tx.receiptHistoryPages(StoreMigrationTests.fetching),
                    try tx.receiptHistory(StoreMigrationTests.fetching)
                )
            }
            let key = StoreMigrationTests.subscription
            (journal, events, states, deliveries, receiptJobs, fetches, ledger) = try store.read { tx in
                (
                    try tx.journalEntries(id: nil, key: nil, limit: .max),
                    try tx.events(id: nil, originalTransactionID: nil, limit: .max),
                    try tx.subscriptionStates(originalTransactionID: "otid-1"),
                    try tx.deliveries(state: nil, downstream: nil, eventID: nil, limit: .max),
                    try tx.receiptJobs(state: nil),
                    try tx.fetchJobs(state: nil), try tx.ledger(bundleID: nil, environment: nil, from: 0, to: .max)
                )
            }
            (quarantine, usage, authorities, cutovers, receipt, snapshots) = try store.read { tx in
                (
                    try tx.quarantined(lane: nil, id: nil, limit: .max).map {
                        "\($0.id) \($0.lane) \($0.receivedAt) \($0.code) \($0.message) \($0.body) \($0.storedSize) \($0.replayAttempts) "
                            + "\($0.lastReplayCode ?? "-") \($0.passwordFingerprint ?? "-")"
                    },
                    try tx.quarantineUsage().sorted { $0.key.rawValue < $1.key.rawValue }.map {
                        "\($0.key) \($0.value.rows) \($0.value.bytes)"
                    },
                    try tx.authorities(), try tx.cutovers(bundleID: StoreMigrationTests.bundle, environment: .sandbox),
                    try tx.receipt(of: key),
                    [try tx.snapshot(of: key, path: .v1), try tx.snapshot(of: key, path: .v2)]
                )
            }
        }
    }

    static func event(_ id: String, date: Int64, source: EventSource = .v2) -> CanonicalEvent {
        StoreTests.event(id, date: date, source: source)
    }

    /// An SQLite store as a gateway leaves it: V2 and V1 notifications with their events, deliveries pending and one
    /// delivered, a verifyReceipt job, quarantine rows in both lanes (one evicted, one replayed without success), a
    /// fetch, a receipt, a snapshot, a ledger entry and a cutover.
    static func populate(_ store: any GatewayStore) throws {
        let wanted = [AppStoreEnvironment.production, .sandbox].map {
            AuthorityEntry(bundleID: bundle, environment: $0, authority: .v2, origin: .config)
        }
        _ = try store.write { tx in try tx.seedAuthority(wanted, now: 1) }
        var v2 = JournalItem(
            key: "0b1e5a1c-v2",
            version: .v2,
            receivedAt: 100,
            body: Array("{\"signedPayload\":\"eyJ…\"}".utf8)
        )
        (v2.bundleID, v2.environment, v2.notificationType, v2.leafSerial) = (bundle, .sandbox, "DID_RENEW", "1234")
        v2.events = [event("e-v2-1", date: 2_000)]
        var v1 = JournalItem(
            key: "v1:abcdef",
            version: .v1,
            receivedAt: 110,
            body: Array("{\"password\":\"<S>\"}".utf8)
        )
        (v1.bundleID, v1.environment, v1.secretName, v1.needsReceipt) = (bundle, .sandbox, "S", true)
        v1.events = [event("e-v1-1", date: 2_000, source: .v1)]
        let (a, b) = (v2, v1)
        _ = try store.write { tx in try tx.journal(a, routing: TestRouting.routing(), now: 100) }
        _ = try store.write { tx in try tx.journal(b, routing: TestRouting.routing(), now: 110) }
        // Same event date: arrival order decides the state (the later one wins) — and must survive the move.
        _ = try store.write { tx in
            try tx.storeEvents(
                [event("e-same-1", date: 3_000), event("e-same-2", date: 3_000)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 120,
                authority: nil
            )
        }
        // A refund request, answered and then decided by Apple.
        let request = ConsumptionRequest(
            eventID: "e-v2-1",
            bundleID: bundle,
            environment: .sandbox,
            transactionID: "tx-1",
            originalTransactionID: "otid-1",
            productType: "consumable",
            reason: "unintended_purchase",
            requestedAt: 100,
            deadlineAt: 39_600_100
        )
        try store.write { tx in
            _ = try tx.execute(Plan(writes: [.consumptionJob(request)]), journalID: nil, now: 100)
            let id = try tx.consumptionJobs(state: nil, limit: 1)[0].id
            try tx.settleConsumptionJob(
                ConsumptionSettlement(
                    id: id,
                    state: .sent,
                    asks: 1,
                    sends: 1,
                    nextAttemptAt: 120,
                    answer: Array(#"{"customerConsented":true}"#.utf8),
                    answerSource: .team,
                    refundPreference: "DECLINE",
                    sentAt: 120,
                    appleStatus: 202
                ),
                now: 120
            )
            let decision = RefundDecision(
                bundleID: bundle,
                environment: .sandbox,
                transactionID: "tx-1",
                kind: .refundDeclined,
                at: 140
            )
            _ = try tx.execute(Plan(writes: [.refundDecision(decision)]), journalID: nil, now: 140)
        }
        let first = try store.read { tx in
            try tx.deliveries(state: .pending, downstream: "main", eventID: "e-v2-1", limit: 1)
        }[0]
        try store.write { tx in
            try tx.settleDelivery(
                id: first.id,
                DeliveryOutcome(
                    state: .delivered,
                    attempts: 1,
                    nextAttemptAt: 130,
                    deliveredAt: 130,
                    status: 200,
                    error: nil,
                    attempt: DeliveryAttempt(
                        startedAt: 128,
                        latencyMillis: 2,
                        responseHead: Array("ok".utf8),
                        redactor: SecretRedactor([])
                    )
                )
            )
        }
        let shadow = try store.read { tx in
            try tx.deliveries(state: .pending, downstream: "shadow", eventID: "e-v2-1", limit: 1)
        }[0]
        try store.write { tx in
            try tx.settleDelivery(
                id: shadow.id,
                DeliveryOutcome(
                    state: .pending,
                    attempts: 2,
                    nextAttemptAt: 5_000,
                    deliveredAt: nil,
                    status: 503,
                    error: "HTTP 503",
                    attempt: DeliveryAttempt(startedAt: 129, latencyMillis: 1)
                )
            )
        }
        let untrustedCap = QuarantineCap(rows: 2, bytes: .max, evictsOldest: true)
        for i in 0..<3 {
            let r = QuarantineRecord(
                lane: .untrusted,
                receivedAt: 200 + Int64(i),
                version: .v2,
                code: "bad_signature",
                message: "forged \(i)",
                body: [UInt8](repeating: UInt8(i), count: 5_000 * (i + 1))
            )
            _ = try store.write { tx in try tx.quarantine(r, cap: untrustedCap) }
        }
        let genuine = QuarantineRecord(
            lane: .genuine,
            receivedAt: 210,
            version: .v1,
            code: "unknown_bundle",
            message: "no such bundle",
            bundleID: "com.example.other",
            environment: "sandbox",
            passwordFingerprint: "fp",
            body: Array("{}".utf8)
        )
        let stored = try store.write { tx in
            try tx.quarantine(genuine, cap: QuarantineCap(rows: 10, bytes: .max, evictsOldest: false))
        }
        guard case .stored(let genuineID, _) = stored else {
            Issue.record("\(stored)")
            return
        }
        try store.write { tx in
            try tx.beginReplay(id: genuineID, now: 220)
            try tx.finishReplay(id: genuineID, code: "unknown_bundle", now: 221)
        }
        let key = subscription
        try store.write { tx in
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v2, compare: true), at: 300, due: 400)
            try tx.putReceipt(StoredReceipt(receipt: "MIIT…", secretName: "S", updatedAt: 310), of: key)
            try tx.putSnapshot(
                OutcomeSnapshot(
                    source: .v2,
                    bundleID: bundle,
                    environment: .sandbox,
                    originalTransactionID: "otid-1",
                    productID: "monthly",
                    transactionID: "t-9",
                    expiresDate: 9_000,
                    revocationDate: nil,
                    gracePeriodExpiresDate: nil,
                    autoRenew: true,
                    autoRenewProductID: "monthly",
                    inBillingRetry: false,
                    expirationIntent: nil,
                    observedAt: 320
                ),
                path: .v2
            )
            try tx.recordComparison(
                LedgerEntry(subscription: key, comparedAt: 330, outcome: .v2Only, fields: [], v1: nil, v2: nil)
            )
            try tx.recordCutover(
                CutoverRecord(
                    at: 340,
                    bundleID: Self.bundle,
                    environment: "sandbox",
                    from: "v2",
                    to: "v1",
                    who: "ops",
                    reason: "test",
                    verdict: "ready",
                    forced: false
                ),
                to: .v1
            )
            var apple = AppleSwitchState(bundleID: Self.bundle, environment: .sandbox)
            (apple.appID, apple.appleVersion, apple.migrationID, apple.target, apple.previous, apple.step) = (
                "1", .v1, "m", .v1, .v2, .done
            )
            _ = try tx.replaceAppleSwitch(apple, ifMigrationIs: nil)
            try tx.logAppleSwitch(
                AppleSwitchLogEntry(
                    at: 345,
                    bundleID: Self.bundle,
                    environment: .sandbox,
                    migrationID: "m",
                    step: .done,
                    outcome: "ok",
                    detail: nil
                )
            )
            // The receipt path: a mode moved by a cutover, a customer's history (over the cap of the gateway's other
            // JSON), a comparison.
            try tx.seedReceiptModes(
                [ReceiptModeEntry(bundleID: Self.bundle, environment: .sandbox, mode: .shadow, origin: .config)],
                now: 360
            )
            try tx.recordReceiptCutover(
                CutoverRecord(
                    at: 361,
                    bundleID: Self.bundle,
                    environment: "sandbox",
                    from: "shadow",
                    to: "api",
                    who: "ops",
                    reason: "receipts",
                    verdict: "ready",
                    forced: false
                ),
                to: .api
            )
            _ = try tx.claimReceiptHistory(Self.customer, owner: "a", until: 400, now: 362, freshSince: 0)
            let history =
                Array(#"{"fetched_at":362,"renewals":[],"transactions":[""#.utf8)
                + [UInt8](repeating: UInt8(ascii: "x"), count: 300_000) + Array(#""]}"#.utf8)
            try tx.settleReceiptHistory(Self.customer, json: history, fetchedAt: 362, owner: "a")
            _ = try tx.claimReceiptHistory(Self.fetching, owner: "a", until: 400, now: 362, freshSince: 0)
            _ = try tx.countReceiptHistoryCall(Self.fetching, now: 362, limit: 10)
            _ = try tx.addReceiptHistoryPage(
                Self.fetching,
                StoredReceiptHistoryPage(
                    page: 0,
                    askedWith: nil,
                    revision: "20",
                    hasMore: true,
                    askedAt: 362,
                    json: Array(#"{"fetched_at":0,"renewals":[],"transactions":[]}"#.utf8)
                ),
                owner: "a",
                until: 400
            )
            var outcome = ReceiptOutcome(status: 0, originalTransactionID: "otid-1")
            (outcome.expiresDate, outcome.productID) = (3_000, "monthly")
            try tx.recordReceiptComparison(
                ReceiptLedgerEntry(
                    subscription: Self.subscription,
                    comparedAt: 363,
                    outcome: .disagree,
                    fields: ["expires_date"],
                    apple: outcome,
                    api: nil
                )
            )
            try tx.scheduleReconcileRuns([
                (ReconcileRunKey(bundleID: Self.bundle, environment: .sandbox, kind: .history), 350)
            ])
            let run = try #require(try tx.reconcileRuns().first)
            try tx.settleReconcileRun(
                id: run.id,
                ReconcileRunOutcome(
                    nextRunAt: 3_950,
                    watermark: 340,
                    attempts: 0,
                    error: nil,
                    checked: 3,
                    recovered: 1,
                    calls: 1
                ),
                now: 350
            )
        }
    }

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func aMigratedStoreHoldsEverythingAndTakesNewWorkAboveIt() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.db"
        let sqlite = try SQLiteStore(path: path)
        try Self.populate(sqlite)
        let before = try Contents(sqlite)
        sqlite.close()
        #expect(before.journal.count == 2 && before.events.count == 4 && before.quarantine.count == 3)
        #expect(before.journal.allSatisfy { $0.body?.isEmpty == false })
        #expect(Set(before.deliveries.map(\.state)) == [.pending, .delivered])

        let schema = try TestSchema()
        let report = try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: schema.url)
        #expect(report.verified)
        #expect(report.tables.map(\.table) == StoreMigration.tables.map(\.name))
        #expect(report.tables.first { $0.table == "journal" }?.target == 2)
        #expect(report.tables.first { $0.table == "events" }?.target == 4)
        #expect(report.tables.first { $0.table == "quarantine" }?.target == 3)
        #expect(report.tables.allSatisfy { $0.target > 0 })

        let postgres = try PostgresStore(url: schema.url)
        defer { postgres.close() }
        let after = try Contents(postgres)
        // Everything the interface shows, field for field: journal with bodies, events in arrival order, the state the
        // later of two same-date events set, deliveries with their states and next attempts, jobs, quarantine with
        // its usage, authority and cutovers.
        #expect(after.journal == before.journal)
        #expect(after.events == before.events)
        #expect(after.events.map(\.event.id) == ["e-v2-1", "e-v1-1", "e-same-1", "e-same-2"])
        #expect(after.states == before.states)
        #expect(after.states.first { $0.path == .v2 }?.eventID == "e-same-2")
        #expect(after.deliveries == before.deliveries)
        #expect(after.receiptJobs == before.receiptJobs)
        #expect(after.fetches == before.fetches)
        #expect(after.ledger == before.ledger)
        #expect(after.quarantine == before.quarantine)
        #expect(after.usage == before.usage && after.usage.count == 2)
        #expect(after.authorities == before.authorities)
        #expect(after.cutovers == before.cutovers && after.cutovers.count == 2)
        #expect(after.receipt == before.receipt && after.receipt != nil)
        #expect(after.snapshots == before.snapshots && after.snapshots[1] != nil)
        #expect(after.reconcileRuns == before.reconcileRuns && after.reconcileRuns.first?.watermark == 340)
        #expect(after.receiptModes == before.receiptModes && after.receiptModes.first?.mode == .api)
        #expect(after.receiptHistory == before.receiptHistory && (after.receiptHistory?.json?.count ?? 0) > 300_000)
        #expect(after.receiptPages == before.receiptPages && after.receiptPages.count == 1)
        #expect(after.fetching?.calls == 1 && after.fetching?.callsSince == 362)
        #expect(after.receiptLedger == before.receiptLedger && after.receiptLedger.count == 1)

        // The pending work is claimable — nobody holds a claim — in the order it was due.
        let lease = Lease(owner: "new-instance", until: .max)
        let pendingMain = before.deliveries.filter { $0.state == .pending && $0.downstream == "main" }.map(\.id)
        #expect(!pendingMain.isEmpty)
        #expect(
            try postgres.write { tx in
                try tx.claimDueDeliveries(downstream: "main", at: 10_000, limit: 10, lease: lease)
            }.map(\.id)
                == pendingMain
        )
        #expect(
            try postgres.write { tx in
                try tx.claimDueDeliveries(downstream: "shadow", at: 4_999, limit: 10, lease: lease)
            }.count
                == before.deliveries.filter { $0.downstream == "shadow" && $0.nextAttemptAt < 4_999 }.count
        )
        #expect(
            try postgres.write { tx in try tx.claimDueReceiptJobs(at: 10_000, limit: 10, lease: lease) }.map(
                \.journalID
            )
                == before.receiptJobs.map(\.journalID)
        )
        #expect(
            try postgres.write { tx in try tx.claimDueFetches(at: 10_000, limit: 10, lease: lease) }.map(\.id)
                == before.fetches.map(\.id)
        )

        // New rows get ids (and arrival order) above the migrated ones.
        var item = JournalItem(key: "new-after-move", version: .v2, receivedAt: 500, body: [1])
        (item.bundleID, item.environment) = (Self.bundle, .sandbox)
        item.events = [Self.event("e-new", date: 3_000)]
        let fresh = item
        let outcome = try postgres.write { tx in try tx.journal(fresh, routing: TestRouting.routing(), now: 500) }
        guard case .accepted(let newID) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(newID > before.journal.map(\.id).max()!)
        #expect(
            try postgres.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: .max) }.last?.event.id
                == "e-new"
        )
        // Same event date as e-same-2, later arrival: the new one wins, as it would have on SQLite.
        #expect(
            try postgres.read { tx in try tx.subscriptionStates(originalTransactionID: "otid-1") }.first {
                $0.path == .v2
            }?.eventID
                == "e-new"
        )
        let newDeliveries = try postgres.read { tx in
            try tx.deliveries(state: nil, downstream: nil, eventID: "e-new", limit: 10)
        }
        #expect(!newDeliveries.isEmpty && newDeliveries.allSatisfy { $0.id > before.deliveries.map(\.id).max()! })
        let q = QuarantineRecord(
            lane: .untrusted,
            receivedAt: 600,
            version: nil,
            code: "malformed",
            message: "",
            body: []
        )
        let qOutcome = try postgres.write { tx in
            try tx.quarantine(q, cap: QuarantineCap(rows: 100, bytes: .max, evictsOldest: true))
        }
        guard case .stored(let qID, _) = qOutcome else {
            Issue.record("\(qOutcome)")
            return
        }
        #expect(qID > before.quarantine.compactMap { Int64($0.split(separator: " ")[0]) }.max()!)
        try postgres.write { tx in
            try tx.enqueueFetch(
                FetchRequest(subscription: Self.subscription, fetch: .v1, compare: true),
                at: 700,
                due: nil
            )
            try tx.recordComparison(
                LedgerEntry(
                    subscription: Self.subscription,
                    comparedAt: 710,
                    outcome: .agree,
                    fields: [],
                    v1: nil,
                    v2: nil
                )
            )
            try tx.recordCutover(
                CutoverRecord(
                    at: 720,
                    bundleID: Self.bundle,
                    environment: "sandbox",
                    from: "v1",
                    to: "v2",
                    who: "ops",
                    reason: nil,
                    verdict: "ready",
                    forced: true
                ),
                to: .v2
            )
        }
        #expect(
            try postgres.read { tx in try tx.fetchJobs(state: nil) }.map(\.id).max()! > before.fetches.map(\.id).max()!
        )
        #expect(try postgres.read { tx in try tx.cutovers(bundleID: Self.bundle, environment: .sandbox) }.count == 3)

        // Twice: the target is not empty any more.
        let again = #expect(throws: StoreMigration.Refusal.self) {
            try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: schema.url)
        }
        #expect(again?.message.contains("already holds gateway data") == true)
        #expect(try postgres.read { tx in try tx.counts() }.journal == 3)
    }

    @Test func aStoreAnotherConnectionHasOpenIsRefused() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.db"
        let sqlite = try SQLiteStore(path: path)
        let refusal = #expect(throws: StoreMigration.Refusal.self) {
            try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: "postgresql://nobody@127.0.0.1:1/none")
        }
        #expect(refusal?.message.contains("is open in another process") == true)
        sqlite.close()
        let missing = #expect(throws: StoreMigration.Refusal.self) {
            try StoreMigration.sqliteToPostgres(
                sqlitePath: directory + "/absent.db",
                postgresURL: "postgresql://nobody@127.0.0.1:1/none"
            )
        }
        #expect(missing?.message.contains("no SQLite store") == true)
        #expect(!FileManager.default.fileExists(atPath: directory + "/absent.db"))
    }

    @Test func theTableListCoversEverySQLiteTableAndColumn() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqlite = try SQLiteStore(path: directory + "/gateway.db")
        defer { sqlite.close() }
        let sqliteTables = try sqlite.database.read { c in
            try c.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").compactMap {
                $0.string("name")
            }
        }
        #expect(Set(sqliteTables) == Set(StoreMigration.tables.map(\.name)).union(StoreMigration.notCopied))
        for table in StoreMigration.tables {
            let columns = try sqlite.database.read { c in
                try c.query("SELECT name FROM pragma_table_info(?)", [.text(table.name)]).compactMap {
                    $0.string("name")
                }
            }
            #expect(Set(columns) == table.sourceColumns, "\(table.name)")
        }
    }
}
