import Canonical
import Dispatch
import Foundation
import Policy
import Postgres
import Synchronization
import TestSupport
import Testing
import Zstd

@testable import Store

/// What only the PostgreSQL store does: several instances (here: several `PostgresStore`s) on one database, and a
/// server that goes away and comes back. Each test has a schema of its own.
@Suite(
    .serialized,
    .enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)")
)
struct PostgresStoreTests {
    /// Runs `bodies` on threads of their own (not a pool's: every one runs at once however many block), started
    /// together; their results in order.
    static func together<T: Sendable>(_ bodies: [@Sendable () throws -> T]) -> [Result<T, any Error>] {
        let results = Mutex([Result<T, any Error>?](repeating: nil, count: bodies.count))
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for (i, body) in bodies.enumerated() {
            group.enter()
            Thread {
                start.wait()
                let result = Result { try body() }
                results.withLock { $0[i] = result }
                group.leave()
            }.start()
        }
        for _ in bodies { start.signal() }
        group.wait()
        return results.withLock { $0.map { $0! } }
    }

    /// Runs `body` on a thread of its own within `group` (Dispatch's pool adds a thread only after a while when its
    /// threads block, and the writers' loops already hold some of them).
    static func run(in group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread {
            body()
            group.leave()
        }.start()
    }

    static func item(_ key: String) -> JournalItem {
        var item = JournalItem(key: key, version: .v2, receivedAt: 5, body: Array("{\"k\":\"\(key)\"}".utf8))
        item.bundleID = "com.example.gateway"
        item.environment = .sandbox
        return item
    }

    /// An instance on `schema`, with `com.example.gateway` authoritative on V2 (as ``Fixture``).
    /// One writer session: these tests watch an instance's writer queue.
    static func open(_ schema: TestSchema) throws -> PostgresStore {
        var options = PostgresStore.Options()
        options.writers = 1
        let store = try PostgresStore(url: schema.url, options: options)
        let wanted = [AppStoreEnvironment.production, .sandbox].map {
            AuthorityEntry(bundleID: "com.example.gateway", environment: $0, authority: .v2, origin: .config)
        }
        _ = try store.write { tx in try tx.seedAuthority(wanted, now: 1) }
        return store
    }

    static func storeEvent(_ store: any GatewayStore, _ id: String) throws {
        _ = try store.write { tx in
            try tx.storeEvents(
                [StoreTests.event(id, date: 1000)],
                journalID: nil,
                routing: TestRouting.routing(),
                now: 1,
                authority: nil
            )
        }
    }

    // MARK: Migrations

    @Test func instancesOpeningAtOnceMigrateOnce() throws {
        let schema = try TestSchema()
        let opens = Self.together((0..<4).map { _ in { try PostgresStore(url: schema.url) } })
        let stores = try opens.map { try $0.get() }
        defer { for store in stores { store.close() } }
        let c = try schema.connect()
        defer { c.close() }
        let versions = try c.query("SELECT version FROM schema_migrations ORDER BY version").compactMap {
            $0.int("version")
        }
        #expect(versions == PostgresSchema.migrations.map(\.version))
        // Every instance works on the one schema.
        try Self.storeEvent(stores[0], "e1")
        #expect(try stores[3].read { tx in try tx.counts() }.events == 1)
    }

    @Test func aSchemaANewerGatewayMigratedIsRefused() throws {
        let schema = try TestSchema()
        try PostgresStore(url: schema.url).close()
        let c = try schema.connect()
        defer { c.close() }
        try c.run(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)",
            [.int64(Int64((PostgresSchema.migrations.map(\.version).max() ?? 0) + 1))]
        )
        let error = #expect(throws: PostgresError.self) { try PostgresStore(url: schema.url) }
        #expect(error?.message.contains("newer gateway") == true)
    }

    // MARK: Dedupe across instances

    @Test func theSameNotificationFromTwoInstancesAtOnceIsAcceptedOnce() throws {
        let schema = try TestSchema()
        let (a, b) = (try Self.open(schema), try Self.open(schema))
        defer {
            a.close()
            b.close()
        }
        let observer = try schema.connect()
        defer { observer.close() }

        // Deterministic: A's transaction holds the key uncommitted while B's journal of it waits; then A commits.
        let (inserted, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let item = Self.item("same-key")
        let outcomes = Mutex<[String: JournalOutcome]>([:])
        let done = DispatchGroup()
        Self.run(in: done) {
            let o = try? a.write { tx in
                let outcome = try tx.journal(item, routing: TestRouting.routing(), now: 5)
                inserted.signal()
                release.wait()
                return outcome
            }
            outcomes.withLock { $0["a"] = o }
        }
        inserted.wait()
        #expect(Self.sessionsWaitingOnALock(observer) == 0)
        Self.run(in: done) {
            let o = try? b.write { tx in try tx.journal(item, routing: TestRouting.routing(), now: 6) }
            outcomes.withLock { $0["b"] = o }
        }
        eventuallyBlocking("B's insert waiting on A's lock") { Self.sessionsWaitingOnALock(observer) == 1 }
        release.signal()
        done.wait()
        let result = outcomes.withLock { $0 }
        guard case .accepted(let id) = result["a"] else {
            Issue.record("A: \(String(describing: result["a"]))")
            return
        }
        #expect(result["b"] == .duplicate(journalID: id))

        // In the middle of a batch B does not wait (it holds rows A might wait for): its journal runs again at the head
        // of its next batch, and waits there.
        let deferred = Self.item("deferred-key")
        let (held, go, holding) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        let later = DispatchGroup()
        Self.run(in: later) {
            let o = try? a.write { tx in
                let outcome = try tx.journal(deferred, routing: TestRouting.routing(), now: 5)
                held.signal()
                go.wait()
                return outcome
            }
            outcomes.withLock { $0["a2"] = o }
        }
        held.wait()
        let retriedBefore = b.writer.retried
        // B's writer is held until a write and then the journal are queued, so that both go in its next batch.
        Self.run(in: later) {
            try? b.write { _ in
                holding.signal()
                eventuallyBlocking(recordsIssue: false) { b.writer.queued == 2 }
            }
        }
        holding.wait()
        Self.run(in: later) {
            _ = try? b.write { tx in
                try tx.storeEvents(
                    [StoreTests.event("b-first", date: 1)],
                    journalID: nil,
                    routing: TestRouting.routing(),
                    now: 1,
                    authority: nil
                )
            }
        }
        eventuallyBlocking("the journal queued on B's writer") { b.writer.queued == 1 }
        Self.run(in: later) {
            let o = try? b.write { tx in try tx.journal(deferred, routing: TestRouting.routing(), now: 6) }
            outcomes.withLock { $0["b2"] = o }
        }
        eventuallyBlocking("B's journal waiting on A's lock") { Self.sessionsWaitingOnALock(observer) == 1 }
        #expect(b.writer.retried > retriedBefore, "B's journal was not run again in a later batch")
        go.signal()
        later.wait()
        let second = outcomes.withLock { $0 }
        guard case .accepted(let id2) = second["a2"] else {
            Issue.record("A: \(String(describing: second["a2"]))")
            return
        }
        #expect(second["b2"] == .duplicate(journalID: id2))

        // And a burst: every key journaled by both instances at the same moment is accepted exactly once.
        let keys = (0..<40).map { "burst-\($0)" }
        let journal: @Sendable (any GatewayStore, String) throws -> JournalOutcome = { store, key in
            try store.write { tx in try tx.journal(Self.item(key), routing: TestRouting.routing(), now: 7) }
        }
        let results = Self.together(
            keys.flatMap { key -> [@Sendable () throws -> JournalOutcome] in
                [{ try journal(a, key) }, { try journal(b, key) }]
            }
        )
        let answers = try results.map { try $0.get() }
        for (n, key) in keys.enumerated() {
            let pair = [answers[2 * n], answers[2 * n + 1]]
            let accepted = pair.compactMap { if case .accepted(let id) = $0 { id } else { nil } }
            let duplicates = pair.compactMap { if case .duplicate(let id) = $0 { id } else { nil } }
            #expect(accepted.count == 1 && duplicates == accepted, "\(key): \(pair)")
        }
        #expect(try a.read { tx in try tx.counts() }.journal == keys.count + 2)
    }

    /// Sessions of the test database waiting for another transaction's lock.
    static func sessionsWaitingOnALock(_ c: PostgresConnection) -> Int {
        (try? c.queryOne(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )?.int("n")) ?? -1
    }

    // MARK: Claims and leases

    @Test func aJobClaimedByOneInstanceWaitsForItsLeaseBeforeAnotherTakesItOver() throws {
        let schema = try TestSchema()
        let (a, b) = (try Self.open(schema), try Self.open(schema))
        defer {
            a.close()
            b.close()
        }
        try Self.storeEvent(a, "e1")
        var v1 = JournalItem(key: "v1-key", version: .v1, receivedAt: 1, body: Array("{}".utf8))
        v1.bundleID = "com.example.gateway"
        v1.environment = .sandbox
        v1.needsReceipt = true
        let receipt = v1
        _ = try a.write { tx in try tx.journal(receipt, routing: TestRouting.routing(), now: 1) }
        let key = SubscriptionKey(
            bundleID: "com.example.gateway",
            environment: .sandbox,
            originalTransactionID: "otid-1"
        )
        try a.write { tx in
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v2, compare: true), at: 1, due: nil)
        }

        /// Each kind of job `store` can claim at `time` for `lease`: (deliveries to main, receipt jobs, fetches).
        func claim(_ store: PostgresStore, at time: Int64, _ owner: String, until: Int64) throws -> [Int] {
            let lease = Lease(owner: owner, until: until)
            return try store.write { tx in
                [
                    try tx.claimDueDeliveries(downstream: "main", at: time, limit: 10, lease: lease).count,
                    try tx.claimDueReceiptJobs(at: time, limit: 10, lease: lease).count,
                    try tx.claimDueFetches(at: time, limit: 10, lease: lease).count,
                ]
            }
        }
        #expect(try claim(a, at: 10, "A", until: 1_000) == [1, 1, 1])
        // Not B's while A's lease runs; A's own again at once (a restarted A picks up its work).
        #expect(try claim(b, at: 500, "B", until: 2_000) == [0, 0, 0])
        #expect(try claim(a, at: 600, "A", until: 1_000) == [1, 1, 1])
        // A's lease ran out: B takes every job over, and now A must wait for B's.
        #expect(try claim(b, at: 1_000, "B", until: 2_000) == [1, 1, 1])
        #expect(try claim(a, at: 1_500, "A", until: 3_000) == [0, 0, 0])

        // Settling ends the claim: the jobs, due again, are A's to take though B's lease still runs.
        let deliveryID = try #require(
            try b.read { tx in try tx.deliveries(state: nil, downstream: "main", eventID: nil, limit: 10) }.first?.id
        )
        let journalID = try #require(try b.read { tx in try tx.receiptJobs(state: nil) }.first?.journalID)
        let fetchID = try #require(try b.read { tx in try tx.fetchJobs(state: nil) }.first?.id)
        try b.write { tx in
            try tx.settleDelivery(
                id: deliveryID,
                DeliveryOutcome(
                    state: .pending,
                    attempts: 1,
                    nextAttemptAt: 1_100,
                    deliveredAt: nil,
                    status: 503,
                    error: "HTTP 503"
                )
            )
            try tx.settleReceiptJob(
                journalID: journalID,
                state: .pending,
                attempts: 1,
                nextAttemptAt: 1_100,
                error: "timeout",
                appleStatus: nil,
                now: 1_050
            )
            try tx.settleFetch(
                id: fetchID,
                state: .pending,
                attempts: 1,
                nextAttemptAt: 1_100,
                error: "timeout",
                now: 1_050
            )
        }
        let c = try schema.connect()
        defer { c.close() }
        for table in ["outbox", "receipt_jobs", "compare_jobs"] {
            let claimed = try c.queryOne(
                "SELECT count(*) AS n FROM \(table) WHERE claimed_by IS NOT NULL OR claimed_until IS NOT NULL"
            )
            #expect(claimed?.int("n") == 0, "\(table)")
        }
        #expect(try claim(a, at: 1_100, "A", until: 3_000) == [1, 1, 1])
        // A re-armed delivery loses its claim too.
        #expect(try b.write { tx in try tx.redeliver(.eventID("e1"), now: 1_200) } == 2)
        #expect(try claim(b, at: 1_200, "B", until: 4_000).first == 1)
    }

    /// A claim renewed by its owner is not taken over until the renewed lease ends; nobody else's renewal counts.
    /// Every table's renewal statement runs.
    @Test func aRenewedClaimIsNotTakenOverUntilItsNewLeaseEnds() throws {
        let f = try Fixture(.postgres)
        let store = f.store
        try Self.storeEvent(store, "renewed")
        let claimed = try store.write { tx in
            try tx.claimDueDeliveries(downstream: "main", at: 10, limit: 10, lease: Lease(owner: "a", until: 100))
        }
        let ids = claimed.map(\.id)
        #expect(ids.count == 1)
        try store.write { tx in try tx.renewClaims(.deliveries, ids: ids, lease: Lease(owner: "a", until: 500)) }
        try store.write { tx in try tx.renewClaims(.deliveries, ids: ids, lease: Lease(owner: "b", until: 10_000)) }
        let b = Lease(owner: "b", until: 2_000)
        #expect(
            try store.write { tx in try tx.claimDueDeliveries(downstream: "main", at: 200, limit: 10, lease: b) }
                .isEmpty
        )
        #expect(
            try store.write { tx in try tx.claimDueDeliveries(downstream: "main", at: 501, limit: 10, lease: b) }.map(
                \.id
            ) == ids
        )
        for jobs in ClaimedJobs.allCases {
            try store.write { tx in try tx.renewClaims(jobs, ids: [1, 2], lease: Lease(owner: "c", until: 3_000)) }
        }
    }

    @Test func instancesClaimingAtOnceNeverGetTheSameJob() throws {
        let schema = try TestSchema()
        let stores = [try Self.open(schema), try Self.open(schema), try Self.open(schema)]
        defer { for store in stores { store.close() } }
        try stores[0].write { tx in
            let events = (0..<90).map { StoreTests.event("e\($0)", date: 1000 + Int64($0)) }
            try tx.storeEvents(events, journalID: nil, routing: TestRouting.routing(), now: 1, authority: nil)
        }
        let claims = Self.together(
            stores.enumerated().flatMap { n, store in
                (0..<5).map { round in
                    { @Sendable in
                        try store.write { tx in
                            try tx.claimDueDeliveries(
                                downstream: "main",
                                at: 10,
                                limit: 7,
                                lease: Lease(owner: "i\(n)-\(round)", until: 1_000)
                            ).map(\.id)
                        }
                    }
                }
            }
        )
        let ids = try claims.flatMap { try $0.get() }
        #expect(ids.count == Set(ids).count, "a job was claimed twice")
        #expect(ids.count == 90)
        // Each claim came back in the order the jobs are due.
        for result in claims { if let batch = try? result.get() { #expect(batch == batch.sorted()) } }
    }

    // MARK: Group commit

    /// A store with an empty table `probe (n bigint UNIQUE)`, and `count` writes `piece(i, connection)` queued on its
    /// writer behind a first write that holds it until they all are, so that they share batches: each write's result,
    /// and the store's commit statistics from before them.
    static func queuedWrites(
        count: Int,
        _ piece: @escaping @Sendable (Int, PostgresConnection) throws -> Void
    ) throws
        -> (
            store: PostgresStore, fixture: Fixture, results: [Result<Void, any Error>],
            before: (batches: Int, items: Int)
        )
    {
        let f = try Fixture(.postgres)
        let store = try #require(f.store as? PostgresStore)
        try store.writer.perform { c in try c.execute("CREATE TABLE probe (n bigint UNIQUE)") }
        let before = store.commitStatistics
        let queued = Atomic<Int>(0)
        let holder: @Sendable () throws -> Void = {
            try store.writer.perform { _ in
                _ = eventuallyBlocking(recordsIssue: false) { queued.load(ordering: .relaxed) == count }
            }
        }
        let results = Self.together(
            [holder]
                + (0..<count).map { i in
                    { @Sendable in
                        queued.add(1, ordering: .relaxed)
                        try store.writer.perform { c in try piece(i, c) }
                    }
                }
        )
        return (store, f, Array(results.dropFirst()), before)
    }

    @Test func aFailedStatementUndoesOnlyItsOwnWorkInTheBatch() throws {
        let (store, f, results, before) = try Self.queuedWrites(count: 32) { i, c in
            try c.run("INSERT INTO probe (n) VALUES ($1)", [.int64(Int64(i))])
            // A unique violation aborts PostgreSQL's transaction: rolling back to the item's savepoint saves the rest.
            // Half of them fail, so that whatever order they are queued in some fail one after another: the
            // savepoint a failed write rolled back to serves the next one.
            if i % 4 < 2 { try c.run("INSERT INTO probe (n) VALUES ($1)", [.int64(Int64(i))]) }
        }
        defer { withExtendedLifetime(f) {} }  // its deinit closes the store
        let after = store.commitStatistics
        #expect(results.filter { if case .failure = $0 { true } else { false } }.count == 16)
        #expect(try store.writer.perform { c in try c.queryOne("SELECT count(*) AS n FROM probe")?.int("n") } == 16)
        #expect(after.items - before.items == 33)
        #expect(after.batches - before.batches < 33)  // several writes per transaction
        // Tried first as one plain transaction, each batch with a failing write was rolled back whole and run again
        // in savepoints.
        #expect(store.writer.rerunInSavepoints > 0)
    }

    /// A batch whose writes all succeed commits as one plain transaction, no savepoint per write (each is a round
    /// trip): none is run again.
    @Test func aBatchThatSucceedsRunsOnceWithoutSavepoints() throws {
        let runs = Atomic<Int>(0)
        let (store, f, results, before) = try Self.queuedWrites(count: 16) { i, c in
            runs.add(1, ordering: .relaxed)
            try c.run("INSERT INTO probe (n) VALUES ($1)", [.int64(Int64(i))])
        }
        defer { withExtendedLifetime(f) {} }
        #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
        #expect(runs.load(ordering: .relaxed) == 16 && store.writer.rerunInSavepoints == 0)
        #expect(store.commitStatistics.batches - before.batches < 17)
        #expect(try store.writer.perform { c in try c.queryOne("SELECT count(*) AS n FROM probe")?.int("n") } == 16)
    }

    /// A write goes to an idle writer where there is one: a writer held by a long batch (a COMMIT waiting for the
    /// disk) never delays the writes that come meanwhile. Taken strictly in turn, one of these eight would have
    /// queued behind it until the watchdog let it go.
    @Test func aWriteNeverWaitsBehindABusyWriterWhileAnotherIsIdle() throws {
        let f = try Fixture(.postgres)
        let store = try #require(f.store as? PostgresStore)
        let release = DispatchSemaphore(value: 0)
        let held = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        let timedOut = Atomic<Bool>(false)
        let group = DispatchGroup()
        Self.run(in: group) {
            _ = try? store.write { _ in
                held.store(true, ordering: .relaxed)
                release.wait()
            }
        }
        eventuallyBlocking("the first writer holding its batch") { held.load(ordering: .relaxed) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) {
            guard !finished.load(ordering: .relaxed) else { return }
            timedOut.store(true, ordering: .relaxed)
            release.signal()
        }
        for i in 0..<8 { try Self.storeEvent(store, "idle-writer-\(i)") }
        finished.store(true, ordering: .relaxed)
        let waited = timedOut.load(ordering: .relaxed)
        #expect(!waited, "a write waited behind the held writer")
        if !waited { release.signal() }
        group.wait()
        #expect(try store.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 100) }.count == 8)
    }

    /// A journal body is compressed by the gateway (zstd, ``StoredBlob``) and PostgreSQL does not compress it again
    /// (`STORAGE EXTERNAL`); a quarantined body, stored as it came, is compressed with LZ4 where the server has it
    /// (Debian's PostgreSQL 15 has): the writer sessions ask for it when they connect.
    @Test func bodiesAreCompressedOnceQuarantinedOnesWithLZ4() throws {
        let f = try Fixture(.postgres)
        let store = try #require(f.store as? PostgresStore)
        // A V2-like body: a few kilobytes of base64 with repeats, past PostgreSQL's 2 kB compression threshold.
        let chunk = Data((0..<1_500).map { UInt8(truncatingIfNeeded: $0 &* 7) }).base64EncodedString()
        var item = Self.item("lz4-body")
        item.body = Array((chunk + "." + chunk + "." + chunk).utf8)
        let journaled = item
        _ = try store.write { tx in try tx.journal(journaled, routing: TestRouting.routing(), now: 1) }
        let quarantined = QuarantineRecord(
            lane: .untrusted,
            receivedAt: 1,
            version: .v2,
            code: "bad_signature",
            message: "",
            body: item.body
        )
        _ = try store.write { tx in
            try tx.quarantine(quarantined, cap: QuarantineCap(rows: 10, bytes: .max, evictsOldest: true))
        }
        let row = try store.writer.perform { c in
            try c.queryOne(
                """
                SELECT pg_column_compression(j.body) AS journal, substring(j.body FROM 1 FOR 4) AS magic,
                       octet_length(j.body) AS bytes, pg_column_compression(q.body) AS quarantine,
                       'lz4' = ANY (enumvals) AS supported
                FROM journal j, quarantine q,
                     (SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression') s
                WHERE j.notification_key = 'lz4-body'
                """
            )
        }
        #expect(row?.isNull("journal") == true)
        #expect(row?.bytes("magic") == Zstd.magic)
        #expect((row?.int64("bytes") ?? .max) < Int64(item.body.count / 4))
        try #require(row?.bool("supported") == true, "this server has no LZ4")
        #expect(row?.string("quarantine") == "lz4")
        #expect(
            try store.read { tx in try tx.journalEntries(id: nil, key: "lz4-body", limit: 1) }.first?.body == item.body
        )
        #expect(try store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 1) }.first?.body == item.body)
    }

    // MARK: The server goes away

    @Test(.enabled(if: TestDatabase.ctl != nil, "IAPGW_TEST_PG_CTL is not set (run under scripts/with-postgres)"))
    func writesFailWhileTheServerIsDownAndResumeWithoutReopening() throws {
        // Stopped, then started: writes fail while it is down. Restarted: they go on. The store is never reopened.
        let f = try Fixture(.postgres)
        let store = f.store
        try Self.storeEvent(store, "before")

        // Writers keep writing throughout; each write that returned is recorded.
        let acknowledged = Mutex<[String]>([])
        let failed = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let writers = DispatchGroup()
        for w in 0..<4 {
            Self.run(in: writers) {
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    let key = "w\(w)-\(n)"
                    n += 1
                    do {
                        _ = try store.write { tx in
                            try tx.journal(Self.item(key), routing: TestRouting.routing(), now: 1)
                        }
                        acknowledged.withLock { $0.append(key) }
                    } catch {
                        failed.add(1, ordering: .relaxed)
                        Thread.sleep(forTimeInterval: 0.005)  // not a tight loop of refused connections
                    }
                }
            }
        }
        eventuallyBlocking("20 writes acknowledged") { acknowledged.withLock { $0.count } >= 20 }

        #expect(try TestDatabase.control("stop") == 0)
        // While it is down every write fails (a 503 for Apple), and reads too.
        eventuallyBlocking("20 writes failing while the server is down") { failed.load(ordering: .relaxed) >= 20 }
        let acknowledgedWhileDown = acknowledged.withLock { $0.count }
        #expect(throws: (any Error).self) { try Self.storeEvent(store, "while-down") }
        #expect(throws: (any Error).self) { try store.read { tx in try tx.counts() } }
        eventuallyBlocking("20 more writes failing") { failed.load(ordering: .relaxed) >= 40 }
        #expect(
            acknowledged.withLock { $0.count } == acknowledgedWhileDown,
            "a write was acknowledged while the server was down"
        )

        #expect(try TestDatabase.control("start") == 0)
        // The same store, not reopened: writes succeed again by themselves.
        eventuallyBlocking("20 writes acknowledged after the server came back") {
            acknowledged.withLock { $0.count } >= acknowledgedWhileDown + 20
        }
        // A restart under load: the batch in flight fails (its session is ended), the next ones go on.
        #expect(try TestDatabase.control("restart") == 0)
        let acknowledgedAfterRestart = acknowledged.withLock { $0.count }
        eventuallyBlocking("20 writes acknowledged after the restart") {
            acknowledged.withLock { $0.count } >= acknowledgedAfterRestart + 20
        }
        stop.store(true, ordering: .relaxed)
        writers.wait()
        try Self.storeEvent(store, "after")

        // Every write that was acknowledged is stored (a failed one may be too: a COMMIT cut off is of unknown outcome).
        let keys = Set(try store.read { tx in try tx.journalEntries(id: nil, key: nil, limit: .max) }.map(\.key))
        let lost = acknowledged.withLock { $0 }.filter { !keys.contains($0) }
        #expect(lost.isEmpty, "acknowledged but not stored: \(lost.prefix(5))")
        #expect(
            try store.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 10) }.map(\.event.id) == [
                "before", "after",
            ]
        )
    }
}
