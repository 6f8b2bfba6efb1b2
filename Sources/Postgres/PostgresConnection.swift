/// One PostgreSQL session: the one libpq wrapper of the gateway.
///
/// Either standalone — `try PostgresConnection(url)` owns its `PGconn*` until ``close()`` or `deinit`, e.g. a
/// dedicated thread that `LISTEN`s — or lent by ``PostgresPool/withConnection(_:)``, valid only inside that closure:
/// never store it, return it or hand it to another thread; once the closure returned, every call throws `08003`.
///
/// Not Sendable, not thread-safe: one thread at a time. Every call blocks until the server answered (libpq's
/// synchronous API), so run them on threads that may block, never on Swift's cooperative pool.
///
/// Values are always bound as parameters (`$1`, `$2`, …), never written into the SQL. ``query(_:_:prepared:)``,
/// ``queryOne(_:_:)`` and ``run(_:_:)`` prepare each statement once per session and reuse it, cached by its SQL
/// text; ``execute(_:)`` runs parameterless SQL (DDL, several statements at once).
public final class PostgresConnection {
    private let handle: PostgresHandle
    /// False for a connection lent by a pool: ``close()`` then only ends the session, which the pool reopens.
    private let owned: Bool
    private var valid = true

    /// Connects with a libpq connection string, URI (`postgresql://user:password@host:port/db?sslmode=verify-full`)
    /// or `key=value` form, passed to libpq untouched: TLS (`sslmode`, `sslrootcert`, …), `connect_timeout` (without
    /// it, connecting to a host that does not answer waits for the operating system's TCP timeout),
    /// `application_name` and the `PG*` environment variables all work as in `psql`. The string never appears in an
    /// error: it may hold a password.
    ///
    /// The session uses UTF-8 (`client_encoding`), and discards the server's NOTICE messages.
    public convenience init(_ conninfo: String, label: String = "postgres") throws(PostgresError) {
        let handle = PostgresHandle(conninfo: conninfo, label: label)
        try handle.reconnect()
        self.init(handle: handle, owned: true)
    }

    init(handle: PostgresHandle, owned: Bool) { (self.handle, self.owned) = (handle, owned) }

    /// Ends this object's validity; called by the pool when the closure it was lent to returns.
    func invalidate() { valid = false }

    private func checked() throws(PostgresError) -> PostgresHandle {
        guard valid else {
            throw PostgresError(
                code: PostgresError.connectionClosedCode,
                message: "\(handle.label): PostgresConnection used outside the closure it was lent to"
            )
        }
        return handle
    }

    /// Runs one or more `;`-separated statements without parameters (DDL, `SET`); results are discarded.
    public func execute(_ sql: String) throws(PostgresError) {
        try checked().execute(sql)
    }

    /// Runs one statement and returns its rows. `prepared: false` plans it for this call only (`PQexecParams`):
    /// for SQL built from a varying set of identifiers, which would otherwise fill the statement cache.
    public func query(
        _ sql: String,
        _ values: [PostgresValue] = [],
        prepared: Bool = true
    ) throws(PostgresError)
        -> [PostgresRow]
    {
        try checked().query(sql, values, prepared: prepared).rows
    }

    /// Runs one statement and returns its first row, or nil when it returned none.
    public func queryOne(_ sql: String, _ values: [PostgresValue] = []) throws(PostgresError) -> PostgresRow? {
        try checked().query(sql, values, prepared: true).rows.first
    }

    /// Runs one statement and returns the number of rows it inserted, updated or deleted (`PQcmdTuples`).
    @discardableResult
    public func run(_ sql: String, _ values: [PostgresValue] = []) throws(PostgresError) -> Int {
        try checked().query(sql, values, prepared: true).affected
    }

    /// The transaction isolation level of ``transaction(isolation:_:)``.
    public enum Isolation: Sendable {
        case readCommitted, repeatableRead, serializable

        var begin: String {
            switch self {
            case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
            case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
            case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
            }
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT` and returns its result.
    ///
    /// If the body throws, the transaction is rolled back and the error rethrown. A statement that failed inside the
    /// body aborts the transaction even if the body caught its error: the commit is then refused with `25P02` (and
    /// rolled back) instead of PostgreSQL's silent rollback. The body must not run `BEGIN`, `COMMIT` or `ROLLBACK`
    /// itself (`SAVEPOINT` is fine); a transaction that ended inside the body throws `25P02`. Calling it inside a
    /// transaction throws `25001`.
    ///
    /// When `COMMIT` fails as a connection failure (``PostgresError/isConnectionFailure``), whether it committed is
    /// unknown: make what the body writes idempotent, or look before writing it again. A serialization failure
    /// (``PostgresError/isSerializationFailure``) may succeed when the whole transaction is run again.
    ///
    /// `opening`: parameterless statements run right after `BEGIN`, in the same round trip (a `SET LOCAL`, a first
    /// `SAVEPOINT`).
    @discardableResult
    public func transaction<T>(
        isolation: Isolation = .readCommitted,
        opening: String? = nil,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        let handle = try checked()
        let state = handle.transactionState
        guard state != .inTransaction, state != .failed else {
            throw PostgresError(
                code: "25001",
                message: "\(handle.label): transaction: a transaction is already open on this connection"
            )
        }
        try handle.execute(opening.map { isolation.begin + "; " + $0 } ?? isolation.begin)
        do {
            let value = try body(self)
            switch handle.transactionState {
            case .inTransaction:
                break
            case .failed:
                throw PostgresError(
                    code: "25P02",
                    message: "\(handle.label): transaction: a statement failed inside the body and its error was "
                        + "caught; the transaction is rolled back"
                )
            case .idle:
                throw PostgresError(
                    code: "25P02",
                    message: "\(handle.label): transaction: the transaction ended inside the body (an explicit COMMIT "
                        + "or ROLLBACK); its changes may be committed"
                )
            case .broken:
                throw PostgresError(
                    code: PostgresError.connectionFailureCode,
                    message: "\(handle.label): transaction: the connection broke inside the body"
                )
            }
            try handle.commit()
            return value
        } catch {
            let state = handle.transactionState
            if state == .inTransaction || state == .failed { try? handle.execute("ROLLBACK") }
            throw error
        }
    }

    /// True inside a transaction (also one that failed and awaits its rollback).
    public var inTransaction: Bool {
        guard valid else { return false }
        let state = handle.transactionState
        return state == .inTransaction || state == .failed
    }

    // MARK: LISTEN / NOTIFY

    /// `LISTEN` on `channel`: 1 to 63 ASCII letters, digits and underscores, case kept (it is quoted, so it matches
    /// `pg_notify` with the same text). A standalone connection listens again after ``reset()``; a pool's
    /// connection stops listening when it is given back.
    public func listen(_ channel: String) throws(PostgresError) {
        try checked().listen(channel)
    }

    public func unlisten(_ channel: String) throws(PostgresError) {
        try checked().unlisten(channel)
    }

    /// `NOTIFY`, through `pg_notify($1, $2)` so that the payload is a bound value. Inside a transaction it is
    /// delivered at commit, and not at all on rollback.
    public func notify(_ channel: String, payload: String = "") throws(PostgresError) {
        _ = try checked().query("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)], prepared: true)
    }

    /// The notifications received for the channels this connection listens on: those already here, else the first
    /// to arrive within `timeout`; empty when none came in time. Throws a connection failure when the session
    /// broke (the server restarted): ``reset()`` listens again, but what was sent meanwhile is lost, so look for
    /// the work the notifications stand for after a reset rather than relying on them alone.
    public func notifications(timeout: Duration) throws(PostgresError) -> [PostgresNotification] {
        try checked().notifications(timeout: timeout)
    }

    // MARK: The session

    /// Reconnects with the same parameters (`PQreset`): after a connection failure, or to start afresh. Prepared
    /// statements are prepared again on their next use, and the channels are listened again.
    public func reset() throws(PostgresError) {
        try checked().reconnect()
    }

    /// True while the session is up as far as libpq knows; it learns that the server went away only when it next
    /// reads from it.
    public var isConnected: Bool { valid && handle.isConnected }

    /// The server process of this session (`pg_backend_pid()`); 0 when not connected.
    public var serverProcessID: Int32 { valid ? handle.serverProcessID : 0 }

    /// How many prepared statements this session holds.
    public var preparedStatementCount: Int { valid ? handle.preparedStatementCount : 0 }

    /// Ends the session. A standalone connection is then closed for good (later calls throw `08003`); a pooled one
    /// gets a new session when the pool next lends it. Idempotent.
    public func close() {
        guard valid else { return }
        if owned { handle.close() } else { handle.disconnect() }
    }
}

/// Never Sendable: the session behind it belongs to one thread at a time.
@available(*, unavailable)
extension PostgresConnection: Sendable {}
