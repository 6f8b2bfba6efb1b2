import Dispatch
internal import Postgres
import Synchronization
internal import Threads

/// The store on PostgreSQL, for several gateway instances behind a load balancer: a few writer threads, each with its
/// own session and group commit (``JournalWriter``, as the SQLite store; a journal write is a string of round trips,
/// so one session alone is bound by their latency, not by the server), a pool of sessions for reads, the migrations
/// applied at open under an advisory lock, and background jobs claimed with a lease (docs/architecture.md,
/// "PostgreSQL store").
///
/// A write returns once its batch's COMMIT succeeded, so what the gateway answers 200 for is committed (durable as
/// the server's `synchronous_commit` makes it: `off` is raised to `on` for the writer's transactions). When the
/// server goes away, every write of the batch in flight fails and the writer reconnects for the next batch; the
/// store needs no reopening once the server is back.
public final class PostgresStore: GatewayStore {
    public struct Options: Sendable {
        /// Sessions for reads (the writers have their own).
        public var poolSize = 4
        /// Writer sessions, each committing its own batches; a write goes to an idle one first (``nextWriter``).
        /// Writers of one instance meet each other exactly as two instances' writers do (a key being written elsewhere
        /// waits for the next batch). Two: with writes sent to an idle writer first and job outcomes riding with
        /// claims, four sessions gave no more throughput than two and twice the median latency at 500/s on a 2-core
        /// machine shared with the server (`bench ingest`, docs/architecture.md); one session is bound by its round
        /// trips.
        public var writers = 2
        /// How long a read waits for a free session.
        public var borrowTimeout: Duration = .seconds(10)
        /// Most writes per transaction.
        public var maxBatch = 256
        /// Most body bytes per transaction (a batch always takes at least one write).
        public var maxBatchBytes = 8 * 1_048_576
        /// Names the sessions in errors ("store writer", "store 1", …).
        public var label = "store"
        public init() {}
    }

    let readers: PostgresPool
    let writerSessions: [PostgresPool]
    let writers: [JournalWriter<PostgresPool>]
    private let turn = Atomic<Int>(0)
    /// The preset dictionaries of the compressed values (``StoredBlob``), shared by the writers and the readers.
    let dictionaries: BlobDictionaries
    /// Commits the writers' new dictionary rows (``PostgresDictionaryTable``).
    let inserter: PostgresDictionaryInserter
    /// The sessions of ``writeStatement(_:)``, connected on first use (an instance that never calls Apple's API opens
    /// none); nil again once closed.
    private let statementSessions: Mutex<(pool: PostgresPool?, closed: Bool)> = Mutex((nil, false))
    private let url: String
    private let label: String

    /// Bodies (journal, quarantine) compressed with LZ4 rather than PostgreSQL's default pglz where the server has it
    /// (built with lz4, version 14 or later): a V2 body is several kilobytes of base64 that pglz compresses at a CPU
    /// cost the journal write pays (`bench ingest --store postgres`: about 15 % more notifications per second with
    /// LZ4). Other servers keep their default; nothing is refused.
    static let writerSessionSetup = """
        SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings
        WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)
        """

    /// The reader sessions only read: a statement that writes on one fails (`25006`), in a transaction (``read(_:)``)
    /// or without one (``readStatement(_:)``).
    static let readerSessionSetup = "SELECT set_config('default_transaction_read_only', 'on', false)"

    /// The first writer (the only one with `writers: 1`, as tests of the writer's internals open it).
    var writer: JournalWriter<PostgresPool> { writers[0] }

    /// The writer a new write waits least behind: the first idle one from the next in turn, else the one with the
    /// shortest backlog. Taken in turn alone, a write could queue behind one writer's batch — a COMMIT waiting for the
    /// disk — while another writer sat idle: that wait was the tail of the journal's latency
    /// (docs/architecture.md, "PostgreSQL store").
    var nextWriter: JournalWriter<PostgresPool> {
        let count = writers.count
        let start = Int(UInt(bitPattern: turn.wrappingAdd(1, ordering: .relaxed).oldValue) % UInt(count))
        var best = writers[start]
        var bestBacklog = best.backlog
        var i = 1
        while bestBacklog > 0 && i < count {
            let w = writers[(start + i) % count]
            let backlog = w.backlog
            if backlog < bestBacklog { (best, bestBacklog) = (w, backlog) }
            i += 1
        }
        return best
    }

    /// Connects with `url` — a libpq connection string or URI, passed to libpq untouched (TLS, `connect_timeout`,
    /// `options=-csearch_path=…` and the `PG*` variables work as in `psql`; it never appears in an error) — and applies
    /// the migrations not applied yet. Throws when the server cannot be reached or the schema is newer than this
    /// gateway's.
    public init(url: String, options: Options = .init()) throws {
        (self.url, self.label) = (url, options.label)
        var writerPools: [PostgresPool] = []
        for i in 0..<max(1, options.writers) {
            var writerOptions = PostgresPool.Options()
            writerOptions.size = 1
            writerOptions.label = options.label + " writer \(i + 1)"
            writerOptions.sessionSetup = Self.writerSessionSetup
            writerPools.append(try PostgresPool(url, options: writerOptions))
        }
        writerSessions = writerPools
        inserter = PostgresDictionaryInserter(url: url, label: options.label + " dictionaries")
        let dictionaries = BlobDictionaries()
        self.dictionaries = dictionaries
        try writerPools[0].withConnection { c in try PostgresSchema.migrate(c, dictionaries: dictionaries) }
        var readerOptions = PostgresPool.Options()
        readerOptions.size = max(1, options.poolSize)
        readerOptions.borrowTimeout = options.borrowTimeout
        readerOptions.label = options.label
        readerOptions.sessionSetup = Self.readerSessionSetup
        readers = try PostgresPool(url, options: readerOptions)
        writers = writerPools.map {
            JournalWriter(db: $0, maxBatch: options.maxBatch, maxBatchBytes: options.maxBatchBytes)
        }
    }

    public func write<T: Sendable>(
        bytes: Int,
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) throws -> T {
        let (dictionaries, inserter) = (self.dictionaries, self.inserter)
        return try nextWriter.perform(bytes: bytes) { c in
            try body(
                PostgresTransaction(PostgresStoreConnection(raw: c, dictionaries: dictionaries, inserter: inserter))
            )
        }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let (dictionaries, inserter) = (self.dictionaries, self.inserter)
        return try await nextWriter.performAsync { c in
            try body(
                PostgresTransaction(PostgresStoreConnection(raw: c, dictionaries: dictionaries, inserter: inserter))
            )
        }
    }

    /// A reader session's transaction view: it never adds a dictionary (it writes nothing).
    private func reading(_ c: PostgresConnection) -> PostgresTransaction {
        PostgresTransaction(PostgresStoreConnection(raw: c, dictionaries: dictionaries, inserter: nil))
    }

    /// On a reader session, without a transaction around it: one round trip instead of three.
    public func readStatement<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        try await Blocking.run { try self.readers.withConnection { c in try body(self.reading(c)) } }
    }

    /// Small coordination writes — the shared App Store Server API budget's leases — as one statement each on sessions
    /// of their own, never behind a batch of the journal nor holding a row lock while one commits. Their commits do
    /// not wait for the disk (`synchronous_commit` off): a server crash may forget the last fraction of a second of
    /// leases, which the budget's margin covers (docs/operations.md, "Apple's rate limits").
    public func writeStatement<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        let (dictionaries, inserter) = (self.dictionaries, self.inserter)
        return try await Blocking.run {
            try self.statementPool().withConnection { c in
                try body(
                    PostgresTransaction(
                        PostgresStoreConnection(raw: c, dictionaries: dictionaries, inserter: inserter)
                    )
                )
            }
        }
    }

    /// Connects the pool first (a blocking connect, on the caller's blocking thread).
    private func statementPool() throws -> PostgresPool {
        try statementSessions.withLock { s in
            if let pool = s.pool { return pool }
            guard !s.closed else { throw StoreFailure(description: "the store is closed") }
            var options = PostgresPool.Options()
            options.size = 2
            options.borrowTimeout = .seconds(2)
            options.label = label + " statements"
            options.sessionSetup = Self.statementSessionSetup
            let pool = try PostgresPool(url, options: options)
            s.pool = pool
            return pool
        }
    }

    /// ``writeStatement(_:)``'s sessions: commits that do not wait for the disk, and a statement that waits on the
    /// server (a row lock held by a stuck session) fails after 2 s rather than holding its caller — the budget's calls
    /// wait on it. Connecting is bounded by the connection string's `connect_timeout`.
    static let statementSessionSetup =
        "SELECT set_config('synchronous_commit', 'off', false), set_config('statement_timeout', '2s', false)"

    /// A REPEATABLE READ transaction on a reader session: one snapshot for the whole body, and writes in it fail
    /// (`25006`: the session's transactions are read-only, ``readerSessionSetup``).
    public func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try readers.transaction(isolation: .repeatableRead) { c in try body(reading(c)) }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await Blocking.run { try self.read(body) }
    }

    public var isClosing: Bool { writers[0].isStopping }

    /// Every instance of the gateway may use the database at once: background jobs are claimed with a lease.
    public var sharedByInstances: Bool { true }

    public func close() {
        for w in writers { w.stop() }
        for session in writerSessions { session.close() }
        readers.close()
        statementSessions.withLock { s in
            s.pool?.close()
            (s.pool, s.closed) = (nil, true)
        }
    }

    /// (transactions committed, work items committed) since open: how well group commit batches.
    public var commitStatistics: (batches: Int, items: Int) {
        writers.reduce((0, 0)) { sum, w in (sum.0 + w.statistics.batches, sum.1 + w.statistics.items) }
    }

    /// Rewrites `table` into new files (`VACUUM FULL`): the old row versions an update leaves behind, and the space
    /// of rows deleted earlier, go with the old files. The quarantine is bounded in bytes, so this is quick; the
    /// delivery log is rewritten only when its one-time scrub changed a head, under an exclusive lock, before the
    /// workers start. PostgreSQL's own write-ahead log and backups keep what they recorded until they are recycled
    /// (docs/operations.md, "Backups").
    public func eraseFreedSpace(of table: ScrubbedTable) throws {
        try writerSessions[0].withConnection { c in try c.execute("VACUUM FULL \(table.rawValue)") }
    }
}

/// The writer's session: one pool slot, so that a session the server closed (a restart, a failover) is reconnected
/// before the next batch (``PostgresPool/withConnection(_:)``). While the server cannot be reached, each batch fails
/// at once with a connection error.
extension PostgresPool: GroupCommitDatabase {
    /// One READ COMMITTED transaction: each statement sees what other instances committed before it, which the
    /// journal's duplicate check relies on. A COMMIT whose connection broke throws: the batch's writes are then
    /// reported failed, though the server may have committed them (Apple's retry is answered as a duplicate).
    func commitBatch(opening: String?, _ body: (PostgresConnection) throws -> Void) throws {
        // A 200 means committed to disk: never acknowledge on a server configured with synchronous_commit = off. One
        // round trip with the BEGIN.
        let durable =
            "SELECT set_config('synchronous_commit', 'on', true) WHERE current_setting('synchronous_commit') = 'off'"
        try transaction(isolation: .readCommitted, opening: opening.map { durable + "; " + $0 } ?? durable, body)
    }

    /// A write that met another instance's batch: a key that batch is writing (``PostgresTransaction/busyCode``,
    /// thrown rather than waiting in the middle of a batch), or a deadlock PostgreSQL broke by failing one statement
    /// (`40P01`). The writer rolls the write back to its savepoint — which lets the other batch go on — and runs it
    /// again at the head of its next batch, after this one committed.
    func isTransient(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.isSerializationFailure || error.code == PostgresTransaction.busyCode
    }
}

extension PostgresConnection: SavepointConnection {}
