import Synchronization

/// A loop the service runs in the background for as long as it runs (the workers, retention, the hourly read of App
/// Store Connect): started, asked to stop and awaited by one ``ServiceGroup`` (docs/architecture.md, "The service").
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

/// The service's background loops, in one place: each started in a task of its own, and at shutdown each asked to stop,
/// then its task cancelled and awaited, in the order they were given.
package final class ServiceGroup: Sendable {
    private let services: [any BackgroundService]
    private let tasks = Mutex<[Task<Void, Never>]>([])

    package init(_ services: [any BackgroundService]) { self.services = services }

    /// Starts every loop. Call once.
    package func start() {
        tasks.withLock { tasks in
            tasks = services.map { service in Task.detached { await service.run() } }
        }
    }

    /// Asks every loop to stop, then cancels each one's task and waits for it to end.
    package func stop() async {
        for service in services { service.stop() }
        let running = tasks.withLock { tasks in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in running {
            task.cancel()
            await task.value
        }
    }
}
