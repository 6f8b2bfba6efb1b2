internal import Postgres
internal import Rows
internal import Synchronization

/// The connection a ``PostgresTransaction`` works on: the PostgreSQL session, its store's ``BlobDictionaries`` and
/// what adds a dictionary's row (``PostgresDictionaryInserter``). As on SQLite, the large values are written
/// compressed (``StoredBlob``) and its rows carry the dictionaries their values name, so that
/// ``StoreRow/stored(_:as:)`` reads every stored format.
struct PostgresStoreConnection: StoreConnection {
    let raw: PostgresConnection
    let dictionaries: BlobDictionaries
    /// Commits a new dictionary's row on a session of its own; nil on the reader sessions, which never write one.
    let inserter: PostgresDictionaryInserter?

    static var dialect: Dialect { .postgres }

    /// `blob_dictionaries` as this session reads it and adds to it.
    var table: PostgresDictionaryTable { PostgresDictionaryTable(c: raw, inserter: inserter) }

    @discardableResult
    func run(_ sql: SQL, _ values: [StoreValue]) throws -> Int { try raw.run(sql.postgres, values.map(bound)) }
    func query(_ sql: SQL, _ values: [StoreValue]) throws -> [PostgresStoreRow] {
        try query(sql.postgres, values.map(bound))
    }
    func queryOne(_ sql: SQL, _ values: [StoreValue]) throws -> PostgresStoreRow? {
        try queryOne(sql.postgres, values.map(bound))
    }

    /// A value as this store binds it: the gateway's JSON compressed with the store's JSON dictionary.
    private func bound(_ value: StoreValue) throws -> PostgresValue {
        guard case .compressible(let json, let column) = value else { return value.postgres }
        return .bytea(try dictionaries.packJSON(try column.checked(json), on: table))
    }

    /// A notification's body as the journal stores it: a V2 body with its header's preset dictionary.
    func packBody(_ body: [UInt8]) throws -> [UInt8] {
        try dictionaries.pack(try StoredColumn.body.checked(body), on: table)
    }

    /// The gateway's JSON of `column` as the store keeps it (``BlobDictionaries/packJSON(_:on:)``).
    func packJSON(_ json: [UInt8], as column: StoredColumn) throws -> [UInt8] {
        try dictionaries.packJSON(try column.checked(json), on: table)
    }

    func execute(_ sql: String) throws { try raw.execute(sql) }
    @discardableResult
    func run(_ sql: String, _ values: [PostgresValue] = []) throws -> Int { try raw.run(sql, values) }
    func query(_ sql: String, _ values: [PostgresValue] = []) throws -> [PostgresStoreRow] {
        try wrap(raw.query(sql, values))
    }
    func queryOne(_ sql: String, _ values: [PostgresValue] = []) throws -> PostgresStoreRow? {
        try wrap(raw.queryOne(sql, values).map { [$0] } ?? []).first
    }

    private func wrap(_ rows: [PostgresRow]) -> [PostgresStoreRow] {
        let found = dictionaries.resolve(Self.dictionaryIDs(rows), on: table, committed: true)
        return rows.map { PostgresStoreRow(row: $0, dictionaries: found) }
    }

    /// The dictionary ids the values of `rows` name.
    static func dictionaryIDs(_ rows: [PostgresRow]) -> Set<Int64> {
        var ids: Set<Int64> = []
        for row in rows {
            for value in row.values {
                if case .bytea(let b) = value, let id = StoredBlob.dictionaryID(b) { ids.insert(id) }
            }
        }
        return ids
    }
}

/// A PostgreSQL row with the dictionaries its values name.
struct PostgresStoreRow: StoreRow, Sendable {
    let row: PostgresRow
    let dictionaries: [Int64: [UInt8]]

    func hasColumn(_ column: String) -> Bool { row.hasColumn(column) }
    func isNull(_ column: String) -> Bool { row.isNull(column) }
    func string(_ column: String) -> String? { row.string(column) }
    func int64(_ column: String) -> Int64? { row.int64(column) }
    func bool(_ column: String) -> Bool? { row.bool(column) }
    func bytes(_ column: String) -> [UInt8]? { row.bytes(column) }
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead {
        row.stored(column, as: kind, dictionaries: dictionaries)
    }
}

/// `blob_dictionaries` on one PostgreSQL session. Several writer sessions, and several instances, write at once: a new
/// row is committed on a session of its own (``PostgresDictionaryInserter``) before any value names it, so that no
/// writer's batch ever waits for another's to learn whether a row under the same digest commits, and every row a
/// session reads is committed (its id is kept, ``BlobDictionaries``). Without an inserter the row is added on the
/// session itself: committed at once outside a transaction (the upgrade that compresses old rows,
/// ``PostgresCompaction``).
struct PostgresDictionaryTable: DictionaryTable {
    let c: PostgresConnection
    let inserter: PostgresDictionaryInserter?

    var readsCommitted: Bool { inserter != nil || !c.inTransaction }

    func dictionaryRow(digest: [UInt8]) throws -> (id: Int64, source: [UInt8])? {
        try Self.row(digest: digest, on: c)
    }

    func insertDictionary(digest: [UInt8], source: [UInt8]) throws -> (id: Int64, committed: Bool)? {
        if let inserter {
            return inserter.insert(digest: digest, source: source).map { ($0, true) }
        }
        let committed = !c.inTransaction
        return try Self.insert(digest: digest, source: source, on: c).map { ($0, committed) }
    }

    func newestJSONSource() throws -> [UInt8]? {
        try c.queryOne(
            "SELECT header FROM blob_dictionaries WHERE substring(header FROM 1 FOR 1) = '\\x7b'::bytea ORDER BY id DESC LIMIT 1"
        )?.bytes("header")
    }

    func dictionaryEntry(id: Int64) throws -> BlobDictionaries.Entry? {
        guard
            let row = try c.queryOne(DictionaryStatements.byID, [.int64(id)]),
            let digest = row.bytes("header_digest"), let header = row.bytes("header")
        else { return nil }
        return BlobDictionaries.Entry(id: id, digest: digest, dictionary: StoredBlob.dictionary(header: header[...]))
    }

    static func row(digest: [UInt8], on c: PostgresConnection) throws -> (id: Int64, source: [UInt8])? {
        guard
            let row = try c.queryOne(DictionaryStatements.byDigest, [.bytea(digest)]),
            let id = row.int64("id"), let header = row.bytes("header")
        else { return nil }
        return (id, header)
    }

    /// Adds the row, or finds the one another session added under the same digest; nil when that one holds another
    /// source.
    static func insert(digest: [UInt8], source: [UInt8], on c: PostgresConnection) throws -> Int64? {
        if let id = try c.queryOne(
            """
            INSERT INTO blob_dictionaries (header_digest, header) VALUES ($1, $2)
            ON CONFLICT (header_digest) DO NOTHING RETURNING id
            """,
            [.bytea(digest), .bytea(source)]
        )?.int64("id") {
            return id
        }
        guard let row = try row(digest: digest, on: c), row.source == source else { return nil }
        return row.id
    }
}

/// Commits a new dictionary's row on a session of its own, opened for it and closed again: a store adds a handful of
/// rows in its life (its JSON dictionary, one per certificate chain Apple signs with), each before the first value
/// that names it. When that fails (the server refuses another session), the value is compressed without a dictionary,
/// and no other session is tried for ``retryAfter``.
final class PostgresDictionaryInserter: Sendable {
    let url: String
    let label: String
    static let retryAfter: Duration = .seconds(60)
    private let failedAt = Mutex<ContinuousClock.Instant?>(nil)

    init(url: String, label: String) {
        self.url = url
        self.label = label
    }

    /// The row's id; nil when it could not be added.
    func insert(digest: [UInt8], source: [UInt8]) -> Int64? {
        let now = ContinuousClock.now
        if let failed = failedAt.withLock({ $0 }), now - failed < Self.retryAfter { return nil }
        do {
            let c = try PostgresConnection(url, label: label)
            defer { c.close() }
            return try PostgresDictionaryTable.insert(digest: digest, source: source, on: c)
        } catch {
            failedAt.withLock { $0 = now }
            return nil
        }
    }
}

extension PostgresRow {
    /// A value over the cap is damaged. A statement that selects the column through ``Dialect/capped(_:as:_:)`` leaves
    /// a value stored over the cap in the database: the column reads NULL, and its `<column>_bytes` tells it from a
    /// missing one. A compressed value stops decompressing at the cap (``StoredBlob/read(_:as:dictionaries:)``).
    func stored(_ column: String, as kind: StoredColumn, dictionaries: [Int64: [UInt8]]) -> StoredRead {
        guard let value = bytes(column) else { return int64(column + "_bytes") == nil ? .missing : .damaged(.tooLarge) }
        return StoredBlob.read(value, as: kind, dictionaries: dictionaries)
    }
}
