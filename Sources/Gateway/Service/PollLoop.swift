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
