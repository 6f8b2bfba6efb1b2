import Canonical
import Policy
import Testing

@testable import Store

/// The contract, operation by operation: each one writes and reads back the same through every implementation.
extension StoreTests {
    static let bundle = "com.example.gateway"

    static func v1Item(_ key: String, receivedAt: Int64, needsReceipt: Bool) -> JournalItem {
        var item = JournalItem(
            key: key,
            version: .v1,
            receivedAt: receivedAt,
            body: Array("{\"notification_type\":\"\(key)\"}".utf8)
        )
        item.bundleID = bundle
        item.environment = .production
        item.secretName = "MAIN_SECRET"
        item.needsReceipt = needsReceipt
        return item
    }

    @Test(arguments: StoreKind.available) func aJournaledNotificationReadsBackEveryWay(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        var event = Self.event("uuid-1", date: 2000)
        event.productType = .autoRenewable
        event.expiresDate = 9000
        event.computeEntitlement()
        var item = JournalItem(
            key: "uuid-1",
            version: .v2,
            receivedAt: 100,
            body: Array("{\"signedPayload\":\"x\"}".utf8)
        )
        (item.bundleID, item.environment, item.notificationType, item.leafSerial) = (
            Self.bundle, .sandbox, "DID_RENEW", "01"
        )
        item.events = [event]
        let journaled = item
        let routing = TestRouting.routing(compared: [Self.bundle])
        guard
            case .accepted(let id) = try f.store.write({ tx in try tx.journal(journaled, routing: routing, now: 100) })
        else {
            Issue.record("not accepted")
            return
        }

        let entry = try #require(try f.store.read { tx in try tx.journalEntries(id: id, key: nil, limit: 10) }.first)
        #expect(entry.key == "uuid-1" && entry.version == .v2 && entry.receivedAt == 100 && entry.origin == .live)
        #expect(
            entry.bundleID == Self.bundle && entry.environment == .sandbox && entry.authority == .v2
                && entry.body == item.body
        )
        #expect(try f.store.read { tx in try tx.journalEntries(id: nil, key: "uuid-1", limit: 10) }.map(\.id) == [id])
        #expect(try f.store.read { tx in try tx.journalEntries(id: nil, key: "other", limit: 10) }.isEmpty)
        #expect(try f.store.read { tx in try tx.journalEntries(id: id, key: "uuid-1", limit: 10) }.map(\.id) == [id])
        #expect(try f.store.read { tx in try tx.journalEntries(id: id, key: "other", limit: 10) }.isEmpty)
        // A V1 notification stands alone while no V2 one arrived in the day before it, per environment.
        let day: Int64 = 86_400_000
        #expect(
            try !f.store.read { tx in
                try tx.standsAlone(.v1, bundleID: Self.bundle, environment: .sandbox, now: 100 + day)
            }
        )
        #expect(
            try f.store.read { tx in
                try tx.standsAlone(.v1, bundleID: Self.bundle, environment: .sandbox, now: 101 + day)
            }
        )
        #expect(
            try f.store.read { tx in
                try tx.standsAlone(.v1, bundleID: Self.bundle, environment: .production, now: 100 + day)
            }
        )

        let stored = try #require(
            try f.store.read { tx in try tx.events(id: "uuid-1", originalTransactionID: nil, limit: 10) }.first
        )
        #expect(stored.event == event && stored.json == CanonicalJSON.encode(event))
        #expect(stored.path == .v2 && stored.authoritative && stored.journalID == id && stored.createdAt == 100)
        #expect(try f.store.read { tx in try tx.counts() } == (journal: 1, events: 1))
        #expect(
            try f.store.read { tx in
                try tx.eventCountsBySource(bundleID: Self.bundle, environment: .sandbox, since: 100, until: 101)
            }
                == [.v2: 1]
        )
        #expect(
            try f.store.read { tx in
                try tx.eventCountsBySource(bundleID: Self.bundle, environment: .sandbox, since: 101, until: 200)
            }
            .isEmpty
        )

        let state = try #require(
            try f.store.read { tx in try tx.subscriptionStates(originalTransactionID: "otid-1") }.first
        )
        #expect(
            state.path == .v2 && state.environment == .sandbox && state.bundleID == Self.bundle
                && state.eventID == "uuid-1"
        )
        #expect(
            state.authoritative && state.updatedAt == 100
                && state.json == CanonicalJSON.encode(SubscriptionState(path: .v2, event: event))
        )
        let payload = try #require(try f.store.read { tx in try tx.deliveryPayload(eventID: "uuid-1", withBody: true) })
        #expect(
            payload
                == DeliveryPayload(
                    eventJSON: stored.json,
                    authoritative: true,
                    stateJSON: state.json,
                    rawBody: item.body
                )
        )
        #expect(try f.store.read { tx in try tx.deliveryPayload(eventID: "other", withBody: true) } == nil)
        // A claim reads the same payload in its own statement, with the body only when asked, nothing when not asked.
        let lean = DeliveryPayload(eventJSON: stored.json, authoritative: true, stateJSON: state.json, rawBody: nil)
        for (read, expected) in [(PayloadRead.eventAndBody, payload), (.event, lean)] {
            let claimed = try f.claim { tx in
                try tx.claimDueDeliveries(downstream: "main", at: 100, limit: 10, lease: Self.lease, payload: read)
            }
            #expect(claimed.map(\.eventID) == ["uuid-1"] && claimed.first?.payload == expected, "\(read)")
        }
        #expect(
            try f.claim { tx in try tx.claimDueDeliveries(downstream: "main", at: 100, limit: 10, lease: Self.lease) }
                .map(\.payload) == [nil]
        )

        // A compared bundle: the signed data is the V2 path's snapshot, and the V1 path's view is fetched.
        let key = SubscriptionKey(bundleID: Self.bundle, environment: .sandbox, originalTransactionID: "otid-1")
        #expect(try f.store.read { tx in try tx.snapshot(of: key, path: .v2) }?.observedAt == 2000)
        #expect(try f.store.read { tx in try tx.snapshot(of: key, path: .v1) } == nil)
        let fetch = try #require(try f.store.read { tx in try tx.fetchJobs(state: .pending) }.first)
        #expect(fetch.subscription == key && fetch.fetch == .v1 && fetch.compare && fetch.nextAttemptAt == 100)
    }

    @Test(arguments: StoreKind.available) func eventsAreListedByDateForASubscriptionAndInArrivalOrderOtherwise(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.storeEvents(f, [Self.event("late", date: 3000), Self.event("early", date: 1000)])
        try Self.storeEvents(f, [Self.event("middle", date: 2000), Self.event("early", date: 1000)])  // stored once
        let all = try f.store.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 10) }
        #expect(all.map(\.event.id) == ["late", "early", "middle"])
        #expect(
            try f.store.read { tx in try tx.events(id: nil, originalTransactionID: "otid-1", limit: 10) }.map(
                \.event.id
            )
                == ["early", "middle", "late"]
        )
        #expect(
            try f.store.read { tx in try tx.events(id: nil, originalTransactionID: "otid-1", limit: 2) }.map(\.event.id)
                == ["early", "middle"]
        )
        #expect(try f.store.read { tx in try tx.events(id: nil, originalTransactionID: "otid-2", limit: 10) }.isEmpty)
    }

    @Test(arguments: StoreKind.available) func aWriteThatThrowsLeavesNothingBehind(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try f.store.write { tx in
                try tx.storeEvents(
                    [Self.event("e1", date: 1)],
                    journalID: nil,
                    routing: TestRouting.routing(),
                    now: 1,
                    authority: nil
                )
                throw Boom()
            }
        }
        #expect(try f.store.read { tx in try tx.counts() } == (journal: 0, events: 0))
        #expect(try Self.deliveries(f).isEmpty)
        // A read transaction refuses writes.
        #expect(throws: (any Error).self) { try f.store.read { tx in try tx.removeQuarantined(id: 1) } }
    }

    @Test(arguments: StoreKind.available) func receiptJobsAreClaimedWithTheirBodiesThenSettled(_ kind: StoreKind) throws
    {
        let f = try Fixture(kind)
        let item = Self.v1Item("v1:abc", receivedAt: 10, needsReceipt: true)
        guard
            case .accepted(let id) = try f.store.write({ tx in
                try tx.journal(item, routing: TestRouting.routing(), now: 10)
            })
        else {
            Issue.record("not accepted")
            return
        }
        let job = try #require(
            try f.claim { tx in try tx.claimDueReceiptJobs(at: 10, limit: 10, lease: Self.lease) }.first
        )
        #expect(
            job
                == ReceiptJob(
                    journalID: id,
                    attempts: 0,
                    body: item.body,
                    bundleID: Self.bundle,
                    secretName: "MAIN_SECRET",
                    receivedAt: 10,
                    key: "v1:abc",
                    authority: .v2,
                    version: .v1,
                    environment: .production
                )
        )
        try f.store.write { tx in
            try tx.settleReceiptJob(
                journalID: id,
                state: .pending,
                attempts: 1,
                nextAttemptAt: 500,
                error: "timeout",
                appleStatus: nil,
                now: 20
            )
        }
        #expect(try f.claim { tx in try tx.claimDueReceiptJobs(at: 499, limit: 10, lease: Self.lease) }.isEmpty)
        #expect(
            try f.claim { tx in try tx.claimDueReceiptJobs(at: 500, limit: 10, lease: Self.lease) }.map(\.attempts) == [
                1
            ]
        )
        try f.store.write { tx in
            try tx.settleReceiptJob(
                journalID: id,
                state: .done,
                attempts: 2,
                nextAttemptAt: 500,
                error: nil,
                appleStatus: 0,
                now: 500
            )
        }
        #expect(
            try f.store.read { tx in try tx.receiptJobs(state: .done) }
                == [
                    ReceiptJobStatus(
                        journalID: id,
                        state: .done,
                        attempts: 2,
                        nextAttemptAt: 500,
                        lastError: nil,
                        appleStatus: 0
                    )
                ]
        )
        #expect(try f.store.read { tx in try tx.receiptJobs(state: .pending) }.isEmpty)
        // The counts are of the jobs still owed work: a done job is not among them.
        #expect(try f.store.read { tx in try tx.receiptJobCounts() } == [:])
        #expect(try f.claim { tx in try tx.claimDueReceiptJobs(at: 1_000, limit: 10, lease: Self.lease) }.isEmpty)
        // The V1 body also went to the pass-through downstream.
        #expect(try Self.deliveries(f).map { [$0.downstream, "\($0.journalID ?? 0)"] } == [["legacy", "\(id)"]])
    }

    /// A poll while jobs run passes them in the lease: every kind of claim leaves them out and takes the next ones.
    @Test(arguments: StoreKind.available) func aClaimLeavesOutTheJobsItsInstanceIsRunning(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        try Self.storeEvents(
            f,
            [Self.event("e1", date: 1000), Self.event("e2", date: 2000), Self.event("e3", date: 3000)]
        )
        var receiptIDs: [Int64] = []
        for key in ["v1:a", "v1:b"] {
            let item = Self.v1Item(key, receivedAt: 10, needsReceipt: true)
            if case .accepted(let id) = try f.store.write({ tx in
                try tx.journal(item, routing: TestRouting.routing(), now: 10)
            }) {
                receiptIDs.append(id)
            }
        }
        let keys = (["otid-1", "otid-2"]).map {
            SubscriptionKey(bundleID: Self.bundle, environment: .sandbox, originalTransactionID: $0)
        }
        try f.store.write { tx in
            for key in keys {
                try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v2, compare: true), at: 1, due: nil)
            }
        }
        let runKeys = [ReconcileKind.history, .subscriptions].map {
            ReconcileRunKey(bundleID: Self.bundle, environment: .sandbox, kind: $0)
        }
        try f.store.write { tx in try tx.scheduleReconcileRuns(runKeys.map { ($0, 5) }) }

        let deliveries = try f.claim { tx in
            try tx.claimDueDeliveries(downstream: "main", at: 20, limit: 10, lease: Self.lease)
        }.map(\.id)
        let fetches = try f.claim { tx in try tx.claimDueFetches(at: 20, limit: 10, lease: Self.lease) }.map(\.id)
        let runs = try f.claim { tx in try tx.claimDueReconcileRuns(at: 20, limit: 10, lease: Self.lease) }.map(\.id)
        #expect(deliveries.count == 3 && fetches.count == 2 && runs.count == 2 && receiptIDs.count == 2)

        @Sendable func lease(running: [Int64]) -> Lease {
            Lease(owner: Self.lease.owner, until: Self.lease.until, running: running)
        }
        let receipts = receiptIDs
        #expect(
            try f.claim { tx in
                try tx.claimDueDeliveries(
                    downstream: "main",
                    at: 20,
                    limit: 10,
                    lease: lease(running: [deliveries[0], deliveries[2]])
                )
            }.map(\.id) == [deliveries[1]]
        )
        #expect(
            try f.claim { tx in try tx.claimDueReceiptJobs(at: 20, limit: 10, lease: lease(running: [receipts[0]])) }
                .map(\.journalID)
                == [receipts[1]]
        )
        #expect(try f.claim { tx in try tx.claimDueFetches(at: 20, limit: 10, lease: lease(running: fetches)) }.isEmpty)
        #expect(
            try f.claim { tx in try tx.claimDueReconcileRuns(at: 20, limit: 10, lease: lease(running: [runs[1]])) }.map(
                \.id
            ) == [runs[0]]
        )
        // The limit counts the jobs taken, not those left out.
        #expect(
            try f.claim { tx in
                try tx.claimDueDeliveries(downstream: "main", at: 20, limit: 1, lease: lease(running: [deliveries[0]]))
            }.map(\.id) == [deliveries[1]]
        )
    }

    /// The delivery's payload as the worker reads it: one statement through `readStatement` (PostgreSQL: no
    /// transaction around it), without the body unless the downstream wants it; and a read it stays — a write
    /// through it fails.
    @Test(arguments: StoreKind.available) func aSingleStatementReadReadsThePayloadAndNeverWrites(
        _ kind: StoreKind
    ) async throws {
        let f = try Fixture(kind)
        try Self.storeEvents(f, [Self.event("e1", date: 1000)])
        let job = try #require(
            try f.claim { tx in try tx.claimDueDeliveries(downstream: "main", at: 20, limit: 10, lease: Self.lease) }
                .first
        )
        let stored = try #require(
            try await f.store.read { tx in try tx.events(id: "e1", originalTransactionID: nil, limit: 1) }.first
        )
        let lean = try #require(
            try await f.store.readStatement { tx in try tx.deliveryPayload(eventID: "e1", withBody: false) }
        )
        #expect(lean.eventJSON == stored.json && lean.rawBody == nil && lean.stateJSON != nil)
        #expect(
            try await f.store.readStatement { tx in try tx.deliveryPayload(eventID: "missing", withBody: false) } == nil
        )

        let outcome = DeliveryOutcome(
            state: .delivered,
            attempts: 1,
            nextAttemptAt: 20,
            deliveredAt: 25,
            status: 200,
            error: nil
        )
        await #expect(throws: (any Error).self) {
            try await f.store.readStatement { tx in try tx.settleDelivery(id: job.id, outcome) }
        }
        await #expect(throws: (any Error).self) {
            try await f.store.read { tx in try tx.settleDelivery(id: job.id, outcome) }
        }
        #expect(
            try await f.store.read { tx in
                try tx.deliveries(state: .pending, downstream: "main", eventID: nil, limit: 10)
            }
            .map(\.id) == [job.id]
        )
    }

    /// `iap-gateway subscription` and the admin API look a subscription's states up by its original transaction id:
    /// through an index of its own (migration 7 on SQLite, 8 on PostgreSQL), not a read of every state.
    @Test(arguments: StoreKind.available) func aSubscriptionsStatesAreLookedUpThroughAnIndex(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let plan: String
        if let store = f.store as? SQLiteStore {
            plan = try store.writer.perform { c in
                try c.query(
                    "EXPLAIN QUERY PLAN SELECT path FROM subscription_state WHERE original_transaction_id = ?",
                    [.text("otid-1")]
                )
                .compactMap { $0.string("detail") }.joined(separator: "\n")
            }
        } else {
            let store = try #require(f.store as? PostgresStore)
            plan = try store.writer.perform { c in
                try c.execute("SET LOCAL enable_seqscan = off")  // a few rows: the planner would rather read them all
                return try c.query(
                    "EXPLAIN SELECT path FROM subscription_state WHERE original_transaction_id = $1",
                    [.text("otid-1")]
                )
                .compactMap { $0.string("QUERY PLAN") }.joined(separator: "\n")
            }
        }
        #expect(plan.contains("subscription_state_subscription"), "\(plan)")
    }

    @Test(arguments: StoreKind.available) func deliveriesAreClaimedInOrderSettledDeadLetteredAndReplayed(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.storeEvents(f, [Self.event("e1", date: 1000), Self.event("e2", date: 2000)])
        let main = try f.claim { tx in
            try tx.claimDueDeliveries(downstream: "main", at: 1, limit: 10, lease: Self.lease)
        }
        #expect(
            main.map(\.eventID) == ["e1", "e2"]
                && main.allSatisfy { $0.downstream == "main" && $0.attempts == 0 && $0.createdAt == 1 }
        )
        try f.store.write { tx in
            try tx.settleDelivery(
                id: main[0].id,
                DeliveryOutcome(
                    state: .delivered,
                    attempts: 1,
                    nextAttemptAt: 1,
                    deliveredAt: 5,
                    status: 200,
                    error: nil
                )
            )
            try tx.settleDelivery(
                id: main[1].id,
                DeliveryOutcome(
                    state: .pending,
                    attempts: 1,
                    nextAttemptAt: 50,
                    deliveredAt: nil,
                    status: 500,
                    error: "HTTP 500"
                )
            )
        }
        #expect(
            Set(try f.store.read { tx in try tx.pendingDeliveries() })
                == [
                    PendingDeliveries(downstream: "main", count: 1, oldestCreatedAt: 1),
                    PendingDeliveries(downstream: "shadow", count: 2, oldestCreatedAt: 1),
                ]
        )
        #expect(try f.store.read { tx in try tx.deliveryCounts() } == [.pending: 3, .delivered: 1])
        #expect(
            try f.claim { tx in try tx.claimDueDeliveries(downstream: "main", at: 49, limit: 10, lease: Self.lease) }
                .isEmpty
        )
        #expect(
            try f.claim { tx in try tx.claimDueDeliveries(downstream: "main", at: 50, limit: 10, lease: Self.lease) }
                .map(\.id) == [main[1].id]
        )
        let delivered = try f.store.read { tx in
            try tx.deliveries(state: .delivered, downstream: nil, eventID: nil, limit: 10)
        }
        #expect(
            delivered.map(\.id) == [main[0].id] && delivered.first?.deliveredAt == 5
                && delivered.first?.lastStatus == 200
        )
        let retrying = try #require(
            try f.store.read { tx in try tx.deliveries(state: nil, downstream: "main", eventID: "e2", limit: 10) }.first
        )
        #expect(
            retrying.attempts == 1 && retrying.nextAttemptAt == 50 && retrying.lastStatus == 500
                && retrying.lastError == "HTTP 500"
        )

        // A downstream that left the config: its pending rows are dead letters; replays re-arm them.
        #expect(
            try f.store.write { tx in
                try tx.deadLetterDeliveries(notTo: ["main", "other \"quoted\" name"], error: "gone")
            } == 2
        )
        #expect(
            try f.store.read { tx in try tx.deliveries(state: .dead, downstream: "shadow", eventID: nil, limit: 10) }
                .count == 2
        )
        #expect(try f.store.write { tx in try tx.redeliver(.deadLetters, now: 60) } == 2)
        #expect(try f.store.write { tx in try tx.redeliver(.eventID("e1"), now: 70) } == 2)
        let e1 = try f.store.read { tx in try tx.deliveries(state: nil, downstream: nil, eventID: "e1", limit: 10) }
        #expect(
            e1.allSatisfy { $0.state == .pending && $0.attempts == 0 && $0.nextAttemptAt == 70 && $0.lastError == nil }
        )
        #expect(try f.store.write { tx in try tx.redeliver(.range(since: 0, until: 1), now: 80) } == 0)
        #expect(try f.store.write { tx in try tx.redeliver(.range(since: 1, until: 2), now: 80) } == 4)
        #expect(try f.store.write { tx in try tx.deadLetterDeliveries(notTo: [], error: "none configured") } == 4)
        #expect(
            try f.store.read { tx in try tx.deliveries(state: nil, downstream: nil, eventID: nil, limit: 3) }.count == 3
        )
    }

    @Test(arguments: StoreKind.available) func snapshotsKeepTheNewestAndTheLedgerKeepsEveryComparison(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let key = SubscriptionKey(bundleID: Self.bundle, environment: .sandbox, originalTransactionID: "otid-1")
        let newer = OutcomeSnapshot(event: Self.event("e2", date: 2000), source: .v1Receipt, observedAt: 200)
        let older = OutcomeSnapshot(event: Self.event("e1", date: 1000), source: .v1Receipt, observedAt: 100)
        try f.store.write { tx in
            try tx.putSnapshot(newer, path: .v1)
            try tx.putSnapshot(older, path: .v1)
        }
        #expect(try f.store.read { tx in try tx.snapshot(of: key, path: .v1) } == newer)
        #expect(try f.store.read { tx in try tx.receipt(of: key) } == nil)

        let other = SubscriptionKey(
            bundleID: "com.example.other",
            environment: .production,
            originalTransactionID: "otid-9"
        )
        let entries = [
            LedgerEntry(subscription: key, comparedAt: 10, outcome: .agree, fields: [], v1: newer, v2: newer),
            LedgerEntry(
                subscription: key,
                comparedAt: 20,
                outcome: .disagree,
                fields: ["expires_date", "product_id"],
                v1: newer,
                v2: older
            ),
            LedgerEntry(subscription: other, comparedAt: 15, outcome: .v2Only, fields: [], v1: nil, v2: older),
        ]
        try f.store.write { tx in for e in entries { try tx.recordComparison(e) } }
        #expect(
            try f.store.read { tx in try tx.ledger(bundleID: nil, environment: nil, from: .min, to: .max) } == [
                entries[0], entries[2], entries[1],
            ]
        )
        #expect(
            try f.store.read { tx in try tx.ledger(bundleID: Self.bundle, environment: .sandbox, from: 11, to: 21) }
                == [entries[1]]
        )
        #expect(
            try f.store.read { tx in try tx.ledger(bundleID: nil, environment: .production, from: 0, to: 100) } == [
                entries[2]
            ]
        )

        // Fetches: one deriving a v2-api event per V1 event, plain ones once per subscription and path while pending.
        let derive = FetchRequest(
            subscription: key,
            fetch: .v2,
            v1EventID: "v1:e",
            authority: .v2,
            compare: false,
            confirms: 1
        )
        try f.store.write { tx in
            try tx.enqueueFetch(derive, at: 5, due: nil)
            try tx.enqueueFetch(derive, at: 5, due: nil)
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v2, compare: true), at: 5, due: 7)
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v2, compare: true), at: 6, due: 7)
        }
        let jobs = try f.claim { tx in try tx.claimDueFetches(at: 7, limit: 10, lease: Self.lease) }
        #expect(jobs.map(\.nextAttemptAt) == [5, 5, 7] && jobs.map(\.v1EventID) == ["v1:e", "v1:e", nil])
        #expect(
            jobs[0].authority == .v2 && jobs[0].confirms == 1 && !jobs[0].compare && jobs[0].createdAt == 5
                && jobs[0].attempts == 0
        )
        try f.store.write { tx in
            try tx.settleFetch(id: jobs[0].id, state: .done, attempts: 1, nextAttemptAt: nil, error: nil, now: 8)
            try tx.settleFetch(id: jobs[1].id, state: .failed, attempts: 3, nextAttemptAt: 9, error: "gave up", now: 9)
        }
        let failed = try #require(try f.store.read { tx in try tx.fetchJobs(state: .failed) }.first)
        #expect(
            failed.id == jobs[1].id && failed.attempts == 3 && failed.nextAttemptAt == 9
                && failed.lastError == "gave up"
        )
        #expect(try f.store.read { tx in try tx.fetchJobs(state: .done) }.map(\.nextAttemptAt) == [5])
        #expect(try f.store.read { tx in try tx.fetchJobCounts() } == [.pending: 1, .done: 1, .failed: 1])
        #expect(try f.store.write { tx in try tx.purgeFinishedFetches(olderThan: 9) } == 1)
        #expect(try f.store.write { tx in try tx.purgeFinishedFetches(olderThan: 10) } == 1)
        #expect(try f.store.read { tx in try tx.fetchJobs(state: nil) }.map(\.id) == [jobs[2].id])
    }

    @Test(arguments: StoreKind.available) func bodiesArePurgedOnlyOnceTheirJobsAreFinished(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        // a receipt job and a pass-through delivery
        let waiting = Self.v1Item("v1:waiting", receivedAt: 10, needsReceipt: true)
        var item = JournalItem(key: "uuid-2", version: .v2, receivedAt: 10, body: [1, 2, 3])
        item.bundleID = Self.bundle
        let v2 = item
        let young = Self.v1Item("v1:young", receivedAt: 2_000, needsReceipt: false)
        let ids = try f.store.write { tx in
            try [waiting, v2, young].map { item -> Int64 in
                guard
                    case .accepted(let id) = try tx.journal(item, routing: TestRouting.routing(), now: item.receivedAt)
                else {
                    return 0
                }
                return id
            }
        }
        #expect(try f.store.write { tx in try tx.purgeBodies(olderThan: 1_000, now: 1_000) } == 1)
        try f.store.write { tx in
            try tx.settleReceiptJob(
                journalID: ids[0],
                state: .done,
                attempts: 1,
                nextAttemptAt: 0,
                error: nil,
                appleStatus: 0,
                now: 1_000
            )
        }
        // its pass-through is pending
        #expect(try f.store.write { tx in try tx.purgeBodies(olderThan: 1_000, now: 1_000) } == 0)
        let legacy = try #require(try Self.deliveries(f).first { $0.journalID == ids[0] })
        try f.store.write { tx in
            try tx.settleDelivery(
                id: legacy.id,
                DeliveryOutcome(
                    state: .delivered,
                    attempts: 1,
                    nextAttemptAt: 0,
                    deliveredAt: 1_000,
                    status: 200,
                    error: nil
                )
            )
        }
        #expect(try f.store.write { tx in try tx.purgeBodies(olderThan: 1_000, now: 1_001) } == 1)
        let bodies = try f.store.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 10) }.map(\.body)
        #expect(bodies == [nil, nil, young.body])
    }

    @Test(arguments: StoreKind.available) func aReplayIsRecordedOnItsQuarantinedRow(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let cap = QuarantineCap(rows: 10, bytes: .max, evictsOldest: false)
        let record = QuarantineRecord(
            lane: .genuine,
            receivedAt: 5,
            version: .v1,
            code: "unknown_bundle",
            message: "no such bundle",
            bundleID: "com.example.unknown",
            environment: "Sandbox",
            passwordFingerprint: "ab12",
            body: [0, 1, 0xFF]
        )
        guard case .stored(let id, 0) = try f.store.write({ tx in try tx.quarantine(record, cap: cap) }) else {
            Issue.record("not stored")
            return
        }
        try f.store.write { tx in try tx.beginReplay(id: id, now: 50) }
        let replaying = try #require(try f.store.read { tx in try tx.quarantined(lane: nil, id: id, limit: 10) }.first)
        #expect(replaying.replayStartedAt == 50 && replaying.replayAttempts == 1 && replaying.lastReplayAt == nil)
        #expect(
            replaying.body == record.body && replaying.message == record.message
                && replaying.bundleID == record.bundleID
        )
        #expect(
            replaying.environment == "Sandbox" && replaying.passwordFingerprint == "ab12" && replaying.version == .v1
        )
        try f.store.write { tx in try tx.finishReplay(id: id, code: "unknown_bundle", now: 60) }
        let replayed = try #require(
            try f.store.read { tx in try tx.quarantined(lane: .genuine, id: nil, limit: 10) }.first
        )
        #expect(
            replayed.replayStartedAt == nil && replayed.lastReplayAt == 60
                && replayed.lastReplayCode == "unknown_bundle"
        )
        #expect(try f.store.read { tx in try tx.quarantined(lane: .untrusted, id: nil, limit: 10) }.isEmpty)
        #expect(try f.store.read { tx in try tx.quarantineUsage() }[.genuine]?.rows == 1)
        try f.store.write { tx in try tx.removeQuarantined(id: id) }
        let usage = try f.store.read { tx in try tx.quarantineUsage() }[.genuine]
        #expect(usage?.rows == 0 && usage?.bytes == 0)
    }

    @Test(arguments: StoreKind.available) func authorityActivityNamesEachPathsLatestEvent(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        try f.store.write { tx in
            try tx.storeEvents(
                [Self.event("v2-event", date: 1)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 5,
                authority: nil
            )
            try tx.storeEvents(
                [Self.event("v1-event", date: 1, source: .v1)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 7,
                authority: nil
            )
        }
        let activity = try f.store.read { tx in try tx.authorityActivity() }
        let sandbox = try #require(activity.first { $0.environment == .sandbox })
        #expect(
            sandbox
                == AuthorityActivity(
                    bundleID: Self.bundle,
                    environment: .sandbox,
                    authority: .v2,
                    lastAuthoritative: 5,
                    lastOther: 7
                )
        )
        let production = try #require(activity.first { $0.environment == .production })
        #expect(production.lastAuthoritative == nil && production.lastOther == nil)
        // A path's newest event is the newest of its sources': a verifyReceipt answer's on V1, the Server API's on V2.
        try f.store.write { tx in
            try tx.storeEvents(
                [Self.event("receipt-event", date: 2, source: .v1Receipt)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 9,
                authority: nil
            )
            try tx.storeEvents(
                [Self.event("api-event", date: 2, source: .v2API)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 11,
                authority: nil
            )
            try tx.storeEvents(
                [Self.event("older-v1-event", date: 3, source: .v1)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 8,
                authority: nil
            )
        }
        let later = try #require(
            try f.store.read { tx in try tx.authorityActivity() }.first { $0.environment == .sandbox }
        )
        #expect(later.lastAuthoritative == 11 && later.lastOther == 9)
        #expect(try f.store.read { tx in try tx.authority(bundleID: Self.bundle, environment: .sandbox) } == .v2)
        #expect(
            try f.store.read { tx in try tx.authority(bundleID: "com.example.unknown", environment: .sandbox) } == .v1
        )
        #expect(try f.store.read { tx in try tx.authority(bundleID: nil, environment: nil) } == .v1)
    }
}
