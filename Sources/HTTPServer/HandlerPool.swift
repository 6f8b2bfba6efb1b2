import Dispatch
import Glibc
import Synchronization
internal import Threads

/// A fixed set of threads that run request handlers, first come first served, so that a handler blocking on disk
/// holds one of these threads and never one of libmicrohttpd's I/O threads (which each serve many connections).
/// They are plain pthreads: off Swift's cooperative pool, and not libdispatch's, whose Linux root queue keeps only
/// about one thread per core busy.
final class HandlerPool: Sendable {
    private let core: Core
    private let threads: [OSThread]

    /// `count` running threads, or nil if the system refused to create them (any already created are stopped).
    init?(count: Int) {
        let core = Core()
        var threads: [OSThread] = []
        for _ in 0..<count {
            guard let thread = OSThread.start(name: ThreadName.handler, { core.run() }) else {
                core.stop(threads)
                return nil
            }
            threads.append(thread)
        }
        self.core = core
        self.threads = threads
    }

    /// Runs `job` on the next free thread.
    func submit(_ job: @escaping @Sendable () -> Void) { core.submit(job) }

    /// Lets the threads finish the jobs already submitted, then joins them. Call once, after the last `submit`.
    func shutdown() { core.stop(threads) }

    private final class Core: Sendable {
        private struct Queue {
            /// Jobs taken are set to nil at once: a job holds its request (body included) until released, and the
            /// array keeps its front until compacted.
            var jobs: [(@Sendable () -> Void)?] = []
            var head = 0
        }

        private let queue = Mutex(Queue())
        /// One signal per job submitted, plus one per thread at shutdown.
        private let ready = DispatchSemaphore(value: 0)

        func submit(_ job: @escaping @Sendable () -> Void) {
            queue.withLock { $0.jobs.append(job) }
            ready.signal()
        }

        func run() {
            while true {
                ready.wait()
                let job: (@Sendable () -> Void)? = queue.withLock { q in
                    guard q.head < q.jobs.count else { return nil }  // woken for shutdown, nothing left
                    let job = q.jobs[q.head]
                    q.jobs[q.head] = nil
                    q.head += 1
                    if q.head > 64, q.head * 2 > q.jobs.count {
                        q.jobs.removeFirst(q.head)
                        q.head = 0
                    }
                    return job
                }
                guard let job else { return }
                job()
            }
        }

        func stop(_ threads: [OSThread]) {
            for _ in threads { ready.signal() }
            for thread in threads { thread.join() }
        }
    }
}
