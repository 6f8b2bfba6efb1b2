import Synchronization

/// The loop the background workers (delivery, verifyReceipt) run: fetch due jobs, run each in a child task, refresh
/// gauges once a second, look again after 5 ms while work is in flight (a finished job frees a slot) and after
/// the idle poll interval otherwise; on ``stop()`` it stops fetching and waits for the jobs in flight.
final class PollLoop: Sendable {
    private let stopping = Mutex(false)
    let idlePollMillis: Int64

    init(idlePollMillis: Int64) { self.idlePollMillis = idlePollMillis }

    func stop() { stopping.withLock { $0 = true } }

    func run<Job: Sendable>(
        fetch: @escaping @Sendable () async -> [Job], work: @escaping @Sendable (Job) async -> Void,
        inFlight: @escaping @Sendable () -> Bool, everySecond: @escaping @Sendable () async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            var refreshed = ContinuousClock.now - .seconds(10)
            while !stopping.withLock({ $0 }) {
                let jobs = await fetch()
                for job in jobs { group.addTask { await work(job) } }
                if ContinuousClock.now - refreshed >= .seconds(1) {
                    await everySecond()
                    refreshed = ContinuousClock.now
                }
                let busy = !jobs.isEmpty || inFlight()
                try? await Task.sleep(for: .milliseconds(busy ? 5 : idlePollMillis))
            }
            await group.waitForAll()
        }
    }
}

/// The ids a worker is working on. A poll reads its table without holding this lock, so a job that finishes —
/// commits its outcome, then leaves the set — while that read is under way can still look due in the rows it
/// returns. Ids finished since the current read began therefore stay busy for that one poll: no job is ever
/// started twice.
final class InFlightSet: Sendable {
    struct Claims {
        fileprivate(set) var flying: Set<Int64> = []
        fileprivate var finished: Set<Int64> = []
        func isBusy(_ id: Int64) -> Bool { flying.contains(id) || finished.contains(id) }
        var count: Int { flying.count }
        mutating func claim(_ id: Int64) { flying.insert(id) }
    }

    private let state = Mutex(Claims())

    /// Call right before reading due rows.
    func beginRead() { state.withLock { $0.finished.removeAll(keepingCapacity: true) } }
    /// Picks jobs from rows read since ``beginRead()``.
    func claim<T>(_ body: (inout Claims) -> T) -> T { state.withLock { body(&$0) } }
    /// Call once the job's outcome is committed.
    func finish(_ id: Int64) { state.withLock { _ = $0.flying.remove(id); $0.finished.insert(id) } }
    var isEmpty: Bool { state.withLock { $0.flying.isEmpty } }
}

/// The workers' retry delay: `base · 2^exponent`, capped at `cap`, times a jitter factor in [0.5, 1) so retries of
/// many jobs do not arrive together.
enum Backoff {
    static func delay(base: Int64, cap: Int64, exponent: Int, jitter: Double) -> Int64 {
        let exponential = base << Int64(min(max(exponent, 0), 30))
        return Int64(Double(min(exponential, cap)) * (0.5 + 0.5 * min(max(jitter, 0), 0.999_999)))
    }
}
