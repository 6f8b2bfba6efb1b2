public import Dispatch
import Synchronization

/// The one bridge between blocking code and async code (docs/architecture.md, "Blocking and async code"), both ways:
///
/// - ``run(_:)``: async code hands blocking work (a database call, a file copy) to a dispatch thread and awaits it,
///   so the work never holds a thread of Swift's cooperative pool, which has only about one per core;
///   ``run(on:_:)`` does the same on a queue the caller owns (a curl transfer on its handle's serial queue).
/// - ``wait(for:)``: synchronous code on a thread of its own — an HTTP handler thread of ``OSThread`` — starts async
///   work and blocks that thread until it is done. Never from async code: the work itself needs the cooperative pool.
///
/// Neither cancels anything: work once started runs to its end, whatever becomes of the task that asked for it.
public enum Blocking {
    /// Runs `work` on a thread of libdispatch's global queue and returns (or throws) what it returned (or threw); the
    /// calling task is suspended meanwhile, holding no thread.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(on: .global()) { Result { try work() } }.get()
    }

    /// Runs `work`, which cannot fail, on `queue` and returns what it returned; the calling task is suspended
    /// meanwhile, holding no thread.
    public static func run<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// Runs `work` in a new unstructured task and blocks the calling thread until it returns its value. For a thread
    /// that is not the cooperative pool's (an HTTP handler thread); unavailable from async code, which awaits instead.
    @available(*, noasync, message: "await the work instead: blocking a thread of the cooperative pool can deadlock it")
    public static func wait<T: Sendable>(for work: @escaping @Sendable () async -> T) -> T {
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
