import Canonical
import Foundation
import Policy
import Postgres
import TestSupport
import Testing
import Zstd

@testable import Store

/// The PostgreSQL store keeps its bodies and JSON compressed (``StoredBlob``, its migration 17), and a store an older
/// gateway wrote — every value plain, no `blob_dictionaries` — is compressed once at its first open
/// (``PostgresCompaction``): every value reads back as it was, an interrupted upgrade resumes, and plain and compressed
/// values read side by side.
@Suite(
    .serialized,
    .enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)")
)
struct PostgresCompactionTests {
    /// Events an older gateway wrote, plain, inserted with SQL: more than two batches.
    static let bulk = PostgresCompaction.batchRows * 2 + 500
    static let compaction = StoreSchema.postgres.first { $0.compactsRows }!

    static func bulkID(_ n: Int) -> String { "bulk-" + String(repeating: "0", count: 5 - String(n).count) + String(n) }

    /// The JSON of the bulk event `n`, as the gateway encodes it.
    static func bulkJSON(_ n: Int) -> [UInt8] {
        var event = StoreTests.event(bulkID(n), date: 5_000)
        event.originalTransactionID = "otid-bulk"
        return CanonicalJSON.encode(event)
    }

    /// The columns the upgrade compresses, each with a way to find its rows again.
    static var columns: [(table: String, column: String)] {
        PostgresCompaction.tables.flatMap { t in t.columns.map { (t.name, $0.name) } }
    }

    /// A store as an older gateway left it: written through a store (every kind of row, V2 bodies of Apple's
    /// fixtures), then every value rewritten plain with SQL, `blob_dictionaries` dropped and migration 17 forgotten,
    /// and `bulk` more events inserted plain. Returns what the store read before (everything the interface shows).
    static func oldStore(_ schema: TestSchema) throws -> StoreMigrationTests.Contents {
        let store = try PostgresStore(url: schema.url)
        try StoreMigrationTests.populate(store)
        _ = try store.write { tx in
            for (n, sample) in StoreDictionaryTests.v2Bodies().enumerated() {
                var item = JournalItem(key: "fixture-\(n)", version: .v2, receivedAt: 200 + Int64(n), body: sample.body)
                (item.bundleID, item.environment) = (StoreCompressionTests.bundle, .sandbox)
                _ = try tx.journal(item, routing: TestRouting.routing(), now: 200)
            }
            for n in 0..<3 {
                _ = try tx.journal(StoreCompressionTests.notification(n), routing: TestRouting.routing(), now: 100)
            }
        }
        try StoreCompressionTests.recordComparison(store)
        let before = try StoreMigrationTests.Contents(store)
        store.close()

        let c = try schema.connect()
        defer { c.close() }
        #expect(try makePlain(c) > 20)
        let template = String(decoding: bulkJSON(0), as: UTF8.self)
        let event = StoreTests.event(bulkID(0), date: 5_000)
        try c.run(
            """
            INSERT INTO events (id, path, source, kind, bundle_id, environment, original_transaction_id, event_date,
                                authoritative, created_at, json)
            SELECT 'bulk-' || lpad(g::text, 5, '0'), 'v2', $1, $2, $3, 'sandbox', 'otid-bulk', 5000, true, 5000,
                   convert_to(replace($4, $5, 'bulk-' || lpad(g::text, 5, '0')), 'UTF8')
            FROM generate_series(0, $6::integer - 1) g
            """,
            [
                .text(event.source.rawValue), .text(event.kind.rawValue), .text(event.bundleID ?? ""),
                .text(template), .text(bulkID(0)), .int64(Int64(bulk)),
            ]
        )
        #expect(try plainValues(c) == total(c))
        return before
    }

    /// Rewrites every compressed value of the store on `c` plain, drops `blob_dictionaries` and forgets migration 17:
    /// the store as a gateway before it left it. Returns the values rewritten.
    @discardableResult
    static func makePlain(_ c: PostgresConnection) throws -> Int {
        var dictionaries: [Int64: [UInt8]] = [:]
        for row in try c.query("SELECT id, header FROM blob_dictionaries") {
            if let id = row.int64("id"), let header = row.bytes("header") {
                dictionaries[id] = StoredBlob.dictionary(header: header)
            }
        }
        var rewritten = 0
        for (table, column) in columns {
            var after = "(0,0)"
            while true {
                let rows = try c.query(
                    """
                    SELECT ctid::text AS k, \(column) AS v FROM \(table) WHERE ctid > $1::tid AND \(column) IS NOT NULL
                    ORDER BY ctid LIMIT 500
                    """,
                    [.text(after)]
                )
                guard let last = rows.last?.string("k") else { break }
                after = last
                var values: [PostgresValue] = []
                for row in rows {
                    let stored = try #require(row.bytes("v"))
                    guard StoredBlob.looksStored(stored) else { continue }
                    values += [row["k"], .bytea(try #require(StoredBlob.unpack(stored, dictionaries: dictionaries)))]
                }
                guard !values.isEmpty else { continue }
                let tuples = (0..<values.count / 2).map { "($\($0 * 2 + 1)::tid, $\($0 * 2 + 2)::bytea)" }
                _ = try c.query(
                    """
                    UPDATE \(table) AS t SET \(column) = v.plain FROM (VALUES \(tuples.joined(separator: ", "))) AS v(k, plain)
                    WHERE t.ctid = v.k
                    """,
                    values,
                    prepared: false
                )
                rewritten += values.count / 2
            }
        }
        try c.execute(
            """
            DROP TABLE blob_dictionaries;
            DELETE FROM schema_migrations WHERE version = \(compaction.version);
            ALTER TABLE journal ALTER COLUMN body SET STORAGE EXTENDED;
            ALTER TABLE events ALTER COLUMN json SET STORAGE EXTENDED
            """
        )
        return rewritten
    }

    /// Values of the compressed columns that are stored plain (JSON, starting with `{`).
    static func plainValues(_ c: PostgresConnection) throws -> Int {
        try columns.reduce(0) { n, tc in
            n
                + Int(
                    try c.queryOne(
                        "SELECT count(*) AS n FROM \(tc.table) WHERE substring(\(tc.column) FROM 1 FOR 1) = '\\x7b'::bytea"
                    )?.int64("n") ?? 0
                )
        }
    }

    /// Values of the compressed columns, not NULL.
    static func total(_ c: PostgresConnection) throws -> Int {
        try columns.reduce(0) { n, tc in
            n
                + Int(
                    try c.queryOne("SELECT count(\(tc.column)) AS n FROM \(tc.table)")?.int64("n") ?? 0
                )
        }
    }

    /// Every value compressed but those compression does not make smaller (a short JSON object).
    static func expectCompressed(_ c: PostgresConnection) throws {
        let left = try columns.flatMap { table, column in
            try c.query("SELECT \(column) AS v FROM \(table) WHERE substring(\(column) FROM 1 FOR 1) = '\\x7b'::bytea")
                .compactMap { $0.bytes("v") }
        }
        #expect(left.allSatisfy { StoredBlob.pack($0) == $0 }, "\(left.count) plain values left")
    }

    static func recorded(_ c: PostgresConnection) throws -> Bool {
        try c.queryOne("SELECT 1 AS y FROM schema_migrations WHERE version = $1", [.int64(Int64(compaction.version))])
            != nil
    }

    /// What the interface shows, but the bulk events (``expectBulk(_:)``).
    static func contents(_ store: PostgresStore) throws -> StoreMigrationTests.Contents {
        var contents = try StoreMigrationTests.Contents(store)
        contents.events.removeAll { $0.event.originalTransactionID == "otid-bulk" }
        return contents
    }

    /// Every bulk event reads back with its JSON.
    static func expectBulk(_ store: PostgresStore) throws {
        let events = try store.read { tx in
            try tx.events(id: nil, originalTransactionID: "otid-bulk", limit: .max)
        }
        #expect(events.count == bulk)
        #expect(events.map(\.json) == (0..<bulk).map(bulkJSON))
    }

    @Test func anOldStoreIsCompressedAtItsFirstOpenAndReadsBackAsItWas() throws {
        let schema = try TestSchema()
        let before = try Self.oldStore(schema)
        let c = try schema.connect()
        defer { c.close() }
        #expect(try !Self.recorded(c))
        let plainBytes = try c.queryOne("SELECT sum(octet_length(json)) AS n FROM events")?.int64("n") ?? 0

        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        #expect(try Self.contents(store) == before)
        try Self.expectBulk(store)
        #expect(try Self.recorded(c))
        try Self.expectCompressed(c)
        let bytes = try c.queryOne("SELECT sum(octet_length(json)) AS n FROM events")?.int64("n") ?? 0
        #expect(bytes * 4 < plainBytes, "events.json: \(bytes) bytes, \(plainBytes) plain")
        // The V2 bodies name their certificate chain's dictionary, the JSON the learned one.
        let named = try c.queryOne(
            "SELECT count(*) AS n FROM journal WHERE substring(body FROM 1 FOR 1) = '\\xd2'::bytea AND notification_key LIKE 'fixture-%'"
        )?.int64("n")
        #expect(named == Int64(StoreDictionaryTests.v2Bodies().count))
        #expect(try c.queryOne("SELECT count(*) AS n FROM blob_dictionaries")?.int64("n") ?? 0 >= 2)
        // The columns are stored as they come: PostgreSQL does not try to compress them again.
        let storage = try c.query(
            """
            SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'json'
            """
        )
        #expect(storage.first?.string("attstorage") == "e")

        // A second open finds nothing to do, and a new notification is stored compressed beside the old ones.
        let again = try PostgresStore(url: schema.url)
        defer { again.close() }
        _ = try again.write { tx in
            try tx.journal(StoreCompressionTests.notification(9), routing: TestRouting.routing(), now: 900)
        }
        let new = try c.queryOne("SELECT body FROM journal WHERE notification_key = 'compressed-9'")?.bytes("body")
        #expect(new.map(StoredBlob.looksStored) == true)
        #expect(
            try store.read { tx in try tx.journalEntries(id: nil, key: "compressed-9", limit: 1) }.first?.body
                == StoreCompressionTests.notification(9).body
        )
    }

    @Test func anInterruptedUpgradeResumesAtTheNextOpen() throws {
        let schema = try TestSchema()
        let before = try Self.oldStore(schema)
        let c = try schema.connect()
        defer { c.close() }
        let total = try Self.total(c)

        // The migration's DDL, then two batches only: the journal, then the first thousand events.
        try c.execute(Self.compaction.sql)
        let first = try PostgresCompaction.run(
            c,
            version: Self.compaction.version,
            dictionaries: BlobDictionaries(),
            maxBatches: 2
        )
        #expect(!first.finished)
        #expect(try !Self.recorded(c))
        let left = try Self.plainValues(c)
        #expect(left >= Self.bulk - PostgresCompaction.batchRows && left < total)
        let early = try c.query("SELECT id, json, xmin::text AS v FROM events ORDER BY seq LIMIT 10")
        #expect(early.allSatisfy { $0.bytes("json").map(StoredBlob.looksStored) == true })

        // The next open finishes it: what the first run compressed is left as it is, the rest is compressed.
        let store = try PostgresStore(url: schema.url)
        defer { store.close() }
        #expect(try Self.recorded(c))
        #expect(try c.query("SELECT id, json, xmin::text AS v FROM events ORDER BY seq LIMIT 10") == early)
        try Self.expectCompressed(c)
        #expect(try Self.contents(store) == before)
        try Self.expectBulk(store)
    }

    @Test func plainAndCompressedValuesReadSideBySide() throws {
        let f = try Fixture(.postgres)
        let schema = try #require(f.schema)
        let events = (0..<4).map { StoreTests.event("side-\($0)", date: 1_000 + Int64($0)) }
        try StoreTests.storeEvents(f, Array(events.prefix(2)))
        // An older gateway still running writes two more, plain.
        let c = try schema.connect()
        defer { c.close() }
        for (n, event) in events.suffix(2).enumerated() {
            try c.run(
                """
                INSERT INTO events (id, path, source, kind, bundle_id, environment, original_transaction_id, event_date,
                                    authoritative, created_at, json)
                VALUES ($1, 'v2', $2, $3, $4, 'sandbox', 'otid-1', $5, true, 1, $6)
                """,
                [
                    .text(event.id), .text(event.source.rawValue), .text(event.kind.rawValue),
                    .text(event.bundleID ?? ""), .int64(1_002 + Int64(n)), .bytea(CanonicalJSON.encode(event)),
                ]
            )
        }
        // And the subscription's state, plain.
        let state = try #require(
            try f.store.read { tx in try tx.subscriptionStates(originalTransactionID: "otid-1") }.first?.json
        )
        #expect(try c.query("SELECT json FROM subscription_state").first?.bytes("json") != state)
        try c.run("UPDATE subscription_state SET json = $1", [.bytea(state)])
        let stored = try c.query("SELECT json FROM events ORDER BY seq").compactMap { $0.bytes("json") }
        #expect(stored.map(StoredBlob.looksStored) == [true, true, false, false])

        let read = try f.store.read { tx in try tx.events(id: nil, originalTransactionID: "otid-1", limit: 10) }
        #expect(read.map(\.json) == events.map(CanonicalJSON.encode))
        let history = try f.store.read { tx in
            try tx.subscriptionHistory(originalTransactionID: "otid-1", maxEvents: 10, maxBytes: 1_048_576)
        }
        #expect(history.events.map(\.damage) == [nil, nil, nil, nil])
        #expect(history.states.map(\.json) == [state])
    }

    /// A writer whose dictionary row cannot be committed (no session to be had) stores the value compressed without
    /// the dictionary, and it reads back; the next values do not try another session at once.
    @Test func aDictionaryThatCannotBeAddedLeavesTheValueCompressedWithoutIt() throws {
        let f = try Fixture(.postgres)
        let schema = try #require(f.schema)
        let c = try schema.connect()
        defer { c.close() }
        let failing = PostgresDictionaryInserter(url: "postgresql://nobody@127.0.0.1:1/none", label: "test")
        let connection = PostgresStoreConnection(raw: c, dictionaries: BlobDictionaries(), inserter: failing)
        let values = (0..<6).map { CanonicalJSON.encode(StoreTests.event("lost-\($0)", date: Int64($0))) }
        let started = ContinuousClock.now
        let packed = try c.transaction { _ in try values.map { try connection.packJSON($0, as: .event) } }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(packed.allSatisfy { $0.starts(with: Zstd.magic) })
        #expect(zip(packed, values).allSatisfy { StoredBlob.unpack($0, as: .event) == $1 })
        #expect(try c.queryOne("SELECT count(*) AS n FROM blob_dictionaries")?.int64("n") == 0)
        // With a session to be had, the store's values name the dictionary it adds.
        try StoreTests.storeEvents(f, (0..<6).map { StoreTests.event("kept-\($0)", date: Int64($0)) })
        let named = try c.query("SELECT json FROM events ORDER BY seq").compactMap { $0.bytes("json") }
            .filter { StoredBlob.dictionaryID($0) != nil }
        #expect(!named.isEmpty)
    }

    @Test func instancesOpeningAnOldStoreAtOnceCompressItOnce() throws {
        let schema = try TestSchema()
        let before = try Self.oldStore(schema)
        let opens = PostgresStoreTests.together((0..<3).map { _ in { try PostgresStore(url: schema.url) } })
        let stores = try opens.map { try $0.get() }
        defer { for store in stores { store.close() } }
        let c = try schema.connect()
        defer { c.close() }
        #expect(try Self.recorded(c))
        try Self.expectCompressed(c)
        for store in stores { #expect(try Self.contents(store) == before) }
        try Self.expectBulk(stores[2])
    }
}
