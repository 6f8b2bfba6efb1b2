import Dispatch
import Synchronization

/// Async work waited for by a blocking caller on a thread of its own (an HTTP handler thread), never on Swift's
/// cooperative pool, whose threads the work itself needs.
enum BlockingTask {
    static func wait<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        Task {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
