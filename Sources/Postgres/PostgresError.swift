/// A failed PostgreSQL call. `code` is the SQLSTATE (<https://www.postgresql.org/docs/current/errcodes-appendix.html>)
/// the server reported, or one the wrapper assigns to what happened on the client side (below); equality uses the
/// code only.
///
/// `message` is the connection's label, the operation that failed, the SQL text (truncated), the code and the
/// server's primary message — never a bound value, a `DETAIL` line (which quotes rows and keys), or the connection
/// string (which may hold a password). For the data-exception class `22` (invalid input syntax, out of range, bad
/// encoding) and `P0` (raised by PL/pgSQL) the server's primary message quotes the offending value, so it is withheld
/// and only the column or type it concerns is named.
///
/// Codes the wrapper assigns itself:
/// - `08001`: connecting failed (PostgreSQL reports no SQLSTATE for that).
/// - `08003`: the connection was closed by ``PostgresConnection/close()``, or used outside the closure it was lent to.
/// - `08006`: the connection broke during a call (server gone, restarted, network).
/// - `07001`: the statement takes another number of parameters than were given.
/// - `22021`: a text parameter holds a NUL byte (PostgreSQL text cannot).
/// - `25001` / `25P02`: ``PostgresConnection/transaction(isolation:_:)`` inside a transaction, or a transaction that
///   failed or ended inside its body.
/// - `53300`: no pooled connection became free within the pool's borrow timeout.
/// - `42602`: a `LISTEN` channel that is not a plain name.
public struct PostgresError: Error, Hashable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) { (self.code, self.message) = (code, message) }

    public static let uniqueViolationCode = "23505"
    public static let serializationFailureCode = "40001"
    public static let deadlockDetectedCode = "40P01"
    public static let connectionFailureCode = "08006"
    public static let cannotConnectCode = "08001"
    public static let connectionClosedCode = "08003"
    public static let parameterCountCode = "07001"
    public static let poolExhaustedCode = "53300"

    /// A UNIQUE or PRIMARY KEY constraint: the row (an event id, an idempotency key) is already there.
    public var isUniqueViolation: Bool { code == Self.uniqueViolationCode }

    /// The transaction lost a race (serialization failure or deadlock) and may succeed if run again from `BEGIN`.
    public var isSerializationFailure: Bool {
        code == Self.serializationFailureCode || code == Self.deadlockDetectedCode
    }

    /// The connection is gone or cannot be made: connecting failed, the connection broke, or the server ended the
    /// session (`57P01` admin shutdown, `57P02` crash shutdown, `57P03` cannot connect now) — class `08` except
    /// `08P01` (a protocol violation is an error of the call, the session goes on). What was sent may or may not have
    /// been done: a COMMIT that failed this way may have committed. A pool resets such a connection on its next use.
    public var isConnectionFailure: Bool {
        (code.hasPrefix("08") && code != "08P01") || code == "57P01" || code == "57P02" || code == "57P03"
    }

    /// No pooled connection became free within the borrow timeout.
    public var isPoolExhausted: Bool { code == Self.poolExhaustedCode }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "PostgresError(\(code)): \(message)" }
}
