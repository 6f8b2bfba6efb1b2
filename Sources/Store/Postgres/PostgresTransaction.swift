internal import Canonical
internal import Postgres

/// ``StoreTransaction`` on one PostgreSQL session. The operations both databases run alike are written once
/// (``SQLTransaction``, `Sources/Store/Transaction/`); the `PostgresTransaction+*.swift` files hold only PostgreSQL's
/// own: the claims (`FOR UPDATE SKIP LOCKED`, leases), the journal's and an event's rows as one statement each, the
/// advisory locks (below). Valid only inside the closure the connection was lent to. Values are always bound (`$1`,
/// …); a parameter that may be NULL carries a cast wherever its type cannot be taken from a column (`$1::text IS NULL`).
struct PostgresTransaction: SQLTransaction {
    let c: PostgresStoreConnection
    init(_ c: PostgresStoreConnection) { self.c = c }
}

extension PostgresValue {
    /// A `text[]` literal (`{"a","b"}`), for `= ANY($1::text[])`: one statement whatever the list's length.
    static func textArray(_ items: [String]) -> PostgresValue {
        let quoted = items.map { item -> String in
            var s = "\""
            for ch in item {
                if ch == "\"" || ch == "\\" { s.append("\\") }
                s.append(ch)
            }
            return s + "\""
        }
        return .text("{" + quoted.joined(separator: ",") + "}")
    }

    /// A `bigint[]` literal (`{1,2}`), for `= ANY($1::bigint[])`.
    static func bigintArray(_ items: [Int64]) -> PostgresValue {
        .text("{" + items.map(String.init).joined(separator: ",") + "}")
    }
}

extension PostgresTransaction {
    /// Advisory lock classes: what a lock's (class, object) pair stands for.
    enum LockClass: Int64 {
        /// A notification key being journaled.
        case journalKey = 0x6961_7001
        /// A quarantine lane taking a row.
        case quarantineLane = 0x6961_7002
    }

    /// Takes the transaction's advisory lock on `key` (with the schema, so gateways on other schemas of the database
    /// never meet) — or, when that would mean waiting while this transaction holds what another instance's batch may
    /// be waiting for, throws ``busyCode`` instead, and the writer runs the work again at the head of its next batch.
    ///
    /// Two instances' batches each holding a key the other needs would otherwise deadlock: PostgreSQL breaks that only
    /// after `deadlock_timeout` (a second) by failing one statement. So a batch waits for a key only while it has
    /// written nothing yet (`pg_current_xact_id_if_assigned()` is NULL: it holds no row lock anyone can wait for);
    /// later in a batch it only tries. Every writer of the key takes this lock before writing it.
    func lockOrDefer(_ lockClass: LockClass, _ key: String) throws {
        let locked = try c.queryOne(
            "SELECT \(Self.lockOrDefer(class: "$1", key: "$2")) AS locked",
            [.int64(lockClass.rawValue), .text(key)]
        )?.bool("locked")
        try Self.deferUnless(locked, lockClass)
    }

    /// The SQL of ``lockOrDefer(_:_:)``, true when locked, for a statement that does more after it: `lockClass` and
    /// `key` are the placeholders of the lock class (bigint) and the key (text).
    static func lockOrDefer(class lockClass: String, key: String) -> String {
        let lock = "\(lockClass)::integer, hashtext(COALESCE(current_schema(), '') || ':' || \(key)::text)"
        return """
            CASE WHEN pg_current_xact_id_if_assigned() IS NULL
                THEN (SELECT true FROM pg_advisory_xact_lock(\(lock)))
                ELSE pg_try_advisory_xact_lock(\(lock))
            END
            """
    }

    /// Throws ``busyCode`` unless `locked` is true.
    static func deferUnless(_ locked: Bool?, _ lockClass: LockClass) throws {
        guard locked == true else {
            throw PostgresError(
                code: busyCode,
                message: "another instance is writing the same \(lockClass) now: run again in the next batch"
            )
        }
    }

    /// `lock_not_available`: what ``lockOrDefer(_:_:)`` throws when the lock is taken.
    static let busyCode = "55P03"
}
