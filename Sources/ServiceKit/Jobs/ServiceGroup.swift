import Synchronization

/// A loop the service runs in the background for as long as it runs (the listeners, the workers, retention, the
/// hourly read of App Store Connect): started, asked to stop and awaited by one ``ServiceGroup``
/// (docs/architecture.md, "The service").
package protocol BackgroundService: Sendable {
    /// Runs until ``stop()`` or until its task is cancelled; returns once its work in flight has finished.
    func run() async
    /// Asks ``run()`` to return: it stops taking new work and finishes what it holds. A loop that only sleeps between
    /// rounds needs none: the cancellation of its task ends the sleep.
    func stop()
}

extension BackgroundService {
    package func stop() {}
}

/// The service's background loops, in one place, in phases: each loop started in a task of its own, and at shutdown
/// phase after phase, each loop of a phase asked to stop, then its task cancelled and awaited — so that what feeds a
/// phase (the listeners feeding the receipt path and the workers) has stopped before that phase stops.
package final class ServiceGroup: Sendable {
    private let phases: [[any BackgroundService]]
    private let tasks = Mutex<[[Task<Void, Never>]]>([])

    package init(phases: [[any BackgroundService]]) { self.phases = phases }

    package convenience init(_ services: [any BackgroundService]) { self.init(phases: [services]) }

    /// Starts every loop. Call once.
    package func start() {
        tasks.withLock { tasks in
            tasks = phases.map { phase in phase.map { service in Task.detached { await service.run() } } }
        }
    }

    /// Phase after phase: asks each loop to stop, then cancels each one's task and waits for it to end.
    package func stop() async {
        let running = tasks.withLock { tasks in
            defer { tasks.removeAll() }
            return tasks
        }
        for (phase, services) in phases.enumerated() {
            for service in services { service.stop() }
            guard phase < running.count else { continue }
            for task in running[phase] {
                task.cancel()
                await task.value
            }
        }
    }
}

/// Work the service does at its place in the shutdown order and nothing before: its ``run()`` waits for ``stop()``
/// (or its task's cancellation), then awaits `finish` (the receipt path's fetches ended, its shadow comparisons
/// waited for).
package final class ShutdownStep: BackgroundService {
    private let finish: @Sendable () async -> Void
    private let stopping = Latch()

    package init(_ finish: @escaping @Sendable () async -> Void) { self.finish = finish }

    package func run() async {
        await withTaskCancellationHandler {
            await stopping.wait()
        } onCancel: {
            stopping.open()
        }
        await finish()
    }

    package func stop() { stopping.open() }
}
