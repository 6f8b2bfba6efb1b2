internal import CSQLite
internal import Rows
internal import Synchronization

/// One SQLite database file in WAL mode: a single writer connection and a small pool of read-only connections, each
/// `sqlite3*` opened NOMUTEX and used by one thread at a time behind a `Mutex`.
///
/// All calls block (on the mutex, and on SQLite's busy timeout), so run them on threads that may block, not on
/// Swift's cooperative pool in a hot path. Bodies must not call ``write(_:)`` from inside a ``write(_:)`` body, nor
/// ``close()`` from inside any body: the mutex is not recursive and traps.
public final class SQLiteDatabase: Sendable {
    /// How much `COMMIT` waits for the disk (<https://sqlite.org/pragma.html#pragma_synchronous>).
    public typealias Synchronous = Options.Synchronous

    public struct Options: Sendable {
        /// `OFF` hands writes to the OS without waiting; `NORMAL` (in WAL) may lose the last commits on power
        /// loss; `FULL` syncs the WAL on every commit, so a commit that returned survives a power cut.
        public enum Synchronous: String, Sendable {
            case off = "OFF"
            case normal = "NORMAL"
            case full = "FULL"
        }

        /// How long a connection retries a locked database before failing with `SQLITE_BUSY`.
        public var busyTimeoutMillis: Int32 = 5_000
        /// FULL by default: the gateway acknowledges Apple only after a commit, so a commit must be durable.
        public var synchronous: Synchronous = .full
        /// Read-only connections (WAL lets them read while the writer writes). At least one is opened.
        public var readerCount: Int = 2
        /// What the write-ahead log is truncated to when it is reset after a checkpoint
        /// (`PRAGMA journal_size_limit`): a burst of large writes (a flood of 1 MiB bodies) grows the WAL for a
        /// moment, never for good.
        public var walSizeLimitBytes: Int64 = 4 * 1_048_576
        /// `PRAGMA max_page_count` of the writer, when set: the file cannot grow beyond it (`SQLITE_FULL`). Tests
        /// use it to stand for a full disk.
        public var maxPageCount: Int64?
        /// Injected storage faults, for tests (nil in production).
        public var faults: StorageFaults?
        /// SQL functions registered on every connection (the writer's migrations call them).
        public var functions: [SQLiteFunction] = []

        public init() {}
    }

    /// The file as given to ``init(path:options:)``.
    public let path: String
    private let faults: StorageFaults?
    private let writer: ConnectionSlot
    private let readers: [ConnectionSlot]
    private let nextReader = Atomic<Int>(0)

    /// Opens (creating) the file. `":memory:"` and `""` are not supported: the readers need a shared file.
    ///
    /// A file this creates is readable and writable by its owner only (0600, whatever the umask), and so are the
    /// `-wal` and `-shm` files SQLite makes beside it; an existing file keeps its mode (``SQLiteFiles``).
    ///
    /// Sets `journal_mode=WAL` (and checks that it took), `synchronous`, `busy_timeout` and `foreign_keys=ON`.
    public init(path: String, options: Options = .init()) throws(SQLiteError) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file::memory:") else {
            throw SQLiteError(
                code: SQLiteError.misuseCode,
                message: "open \(path): in-memory databases are not supported (readers need a shared file)"
            )
        }
        self.path = path
        self.faults = options.faults
        // Before SQLite creates it with the umask's mode (0644 under the usual 022): SQLite gives the write-ahead log and
        // shared memory the mode of this file.
        try SQLiteFiles.createOwnerOnly(path)
        let writer = try SQLiteHandle(
            path: path,
            readOnly: false,
            busyTimeoutMillis: options.busyTimeoutMillis,
            label: "writer"
        )
        let mode = try writer.query("PRAGMA journal_mode=WAL", [], limit: 1).first?[0]
        guard mode == .text("wal") else {
            throw SQLiteError(
                code: SQLiteError.errorCode,
                message: "writer: open \(path): PRAGMA journal_mode=WAL answered \(mode.map { "\($0)" } ?? "nothing"); "
                    + "WAL is required"
            )
        }
        try writer.execute(
            "PRAGMA synchronous=\(options.synchronous.rawValue); PRAGMA foreign_keys=ON; "
                + "PRAGMA journal_size_limit=\(max(0, options.walSizeLimitBytes))"
        )
        if let pages = options.maxPageCount { try writer.execute("PRAGMA max_page_count=\(max(1, pages))") }
        for function in options.functions { try writer.register(function) }
        // The writer has made the file (and its -wal and -shm) exist, so read-only connections can open it.
        var readers: [ConnectionSlot] = []
        for number in 1...max(1, options.readerCount) {
            let reader = try SQLiteHandle(
                path: path,
                readOnly: true,
                busyTimeoutMillis: options.busyTimeoutMillis,
                label: "reader \(number)"
            )
            try reader.execute("PRAGMA foreign_keys=ON")
            for function in options.functions { try reader.register(function) }
            readers.append(ConnectionSlot(reader))
        }
        self.writer = ConnectionSlot(writer)
        self.readers = readers
    }

    deinit { close() }

    /// Runs `body` on the writer connection inside `BEGIN IMMEDIATE … COMMIT` and returns its result.
    ///
    /// IMMEDIATE takes the write lock up front, so waiting for another writer (up to the busy timeout) happens at
    /// `BEGIN`, never halfway through the body. If the body throws, or `COMMIT` fails, the transaction is rolled back
    /// and the error rethrown: none of the body's changes stay. The body must not run `BEGIN`, `COMMIT` or `ROLLBACK`
    /// itself (`SAVEPOINT` is fine); a transaction that ended inside the body throws `SQLITE_MISUSE`.
    @discardableResult
    public func write<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if let faults, faults.diskFull {
            throw SQLiteError(code: SQLiteError.fullCode, message: "writer: database or disk is full (injected)")
        }
        return try writer.borrow { handle in
            if handle.inTransaction { try? handle.execute("ROLLBACK") }  // only after a failed ROLLBACK
            try handle.execute("BEGIN IMMEDIATE")
            let connection = SQLiteConnection(handle)
            defer { connection.invalidate() }
            do {
                let value = try body(connection)
                guard handle.inTransaction else {
                    throw SQLiteError(
                        code: SQLiteError.misuseCode,
                        message: "writer: the transaction ended inside the write body (an explicit COMMIT or ROLLBACK, "
                            + "or an error SQLite rolls back for, caught by the body); its changes may be committed"
                    )
                }
                try handle.execute("COMMIT")
                return value
            } catch {
                if handle.inTransaction { try? handle.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// Runs `body` on a read-only connection from the pool (waiting for one when all are busy), in autocommit mode:
    /// each statement sees the latest commit. Use ``readTransaction(_:)`` when several statements must agree.
    /// A transaction the body leaves open is rolled back.
    @discardableResult
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try borrowReader { handle in
            try handle.open()
            if handle.inTransaction { try? handle.execute("ROLLBACK") }
            let connection = SQLiteConnection(handle)
            defer {
                connection.invalidate()
                if handle.inTransaction { try? handle.execute("ROLLBACK") }
            }
            return try body(connection)
        }
    }

    /// As ``read(_:)``, inside `BEGIN … COMMIT`: every statement of the body reads the same snapshot (taken at its
    /// first read), whatever the writer commits meanwhile.
    @discardableResult
    public func readTransaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try borrowReader { handle in
            if handle.inTransaction { try? handle.execute("ROLLBACK") }
            try handle.execute("BEGIN")
            let connection = SQLiteConnection(handle)
            defer {
                connection.invalidate()
                if handle.inTransaction { try? handle.execute("ROLLBACK") }
            }
            let value = try body(connection)
            if handle.inTransaction { try handle.execute("COMMIT") }
            return value
        }
    }

    /// Applies `migrations` in version order, each in its own write transaction together with its row in
    /// `schema_migrations(version INTEGER PRIMARY KEY, applied_at INTEGER)` (unix seconds). Versions already recorded
    /// are skipped, so calling it on every start is the intended use.
    ///
    /// Throws, and applies nothing, when the database records a version above the highest in `migrations` (a newer
    /// gateway wrote it) or when a version is listed twice. A failing migration is rolled back and throws with its
    /// version in the message; the versions before it stay applied.
    public func migrate(_ migrations: [SQLiteMigration]) throws {
        let ordered = migrations.sorted { $0.version < $1.version }
        for (a, b) in zip(ordered, ordered.dropFirst()) where a.version == b.version {
            throw SQLiteError(code: SQLiteError.misuseCode, message: "migrate: version \(a.version) is listed twice")
        }
        let applied: Set<Int> = try write { db in
            try db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, applied_at INTEGER)"
            )
            return try SchemaVersions.applied { try db.query($0) }
        }
        let known = ordered.last?.version ?? 0
        if let newest = applied.max(), newest > known {
            throw SQLiteError(
                code: SQLiteError.errorCode,
                message: "migrate \(path): the database is at schema version \(newest) but this gateway knows versions "
                    + "up to \(known): a newer gateway wrote it; refusing to use it"
            )
        }
        for migration in ordered where !applied.contains(migration.version) {
            let version = SQLiteValue(migration.version)
            do {
                try write { db in
                    // Another process may have applied it since the check above.
                    guard try db.queryOne("SELECT 1 FROM schema_migrations WHERE version = ?", [version]) == nil else {
                        return
                    }
                    try db.execute(migration.sql)
                    try db.run(
                        """
                        INSERT INTO schema_migrations(version, applied_at)
                        VALUES (?, CAST(strftime('%s', 'now') AS INTEGER))
                        """,
                        [version]
                    )
                }
            } catch var error as SQLiteError {
                error.message = "migration \(migration.version): \(error.message)"
                throw error
            }
        }
    }

    /// Copies the whole WAL into the database file and truncates it to zero bytes (`wal_checkpoint(TRUNCATE)`),
    /// waiting for readers up to the busy timeout. For maintenance and tests that measure the file.
    public func checkpointAndTruncate() throws {
        try writer.borrow { handle in try handle.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// Sets the writer's `max_page_count` (see ``Options/maxPageCount``); returns the value in force, which SQLite
    /// never lets drop below the current size. Tests use it to fill and free "the disk".
    @discardableResult
    public func setMaxPageCount(_ pages: Int64) throws -> Int64 {
        try writer.borrow { handle in
            try handle.query("PRAGMA max_page_count=\(max(1, pages))", [], limit: 1).first.flatMap { row in
                if case .integer(let n) = row[0] { return n } else { return nil }
            } ?? 0
        }
    }

    /// Closes the readers, checkpoints the WAL into the database file (PASSIVE: it never waits for other
    /// processes), and closes the writer; waits for bodies running on other threads first. Idempotent; also done
    /// by `deinit`. Later calls throw `SQLITE_MISUSE`.
    public func close() {
        for reader in readers { reader.borrow { $0.close() } }
        writer.borrow { $0.close(checkpoint: true) }
    }

    /// A free reader if there is one (trying them round-robin), else waits for the next one in turn.
    private func borrowReader<T, E: Error>(_ body: (SQLiteHandle) throws(E) -> T) throws(E) -> T {
        let start = UInt(bitPattern: nextReader.wrappingAdd(1, ordering: .relaxed).oldValue)
        let count = UInt(readers.count)
        for offset in 0..<count {
            if let result = readers[Int((start &+ offset) % count)].borrowIfAvailable(body) { return try result.get() }
        }
        return try readers[Int(start % count)].borrow(body)
    }
}

/// Storage faults a test switches on and off while the store is in use: injected, like time and the network, so a
/// full disk can be tested deterministically (every write transaction fails with `SQLITE_FULL` while it is set).
public final class StorageFaults: Sendable {
    private let full = Atomic<Bool>(false)
    public init() {}
    public var diskFull: Bool {
        get { full.load(ordering: .acquiring) }
        set { full.store(newValue, ordering: .releasing) }
    }
}

/// One version of the schema: SQL run by ``SQLiteDatabase/migrate(_:)`` (several statements are fine; no
/// `BEGIN`/`COMMIT`, the migration already runs in a transaction).
public struct SQLiteMigration: Sendable, Hashable {
    public var version: Int
    public var sql: String
    public init(version: Int, sql: String) { (self.version, self.sql) = (version, sql) }
}

/// One ``SQLiteHandle`` and the mutex that serialises every use of it.
final class ConnectionSlot: Sendable {
    private let lock = Mutex<Void>(())
    /// Touched only inside `lock.withLock`, which is what makes sharing this slot between threads safe. The compiler
    /// cannot see that pairing: keeping the handle inside the `Mutex` value instead makes region checking reject
    /// passing it to the caller's non-Sendable body ("'inout sending' parameter cannot be task-isolated"), hence
    /// `nonisolated(unsafe)` on this one property. The handle is never returned: bodies get a ``SQLiteConnection``
    /// that is invalidated when they return.
    nonisolated(unsafe) private let handle: SQLiteHandle

    init(_ handle: SQLiteHandle) { self.handle = handle }

    /// Runs `body` with the handle, waiting for the lock.
    func borrow<T, E: Error>(_ body: (SQLiteHandle) throws(E) -> T) throws(E) -> T {
        var result: Result<T, E>?
        lock.withLock { _ in result = Result { () throws(E) -> T in try body(handle) } }
        return try result!.get()  // withLock runs its closure exactly once
    }

    /// Runs `body` with the handle if the lock is free; nil (without running it) if not.
    func borrowIfAvailable<T, E: Error>(_ body: (SQLiteHandle) throws(E) -> T) -> Result<T, E>? {
        var result: Result<T, E>?
        _ = lock.withLockIfAvailable { _ in result = Result { () throws(E) -> T in try body(handle) } }
        return result
    }
}
