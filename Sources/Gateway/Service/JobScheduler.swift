internal import Canonical
internal import HTTPClient
public import Store
import Synchronization

/// What every background worker is built on: the store, who receives what, metrics and log, and the injected clock
/// and jitter.
public struct WorkerContext: Sendable {
    public let store: any GatewayStore
    public let router: Router
    public let metrics: Metrics
    public let log: Log
    public let now: @Sendable () -> Int64
    public let jitter: @Sendable () -> Double
    /// This instance's name in job claims (see ``Lease``).
    public let instance: String
    /// How long a claimed job stays this instance's before another may take it over: longer than any job runs.
    public let leaseMillis: Int64

    public init(
        store: any GatewayStore,
        router: Router,
        metrics: Metrics,
        log: Log,
        now: @escaping @Sendable () -> Int64,
        jitter: @escaping @Sendable () -> Double,
        instance: String = "local",
        leaseMillis: Int64 = 300_000
    ) {
        (self.store, self.router, self.metrics, self.log, self.now, self.jitter) = (
            store, router, metrics, log, now, jitter
        )
        (self.instance, self.leaseMillis) = (instance, leaseMillis)
    }

    /// Runs `body` on a read transaction, on a dispatch thread, never on Swift's cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.read(body)
    }

    /// Sets the gauge `metric` to the number of pending jobs `count` reads.
    func gaugePending(
        as metric: Metric,
        _ count: @escaping @Sendable (any StoreTransaction) throws -> Int
    ) async {
        if let pending = try? await read(count) {
            metrics.set(metric, [:], Double(pending))
        }
    }
}

/// A worker built on a ``WorkerContext``: its parts read as the worker's own.
protocol ContextualWorker {
    var context: WorkerContext { get }
}

extension ContextualWorker {
    var store: any GatewayStore { context.store }
    var router: Router { context.router }
    var metrics: Metrics { context.metrics }
    var log: Log { context.log }
    var now: @Sendable () -> Int64 { context.now }
    var jitter: @Sendable () -> Double { context.jitter }
}

/// One kind of background job kept in a table (the outbox, `receipt_jobs`, `compare_jobs`): which jobs are due, how
/// many may run at once, and how one runs. ``JobScheduler`` does the rest — polling, claiming, running, stopping.
protocol JobTable: Sendable {
    associatedtype Job: ScheduledJob
    /// The lanes jobs run in; each has its own concurrency limit.
    var lanes: [String] { get }
    /// How many jobs of `lane` may run at once.
    func limit(lane: String) -> Int
    /// At most `count` due jobs of `lane`, in the order they should start, claimed for `lease` where the store is
    /// shared by instances; runs on a blocking thread, in a write transaction then (a read transaction otherwise).
    func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: any StoreTransaction) throws -> [Job]
    /// Runs one job; returns once its outcome is committed.
    func process(_ job: Job) async
    /// Gauges and alerts, about once a second while running.
    func housekeeping() async
    /// The table its jobs are claimed in, for renewing the leases of those still running.
    var claimedJobs: ClaimedJobs { get }
}

/// A job a ``JobScheduler`` runs: its row id, and the lane its concurrency limit counts in (a downstream, say).
protocol ScheduledJob: Sendable {
    var id: Int64 { get }
    var lane: String { get }
}

/// Polls a ``JobTable`` and runs its due jobs in child tasks, never one job twice at once, within each lane's limit.
final class JobScheduler: Sendable {
    private let context: WorkerContext
    private let loop: PollLoop
    private let inFlight = InFlightSet()
    /// When the running jobs' leases were last renewed (``renewLeases(_:)``).
    private let lastRenewal = Mutex<Int64?>(nil)

    init(context: WorkerContext, idlePollMillis: Int64) {
        self.context = context
        self.loop = PollLoop(idlePollMillis: idlePollMillis)
    }

    /// Runs until ``stop()``; returns after the jobs in flight finished.
    func run<Table: JobTable>(_ table: Table) async {
        let outcomes = OutcomeBatch(ring: { [loop] in loop.wake() })
        await loop.run(
            fetch: { (try? await self.due(table, settling: outcomes.take())) ?? [] },
            work: { job in
                let settlement = JobSettlement(batch: outcomes, id: job.id, lane: job.lane)
                await JobSettlement.$current.withValue(settlement) { await table.process(job) }
                self.inFlight.finish(job.id)
                // A free slot: look for the next job now — unless the outcome's write claimed it already.
                if !settlement.joinedClaim { self.loop.wake() }
            },
            inFlight: { !self.inFlight.isEmpty },
            everySecond: {
                await self.renewLeases(table)
                await table.housekeeping()
            },
            stopped: { await self.flush(outcomes.close()) }
        )
    }

    /// Outcomes queued when the loop stopped: committed on their own, their jobs still waiting for them.
    private func flush(_ entries: [OutcomeBatch.Entry]) async {
        guard !entries.isEmpty, (try? await OutcomeBatch.write(entries, store: context.store, then: { _ in })) != nil
        else { return }
        for entry in entries { entry.done.resume(returning: true) }
    }

    func stop() { loop.stop() }

    /// Where jobs are claimed in the store, the leases of the jobs this instance is still running are extended every
    /// third of a lease: a job that runs longer than its lease (a reconciliation run through a large app, a downstream
    /// given a long timeout) is never taken over by another instance while it still runs. A failed renewal is tried
    /// again at the next; what it protects against needs the lease to run out first.
    func renewLeases<Table: JobTable>(_ table: Table) async {
        guard context.store.sharedByInstances else { return }
        let time = context.now()
        let interval = max(1, context.leaseMillis / 3)
        let due = lastRenewal.withLock { last -> Bool in
            guard let previous = last else {
                last = time  // the first look: jobs claimed from now on hold a full lease
                return false
            }
            guard time - previous >= interval else { return false }
            last = time
            return true
        }
        let ids = due ? inFlight.claim { Array($0.flying.keys) } : []
        guard !ids.isEmpty else { return }
        let lease = Lease(owner: context.instance, until: time.clampedAdding(context.leaseMillis))
        let jobs = table.claimedJobs
        _ = try? await context.store.write { tx in try tx.renewClaims(jobs, ids: ids, lease: lease) }
    }

    /// The due jobs not in flight, claimed, within their lanes' limits. A lane with no free slot is not read at all,
    /// and a lane is read for its free slots only, the jobs in flight left out (``Lease/running``): a poll while
    /// jobs run never claims them again (on PostgreSQL every claimed row is updated, every 5 ms while busy).
    ///
    /// The outcomes of finished jobs (`settling`) are written first in the same transaction, and their slots count as
    /// free: one commit settles a job and claims the next. Each outcome's job is resumed once that write committed, or
    /// with its error (its job then writes the outcome on its own, ``WorkerContext/recordOutcome(_:)``).
    func due<Table: JobTable>(_ table: Table, settling: [OutcomeBatch.Entry] = []) async throws -> [Table.Job] {
        let time = context.now()
        inFlight.beginRead()
        let (wanted, running) = inFlight.claim { claims in
            let wanted = table.lanes.compactMap { lane -> (lane: String, free: Int)? in
                let settled = settling.reduce(0) { $0 + ($1.lane == lane && claims.isFlying($1.id) ? 1 : 0) }
                let free = table.limit(lane: lane) - claims.count(lane: lane) + settled
                return free > 0 ? (lane, free) : nil
            }
            return (wanted, claims.running)
        }
        guard !wanted.isEmpty || !settling.isEmpty else { return [] }
        let lease = Lease(owner: context.instance, until: time.clampedAdding(context.leaseMillis), running: running)
        let claim: @Sendable (any StoreTransaction) throws -> [Table.Job] = { c in
            try wanted.flatMap { try table.due(at: time, lane: $0.lane, count: $0.free, lease: lease, in: c) }
        }
        // Several instances: the jobs are claimed in the store, so that each runs on one of them. With outcomes to
        // write, one store alone reads its due jobs in that write.
        let candidates: [Table.Job]
        if !settling.isEmpty {
            candidates = try await OutcomeBatch.write(settling, store: context.store, then: claim)
        } else {
            candidates =
                context.store.sharedByInstances ? try await context.store.write(claim) : try await context.read(claim)
        }
        defer { for entry in settling { entry.done.resume(returning: true) } }
        return inFlight.claim { claims in
            for entry in settling { claims.finish(entry.id) }
            return candidates.filter { job in
                guard !claims.isBusy(job.id), claims.count(lane: job.lane) < table.limit(lane: job.lane) else {
                    return false
                }
                claims.claim(job.id, lane: job.lane)
                return true
            }
        }
    }
}

/// The scheduler's loop: fetch due jobs, run each in a child task, refresh gauges once a second, look again at once
/// when ``wake()`` is called (a finished job freed a slot), else after 5 ms while work is in flight and after the idle
/// poll interval otherwise; on ``stop()`` it stops fetching, runs `stopped`, and waits for the jobs in flight.
final class PollLoop: Sendable {
    private let stopping = Mutex(false)
    private let doorbell = Doorbell()
    let idlePollMillis: Int64

    init(idlePollMillis: Int64) { self.idlePollMillis = idlePollMillis }

    func stop() {
        stopping.withLock { $0 = true }
        doorbell.ring()
    }

    /// Ends the loop's current wait (or the next one): it fetches again at once.
    func wake() { doorbell.ring() }

    func run<Job: Sendable>(
        fetch: @escaping @Sendable () async -> [Job],
        work: @escaping @Sendable (Job) async -> Void,
        inFlight: @escaping @Sendable () -> Bool,
        everySecond: @escaping @Sendable () async -> Void,
        stopped: @escaping @Sendable () async -> Void = {}
    ) async {
        // A discarding group: a plain task group keeps every finished child until its result is collected, so a
        // loop that never collects grew by every job it ever ran (~5 KB per notification under load).
        await withDiscardingTaskGroup { group in
            var refreshed = ContinuousClock.now - .seconds(10)
            while !stopping.withLock({ $0 }) {
                let jobs = await fetch()
                for job in jobs { group.addTask { await work(job) } }
                if ContinuousClock.now - refreshed >= .seconds(1) {
                    await everySecond()
                    refreshed = ContinuousClock.now
                }
                let busy = !jobs.isEmpty || inFlight()
                await doorbell.sleep(for: .milliseconds(busy ? 5 : idlePollMillis))
            }
            await stopped()
        }  // waits for the jobs in flight
    }
}

/// A sleep that ``ring()`` ends early. A ring while nobody sleeps ends the next sleep at once, so that none is lost
/// between a check and the wait that follows it.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var sleeper: CheckedContinuation<Void, Never>?
        var timer: Task<Void, Never>?
        var generation = 0
    }

    private let state = Mutex(State())

    func ring() {
        let (sleeper, timer) = state.withLock { s -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?) in
            guard let sleeper = s.sleeper else {
                s.rung = true
                return (nil, nil)
            }
            defer { (s.sleeper, s.timer) = (nil, nil) }
            return (sleeper, s.timer)
        }
        timer?.cancel()
        sleeper?.resume()
    }

    /// Returns after `duration`, or sooner when rung.
    func sleep(for duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { s in
                if s.rung {
                    s.rung = false
                    continuation.resume()
                    return
                }
                s.generation += 1
                let generation = s.generation
                s.sleeper = continuation
                s.timer = Task { [self] in
                    try? await Task.sleep(for: duration)
                    timeUp(generation)
                }
            }
        }
    }

    private func timeUp(_ generation: Int) {
        let sleeper = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard s.generation == generation, let sleeper = s.sleeper else { return nil }
            (s.sleeper, s.timer) = (nil, nil)
            return sleeper
        }
        sleeper?.resume()
    }
}

/// The ids a worker is working on, by lane. A poll reads its table without holding this lock, so a job that
/// finishes — commits its outcome, then leaves the set — while that read is under way can still look due in the rows
/// it returns. Ids finished since the current read began therefore stay busy for that one poll: no job is ever
/// started twice.
final class InFlightSet: Sendable {
    struct Claims {
        fileprivate(set) var flying: [Int64: String] = [:]
        fileprivate var finished: Set<Int64> = []
        func isBusy(_ id: Int64) -> Bool { flying[id] != nil || finished.contains(id) }
        var count: Int { flying.count }
        /// The jobs in flight and those finished since the read began: none is due to this poll.
        var running: [Int64] { Array(flying.keys) + finished }
        func count(lane: String) -> Int { flying.values.reduce(0) { $0 + ($1 == lane ? 1 : 0) } }
        func isFlying(_ id: Int64) -> Bool { flying[id] != nil }
        mutating func claim(_ id: Int64, lane: String = "") { flying[id] = lane }
        /// The job's outcome is committed: its slot is free, and it is not due to the poll under way.
        mutating func finish(_ id: Int64) {
            if flying.removeValue(forKey: id) != nil { finished.insert(id) }
        }
    }

    private let state = Mutex(Claims())

    /// Call right before reading due rows.
    func beginRead() { state.withLock { $0.finished.removeAll(keepingCapacity: true) } }
    /// Picks jobs from rows read since ``beginRead()``.
    func claim<T>(_ body: (inout Claims) -> T) -> T { state.withLock { body(&$0) } }
    /// Call once the job's outcome is committed.
    func finish(_ id: Int64) { state.withLock { $0.finish(id) } }
    var isEmpty: Bool { state.withLock { $0.flying.isEmpty } }
}

extension RetryPolicy {
    /// The state a job settles in: `pending` (to be tried again) becomes `failed` once `attempts` reach `maxAttempts`.
    func jobState(_ wanted: JobState, attempts: Int) -> JobState {
        wanted == .pending && !allowsRetry(afterAttempt: attempts) ? .failed : wanted
    }
}
