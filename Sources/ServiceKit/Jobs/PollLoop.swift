import Synchronization

/// The scheduler's loop: fetch due jobs, run each in a child task, refresh gauges once a second, look again at once
/// when ``wake()`` is called (a finished job freed a slot), else after 5 ms while work is in flight and after the idle
/// poll interval otherwise; on ``stop()`` it stops fetching, runs `stopped`, and waits for the jobs in flight.
package final class PollLoop: Sendable {
    private let stopping = Mutex(false)
    private let doorbell = Doorbell()
    package let idlePollMillis: Int64

    package init(idlePollMillis: Int64) { self.idlePollMillis = idlePollMillis }

    package func stop() {
        stopping.withLock { $0 = true }
        doorbell.ring()
    }

    /// Ends the loop's current wait (or the next one): it fetches again at once.
    package func wake() { doorbell.ring() }

    package func run<Job: Sendable>(
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
package final class Doorbell: Sendable {
    package init() {}

    private struct State {
        var rung = false
        var sleeper: CheckedContinuation<Void, Never>?
        var timer: Task<Void, Never>?
        var generation = 0
    }

    private let state = Mutex(State())

    package func ring() {
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
    package func sleep(for duration: Duration) async {
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
