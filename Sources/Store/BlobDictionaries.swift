internal import Crypto
internal import SQLite
internal import Synchronization
internal import Zstd

/// The preset dictionaries of a store (``StoredBlob``, SQLite's and PostgreSQL's alike): one per outer JWS header of
/// the V2 bodies, and one learned for the gateway's own JSON values.
///
/// A V2 body `{"signedPayload":"H.P.S"}` carries Apple's certificate chain three times: in its header H, and in the
/// headers of `signedTransactionInfo` and `signedRenewalInfo` — the same text, base64url-encoded a second time as
/// part of P, at one of three byte alignments. a compressor sees none of them as repeats of H; with H and its three encodings
/// as a preset dictionary it sees all three. Only H is stored (`blob_dictionaries`): the dictionary is rebuilt from
/// it.
///
/// The JSON the gateway writes itself — events, subscription states, snapshots, the comparison ledger's — is a few
/// hundred bytes a value, mostly the same keys and the app's own bundle and product ids: too short for a compressor to find
/// its repeats within one value. Its dictionary is the first few such values the store's writer compressed, stored
/// as they are (a row whose source starts with `{`, which no JWS header does) and found again by every later process
/// on the file; each value then stores about a quarter of what compression alone makes of it. Only values the gateway made
/// are learned from, never a body it received.
///
/// One per store, shared by the writer and the reader connections. It learns an id → dictionary only from committed
/// rows — what an SQLite reader connection read, what a PostgreSQL session read or committed on its own
/// (``PostgresDictionaryTable``) — and never from SQLite's writer's own uncommitted rows: a batch that rolls back
/// gives its ids back, and the next insert may reuse one for another header. What is learnt from a header's own bytes
/// (its dictionary, by digest) is true whatever happens to the row.
final class BlobDictionaries: Sendable {
    struct Entry: Sendable {
        var id: Int64
        var digest: [UInt8]
        var dictionary: [UInt8]
    }

    private struct State {
        /// Committed rows: id → entry, digest → id.
        var byID: [Int64: Entry] = [:]
        var idByDigest: [[UInt8]: Int64] = [:]
        /// Dictionaries built from a header, by its digest (whether or not its row is committed).
        var built: [[UInt8]: [UInt8]] = [:]
        /// Where the store's JSON dictionary stands in this process: not looked for in the store yet; learning (none
        /// there: the values the writer compressed so far, until there are ``jsonSamples``); or ready (its source, the
        /// dictionary itself, not empty, and the source's digest). Plain fields, not an enum with payloads: Swift keeps
        /// such an enum's case in the spare bits of its pointers, where LeakSanitizer no longer sees them as pointers.
        var jsonLookedFor = false
        var jsonSamples: [[UInt8]] = []
        var jsonDictionary: [UInt8] = []
        var jsonDigest: [UInt8] = []
        /// Compressors made with the dictionaries the writer used lately, by the dictionary's digest.
        var primed: [[UInt8]: Zstd.Compressor] = [:]
    }

    /// Most compressors kept (each a zstd context and its digested dictionary, a few hundred KB): the JSON dictionary
    /// and a few of Apple's chains.
    static let maxPrimed = 8

    /// How many JSON values make the dictionary (a notification's event, its state, and the next ones), and its most
    /// bytes (more makes every compression slower for little gain).
    static let jsonSamples = 4
    static let maxJSONDictionaryBytes = 4_096

    private let state = Mutex(State())

    /// Most headers whose dictionary is kept (a store sees a handful: Apple's chain changes rarely).
    static let maxEntries = 256

    init() {}

    // MARK: Writing

    /// `body` as the writer stores it: a V2 body with its header's dictionary (inserting the header's row in the
    /// transaction on `c` when it is new), any other value as ``StoredBlob/pack(_:)`` does.
    func pack(_ body: [UInt8], on c: some DictionaryTable) throws -> [UInt8] {
        guard let header = StoredBlob.v2Header(body) else { return StoredBlob.pack(body) }
        let digest = SHA256.hash(header)
        let built = state.withLock { $0.built[digest] }
        let dictionary = built ?? StoredBlob.dictionary(header: header)
        if built == nil { state.withLock { if $0.built.count < Self.maxEntries { $0.built[digest] = dictionary } } }
        guard let id = try rowID(digest: digest, source: header, dictionary: dictionary, on: c) else {
            return StoredBlob.pack(body)
        }
        return pack(body, id: id, digest: digest, dictionary: dictionary)
    }

    /// A JSON value the gateway wrote (an event, a state, a snapshot) as the writer stores it: with the store's JSON
    /// dictionary once there is one (learned from the first values, its row inserted in the transaction on `c`), as
    /// ``StoredBlob/pack(_:)`` does before.
    func packJSON(_ value: [UInt8], on c: some DictionaryTable) throws -> [UInt8] {
        guard value.first == UInt8(ascii: "{"), let (digest, dictionary) = try jsonDictionary(learning: value, on: c),
            let id = try rowID(digest: digest, source: dictionary, dictionary: dictionary, on: c)
        else { return StoredBlob.pack(value) }
        return pack(value, id: id, digest: digest, dictionary: dictionary)
    }

    /// `value` compressed with the dictionary of the row `id`, by a compressor made with it (made once, kept while
    /// there is room for it). With no room left, a dictionary that has none is digested for each value.
    private func pack(_ value: [UInt8], id: Int64, digest: [UInt8], dictionary: [UInt8]) -> [UInt8] {
        let (primed, room) = state.withLock { ($0.primed[digest], $0.primed.count < Self.maxPrimed) }
        if let primed { return StoredBlob.pack(value, dictionaryID: id, compressor: primed) }
        guard room, let compressor = StoredBlob.compressor(dictionary) else {
            return StoredBlob.pack(value, dictionaryID: id, dictionary: dictionary)
        }
        state.withLock { if $0.primed.count < Self.maxPrimed { $0.primed[digest] = compressor } }
        return StoredBlob.pack(value, dictionaryID: id, compressor: compressor)
    }

    /// The row id of the dictionary whose source has `digest`: known from a committed read, found, or inserted now
    /// (in the writer's transaction on SQLite, committed on its own on PostgreSQL: ``DictionaryTable``); nil when the
    /// row under that digest holds another source (a damaged store), or when none could be inserted.
    private func rowID(
        digest: [UInt8],
        source: [UInt8],
        dictionary: [UInt8],
        on c: some DictionaryTable
    ) throws -> Int64? {
        if let known = state.withLock({ $0.idByDigest[digest] }) { return known }
        if let row = try c.dictionaryRow(digest: digest) {
            guard row.source == source else { return nil }
            if c.readsCommitted { remember(Entry(id: row.id, digest: digest, dictionary: dictionary)) }
            return row.id
        }
        guard let inserted = try c.insertDictionary(digest: digest, source: source) else { return nil }
        if inserted.committed { remember(Entry(id: inserted.id, digest: digest, dictionary: dictionary)) }
        return inserted.id
    }

    /// A committed row, kept while there is room.
    private func remember(_ entry: Entry) {
        state.withLock { s in
            guard s.byID.count < Self.maxEntries else { return }
            s.byID[entry.id] = entry
            s.idByDigest[entry.digest] = entry.id
        }
    }

    /// The JSON dictionary to compress with (its digest and bytes): the store's newest, looked for once; else, once
    /// `value` completes the samples, the one they make. Nil while learning.
    private func jsonDictionary(learning value: [UInt8], on c: some DictionaryTable) throws -> ([UInt8], [UInt8])? {
        let (lookedFor, ready) = state.withLock { s in
            (s.jsonLookedFor, s.jsonDictionary.isEmpty ? nil : (s.jsonDigest, s.jsonDictionary))
        }
        if let ready { return ready }
        if !lookedFor {
            let newest = try c.newestJSONSource()
            state.withLock { $0.jsonLookedFor = true }
            if let source = newest, !source.isEmpty {
                let digest = SHA256.hash(source)
                state.withLock { ($0.jsonDigest, $0.jsonDictionary) = (digest, source) }
                return (digest, source)
            }
        }
        return state.withLock { s -> ([UInt8], [UInt8])? in
            s.jsonSamples.append(value)
            guard s.jsonSamples.count >= Self.jsonSamples else { return nil }
            let source = Array(s.jsonSamples.joined().prefix(Self.maxJSONDictionaryBytes))
            (s.jsonDigest, s.jsonDictionary, s.jsonSamples) = (SHA256.hash(source), source, [])
            return (s.jsonDigest, s.jsonDictionary)
        }
    }

    // MARK: Reading

    /// The dictionaries that the values of `rows` name, by id: known ones from the cache, others read on `c` (a
    /// reader's committed rows are remembered; the writer's may still roll back, so are not). An id that has no row
    /// is left out: its value reads as missing.
    func resolve(_ rows: [SQLiteRow], on c: SQLiteConnection, committed: Bool) -> [Int64: [UInt8]] {
        var ids: Set<Int64> = []
        for row in rows {
            for value in row.values {
                if case .blob(let b) = value, let id = StoredBlob.dictionaryID(b) { ids.insert(id) }
            }
        }
        return resolve(ids, on: c, committed: committed)
    }

    /// The dictionaries of `ids`, as ``resolve(_:on:committed:)`` finds them.
    func resolve(_ ids: Set<Int64>, on c: some DictionaryTable, committed: Bool) -> [Int64: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        var found: [Int64: [UInt8]] = state.withLock { s in
            var found: [Int64: [UInt8]] = [:]
            for id in ids { if let e = s.byID[id] { found[id] = e.dictionary } }
            return found
        }
        for id in ids where found[id] == nil {
            guard let entry = try? c.dictionaryEntry(id: id) else { continue }
            found[id] = entry.dictionary
            if committed { remember(entry) }
        }
        return found
    }

    /// The row `id` of `blob_dictionaries` with its dictionary; nil when there is none (or no such table).
    static func load(_ id: Int64, on c: SQLiteConnection) throws -> Entry? { try c.dictionaryEntry(id: id) }

    /// Every dictionary of the store at `c`, by id (`migrate-store`: the table is small); empty when it has none.
    static func all(on c: SQLiteConnection) throws -> [Int64: [UInt8]] {
        let exists = try c.queryOne(
            "SELECT 1 AS y FROM sqlite_master WHERE type = 'table' AND name = 'blob_dictionaries'"
        )
        guard exists != nil else { return [:] }
        var all: [Int64: [UInt8]] = [:]
        for row in try c.query("SELECT id, header FROM blob_dictionaries") {
            guard let id = row.int64("id"), let header = row.blob("header") else { continue }
            all[id] = StoredBlob.dictionary(header: header[...])
        }
        return all
    }
}

/// The table `blob_dictionaries` of one store connection, as ``BlobDictionaries`` reads it and adds to it: SQLite's
/// in the transaction of the connection, PostgreSQL's committed on its own (``PostgresDictionaryTable``).
protocol DictionaryTable {
    /// Whether every row a read on this connection finds is committed (SQLite's writer reads its own rows, which may
    /// still roll back).
    var readsCommitted: Bool { get }
    /// The row stored under `digest`: its id and source.
    func dictionaryRow(digest: [UInt8]) throws -> (id: Int64, source: [UInt8])?
    /// Adds the row `(digest, source)`: its id, and whether it is committed already (else it is with the connection's
    /// transaction); nil when none could be added.
    func insertDictionary(digest: [UInt8], source: [UInt8]) throws -> (id: Int64, committed: Bool)?
    /// The source of the newest JSON dictionary (a source that starts with `{`); nil when there is none.
    func newestJSONSource() throws -> [UInt8]?
    /// The row `id` with its dictionary; nil when there is none (or no such table).
    func dictionaryEntry(id: Int64) throws -> BlobDictionaries.Entry?
}

/// The reads both stores' tables make of `blob_dictionaries`, written once (SQLite binds `$1` by position).
enum DictionaryStatements {
    static let byDigest = "SELECT id, header FROM blob_dictionaries WHERE header_digest = $1"
    static let byID = "SELECT header_digest, header FROM blob_dictionaries WHERE id = $1"
}

extension SQLiteConnection: DictionaryTable {
    var readsCommitted: Bool { false }

    func dictionaryRow(digest: [UInt8]) throws -> (id: Int64, source: [UInt8])? {
        guard
            let row = try queryOne(DictionaryStatements.byDigest, [.blob(digest)])
        else { return nil }
        guard let id = row.int64("id"), let header = row.blob("header") else { return nil }
        return (id, header)
    }

    func insertDictionary(digest: [UInt8], source: [UInt8]) throws -> (id: Int64, committed: Bool)? {
        try run("INSERT INTO blob_dictionaries (header_digest, header) VALUES (?, ?)", [.blob(digest), .blob(source)])
        return (lastInsertRowID, false)
    }

    func newestJSONSource() throws -> [UInt8]? {
        try queryOne(
            "SELECT header FROM blob_dictionaries WHERE substr(header, 1, 1) = x'7B' ORDER BY id DESC LIMIT 1"
        )?
        .blob("header")
    }

    func dictionaryEntry(id: Int64) throws -> BlobDictionaries.Entry? {
        guard
            let row = try queryOne(DictionaryStatements.byID, [.integer(id)]),
            let digest = row.blob("header_digest"), let header = row.blob("header")
        else { return nil }
        return BlobDictionaries.Entry(id: id, digest: digest, dictionary: StoredBlob.dictionary(header: header[...]))
    }
}

/// The connection a ``SQLiteTransaction`` works on: the SQLite connection and its store's ``BlobDictionaries``. Its
/// rows carry the dictionaries their values name, so that ``StoreRow/stored(_:as:)`` reads every stored format.
struct SQLiteStoreConnection: StoreConnection {
    let raw: SQLiteConnection
    let dictionaries: BlobDictionaries
    /// A reader's connection (it sees committed rows only); false for the writer's.
    let committed: Bool

    static var dialect: Dialect { .sqlite }

    @discardableResult
    func run(_ sql: SQL, _ values: [StoreValue]) throws -> Int { try raw.run(sql.sqlite, values.map(bound)) }
    func query(_ sql: SQL, _ values: [StoreValue]) throws -> [SQLiteStoreRow] {
        try query(sql.sqlite, values.map(bound))
    }
    func queryOne(_ sql: SQL, _ values: [StoreValue]) throws -> SQLiteStoreRow? {
        try queryOne(sql.sqlite, values.map(bound))
    }

    /// A value as this store binds it: the gateway's JSON compressed with the store's JSON dictionary.
    private func bound(_ value: StoreValue) throws -> SQLiteValue {
        guard case .compressible(let json, let column) = value else { return value.sqlite }
        return .blob(try dictionaries.packJSON(try column.checked(json), on: raw))
    }

    @discardableResult
    func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int { try raw.run(sql, bindings) }
    func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> [SQLiteStoreRow] {
        try wrap(raw.query(sql, bindings))
    }
    func queryOne(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> SQLiteStoreRow? {
        try wrap(raw.queryOne(sql, bindings).map { [$0] } ?? []).first
    }
    var lastInsertRowID: Int64 { raw.lastInsertRowID }

    private func wrap(_ rows: [SQLiteRow]) -> [SQLiteStoreRow] {
        let found = dictionaries.resolve(rows, on: raw, committed: committed)
        return rows.map { SQLiteStoreRow(row: $0, dictionaries: found) }
    }
}

/// An SQLite row with the dictionaries its values name (``BlobDictionaries/resolve(_:on:committed:)``).
struct SQLiteStoreRow: StoreRow, Sendable {
    let row: SQLiteRow
    let dictionaries: [Int64: [UInt8]]

    func hasColumn(_ column: String) -> Bool { row.hasColumn(column) }
    func isNull(_ column: String) -> Bool { row.isNull(column) }
    func string(_ column: String) -> String? { row.string(column) }
    func int64(_ column: String) -> Int64? { row.int64(column) }
    func bool(_ column: String) -> Bool? { row.bool(column) }
    func bytes(_ column: String) -> [UInt8]? { row.blob(column) }
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead {
        row.blob(column).map { StoredBlob.read($0, as: kind, dictionaries: dictionaries) } ?? .missing
    }
}
