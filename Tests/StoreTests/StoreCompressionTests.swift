import Canonical
import Foundation
import Policy
import Postgres
import SQLite
import StoreTestSupport
import TestSupport
import Testing
import Zlib
import Zstd

@testable import Store

/// The zlib wrapper (`Deflate`, what older stores hold) and what the SQLite store does with compression: bodies and
/// JSON compressed on disk (zstd), read back plain; rows of an older store compressed once by the migration; rows an
/// older gateway compressed with zlib read back; `migrate-store` into PostgreSQL copies the compressed values as they are.
@Suite struct StoreCompressionTests {
    // MARK: The wrapper

    static let hello = Array("hello".utf8)
    /// zlib's own `compress2(level 6)` of "hello", "" and 1,000 × "a" (the same bytes as Python's `zlib.compress`).
    static let helloStream: [UInt8] = [0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15]
    static let emptyStream: [UInt8] = [0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]
    static let aaaStream: [UInt8] = [
        0x78, 0x9c, 0x4b, 0x4c, 0x1c, 0x05, 0xa3, 0x60, 0x14, 0x0c, 0x77, 0x00, 0x00, 0xf9, 0xd8, 0x7a, 0xf8,
    ]

    /// The code of the error `body` throws; nil when it returns.
    static func code(_ body: () throws -> [UInt8]) -> DeflateError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as DeflateError {
            return error.code
        } catch {
            return .zlib
        }
    }

    @Test func fixedVectorsCompressAndDecompress() throws {
        #expect(try Deflate.compress(Self.hello) == Self.helloStream)
        #expect(try Deflate.compress([]) == Self.emptyStream)
        #expect(try Deflate.compress([UInt8](repeating: 0x61, count: 1_000)) == Self.aaaStream)
        #expect(try Deflate.decompress(Self.helloStream, limit: 5) == Self.hello)
        #expect(try Deflate.decompress(Self.emptyStream, limit: 0) == [])
        #expect(try Deflate.decompress(Self.aaaStream, limit: 1_000) == [UInt8](repeating: 0x61, count: 1_000))
        // Every level's stream starts with 0x78 (what the store tells compressed values by) and round-trips.
        var text = Array(repeating: Array(#"{"id":"e-1","kind":"renewal","bundleID":"com.example"},"#.utf8), count: 500)
            .flatMap { $0 }
        text += (0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        for level in Int32(0)...9 {
            let packed = try Deflate.compress(text, level: level)
            #expect(packed.first == Deflate.headerByte, "level \(level)")
            #expect(try Deflate.decompress(packed, limit: text.count) == text, "level \(level)")
        }
    }

    @Test func corruptTruncatedAndOversizedInputThrows() throws {
        #expect(Self.code { try Deflate.decompress([], limit: 100) } == .truncated)
        #expect(Self.code { try Deflate.decompress(Array(Self.helloStream.dropLast()), limit: 100) } == .truncated)
        #expect(Self.code { try Deflate.decompress(Array(Self.helloStream.prefix(2)), limit: 100) } == .truncated)
        #expect(Self.code { try Deflate.decompress(Array("{\"json\":1}".utf8), limit: 100) } == .corrupt)
        #expect(Self.code { try Deflate.decompress([0x78, 0x9c, 0xff, 0xff], limit: 100) } == .corrupt)
        var badChecksum = Self.helloStream
        badChecksum[badChecksum.count - 1] ^= 1
        #expect(Self.code { try Deflate.decompress(badChecksum, limit: 100) } == .corrupt)
        #expect(Self.code { try Deflate.decompress(Self.helloStream + [0], limit: 100) } == .corrupt)
        #expect(Self.code { try Deflate.decompress(Self.helloStream, limit: 4) } == .tooLarge)
        #expect(Self.code { try Deflate.decompress(Self.aaaStream, limit: 999) } == .tooLarge)
        #expect(Self.code { try Deflate.decompress(Self.helloStream, limit: -1) } == .invalidArgument)
        #expect(Self.code { try Deflate.compress(Self.hello, level: 10) } == .invalidArgument)
        // A bomb: 64 MiB of zeros in about 64 KiB stops at the limit, without producing the rest.
        let bomb = try Deflate.compress([UInt8](repeating: 0, count: 64 * 1_048_576), level: 9)
        #expect(bomb.count < 128 * 1_024)
        #expect(Self.code { try Deflate.decompress(bomb, limit: 1_048_576) } == .tooLarge)
        // Every prefix and every single-bit flip of a stream: an error or bytes, never a trap or a hang.
        let stream = try Deflate.compress(Array(String(repeating: "{\"a\":[1,2,3],\"b\":\"xyz\"}", count: 20).utf8))
        for n in 0..<stream.count {
            #expect(Self.code { try Deflate.decompress(Array(stream.prefix(n)), limit: 1_000) } != nil)
        }
        for i in 0..<stream.count * 8 {
            var flipped = stream
            flipped[i / 8] ^= 1 << UInt8(i % 8)
            _ = try? Deflate.decompress(flipped, limit: 1_000)
        }
        #expect(DeflateError.Code.corrupt.rawValue == "deflate.corrupt")
    }

    @Test func storedBlobsAreCompressedOnlyWhenSmallerAndAlwaysReadBack() throws {
        let json = Array(String(repeating: #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9"}"#, count: 40).utf8)
        let packed = StoredBlob.pack(json)
        #expect(packed.starts(with: Zstd.magic) && packed.count < json.count / 4)
        #expect(StoredBlob.unpack(packed) == json)
        // Too short to gain: stored as it is.
        #expect(StoredBlob.pack(Array("{}".utf8)) == Array("{}".utf8))
        #expect(StoredBlob.pack([]) == [])
        #expect(StoredBlob.unpack(Array("{}".utf8)) == Array("{}".utf8))
        // A plain value that starts like a compressed one is always compressed, so that it never reads as one.
        for start: [UInt8] in [
            Array("x".utf8), [0x28, 0xB5, 0x2F, 0xFD], [0xD1, 0, 0, 0, 1, 2], [0xD2, 0, 0, 0, 1, 2],
        ] {
            #expect(StoredBlob.pack(start).starts(with: Zstd.magic))
            #expect(StoredBlob.unpack(StoredBlob.pack(start)) == start)
        }
        // zlib streams, as a gateway wrote them before zstd, read back.
        #expect(StoredBlob.unpack(Self.helloStream) == Self.hello)
        #expect(StoredBlob.unpack(Array(Self.helloStream.dropLast())) == nil)
        // A damaged stream reads as missing, never as compressed bytes.
        #expect(StoredBlob.unpack(Array(packed.dropLast(3))) == nil)
        #expect(StoreValue.compressible(json).sqlite == .blob(packed))
        #expect(StoreValue.compressible(json).postgres == .bytea(packed))
    }

    // MARK: The SQLite store

    static let bundle = "com.example.gateway"

    /// A body of realistic size (a signed payload is about 5–10 KB of base64) and an event with its fields filled.
    static func notification(_ n: Int) -> JournalItem {
        let payload = (0..<6_000).map { i in
            UInt8(ascii: "A") + UInt8(truncatingIfNeeded: (i &* 7 &+ n) % 26)
        }
        let body = Array(#"{"signedPayload":""#.utf8) + payload + Array(#""}"#.utf8)
        var item = JournalItem(key: "compressed-\(n)", version: .v2, receivedAt: 100 + Int64(n), body: body)
        (item.bundleID, item.environment, item.notificationType) = (bundle, .sandbox, "DID_RENEW")
        var event = StoreTests.event("e-compressed-\(n)", date: 2_000 + Int64(n))
        event.productID = "com.example.gateway.premium.monthly"
        event.transactionID = "20000000\(n)"
        event.subscriptionGroupID = "21345678"
        event.purchaseDate = 1_700_000_000_000
        event.expiresDate = 1_702_592_000_000
        event.currency = "EUR"
        event.priceMilli = 9_990
        item.events = [event]
        return item
    }

    /// A comparison with both paths' snapshots (the ledger's JSON columns), beside `notification(_:)`'s rows.
    static func recordComparison(_ store: any GatewayStore) throws {
        @Sendable func snapshot(_ source: EventSource) -> OutcomeSnapshot {
            OutcomeSnapshot(
                source: source,
                bundleID: bundle,
                environment: .sandbox,
                originalTransactionID: "otid-1",
                productID: "com.example.gateway.premium.monthly",
                transactionID: "2000000012345678",
                expiresDate: 1_702_592_000_000,
                revocationDate: nil,
                gracePeriodExpiresDate: nil,
                autoRenew: true,
                autoRenewProductID: "com.example.gateway.premium.monthly",
                inBillingRetry: false,
                expirationIntent: nil,
                observedAt: 400
            )
        }
        let key = StoreMigrationTests.subscription
        _ = try store.write { tx in
            try tx.recordComparison(
                LedgerEntry(
                    subscription: key,
                    comparedAt: 400,
                    outcome: .agree,
                    fields: [],
                    v1: snapshot(.v1Receipt),
                    v2: snapshot(.v2)
                )
            )
        }
    }

    static func raw(_ path: String, _ sql: String) throws -> [[UInt8]] {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        return try db.read { c in try c.query(sql).map { $0.blob($0.columns[0]) ?? [] } }
    }

    @Test func aBodyAndAnEventAreCompressedOnDiskAndReadBackIdentical() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let store = try SQLiteStore(path: path)
        let item = Self.notification(1)
        _ = try store.write { tx in
            try tx.seedAuthority(
                [AuthorityEntry(bundleID: Self.bundle, environment: .sandbox, authority: .v2, origin: .config)],
                now: 1
            )
        }
        _ = try store.write { tx in try tx.journal(item, routing: TestRouting.routing(), now: 100) }
        let (entries, events, states, payload) = try store.read { tx in
            (
                try tx.journalEntries(id: nil, key: nil, limit: 10),
                try tx.events(id: nil, originalTransactionID: nil, limit: 10),
                try tx.subscriptionStates(originalTransactionID: "otid-1"),
                try tx.deliveryPayload(eventID: "e-compressed-1", withBody: true)
            )
        }
        store.close()

        let json = CanonicalJSON.encode(item.events[0])
        #expect(entries.map(\.body) == [item.body])
        #expect(events.map(\.json) == [json] && events.map(\.event) == item.events)
        #expect(states.count == 1 && states[0].json.first == UInt8(ascii: "{"))
        #expect(payload?.eventJSON == json && payload?.rawBody == item.body)
        #expect(payload?.stateJSON == states.first?.json)

        let body = try Self.raw(path, "SELECT body FROM journal")
        #expect(body.count == 1 && body[0].starts(with: Zstd.magic) && body[0].count < item.body.count / 2)
        let eventJSON = try Self.raw(path, "SELECT json FROM events")
        #expect(eventJSON.count == 1 && eventJSON[0].starts(with: Zstd.magic) && eventJSON[0].count < json.count)
        #expect(try Zstd.decompress(eventJSON[0], limit: 1 << 20) == json)
        let stateJSON = try Self.raw(path, "SELECT json FROM subscription_state")
        #expect(stateJSON.count == 1 && stateJSON[0] == StoredBlob.pack(states[0].json))
    }

    /// A store as the gateway left it before compression: every large value plain (also those compressed with a
    /// preset dictionary), no `blob_dictionaries`, schema version 10.
    static func decompressInPlace(_ path: String) throws {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        try db.write { c in
            try rewriteValues(on: c) { _, plain, _ in plain }
            try c.execute("DROP TABLE IF EXISTS blob_dictionaries")
            // Version 10's indexes (step 13 dropped four and made the outbox's state indexes partial, step 14 dropped
            // the events by path), without step 15's receipt tables, step 16's delivery log, step 17's refund
            // requests, step 18's history pages, step 19's group seats and step 21's customers' index (step 20
            // altered the delivery log, gone; the ledger's index of step 21 goes with its table).
            try c.execute(
                """
                DROP INDEX outbox_pending; DROP INDEX outbox_dead;
                CREATE INDEX events_bundle_path ON events(bundle_id, environment, path, created_at);
                CREATE INDEX journal_received ON journal(received_at); CREATE INDEX events_created ON events(created_at);
                CREATE INDEX events_journal ON events(journal_id); CREATE INDEX outbox_due ON outbox(state, next_attempt_at);
                CREATE INDEX outbox_downstream_due ON outbox(downstream, state, next_attempt_at);
                DROP TABLE receipt_modes; DROP TABLE receipt_histories; DROP TABLE receipt_ledger;
                DROP TABLE delivery_attempts; DROP INDEX outbox_delivered_created; DROP INDEX outbox_undelivered_created;
                ALTER TABLE outbox DROP COLUMN replayed_at; DROP TABLE consumption_jobs; DROP TABLE receipt_history_pages;
                DROP INDEX subscription_state_groups; DROP INDEX events_seats; ALTER TABLE subscription_state DROP COLUMN seats;
                DROP INDEX subscription_state_customers;
                """
            )
            try c.run("DELETE FROM schema_migrations WHERE version > 10")
        }
    }

    /// Every compressed value of the store at `path` as a gateway wrote it before zstd: a zlib stream, with the preset
    /// dictionary (marker 0xD1) where the value had one. Returns how many of each it wrote.
    static func recompressWithZlib(_ path: String) throws -> (plain: Int, dictionary: Int) {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        var counts = (plain: 0, dictionary: 0)
        try db.write { c in
            try rewriteValues(on: c) { stored, plain, dictionaries in
                if let (id, zstd) = StoredBlob.dictionaryReference(stored) {
                    #expect(zstd)
                    let dictionary = try #require(dictionaries[id])
                    counts.dictionary += 1
                    return [StoredBlob.zlibDictionaryMarker] + stored[1..<StoredBlob.dictionaryHeaderBytes]
                        + (try Deflate.compress(plain, dictionary: dictionary, level: 1))
                }
                guard Zstd.looksCompressed(stored) else { return nil }
                counts.plain += 1
                return try Deflate.compress(plain, level: 1)
            }
        }
        return counts
    }

    /// The columns SQLite stores compressed.
    static let compressedColumns = [
        ("journal", "body"), ("events", "json"), ("subscription_state", "json"), ("snapshots", "json"),
        ("compare_ledger", "v1_json"), ("compare_ledger", "v2_json"),
    ]

    /// Every value of `compressedColumns` on `c` replaced by what `rewrite` makes of it (the value as stored, as
    /// read, and the store's dictionaries); nil leaves it as it is.
    static func rewriteValues(
        on c: SQLiteConnection,
        _ rewrite: (_ stored: [UInt8], _ plain: [UInt8], _ dictionaries: [Int64: [UInt8]]) throws -> [UInt8]?
    ) throws {
        let dictionaries = try BlobDictionaries.all(on: c)
        for (table, column) in compressedColumns {
            try StoredValueRewriter.rewrite(on: c, table: table, column: column) { _, stored in
                let plain = try #require(StoredBlob.unpack(stored, dictionaries: dictionaries))
                return try rewrite(stored, plain, dictionaries)
            }
        }
    }

    /// A store at `path` with the migration tests' contents, `notifications` real-bodied notifications and a
    /// comparison, closed; what it held.
    static func populatedStore(at path: String, notifications: Int) throws -> StoreMigrationTests.Contents {
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        try StoreMigrationTests.populate(store)
        _ = try store.write { tx in
            for n in 0..<notifications {
                _ = try tx.journal(Self.notification(n), routing: TestRouting.routing(), now: 100)
            }
        }
        try Self.recordComparison(store)
        return try StoreMigrationTests.Contents(store)
    }

    /// A store an older gateway wrote, its values zlib streams with and without a dictionary, reads back identical;
    /// the values written after it are zstd frames beside them.
    @Test func valuesAnOlderGatewayCompressedWithZlibReadBack() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/zlib.db"
        let before = try Self.populatedStore(at: path, notifications: 8)

        let counts = try Self.recompressWithZlib(path)
        #expect(counts.plain > 0 && counts.dictionary > 0, "\(counts)")
        let values =
            try Self.raw(path, "SELECT body FROM journal WHERE body IS NOT NULL")
            + Self.raw(path, "SELECT json FROM events")
        #expect(!values.contains { $0.starts(with: Zstd.magic) || $0.first == StoredBlob.zstdDictionaryMarker })
        #expect(values.contains { $0.first == StoredBlob.zlibDictionaryMarker })

        let reopened = try SQLiteStore(path: path)
        #expect(try StoreMigrationTests.Contents(reopened) == before)
        _ = try reopened.write { tx in try tx.journal(Self.notification(8), routing: TestRouting.routing(), now: 200) }
        let entries = try reopened.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 100) }
        reopened.close()
        #expect(entries.count == before.journal.count + 1)
        #expect(entries.contains { $0.body == Self.notification(8).body })
        let newest = try Self.raw(path, "SELECT body FROM journal ORDER BY id DESC LIMIT 1")
        #expect(
            newest.count == 1
                && (newest[0].starts(with: Zstd.magic) || newest[0].first == StoredBlob.zstdDictionaryMarker)
        )
    }

    @Test func anOldPlainStoreIsCompressedByTheMigrationAndReadsBackIdentical() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/old.db"
        let before = try Self.populatedStore(at: path, notifications: 5)

        try Self.decompressInPlace(path)
        let plainBodies = try Self.raw(path, "SELECT body FROM journal WHERE body IS NOT NULL ORDER BY id")
        #expect(plainBodies.count == 7 && plainBodies.allSatisfy { $0.first == UInt8(ascii: "{") })

        let upgraded = try SQLiteStore(path: path)
        let after = try StoreMigrationTests.Contents(upgraded)
        // The old store had no receipt tables: the upgrade makes them empty.
        var expected = before
        (expected.receiptModes, expected.receiptHistory, expected.receiptLedger) = ([], nil, [])
        (expected.receiptPages, expected.fetching) = ([], nil)
        expected.refundRequests = []
        #expect(after == expected)
        #expect(after.journal.count == 7 && after.ledger.count == 2 && after.snapshots[1] != nil)
        #expect(after.ledger.last?.v1 != nil && after.ledger.last?.v2 != nil)
        upgraded.close()
        let versions = try Self.raw(path, "SELECT CAST(version AS BLOB) FROM schema_migrations ORDER BY version")
        #expect(versions.last == StoreSchema.sqlite.last.map { Array(String($0.version).utf8) })

        let bodies = try Self.raw(path, "SELECT body FROM journal WHERE body IS NOT NULL ORDER BY id")
        #expect(zip(bodies, plainBodies).allSatisfy { $0 == StoredBlob.pack($1) })
        // The five large ones; the two short ones gain nothing.
        #expect(bodies.filter { $0.starts(with: Zstd.magic) }.count == 5)
        for (table, column) in [
            ("events", "json"), ("subscription_state", "json"), ("snapshots", "json"), ("compare_ledger", "v1_json"),
            ("compare_ledger", "v2_json"),
        ] {
            for stored in try Self.raw(path, "SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL") {
                #expect(stored.first != UInt8(ascii: "{") || StoredBlob.pack(stored) == stored, "\(table).\(column)")
            }
        }
    }

    // MARK: PostgreSQL

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func migrateStoreCopiesTheCompressedValuesAsTheyAreAndPostgreSQLReadsThem() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.db"
        let sqlite = try SQLiteStore(path: path)
        try StoreMigrationTests.populate(sqlite)
        let items = (0..<3).map(Self.notification)
        _ = try sqlite.write { tx in
            for item in items { _ = try tx.journal(item, routing: TestRouting.routing(), now: 100) }
        }
        try Self.recordComparison(sqlite)
        let before = try StoreMigrationTests.Contents(sqlite)
        sqlite.close()
        #expect(try Self.raw(path, "SELECT body FROM journal").filter { $0.starts(with: Zstd.magic) }.count == 3)
        let columns = [
            ("journal", "body", "id"), ("events", "json", "rowid"), ("subscription_state", "json", "rowid"),
            ("snapshots", "json", "rowid"), ("compare_ledger", "v1_json", "id"), ("compare_ledger", "v2_json", "id"),
            ("receipt_histories", "json", "rowid"), ("receipt_ledger", "v1_json", "id"),
        ]
        var stored: [String: [[UInt8]]] = [:]
        for (table, column, order) in columns {
            stored[table + "." + column] = try Self.raw(
                path,
                "SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL ORDER BY \(order)"
            )
        }
        let dictionaries = try Self.raw(path, "SELECT header FROM blob_dictionaries ORDER BY id")
        #expect(!dictionaries.isEmpty)

        let schema = try TestSchema()
        let report = try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: schema.url)
        #expect(report.verified)
        let postgres = try PostgresStore(url: schema.url)
        #expect(try StoreMigrationTests.Contents(postgres) == before)
        postgres.close()

        // On disk in PostgreSQL: the bytes the SQLite store held, compressed, and the dictionaries they name under the
        // same ids.
        let c = try PostgresConnection(schema.url, label: "compression test")
        defer { c.close() }
        for (table, column, order) in columns {
            let values = try c.query(
                "SELECT \(column) AS v FROM \(table) WHERE \(column) IS NOT NULL ORDER BY \(order == "rowid" ? (table == "events" ? "seq" : "1") : order)"
            ).compactMap { $0.bytes("v") }
            let expected = stored[table + "." + column] ?? []
            #expect(!values.isEmpty, "\(table).\(column)")
            #expect(Set(values) == Set(expected), "\(table).\(column)")
            #expect(values.contains { $0.first != UInt8(ascii: "{") }, "\(table).\(column)")
        }
        let copied = try c.query("SELECT header FROM blob_dictionaries ORDER BY id").compactMap { $0.bytes("header") }
        #expect(copied == dictionaries)
    }
}
