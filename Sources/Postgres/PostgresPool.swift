import Dispatch
internal import Synchronization

/// A fixed number of PostgreSQL sessions shared by threads: each ``withConnection(_:)`` borrows one, waiting up to
/// ``Options/borrowTimeout`` when all are lent, and gives it back when the closure returns.
///
/// The pool recovers by itself when the server restarts or the network drops: before lending a session it reads
/// what the server sent meanwhile, and one that turned out closed or broken is reconnected (`PQreset`) first. A
/// borrower whose statement meets the break gets a connection failure (``PostgresError/isConnectionFailure``); the
/// next borrower gets a fresh session (or `08001` while the server is still down). Sessions are opened on first use;
/// ``init(_:options:)`` opens one, so that a wrong address or password fails at once.
///
/// All calls block; run them on threads that may block, never on Swift's cooperative pool. A body must not borrow
/// from the same pool again while it holds a connection (with every connection lent, it would wait for itself).
public final class PostgresPool: Sendable {
    public struct Options: Sendable {
        /// Sessions in the pool (at least 1).
        public var size: Int = 4
        /// How long ``PostgresPool/withConnection(_:)`` waits for a free session before throwing `53300`.
        public var borrowTimeout: Duration = .seconds(10)
        /// Names the sessions in errors: "LABEL 1", "LABEL 2", ….
        public var label: String = "postgres"
        /// Parameterless statements (`SET …`, `SELECT set_config(…)`) run on every session right after it connects or
        /// reconnects: session settings survive a server restart this way. A failure fails the connection.
        public var sessionSetup: String?

        public init() {}
    }

    public let size: Int
    private let borrowTimeout: Duration
    private let label: String
    private let slots: [PoolSlot]
    /// Indices of the slots not lent; `available` counts them.
    private let free: Mutex<[Int]>
    private let available: DispatchSemaphore
    private let closed = Atomic<Bool>(false)

    /// Connects one session (the rest connect on first use). `conninfo` as for ``PostgresConnection/init(_:label:)``.
    public init(_ conninfo: String, options: Options = .init()) throws(PostgresError) {
        let size = max(1, options.size)
        self.size = size
        self.borrowTimeout = options.borrowTimeout
        self.label = options.label
        try PostgresHandle.validate(conninfo, label: options.label)
        slots = (1...size).map {
            PoolSlot(
                PostgresHandle(conninfo: conninfo, label: "\(options.label) \($0)", sessionSetup: options.sessionSetup)
            )
        }
        free = Mutex(Array((0..<size).reversed()))
        available = DispatchSemaphore(value: size)
        try slots[0].borrow { (handle) throws(PostgresError) in try handle.prepareForUse() }
    }

    deinit { close() }

    /// Runs `body` with a session of the pool (made fit first: connected, no transaction open) and returns its
    /// result. Throws `53300` when none became free within the borrow timeout, `08001` when a broken session could
    /// not be reconnected, `08003` after ``close()``, and whatever `body` throws.
    ///
    /// The connection is valid inside `body` only. A transaction the body left open is rolled back, and channels it
    /// listened on are unlistened, when it is given back.
    @discardableResult
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard !closed.load(ordering: .acquiring) else { throw closedError() }
        guard available.wait(timeout: Self.deadline(after: borrowTimeout)) == .success else {
            throw PostgresError(
                code: PostgresError.poolExhaustedCode,
                message: "\(label): no connection of \(size) became free within \(borrowTimeout)"
            )
        }
        defer { available.signal() }
        let index = free.withLock { $0.removeLast() }  // the semaphore guarantees one is there
        defer { free.withLock { $0.append(index) } }
        return try slots[index].borrow { handle in
            try handle.prepareForUse()
            let connection = PostgresConnection(handle: handle, owned: false)
            defer {
                connection.invalidate()
                let state = handle.transactionState
                if state == .inTransaction || state == .failed { _ = try? handle.execute("ROLLBACK") }
                if !handle.channels.isEmpty { _ = try? handle.unlistenAll() }
            }
            return try body(connection)
        }
    }

    /// ``withConnection(_:)`` and ``PostgresConnection/transaction(isolation:opening:_:)`` in one.
    @discardableResult
    public func transaction<T>(
        isolation: PostgresConnection.Isolation = .readCommitted,
        opening: String? = nil,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        try withConnection { connection in try connection.transaction(isolation: isolation, opening: opening, body) }
    }

    /// Closes every session, waiting for those lent to come back; later borrows throw `08003`. Idempotent; also done
    /// by `deinit`.
    public func close() {
        closed.store(true, ordering: .releasing)
        for slot in slots { slot.borrow { $0.close() } }
    }

    private func closedError() -> PostgresError {
        PostgresError(code: PostgresError.connectionClosedCode, message: "\(label): the pool is closed")
    }

    private static func deadline(after duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, seconds >= 0 else { return seconds < 0 ? .now() : .distantFuture }
        let total = nanoseconds.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !total.overflow, total.partialValue < Int64(Int.max) else { return .distantFuture }
        return .now() + .nanoseconds(Int(total.partialValue))
    }
}

/// One ``PostgresHandle`` and the mutex that serialises every use of it.
final class PoolSlot: Sendable {
    private let lock = Mutex<Void>(())
    /// Touched only inside `lock.withLock`, which is what makes sharing this slot between threads safe. The compiler
    /// cannot see that pairing (keeping the handle inside the `Mutex` value makes region checking reject passing it
    /// to the caller's non-Sendable body), hence `nonisolated(unsafe)` on this one property. The handle is never
    /// returned: bodies get a ``PostgresConnection`` that is invalidated when they return.
    nonisolated(unsafe) private let handle: PostgresHandle

    init(_ handle: PostgresHandle) { self.handle = handle }

    /// Runs `body` with the handle, waiting for the lock.
    func borrow<T, E: Error>(_ body: (PostgresHandle) throws(E) -> T) throws(E) -> T {
        var result: Result<T, E>?
        lock.withLock { _ in result = Result { () throws(E) -> T in try body(handle) } }
        return try result!.get()  // withLock runs its closure exactly once
    }
}
