/// The gateway's durable state — journal, events, subscription state, outbox, quarantine, authority, job tables and
/// the comparison ledger — behind one interface. Every change runs in a transaction through ``write(bytes:_:)``;
/// the operations themselves are the ``StoreTransaction`` the closure receives, so what must commit together (a
/// notification and its events, deliveries and jobs) is written in one closure. One implementation per database:
/// ``SQLiteStore`` (the embedded default) and ``PostgresStore`` (several instances on one database). No SQL lives
/// outside them (docs/architecture.md).
public protocol GatewayStore: Sendable {
    /// Runs `body` in a write transaction and returns once it is durable, or throws (the body's error, or the
    /// commit's: nothing of it is then stored). Blocking: for server threads. `bytes`: about how much the body
    /// writes when that is a notification body, so an implementation that batches transactions can bound a batch.
    func write<T: Sendable>(bytes: Int, _ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T
    /// The same for async callers, without holding a thread while waiting for the commit.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Runs `body`, which runs exactly one statement, as one read: a server database runs it without a transaction
    /// around it (one statement sees one snapshot anyway), one round trip instead of three.
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Runs `body`, which runs exactly one small statement that writes, as a transaction of its own outside the group
    /// commit: coordination rows every instance updates often and no write of the journal waits for (the shared App
    /// Store Server API budget, ``APIBudgetTransaction``). Not for what must be durable before an answer: PostgreSQL
    /// runs it on a session of its own with `synchronous_commit` off.
    func writeStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Runs `body` on one consistent snapshot; writes inside it fail. Blocking.
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// The same for async callers, off Swift's cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Whether ``close()`` was called: no more writes are taken.
    var isClosing: Bool { get }
    /// Whether several gateway instances may work on this store at once: background jobs must then be claimed in a
    /// write transaction (``StoreTransaction/claimDueDeliveries(downstream:at:limit:lease:)`` and its kin), so that
    /// each job runs on one instance until its lease runs out. A store that one process owns (SQLite) answers false:
    /// its jobs are read in a read transaction and the process keeps track of what it runs.
    var sharedByInstances: Bool { get }
    /// Commits what is queued, refuses new work and closes.
    func close()
    /// (transactions committed, writes committed) since open: how well commits are batched.
    var commitStatistics: (batches: Int, items: Int) { get }
    /// Leaves nothing of deleted or overwritten rows of `table` in the store's free space or log: after a scrub
    /// (``GatewayStore/scrubQuarantine(_:batch:)``, ``GatewayStore/scrubDeliveryLog(_:batch:)``) rewrote rows that
    /// held a secret. Slow; for that one-time cleanup only.
    func eraseFreedSpace(of table: ScrubbedTable) throws
}

/// A table whose rows a scrub rewrites (``GatewayStore/eraseFreedSpace(of:)``).
public enum ScrubbedTable: String, Sendable {
    case quarantine
    case deliveryAttempts = "delivery_attempts"
}

extension GatewayStore {
    public func eraseFreedSpace(of table: ScrubbedTable) throws {}

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T {
        try write(bytes: 0, body)
    }

    public func readStatement<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        try await read(body)
    }

    public func writeStatement<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        try await write(body)
    }
}

extension QuarantineTransaction {
    /// Adds a row to its lane within `cap`, whatever the lane holds already.
    public func quarantine(_ record: QuarantineRecord, cap: QuarantineCap) throws -> QuarantineOutcome {
        try quarantine(record, cap: cap, once: false)
    }
}

extension OutboxTransaction {
    /// The due deliveries alone, without their payloads.
    public func claimDueDeliveries(downstream: String, at time: Int64, limit: Int, lease: Lease) throws -> [DeliveryJob]
    {
        try claimDueDeliveries(downstream: downstream, at: time, limit: limit, lease: lease, payload: .none)
    }
}

/// The operations on the store, valid only inside the ``GatewayStore`` closure that received them (never keep one).
/// In a read transaction the writing operations throw. One protocol per concern (`Sources/Store/Interface/`); a part
/// of the service that needs only some holds a ``StoreSlice`` of those (docs/architecture.md, "The store's interface").
public protocol StoreTransaction:
    JournalTransaction,
    AuthorityTransaction,
    AppleSwitchTransaction,
    QuarantineTransaction,
    OutboxTransaction,
    ReceiptJobTransaction,
    ComparisonTransaction,
    ReceiptPathTransaction,
    JobClaimTransaction,
    ReconcileTransaction,
    RetentionTransaction,
    ConsumptionTransaction,
    APIBudgetTransaction
{}
