import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An operating-system thread running a closure: the one place the gateway starts one. Work that blocks — a request
/// handler waiting for the disk, a commit's fsync or round trip — runs on these, off Swift's cooperative pool and off
/// libdispatch's (whose Linux root queue keeps about one thread per core busy, and which deadlocks when every one of
/// its threads waits for work queued behind them).
public struct OSThread: Sendable {
    private let handle: pthread_t

    /// Starts a joinable thread running `body`; nil when the system refuses a thread. `name` (at most 15 bytes are
    /// kept) is what `top -H`, `ps -L` and `perf` show for the thread.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> OSThread? {
        spawn(name: name, body).map(OSThread.init(handle:))
    }

    /// Starts a thread running `body` that nobody joins (it ends when `body` returns); false when the system refuses.
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        guard let handle = spawn(name: name, body) else { return false }
        pthread_detach(handle)
        return true
    }

    /// Waits for the thread's body to return.
    public func join() { pthread_join(handle, nil) }

    /// Whether this is the thread calling (which must not join itself).
    public var isCurrent: Bool { pthread_equal(handle, pthread_self()) != 0 }

    private static func spawn(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t? {
        final class Start: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
            func run() {
                nameCurrentThread(name)
                body()
            }
        }
        let start = Unmanaged.passRetained(Start(name, body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread,
            nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Start>.fromOpaque(raw).takeRetainedValue().run()
                return nil
            },
            start
        )
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            return nil
        }
        return thread
    }
}

/// The names the gateway gives its threads (at most 15 bytes each: what the kernel keeps), which `top -H`, `ps -L`,
/// `perf` and `bench ingest`'s CPU by thread show. libmicrohttpd names its own I/O threads ``http``.
public enum ThreadName {
    /// The HTTP servers' request handlers.
    public static let handler = "iapgw-handler"
    /// A store's writer: its transactions and commits.
    public static let writer = "iapgw-writer"
    /// The HTTP servers' deadline watchdog.
    public static let watchdog = "iapgw-watchdog"
    /// libmicrohttpd's I/O threads, named by libmicrohttpd.
    public static let http = "MHD-worker"
}

/// Names the calling thread, best effort: the kernel keeps 15 bytes (`pthread_setname_np` is not in Swift's Glibc
/// module; its Linux implementation writes this same file).
private func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// One copy of a value per thread stripe, each behind its own lock: for a structure that every request handler
/// reads (a cache, a pool). With dozens of handler threads on a few cores, a thread preempted while holding one
/// shared lock makes every other one queue behind it; striped, a thread takes the lock of its own stripe
/// (always the same for a thread, spread across threads), and handlers seldom meet.
public final class Striped<Value: Sendable>: Sendable {
    private final class Stripe: Sendable {
        let mutex: Mutex<Value>
        init(_ value: sending Value) { mutex = Mutex(value) }
    }
    private let stripes: [Stripe]

    /// `count` stripes (at least one), each starting from `make()`.
    public init(count: Int, _ make: () -> Value) {
        stripes = (0..<max(1, count)).map { _ in Stripe(make()) }
    }

    /// Runs `body` on the calling thread's stripe, under its lock.
    public func withOwn<R>(_ body: (inout sending Value) -> sending R) -> sending R {
        stripes[Self.current(of: stripes.count)].mutex.withLock(body)
    }

    /// Runs `body` on every stripe in turn, each under its lock.
    public func withEach(_ body: (inout sending Value) -> Void) {
        for stripe in stripes { stripe.mutex.withLock { body(&$0) } }
    }

    /// Which of `count` stripes the calling thread uses.
    static func current(of count: Int) -> Int {
        // The thread's descriptor address: distinct per live thread; its low bits carry little.
        let mixed = (UInt64(pthread_self()) >> 12) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed >> 32) % count
    }
}
