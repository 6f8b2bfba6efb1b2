internal import Canonical
internal import Postgres
internal import SQLite

/// The two databases a store runs on, and each place where their SQL really differs, by name: every statement is
/// written once (``SQL``) and asks its dialect only for these pieces.
enum Dialect: Sendable {
    case sqlite, postgres

    /// The column that gives an event's arrival order: SQLite's rowid, PostgreSQL's `events.seq` (a `bigserial`).
    var arrival: String { self == .sqlite ? "rowid" : "seq" }

    /// What a settle or re-arm also sets: PostgreSQL's job tables carry a claim (several instances share the store),
    /// which ends with the job's attempt; SQLite's have none (one process owns the store).
    var clearClaim: String { self == .sqlite ? "" : ", claimed_by = NULL, claimed_until = NULL" }

    /// Equal, or both NULL.
    var nullSafeEquals: String { self == .sqlite ? "IS" : "IS NOT DISTINCT FROM" }

    /// A blob's length in bytes, read from the row's header without fetching the value.
    func byteLength(_ column: String) -> String { self == .sqlite ? "length(\(column))" : "octet_length(\(column))" }

    /// The large value `column` selected as `name`, bounded: PostgreSQL leaves a value stored over `bytes` in the
    /// database — it reads NULL, and `<name>_bytes`, its length from the value's header, tells it from a missing one
    /// (``StoreRow/stored(_:as:)``). A compressed value within that is read, and only decompressing tells its plain
    /// size: ``StoredBlob/read(_:as:dictionaries:)`` stops at the cap (SQLite reads every value so).
    func capped(_ column: String, as name: String, _ bytes: Int) -> String {
        switch self {
        case .sqlite: "\(column) AS \(name)"
        case .postgres:
            "CASE WHEN octet_length(\(column)) <= \(bytes) THEN \(column) END AS \(name), octet_length(\(column)) AS \(name)_bytes"
        }
    }

    /// A quarantine row stored before bodies were redacted, written as each database's partial index
    /// `quarantine_unredacted` is (so that its planner uses it).
    var unredacted: String { self == .sqlite ? "redacted = 0" : "NOT redacted" }

    /// A delivery attempt logged before answer heads were redacted whose head could hold a secret (as long as the
    /// shortest one looked for, ``SecretRedactor/minimumLength``), written as each database's partial index
    /// `delivery_attempts_unredacted` is: only such rows are in it, and the scrub at start reads them off it.
    var unredactedHead: String { "\(unredacted) AND \(byteLength("response_head")) >= 16" }

    /// `column` is one of the list bound at `$n` (a ``StoreValue/ids(_:)`` or ``StoreValue/texts(_:)``), as
    /// ``notIn(_:_:_:)`` reads it.
    func isIn(_ column: String, _ n: Int, _ type: String) -> String {
        switch self {
        case .sqlite: "\(column) IN (SELECT value FROM json_each($\(n)))"
        case .postgres: "\(column) = ANY ($\(n)::\(type)[])"
        }
    }

    /// `column` is not one of the list bound at `$n` (a ``StoreValue/list(_:)``): one statement whatever the list's
    /// length. SQLite reads the list as a JSON array (`json_each`), PostgreSQL as an array (`= ANY`).
    func notIn(_ column: String, _ n: Int, _ type: String) -> String {
        switch self {
        case .sqlite: "\(column) NOT IN (SELECT value FROM json_each($\(n)))"
        case .postgres: "NOT (\(column) = ANY ($\(n)::\(type)[]))"
        }
    }
}

/// One statement, written once for both databases: PostgreSQL's placeholders (`$1`, `$2`, … — a value used twice is
/// bound once), and a cast (`$1::text`) wherever PostgreSQL cannot take a parameter's type from a column. Rendered
/// once per dialect when the statement is first used (SQLite: `?NNN` placeholders, casts dropped), so every call binds
/// ready text that each connection's statement cache finds by its SQL — no string is built per call. Statements are
/// `static let`s (``SQL`` extensions beside the code that runs them); `dialect` builds the text for each database
/// where a piece really differs (``Dialect``).
struct SQL: Sendable {
    let sqlite: String
    let postgres: String

    init(_ text: String) { self.init { _ in text } }

    init(_ text: (Dialect) -> String) {
        sqlite = Self.renderSQLite(text(.sqlite))
        postgres = text(.postgres)
    }

    /// `$n` → `?n`, `::type` and `::type[]` casts dropped; string literals, quoted identifiers and comments untouched.
    static func renderSQLite(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        var chars = Array(text.unicodeScalars)[...]
        while let ch = chars.popFirst() {
            switch ch {
            case "'", "\"":
                out.unicodeScalars.append(ch)
                while let next = chars.popFirst() {
                    out.unicodeScalars.append(next)
                    if next == ch { break }
                }
            case "-" where chars.first == "-":
                out.unicodeScalars.append(ch)
                while let next = chars.popFirst() {
                    out.unicodeScalars.append(next)
                    if next == "\n" { break }
                }
            case "$" where chars.first.map { ("0"..."9").contains($0) } ?? false:
                out.append("?")
                while let d = chars.first, ("0"..."9").contains(d) { out.unicodeScalars.append(chars.removeFirst()) }
            case ":" where chars.first == ":":
                chars.removeFirst()
                while let c = chars.first, c == " " { chars.removeFirst() }
                while let c = chars.first, c.properties.isAlphabetic || c == "_" || ("0"..."9").contains(c) {
                    chars.removeFirst()
                }
                if chars.starts(with: "[]".unicodeScalars) { chars.removeFirst(2) }
            default:
                out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}

/// A value a statement binds, in the store's own types; each connection binds it in its database's (a bool is
/// SQLite's integer 0 or 1, PostgreSQL's `boolean`).
enum StoreValue: Sendable, Hashable {
    case null
    case text(String)
    case int64(Int64)
    case bool(Bool)
    case bytes([UInt8])
    /// JSON the gateway wrote (a snapshot, a ledger entry): both stores keep it compressed when that is smaller, with
    /// the store's JSON dictionary (``BlobDictionaries/packJSON(_:on:)``, learned from these values: never a received
    /// body). Read back with ``StoreRow/stored(_:as:)``.
    case compressible([UInt8], StoredColumn = .snapshot)
    /// Lists for ``Dialect/notIn(_:_:_:)``: SQLite binds one as a JSON array, PostgreSQL as an array literal.
    case texts([String])
    case ids([Int64])

    init(_ v: String?) { self = v.map { .text($0) } ?? .null }
    init(_ v: Int64?) { self = v.map { .int64($0) } ?? .null }
    init(_ v: Int?) { self = v.map { .int64(Int64($0)) } ?? .null }
    init(_ v: Bool?) { self = v.map { .bool($0) } ?? .null }
    init(_ v: [UInt8]?) { self = v.map { .bytes($0) } ?? .null }
    init(_ g: Generation?) { self.init(g?.rawValue) }
    init(_ e: AppStoreEnvironment?) { self.init(e?.rawValue) }

    /// The value as a write binds it: a ``compressible(_:)`` value (a snapshot, a ledger entry) only within its
    /// column's cap (``StoredColumn/checked(_:)``).
    func checked() throws -> StoreValue {
        if case .compressible(let v, let column) = self { _ = try column.checked(v) }
        return self
    }

    /// `LIMIT $n` for a caller's count: never negative.
    static func limit(_ n: Int) -> StoreValue { .int64(Int64(max(0, n))) }

    var sqlite: SQLiteValue {
        switch self {
        case .null: .null
        case .text(let v): .text(v)
        case .int64(let v): .integer(v)
        case .bool(let v): .integer(v ? 1 : 0)
        case .bytes(let v): .blob(v)
        case .compressible(let v, _): .blob(StoredBlob.pack(v))
        case .texts(let items): .text("[" + items.map(Self.jsonString).joined(separator: ",") + "]")
        case .ids(let ids): .text("[" + ids.map(String.init).joined(separator: ",") + "]")
        }
    }

    var postgres: PostgresValue {
        switch self {
        case .null: .null
        case .text(let v): .text(v)
        case .int64(let v): .int64(v)
        case .bool(let v): .bool(v)
        case .bytes(let v): .bytea(v)
        case .compressible(let v, _): .bytea(StoredBlob.pack(v))
        case .texts(let items): .textArray(items)
        case .ids(let ids): .bigintArray(ids)
        }
    }

    private static func jsonString(_ v: String) -> String {
        var s = "\""
        for u in v.unicodeScalars {
            switch u {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case _ where u.value < 0x20: s += "\\u00" + (u.value < 0x10 ? "0" : "") + String(u.value, radix: 16)
            default: s.unicodeScalars.append(u)
            }
        }
        return s + "\""
    }
}

/// What the statements written once run on: one SQLite connection or one PostgreSQL session, lent for one
/// transaction.
protocol StoreConnection {
    associatedtype Row: StoreRow, Sendable
    static var dialect: Dialect { get }
    /// Runs one statement; returns how many rows it inserted, updated or deleted.
    @discardableResult
    func run(_ sql: SQL, _ values: [StoreValue]) throws -> Int
    func query(_ sql: SQL, _ values: [StoreValue]) throws -> [Row]
    func queryOne(_ sql: SQL, _ values: [StoreValue]) throws -> Row?
}

extension SQLiteConnection: StoreConnection {
    static var dialect: Dialect { .sqlite }

    @discardableResult
    func run(_ sql: SQL, _ values: [StoreValue] = []) throws -> Int {
        try run(sql.sqlite, values.map { try $0.checked().sqlite })
    }
    func query(_ sql: SQL, _ values: [StoreValue] = []) throws -> [SQLiteRow] {
        try query(sql.sqlite, values.map(\.sqlite))
    }
    func queryOne(_ sql: SQL, _ values: [StoreValue] = []) throws -> SQLiteRow? {
        try queryOne(sql.sqlite, values.map(\.sqlite))
    }
}

extension PostgresConnection: StoreConnection {
    static var dialect: Dialect { .postgres }

    @discardableResult
    func run(_ sql: SQL, _ values: [StoreValue] = []) throws -> Int {
        try run(sql.postgres, values.map { try $0.checked().postgres })
    }
    func query(_ sql: SQL, _ values: [StoreValue] = []) throws -> [PostgresRow] {
        try query(sql.postgres, values.map(\.postgres))
    }
    func queryOne(_ sql: SQL, _ values: [StoreValue] = []) throws -> PostgresRow? {
        try queryOne(sql.postgres, values.map(\.postgres))
    }
}

/// A ``StoreTransaction`` on a ``StoreConnection``: the operations that are the same on both databases are written
/// once, as extensions of this protocol (`Sources/Store/Transaction/*.swift`); `SQLiteTransaction` and
/// `PostgresTransaction` hold only what differs (claims, the journal's and a quarantine's inserts, locks).
protocol SQLTransaction: StoreTransaction {
    associatedtype Connection: StoreConnection
    var c: Connection { get }
}

extension SQLTransaction {
    var dialect: Dialect { Connection.dialect }
}
