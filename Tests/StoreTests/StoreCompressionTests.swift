import Canonical
import Foundation
import Postgres
import SQLite
import TestSupport
import Testing
import Zlib

@testable import Store

/// The zlib wrapper (`Deflate`) and what the SQLite store does with it: bodies and JSON compressed on disk, read back
/// plain; rows of an older store compressed once by the migration; PostgreSQL (and `migrate-store` into it) plain.
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

    /// A primed compressor writes the stream a fresh one with the same dictionary and level writes, byte for byte,
    /// however many values it compressed before and from however many threads; the stream reads back only with the
    /// dictionary.
    @Test func aPrimedCompressorWritesWhatAFreshOneWrites() async throws {
        let dictionary = Array(
            String(repeating: #"{"bundle_id":"com.example.app","product_id":"monthly"}"#, count: 8).utf8
        )
        let values: [[UInt8]] = [
            [], Self.hello, Array(#"{"bundle_id":"com.example.app","product_id":"yearly","n":1}"#.utf8),
            (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) },
        ]
        for level: Int32 in [1, 6] {
            let primed = try Deflate.Primed(dictionary: dictionary, level: level)
            #expect(primed.dictionaryBytes == dictionary.count)
            for _ in 0..<2 {
                for value in values {
                    let stream = try primed.compress(value)
                    #expect(stream == (try Deflate.compress(value, dictionary: dictionary, level: level)))
                    #expect(try Deflate.decompress(stream, dictionary: dictionary, limit: value.count) == value)
                    #expect(Self.code { try Deflate.decompress(stream, limit: value.count) } == .corrupt)
                }
            }
            let expected = try Deflate.compress(values[2], dictionary: dictionary, level: level)
            let same = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<4 {
                    group.addTask { (0..<50).allSatisfy { _ in (try? primed.compress(values[2])) == expected } }
                }
                return await group.reduce(true) { $0 && $1 }
            }
            #expect(same)
        }
        #expect(Self.code { try Deflate.Primed(dictionary: [], level: 1).compress(Self.hello) } == .invalidArgument)
        #expect(
            Self.code { try Deflate.Primed(dictionary: dictionary, level: 10).compress(Self.hello) } == .invalidArgument
        )
    }

    @Test func storedBlobsAreCompressedOnlyWhenSmallerAndAlwaysReadBack() throws {
        let json = Array(String(repeating: #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9"}"#, count: 40).utf8)
        let packed = StoredBlob.pack(json)
        #expect(packed.first == 0x78 && packed.count < json.count / 4)
        #expect(StoredBlob.unpack(packed) == json)
        // Too short to gain: stored as it is.
        #expect(StoredBlob.pack(Array("{}".utf8)) == Array("{}".utf8))
        #expect(StoredBlob.pack([]) == [])
        #expect(StoredBlob.unpack(Array("{}".utf8)) == Array("{}".utf8))
        // A plain value that starts with 'x' is always compressed, so that it never reads as a stream.
        #expect(StoredBlob.pack(Array("x".utf8)).first == 0x78)
        #expect(StoredBlob.unpack(StoredBlob.pack(Array("x".utf8))) == Array("x".utf8))
        // A damaged stream reads as missing, never as compressed bytes.
        #expect(StoredBlob.unpack(Array(packed.dropLast(3))) == nil)
        #expect(StoreValue.compressible(json).sqlite == .blob(packed))
        #expect(StoreValue.compressible(json).postgres == .bytea(json))
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
        _ = try store.write { tx in try tx.journal(item, routing: TestRouting(), now: 100) }
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
        #expect(body.count == 1 && body[0].first == 0x78 && body[0].count < item.body.count / 2)
        let eventJSON = try Self.raw(path, "SELECT json FROM events")
        #expect(eventJSON.count == 1 && eventJSON[0].first == 0x78 && eventJSON[0].count < json.count)
        #expect(try Deflate.decompress(eventJSON[0], limit: 1 << 20) == json)
        let stateJSON = try Self.raw(path, "SELECT json FROM subscription_state")
        #expect(stateJSON.count == 1 && stateJSON[0] == StoredBlob.pack(states[0].json))
    }

    /// A store as the gateway left it before compression: every large value plain (also those compressed with a
    /// preset dictionary), no `blob_dictionaries`, schema version 10.
    static func decompressInPlace(_ path: String) throws {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        try db.write { c in
            let dictionaries = try BlobDictionaries.all(on: c)
            for (table, column) in [
                ("journal", "body"), ("events", "json"), ("subscription_state", "json"), ("snapshots", "json"),
                ("compare_ledger", "v1_json"), ("compare_ledger", "v2_json"),
            ] {
                for row in try c.query("SELECT rowid AS r, \(column) AS v FROM \(table) WHERE \(column) IS NOT NULL") {
                    guard let stored = row.blob("v"), let rowid = row.int64("r") else { continue }
                    let plain = try #require(StoredBlob.unpack(stored, dictionaries: dictionaries))
                    try c.run("UPDATE \(table) SET \(column) = ? WHERE rowid = ?", [.blob(plain), .integer(rowid)])
                }
            }
            try c.execute("DROP TABLE IF EXISTS blob_dictionaries")
            // Version 10's indexes (step 13 dropped four and made the outbox's state indexes partial).
            try c.execute(
                """
                DROP INDEX outbox_pending; DROP INDEX outbox_dead;
                CREATE INDEX journal_received ON journal(received_at); CREATE INDEX events_created ON events(created_at);
                CREATE INDEX events_journal ON events(journal_id); CREATE INDEX outbox_due ON outbox(state, next_attempt_at);
                CREATE INDEX outbox_downstream_due ON outbox(downstream, state, next_attempt_at);
                """
            )
            try c.run("DELETE FROM schema_migrations WHERE version > 10")
        }
    }

    @Test func anOldPlainStoreIsCompressedByTheMigrationAndReadsBackIdentical() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/old.db"
        let store = try SQLiteStore(path: path)
        try StoreMigrationTests.populate(store)
        _ = try store.write { tx in
            for n in 0..<5 { _ = try tx.journal(Self.notification(n), routing: TestRouting(), now: 100) }
        }
        try Self.recordComparison(store)
        let before = try StoreMigrationTests.Contents(store)
        store.close()

        try Self.decompressInPlace(path)
        let plainBodies = try Self.raw(path, "SELECT body FROM journal WHERE body IS NOT NULL ORDER BY id")
        #expect(plainBodies.count == 7 && plainBodies.allSatisfy { $0.first == UInt8(ascii: "{") })

        let upgraded = try SQLiteStore(path: path)
        let after = try StoreMigrationTests.Contents(upgraded)
        #expect(after == before)
        #expect(after.journal.count == 7 && after.ledger.count == 2 && after.snapshots[1] != nil)
        #expect(after.ledger.last?.v1 != nil && after.ledger.last?.v2 != nil)
        upgraded.close()
        let versions = try Self.raw(path, "SELECT CAST(version AS BLOB) FROM schema_migrations ORDER BY version")
        #expect(versions.last == Array("13".utf8))

        let bodies = try Self.raw(path, "SELECT body FROM journal WHERE body IS NOT NULL ORDER BY id")
        #expect(zip(bodies, plainBodies).allSatisfy { $0 == StoredBlob.pack($1) })
        #expect(bodies.filter { $0.first == 0x78 }.count == 5)  // the five large ones; the two short ones gain nothing
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
    func postgresStoresPlainBytesAndMigrateStoreCopiesThemPlain() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.db"
        let sqlite = try SQLiteStore(path: path)
        try StoreMigrationTests.populate(sqlite)
        let items = (0..<3).map(Self.notification)
        _ = try sqlite.write { tx in
            for item in items { _ = try tx.journal(item, routing: TestRouting(), now: 100) }
        }
        try Self.recordComparison(sqlite)
        let before = try StoreMigrationTests.Contents(sqlite)
        sqlite.close()
        #expect(try Self.raw(path, "SELECT body FROM journal").filter { $0.first == 0x78 }.count == 3)

        let schema = try TestSchema()
        let report = try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: schema.url)
        #expect(report.verified)
        let postgres = try PostgresStore(url: schema.url)
        #expect(try StoreMigrationTests.Contents(postgres) == before)
        postgres.close()

        // On disk in PostgreSQL: the plain bytes, as a PostgreSQL store writes them itself.
        let c = try PostgresConnection(schema.url, label: "compression test")
        defer { c.close() }
        let bodies = try c.query("SELECT body FROM journal WHERE body IS NOT NULL ORDER BY id").compactMap {
            $0.bytes("body")
        }
        #expect(bodies == before.journal.compactMap(\.body))
        for item in items { #expect(bodies.contains(item.body)) }
        for (table, column) in [
            ("events", "json"), ("subscription_state", "json"), ("snapshots", "json"), ("compare_ledger", "v1_json"),
            ("compare_ledger", "v2_json"),
        ] {
            let values = try c.query("SELECT \(column) AS v FROM \(table) WHERE \(column) IS NOT NULL").compactMap {
                $0.bytes("v")
            }
            #expect(!values.isEmpty && values.allSatisfy { $0.first == UInt8(ascii: "{") }, "\(table).\(column)")
        }
    }
}
