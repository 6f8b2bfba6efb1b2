import Foundation
import Store
import Synchronization
import TestSupport
import Testing

@testable import ServiceKit

/// A finished job's outcome is committed in the same write as the claim of the job that takes its slot
/// (docs/architecture.md, "Job outcomes ride with the next claim"), and a job still returns only once its outcome is
/// committed — also when the scheduler stops meanwhile, and when another job's outcome cannot be written.
@Suite struct JobSchedulerTests {
    /// A SQLite store that says it is shared by instances (so jobs are claimed in writes, as on PostgreSQL) and counts
    /// the async writes made through it.
    final class CountingStore: GatewayStore {
        let inner: SQLiteStore
        let writes = Atomic<Int>(0)
        init(_ inner: SQLiteStore) { self.inner = inner }
        func write<T: Sendable>(bytes: Int, _ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T
        {
            try inner.write(bytes: bytes, body)
        }
        func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            writes.add(1, ordering: .relaxed)
            return try await inner.write(body)
        }
        func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T { try inner.read(body) }
        func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            try await inner.read(body)
        }
        var isClosing: Bool { inner.isClosing }
        var sharedByInstances: Bool { true }
        func close() { inner.close() }
        var commitStatistics: (batches: Int, items: Int) { inner.commitStatistics }
    }

    /// `total` jobs with ids 1…total in one lane of `limit` slots; a job's outcome appends its id to `settled` in the
    /// outcome's transaction. `gate`, when set, holds every job until it is opened.
    final class Table: JobTable, Sendable {
        struct Job: ScheduledJob {
            let id: Int64
            var lane: String { "" }
        }
        let context: WorkerContext
        let total: Int64
        let slots: Int
        let next = Mutex<Int64>(1)
        let settled = Mutex<[Int64]>([])
        let started = Mutex<[Int64]>([])
        let gate: Gate?
        init(context: WorkerContext, total: Int64, slots: Int, gate: Gate? = nil) {
            (self.context, self.total, self.slots, self.gate) = (context, total, slots, gate)
        }
        var lanes: [String] { [""] }
        func limit(lane: String) -> Int { slots }
        func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: any StoreTransaction) throws -> [Job] {
            next.withLock { n in
                let ids = (n..<min(total + 1, n + Int64(count))).map(Job.init(id:))
                n += Int64(ids.count)
                return ids
            }
        }
        func process(_ job: Job) async {
            started.withLock { $0.append(job.id) }
            await gate?.wait()
            let id = job.id
            await context.recordOutcome { _ in self.settled.withLock { $0.append(id) } }
        }
        func housekeeping() async {}
        var claimedJobs: ClaimedJobs { .fetches }
    }

    /// A one-shot latch jobs wait on.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func wait() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let open = state.withLock { s -> Bool in
                    if !s.open { s.waiters.append(c) }
                    return s.open
                }
                if open { c.resume() }
            }
        }
        func open() {
            for c in state.withLock({ s -> [CheckedContinuation<Void, Never>] in
                s.open = true
                defer { s.waiters = [] }
                return s.waiters
            }) { c.resume() }
        }
    }

    static func context(
        _ store: any GatewayStore,
        metrics: Metrics = Metrics(),
        now: @escaping @Sendable () -> Int64 = { 1_000 },
        leaseMillis: Int64 = 300_000
    ) throws -> WorkerContext {
        WorkerContext(
            store: store,
            metrics: metrics,
            log: Log(now: { 0 }, sink: { _ in }),
            now: now,
            jitter: { 0 },
            leaseMillis: leaseMillis
        )
    }

    static func store() throws -> CountingStore {
        CountingStore(try SQLiteStore(path: try Scratch.directory() + "/gateway.db"))
    }

    @Test func eachOutcomeIsCommittedWithTheNextClaim() async throws {
        let store = try Self.store()
        defer { store.close() }
        let table = Table(context: try Self.context(store), total: 30, slots: 1)
        let scheduler = JobScheduler(context: table.context, idlePollMillis: 3_600_000)
        let run = Task { await scheduler.run(table) }
        await eventually("thirty jobs settled") { table.settled.withLock { $0.count } == 30 }
        scheduler.stop()
        await run.value
        #expect(table.settled.withLock { $0 } == Array(1...30))
        // A claim, then one write per job that settles it and claims the next (the last claims nothing). Settling and
        // claiming apart took 60.
        let writes = store.writes.load(ordering: .relaxed)
        #expect(writes <= 32, "\(writes) writes for 30 jobs")
    }

    @Test func anOutcomeQueuedAsTheSchedulerStopsIsStillCommitted() async throws {
        let store = try Self.store()
        defer { store.close() }
        let gate = Gate()
        let table = Table(context: try Self.context(store), total: 3, slots: 3, gate: gate)
        let scheduler = JobScheduler(context: table.context, idlePollMillis: 3_600_000)
        let run = Task { await scheduler.run(table) }
        await eventually("three jobs started") { table.started.withLock { $0.count } == 3 }
        scheduler.stop()
        // the outcomes come while the loop stops: queued before it closed the batch, or written alone after
        gate.open()
        await run.value  // returns only once every job returned, i.e. its outcome committed
        #expect(table.settled.withLock { $0.sorted() } == [1, 2, 3])
    }

    /// A job that runs longer than its lease has its claim renewed while it runs (here a lease of 30 ms, so every
    /// housekeeping pass — about once a second — renews it): nothing else writes meanwhile, so the writes counted
    /// while it is held are renewals.
    @Test func aRunningJobsLeaseIsRenewedWhileItRuns() async throws {
        let store = try Self.store()
        defer { store.close() }
        let gate = Gate()
        let context = try Self.context(store, now: { Int64(Date().timeIntervalSince1970 * 1000) }, leaseMillis: 30)
        let table = Table(context: context, total: 1, slots: 1, gate: gate)
        let scheduler = JobScheduler(context: context, idlePollMillis: 3_600_000)
        let run = Task { await scheduler.run(table) }
        await eventually("the job started") { table.started.withLock { $0.count } == 1 }
        let claimed = store.writes.load(ordering: .relaxed)
        await eventually("two renewals of the claim") { store.writes.load(ordering: .relaxed) >= claimed + 2 }
        gate.open()
        await eventually("the job settled") { table.settled.withLock { $0.count } == 1 }
        scheduler.stop()
        await run.value
        #expect(store.writes.load(ordering: .relaxed) >= claimed + 3)  // two renewals at least, then the outcome
    }

    /// Two outcomes in one write, one of which cannot be written: the write fails for both, and each is then written
    /// on its own, so the good one is committed and the bad one keeps being retried.
    @Test func anOutcomeThatCannotBeWrittenDoesNotHoldBackAnother() async throws {
        let store = try Self.store()
        defer { store.close() }
        let metrics = Metrics()
        let context = try Self.context(store, metrics: metrics)
        let batch = OutcomeBatch(ring: {})
        struct Refused: Error {}
        let entry = AuthorityEntry(
            bundleID: "com.example.good",
            environment: .production,
            authority: .v2,
            origin: .config
        )
        func committed() throws -> Bool {
            try store.read { tx in try tx.authority(bundleID: entry.bundleID, environment: .production) } == .v2
        }
        let bad = Task {
            await JobSettlement.$current.withValue(JobSettlement(batch: batch, id: 1, lane: "")) {
                await context.recordOutcome { _ in throw Refused() }
            }
        }
        let good = Task {
            await JobSettlement.$current.withValue(JobSettlement(batch: batch, id: 2, lane: "")) {
                await context.recordOutcome { tx in _ = try tx.seedAuthority([entry], now: 1) }
            }
        }
        var entries: [OutcomeBatch.Entry] = []
        await eventually("both outcomes queued") {
            entries += batch.take()
            return entries.count == 2
        }
        await #expect(throws: Refused.self) { try await OutcomeBatch.write(entries, store: store, then: { _ in }) }
        await good.value
        #expect(try committed())
        await eventually("three failed outcome writes counted") {
            metrics.counter("iapgw_store_failures_total", ["operation": "job_outcome"]) >= 3
        }
        bad.cancel()
        await bad.value
    }
}
