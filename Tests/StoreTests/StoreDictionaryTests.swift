import Canonical
import Foundation
import Policy
import Postgres
import SQLite
import TestSupport
import Testing
import Zlib
import Zstd

@testable import Store

/// V2 bodies compressed with a preset dictionary built from their outer JWS header (``BlobDictionaries``): the
/// certificate chain they carry three times is stored once per store, in `blob_dictionaries`.
@Suite struct StoreDictionaryTests {
    /// Apple's real sandbox V2 bodies, as the gateway journals them.
    static func v2Bodies() -> [(name: String, body: [UInt8])] {
        Fixtures.names(in: "v2").filter { !$0.hasSuffix(".receipt.json") }.compactMap { name in
            guard let token = try? Fixtures.token("v2/" + name) else { return nil }
            return (name, Array(#"{"signedPayload":""#.utf8) + token + Array(#""}"#.utf8))
        }
    }

    /// V2 authoritative for the test bundle in the sandbox.
    static func seed(_ store: SQLiteStore) throws {
        _ = try store.write { tx in
            try tx.seedAuthority(
                [
                    AuthorityEntry(
                        bundleID: StoreCompressionTests.bundle,
                        environment: .sandbox,
                        authority: .v2,
                        origin: .config
                    )
                ],
                now: 1
            )
        }
    }

    static func journal(_ store: SQLiteStore, _ bodies: [[UInt8]], prefix: String = "dict") throws {
        try seed(store)
        _ = try store.write { tx in
            for (n, body) in bodies.enumerated() {
                var item = JournalItem(key: "\(prefix)-\(n)", version: .v2, receivedAt: 100 + Int64(n), body: body)
                (item.bundleID, item.environment) = (StoreCompressionTests.bundle, .sandbox)
                _ = try tx.journal(item, routing: TestRouting.routing(), now: 100)
            }
        }
    }

    @Test func aStreamWithADictionaryReadsBackOnlyWithThatDictionary() throws {
        let dictionary = Array(
            String(repeating: "MIIEMTCCA7agAwIBAgIQaPoPldvpSoEH0lBrjDPv9jAKBggqhkjOPQQDAzB1", count: 40).utf8
        )
        let text = Array(
            ("{\"x5c\":\""
                + String(repeating: "MIIEMTCCA7agAwIBAgIQaPoPldvpSoEH0lBrjDPv9jAKBggqhkjOPQQDAzB1", count: 30) + "\"}")
                .utf8
        )
        let packed = try Deflate.compress(text, dictionary: dictionary, level: 1)
        #expect(packed.first == Deflate.headerByte)
        #expect(packed.count < (try Deflate.compress(text, level: 1)).count)
        #expect(try Deflate.decompress(packed, dictionary: dictionary, limit: text.count) == text)
        #expect(StoreCompressionTests.code { try Deflate.decompress(packed, limit: 1 << 20) } == .corrupt)
        var other = dictionary
        other[0] ^= 1
        #expect(
            StoreCompressionTests.code { try Deflate.decompress(packed, dictionary: other, limit: 1 << 20) } == .corrupt
        )
        #expect(
            StoreCompressionTests.code { try Deflate.decompress(packed, dictionary: dictionary, limit: 10) }
                == .tooLarge
        )
        // A stream without a dictionary does not read as one that had it.
        let plainStream = try Deflate.compress(text)
        #expect(
            StoreCompressionTests.code { try Deflate.decompress(plainStream, dictionary: dictionary, limit: 1 << 20) }
                == .corrupt
        )
        for n in 0..<packed.count {
            #expect(
                StoreCompressionTests.code {
                    try Deflate.decompress(Array(packed.prefix(n)), dictionary: dictionary, limit: 1 << 20)
                } != nil
            )
        }
        // The stored format: marker, id, stream; unknown ids read as missing.
        let body =
            Array(#"{"signedPayload":""#.utf8)
            + Array(String(repeating: "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF", count: 20).utf8)
            + Array(".eyJub3RpZmljYXRpb25UeXBlIjoiVEVTVCJ9.c2ln\"}".utf8)
        let header = try #require(StoredBlob.v2Header(body))
        let stored = StoredBlob.pack(body, dictionaryID: 7, dictionary: StoredBlob.dictionary(header: header))
        #expect(stored.first == StoredBlob.zstdDictionaryMarker && StoredBlob.dictionaryID(stored) == 7)
        #expect(StoredBlob.unpack(stored, dictionaries: [7: StoredBlob.dictionary(header: header)]) == body)
        #expect(StoredBlob.unpack(stored) == nil)
        #expect(StoredBlob.unpack(stored, dictionaries: [7: Array("other".utf8)]) == nil)
        #expect(StoredBlob.v2Header(Array(#"{"signedPayload":"abc.def"}"#.utf8)) == nil)  // too short
        #expect(StoredBlob.v2Header(Array(#"{"other":"x"}"#.utf8)) == nil)
        #expect(StoredBlob.base64URL(Array("hello?>".utf8)) == Array("aGVsbG8_Pg".utf8))
    }

    @Test func everyRealV2BodyIsStoredSmallAndReadsBackIdentical() throws {
        let samples = Self.v2Bodies()
        #expect(samples.count >= 10)
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let store = try SQLiteStore(path: path)
        try Self.journal(store, samples.map(\.body))
        let entries = try store.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 1_000) }
        store.close()
        #expect(Set(entries.compactMap(\.body)) == Set(samples.map(\.body)))
        #expect(entries.count == samples.count)

        let stored = try StoreCompressionTests.raw(path, "SELECT body FROM journal ORDER BY id")
        let headers = try StoreCompressionTests.raw(path, "SELECT header FROM blob_dictionaries")
        #expect(!headers.isEmpty && headers.count <= 3)
        for (sample, value) in zip(samples, stored) {
            let alone = StoredBlob.pack(sample.body).count
            print("dictionary: \(sample.name): \(sample.body.count) bytes, alone \(alone), dictionary \(value.count)")
            #expect(value.first == StoredBlob.zstdDictionaryMarker, "\(sample.name)")
            #expect(value.count < 2_200 && value.count * 3 < alone, "\(sample.name): \(value.count)")
        }

        // Opened again (an empty cache): the readers load the dictionaries from the table.
        let reopened = try SQLiteStore(path: path)
        let again = try reopened.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 1_000) }
        reopened.close()
        #expect(again.map(\.body) == entries.map(\.body))
    }

    /// More chains than the writer keeps primed compressors for: the values of the others are compressed with their
    /// dictionary all the same (read into zlib for each), and everything reads back identical.
    @Test func moreDictionariesThanPrimedCompressorsAreAllUsed() throws {
        let body = try #require(Self.v2Bodies().first?.body)
        let prefix = StoredBlob.v2Prefix.count
        let dot = try #require(body[prefix...].firstIndex(of: UInt8(ascii: ".")))
        // Distinct headers: one base64url character of the real one changed (a value never verified here).
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        let chains = BlobDictionaries.maxPrimed + 3
        let bodies = (0..<chains * 2).map { n -> [UInt8] in
            var b = body
            b[dot - 10] = alphabet[n % chains]
            return b
        }
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let store = try SQLiteStore(path: path)
        try Self.journal(store, bodies)
        let entries = try store.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 1_000) }
        store.close()
        #expect(
            entries.compactMap(\.body).sorted { $0.lexicographicallyPrecedes($1) }
                == bodies.sorted { $0.lexicographicallyPrecedes($1) }
        )
        let stored = try StoreCompressionTests.raw(path, "SELECT body FROM journal ORDER BY id")
        #expect(stored.count == bodies.count)
        #expect(stored.allSatisfy { $0.first == StoredBlob.zstdDictionaryMarker && $0.count < 2_200 })
        #expect(try StoreCompressionTests.raw(path, "SELECT header FROM blob_dictionaries").count == chains)
    }

    /// The gateway's own JSON (events, states, the ledger's snapshots) is compressed with a dictionary learned from
    /// the first values the store wrote: stored once, found again by a later process on the file, a fraction of what
    /// zlib alone makes of each value, and every value reads back identical.
    @Test func theGatewaysJSONIsStoredWithADictionaryLearnedFromItsFirstValues() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let items = (0..<20).map(StoreCompressionTests.notification)
        let store = try SQLiteStore(path: path)
        try Self.seed(store)
        _ = try store.write { tx in
            for item in items.prefix(10) { _ = try tx.journal(item, routing: TestRouting.routing(), now: 100) }
        }
        store.close()
        // Another process on the file finds the dictionary; it does not learn one of its own.
        let again = try SQLiteStore(path: path)
        _ = try again.write { tx in
            for item in items.suffix(10) { _ = try tx.journal(item, routing: TestRouting.routing(), now: 100) }
        }
        try StoreCompressionTests.recordComparison(again)
        let (events, states, ledger) = try again.read { tx in
            (
                try tx.events(id: nil, originalTransactionID: nil, limit: 100),
                try tx.subscriptionStates(originalTransactionID: "otid-1"),
                try tx.ledger(bundleID: nil, environment: nil, from: 0, to: 1_000)
            )
        }
        again.close()
        #expect(events.map(\.event) == items.flatMap(\.events))
        #expect(states.count == 1 && states[0].json.first == UInt8(ascii: "{"))
        #expect(ledger.count == 1 && ledger[0].v1 != nil && ledger[0].v2 != nil)

        let sources = try StoreCompressionTests.raw(
            path,
            "SELECT header FROM blob_dictionaries WHERE substr(header, 1, 1) = x'7B'"
        )
        #expect(sources.count == 1 && sources[0].count <= BlobDictionaries.maxJSONDictionaryBytes)
        // The samples (an event and a state per notification, two notifications) are compressed alone; every value
        // after them with the dictionary, in a third of what compression alone makes of it or less.
        let stored = try StoreCompressionTests.raw(path, "SELECT json FROM events ORDER BY rowid")
        #expect(stored.count == 20 && stored[0].starts(with: Zstd.magic))
        for (value, event) in zip(stored, events).dropFirst(2) {
            #expect(StoredBlob.dictionaryID(value) != nil)
            #expect(value.count * 3 <= StoredBlob.pack(event.json).count, "\(value.count)")
        }
        let snapshots =
            try StoreCompressionTests.raw(path, "SELECT v1_json FROM compare_ledger")
            + StoreCompressionTests.raw(path, "SELECT json FROM subscription_state")
        #expect(snapshots.count == 2 && snapshots.allSatisfy { StoredBlob.dictionaryID($0) != nil })
    }

    /// A dictionary learned in a transaction that rolled back is not in the store: the next value that uses it
    /// stores it again, and what was written reads back.
    @Test func aDictionaryLearnedInATransactionThatRolledBackIsStoredAgain() throws {
        struct Abandon: Error {}
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let items = (0..<6).map(StoreCompressionTests.notification)
        let store = try SQLiteStore(path: path)
        try Self.seed(store)
        #expect(throws: Abandon.self) {
            try store.write { tx in
                for item in items.prefix(3) { _ = try tx.journal(item, routing: TestRouting.routing(), now: 100) }
                throw Abandon()
            }
        }
        #expect(try StoreCompressionTests.raw(path, "SELECT header FROM blob_dictionaries").isEmpty)
        _ = try store.write { tx in
            for item in items.suffix(3) { _ = try tx.journal(item, routing: TestRouting.routing(), now: 100) }
        }
        let events = try store.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 100) }
        store.close()
        #expect(events.map(\.event) == items.suffix(3).flatMap(\.events))
        let stored = try StoreCompressionTests.raw(path, "SELECT json FROM events ORDER BY rowid")
        #expect(stored.allSatisfy { StoredBlob.dictionaryID($0) != nil })
        #expect(try StoreCompressionTests.raw(path, "SELECT header FROM blob_dictionaries").count == 1)
    }

    @Test func aDamagedOrMissingDictionaryReadsAsAMissingBody() throws {
        let samples = Self.v2Bodies()
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let store = try SQLiteStore(path: path)
        try Self.journal(store, Array(samples.prefix(2).map(\.body)))
        store.close()

        let db = try SQLiteDatabase(path: path)
        try db.write { c in
            try c.run("UPDATE blob_dictionaries SET header = substr(header, 2) || 'A'")
        }
        db.close()
        let damaged = try SQLiteStore(path: path)
        let entries = try damaged.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 10) }
        damaged.close()
        #expect(entries.count == 2 && entries.allSatisfy { $0.body == nil })

        let db2 = try SQLiteDatabase(path: path)
        try db2.write { c in try c.run("DELETE FROM blob_dictionaries") }
        db2.close()
        let missing = try SQLiteStore(path: path)
        let none = try missing.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 10) }
        // The writer, in the transaction that stores a body, adds its header again (under a new id).
        try Self.journal(missing, [samples[0].body + Array(" ".utf8)], prefix: "later")
        let later = try missing.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 10) }
        missing.close()
        #expect(none.count == 2 && none.allSatisfy { $0.body == nil })
        // The header came back under the id the bodies name (SQLite reuses the largest rowid + 1): they read again.
        #expect(later.compactMap(\.body).count == 3)
        #expect(later.compactMap(\.body).contains(samples[0].body + Array(" ".utf8)))
    }

    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func migrateStoreCopiesDictionaryBodiesAsTheyAreAndPostgreSQLReadsThem() throws {
        let samples = Self.v2Bodies()
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.db"
        let sqlite = try SQLiteStore(path: path)
        try Self.journal(sqlite, samples.map(\.body))
        // And events whose JSON is stored with the learned dictionary.
        let items = (0..<6).map(StoreCompressionTests.notification)
        _ = try sqlite.write { tx in
            for item in items { _ = try tx.journal(item, routing: TestRouting.routing(), now: 100) }
        }
        sqlite.close()
        #expect(
            try StoreCompressionTests.raw(path, "SELECT body FROM journal WHERE notification_key LIKE 'dict-%'")
                .allSatisfy { $0.first == StoredBlob.zstdDictionaryMarker }
        )
        #expect(
            try StoreCompressionTests.raw(path, "SELECT json FROM events ORDER BY rowid").suffix(3).allSatisfy {
                StoredBlob.dictionaryID($0) != nil
            }
        )

        let stored = try StoreCompressionTests.raw(path, "SELECT body FROM journal ORDER BY id")
        let headers = try StoreCompressionTests.raw(path, "SELECT header FROM blob_dictionaries").count
        let schema = try TestSchema()
        let report = try StoreMigration.sqliteToPostgres(sqlitePath: path, postgresURL: schema.url)
        #expect(report.verified)
        let c = try PostgresConnection(schema.url, label: "dictionary test")
        defer { c.close() }
        // The stored bytes, as SQLite held them: the bodies and the events name their dictionaries.
        let bodies = try c.query("SELECT body FROM journal ORDER BY id").compactMap { $0.bytes("body") }
        #expect(bodies == stored)
        #expect(bodies.prefix(samples.count).allSatisfy { $0.first == StoredBlob.zstdDictionaryMarker })
        let events = try c.query("SELECT json FROM events ORDER BY seq").compactMap { $0.bytes("json") }
        #expect(events.suffix(3).allSatisfy { StoredBlob.dictionaryID($0) != nil })
        // Read back plain through a store on the database, and a store there writes with the same dictionaries.
        let postgres = try PostgresStore(url: schema.url)
        defer { postgres.close() }
        let entries = try postgres.read { tx in try tx.journalEntries(id: nil, key: nil, limit: 100) }
        #expect(entries.compactMap(\.body) == samples.map(\.body) + items.map(\.body))
        let read = try postgres.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 100) }
        #expect(read.map(\.json) == items.flatMap(\.events).map(CanonicalJSON.encode))
        var again = JournalItem(key: "dict-again", version: .v2, receivedAt: 300, body: samples[0].body)
        (again.bundleID, again.environment) = (StoreCompressionTests.bundle, .sandbox)
        let journaled = again
        _ = try postgres.write { tx in try tx.journal(journaled, routing: TestRouting.routing(), now: 200) }
        let written = try c.queryOne("SELECT body FROM journal WHERE notification_key = 'dict-again'")?.bytes("body")
        #expect(written.flatMap(StoredBlob.dictionaryID) == StoredBlob.dictionaryID(stored[0]))
        #expect(try c.queryOne("SELECT count(*) AS n FROM blob_dictionaries")?.int64("n") == Int64(headers))
    }
}
