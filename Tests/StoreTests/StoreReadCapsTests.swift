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

/// What a read of a damaged or hostile store allocates: each large value within its column's cap (a notification's
/// body, the gateway's JSON), a value over it or one that does not decompress shown as damaged, an operator's read of a
/// subscription within its byte budget, and the store refusing to write what it would not read back.
@Suite struct StoreReadCapsTests {
    static let otid = "otid-1"

    /// JSON of `bytes` bytes: `{"a":"AAAA…"}`.
    static func json(_ bytes: Int) -> [UInt8] {
        Array(#"{"a":""#.utf8) + [UInt8](repeating: 0x41, count: bytes - 8) + Array(#""}"#.utf8)
    }

    /// A frame of a few bytes for the JSON ``json(_:)`` makes.
    static func frame(_ bytes: Int, declaresSize: Bool = true) -> [UInt8] {
        ZstdFrames.frame(
            [.bytes(Array(#"{"a":""#.utf8)), .repeated(0x41, count: bytes - 8), .bytes(Array(#""}"#.utf8))],
            declaresSize: declaresSize
        )
    }

    static func storeEvents(_ store: any GatewayStore, _ events: [CanonicalEvent]) throws {
        _ = try store.write { tx in
            try tx.storeEvents(events, journalID: nil, routing: TestRouting.routing(), now: 1, authority: nil)
        }
    }

    // MARK: The caps of each column

    @Test func eachColumnReadsWithinItsOwnCap() throws {
        #expect(StoredColumn.body.maxPlainBytes == 1_048_576 + 65_536)
        for column in [StoredColumn.event, .state, .snapshot] { #expect(column.maxPlainBytes == 262_144) }
        let json = StoredColumn.maxJSONBytes
        let body = StoredColumn.maxBodyBytes

        // A frame of a few kilobytes: within the JSON columns' cap it reads, one byte over it is damaged; a body may
        // be larger.
        #expect(Self.frame(json + 1).count < 100)
        #expect(StoredBlob.read(Self.frame(json), as: .event) == .value(Self.json(json)))
        for column in [StoredColumn.event, .state, .snapshot] {
            #expect(StoredBlob.read(Self.frame(json + 1), as: column) == .damaged(.tooLarge), "\(column)")
        }
        #expect(StoredBlob.read(Self.frame(json + 1), as: .body) == .value(Self.json(json + 1)))
        #expect(StoredBlob.read(Self.frame(body), as: .body).bytes?.count == body)
        #expect(StoredBlob.read(Self.frame(body + 1), as: .body) == .damaged(.tooLarge))
        // The review's frame: 60 MiB from a few kilobytes, refused for every column before anything is allocated.
        let review = Self.frame(60 * 1_048_576)
        #expect(review.count < 3_000)
        for column in StoredColumn.allCases { #expect(StoredBlob.read(review, as: column) == .damaged(.tooLarge)) }

        // zlib streams, as older stores hold them (without a dictionary and with one): bounded the same way.
        let stream = try Deflate.compress(Self.json(json + 1), level: 9)
        #expect(StoredBlob.read(stream, as: .event) == .damaged(.tooLarge))
        #expect(StoredBlob.read(stream, as: .body) == .value(Self.json(json + 1)))
        let dictionary = Array(#"{"a":"AAAA"}"#.utf8)
        let marked =
            [StoredBlob.zlibDictionaryMarker, 0, 0, 0, 7]
            + (try Deflate.compress(Self.json(json + 1), dictionary: dictionary, level: 9))
        #expect(StoredBlob.read(marked, as: .snapshot, dictionaries: [7: dictionary]) == .damaged(.tooLarge))
        #expect(StoredBlob.read(marked, as: .body, dictionaries: [7: dictionary]) == .value(Self.json(json + 1)))
        let bomb = try Deflate.compress([UInt8](repeating: 0x41, count: 60 * 1_048_576), level: 9)
        #expect(StoredBlob.read(bomb, as: .body) == .damaged(.tooLarge))

        // A value stored plain over its cap is damaged too (a damaged file: the store never writes one).
        #expect(StoredBlob.read(Self.json(json), as: .state) == .value(Self.json(json)))
        #expect(StoredBlob.read(Self.json(json + 1), as: .state) == .damaged(.tooLarge))

        // A value that does not decompress, or names a dictionary the store lacks: damaged, never its bytes.
        let packed = StoredBlob.pack(Self.json(1_000))
        #expect(StoredBlob.read(Array(packed.dropLast(3)), as: .event) == .damaged(.corrupt))
        #expect(
            StoredBlob.read([StoredBlob.zstdDictionaryMarker, 0, 0, 0, 9] + packed, as: .event) == .damaged(.corrupt)
        )
        #expect(StoredBlob.unpack(Array(packed.dropLast(3))) == nil)
        #expect(StoredValueDamage.allCases.map(\.rawValue) == ["value_too_large", "value_corrupt", "value_unreadable"])
    }

    /// Frames that do not say their size (what a streaming compressor writes; the gateway never does) are refused
    /// whatever they would expand to: nothing is decompressed to find out.
    @Test func aFrameWithoutItsSizeIsDamagedWhateverItHolds() throws {
        #expect(StoredBlob.read(Self.frame(1_000, declaresSize: false), as: .body) == .damaged(.corrupt))
        let unsized = Self.frame(60 * 1_048_576, declaresSize: false)
        #expect(unsized.count < 3_000)
        for column in StoredColumn.allCases { #expect(StoredBlob.read(unsized, as: column) == .damaged(.corrupt)) }
    }

    /// `migrate-store` moves values, it does not judge them: one over its column's cap (an older gateway may have
    /// written it) is copied as it is; only a value that does not decompress, or would expand past the bound every
    /// value once had (64 MiB), stops the move, naming its row.
    @Test func migrateStoreCopiesAValueOverItsCapAndRefusesOnlyWhatIsNoValue() throws {
        let large = Self.frame(StoredColumn.maxJSONBytes + 1)
        #expect(
            try StoreMigration.plain(.blob(large), table: "events", column: "json", rowid: 7)
                == .blob(Self.json(StoredColumn.maxJSONBytes + 1))
        )
        for value in [Self.frame(64 * 1_048_576 + 1), Array(StoredBlob.pack(Self.json(2_000)).dropLast(2))] {
            do {
                _ = try StoreMigration.plain(.blob(value), table: "events", column: "json", rowid: 7)
                Issue.record("a value that is no value was copied")
            } catch {
                #expect("\(error)".contains("events.json of rowid 7") && "\(error)".contains("nothing was copied"))
            }
        }
    }

    // MARK: Writing

    /// The store never writes a value it would read back as damaged: an event (and so its state) or a body over its
    /// cap is refused with `value_too_large`, and nothing of the write is stored.
    @Test(arguments: StoreKind.available) func aValueOverItsCapIsNeverWritten(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        var event = StoreTests.event("large", date: 1_000)
        event.productID = String(repeating: "P", count: StoredColumn.maxJSONBytes)
        #expect(throws: StoreValueTooLarge.self) { try StoreTests.storeEvents(f, [event]) }
        var item = JournalItem(
            key: "k-large",
            version: .v1,
            receivedAt: 1,
            body: Self.json(StoredColumn.maxBodyBytes + 1)
        )
        item.bundleID = "com.example.gateway"
        let oversized = item
        do {
            _ = try f.store.write { tx in try tx.journal(oversized, routing: TestRouting.routing(), now: 1) }
            Issue.record("a body over its cap was written")
        } catch let error as StoreValueTooLarge {
            #expect(error.column == .body && error.bytes == StoredColumn.maxBodyBytes + 1)
            #expect("\(error)".hasPrefix("value_too_large: a journal.body value of 1114113 bytes"))
        }
        var snapshot = OutcomeSnapshot(
            source: .v2,
            bundleID: "com.example.gateway",
            environment: .sandbox,
            originalTransactionID: Self.otid,
            productID: String(repeating: "P", count: StoredColumn.maxJSONBytes),
            transactionID: "t",
            expiresDate: nil,
            revocationDate: nil,
            gracePeriodExpiresDate: nil,
            autoRenew: nil,
            autoRenewProductID: nil,
            inBillingRetry: nil,
            expirationIntent: nil,
            observedAt: 1
        )
        let large = snapshot
        #expect(throws: StoreValueTooLarge.self) { try f.store.write { tx in try tx.putSnapshot(large, path: .v2) } }
        let counts = try f.store.read { tx in try tx.counts() }
        #expect(counts.journal == 0 && counts.events == 0)
        // Within the caps, the same values are written and read back.
        snapshot.productID = "P"
        let small = snapshot
        try f.store.write { tx in try tx.putSnapshot(small, path: .v2) }
        event.productID = String(repeating: "P", count: 200_000)
        try StoreTests.storeEvents(f, [event])
        let stored = try f.store.read { tx in try tx.events(id: "large", originalTransactionID: nil, limit: 1) }
        #expect(stored.map(\.event) == [event])
        #expect(try f.store.snapshot(StoreMigrationTests.subscription, path: .v2)?.productID == "P")
    }

    // MARK: A damaged store

    @Test func aDamagedSubscriptionReadsBoundedWithEveryDamagedRowNamed() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        // 31 events each replaced by a 2 KB frame that expands to a 60 MiB event, as the review built them, and two
        // intact events after them.
        let (damaged, intact) = try DamagedSubscription.make(in: store, path: path)
        let otid = DamagedSubscription.originalTransactionID
        #expect(damaged.count == 31 && intact.count == 2)

        // The reads that decode events leave the damaged ones out, each having cost at most its column's cap.
        let events = try store.read { tx in try tx.events(id: nil, originalTransactionID: otid, limit: 100) }
        #expect(events.map(\.event.id) == intact)
        #expect(events.allSatisfy { $0.json.count < 4_096 })
        #expect(try store.read { tx in try tx.events(id: damaged[0], originalTransactionID: nil, limit: 1) }.isEmpty)
        #expect(try store.read { tx in try tx.deliveryPayload(eventID: damaged[0], withBody: true) } == nil)

        // The operator's read shows every row, the damaged ones by id and code, and is whole.
        let history = try store.read { tx in
            try tx.subscriptionHistory(
                originalTransactionID: otid,
                maxEvents: SubscriptionHistory.defaultMaxEvents,
                maxBytes: SubscriptionHistory.defaultMaxBytes
            )
        }
        #expect(history.stoppedBy == nil)
        #expect(history.events.map(\.id) == damaged + intact)
        #expect(history.events.prefix(31).allSatisfy { $0.damage == .tooLarge && $0.event == nil })
        #expect(history.events.suffix(2).allSatisfy { $0.damage == nil && $0.event != nil })
        #expect(history.states.count == 1 && history.states[0].damage == nil && history.states[0].eventID == intact[1])
        #expect(history.bytes < 64 * 1_024)
    }

    /// A state whose stored JSON is damaged is shown as such; a value that does not decompress is `value_corrupt`.
    @Test func aDamagedStateAndACorruptEventAreShownAsSuch() throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.db"
        let store = try SQLiteStore(path: path)
        try Self.storeEvents(store, [StoreTests.event("e-1", date: 1_000)])
        store.close()
        let db = try SQLiteDatabase(path: path)
        try db.write { c in
            try StoredValueRewriter.rewrite(on: c, table: "subscription_state", column: "json") { _, _ in
                Self.frame(StoredColumn.maxJSONBytes + 1)
            }
            try StoredValueRewriter.rewrite(on: c, table: "events", column: "json") { _, stored in
                Array(StoredBlob.pack(Self.json(2_000)).dropLast(2))
            }
        }
        db.close()
        let reopened = try SQLiteStore(path: path)
        defer { reopened.close() }
        let history = try reopened.read { tx in
            try tx.subscriptionHistory(originalTransactionID: Self.otid, maxEvents: 10, maxBytes: 1_048_576)
        }
        #expect(history.states.map(\.damage) == [.tooLarge] && history.states[0].json.isEmpty)
        #expect(history.events.map(\.damage) == [.corrupt] && history.events.map(\.id) == ["e-1"])
        #expect(try reopened.subscriptionStates(Self.otid).map(\.damage) == [.tooLarge])
    }

    // MARK: The budget of one read

    /// An operator's read of a subscription stops at its byte budget or its number of events, whichever comes first,
    /// a page at a time, and says which stopped it: the events it shows are the oldest, in order.
    @Test(arguments: StoreKind.available) func aHistoryStopsAtItsBudgetAndSaysSo(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let all = (0..<150).map { StoreTests.event("e-\($0)", date: 1_000 + Int64($0)) }
        try StoreTests.storeEvents(f, all)
        func history(_ maxEvents: Int, _ maxBytes: Int) throws -> SubscriptionHistory {
            try f.store.read { tx in
                try tx.subscriptionHistory(originalTransactionID: Self.otid, maxEvents: maxEvents, maxBytes: maxBytes)
            }
        }
        let whole = try history(150, 8 * 1_048_576)
        #expect(whole.stoppedBy == nil && whole.events.map(\.id) == all.map(\.id))
        let perEvent = (whole.bytes - (whole.states.first?.json.count ?? 0)) / 150
        #expect(perEvent > SubscriptionHistory.rowBytes && perEvent < 2_048)

        let byEvents = try history(100, 8 * 1_048_576)
        #expect(byEvents.stoppedBy == .maxEvents && byEvents.events.map(\.id) == all.prefix(100).map(\.id))
        let budget = 70 * perEvent
        let byBytes = try history(1_000, budget)
        #expect(byBytes.stoppedBy == .maxBytes && byBytes.bytes <= budget)
        #expect(byBytes.events.count > 60 && byBytes.events.count < 70)
        #expect(byBytes.events.map(\.id) == all.prefix(byBytes.events.count).map(\.id))
        #expect(try history(0, 8 * 1_048_576).events.isEmpty)
        #expect(try history(.max, .max).events.count == 150 && history(.min, .min).events.isEmpty)
    }

    /// PostgreSQL stores values plainly: a row holding JSON far over its column's cap (a damaged or hostile row) is
    /// left in the database by the reads of a subscription and of events — its length alone comes back — and shown as
    /// too large.
    @Test(.enabled(if: TestDatabase.url != nil, "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"))
    func aHugePlainValueInPostgreSQLStaysInTheDatabase() throws {
        let f = try Fixture(.postgres)
        try StoreTests.storeEvents(f, [StoreTests.event("e-1", date: 1_000), StoreTests.event("e-2", date: 2_000)])
        let schema = try #require(f.schema)
        let c = try PostgresConnection(schema.url, label: "read caps test")
        defer { c.close() }
        let huge =
            Array(#"{"id":"e-1","product_id":""#.utf8) + [UInt8](repeating: 0x50, count: 32 * 1_048_576)
            + Array(#""}"#.utf8)
        _ = try c.query("UPDATE events SET json = $1 WHERE id = 'e-1'", [.bytea(huge)])
        _ = try c.query("UPDATE subscription_state SET json = $1", [.bytea(huge)])

        let history = try f.store.read { tx in
            try tx.subscriptionHistory(originalTransactionID: Self.otid, maxEvents: 10, maxBytes: 1_048_576)
        }
        #expect(history.events.map(\.id) == ["e-1", "e-2"])
        #expect(history.events.map(\.damage) == [.tooLarge, nil])
        #expect(history.states.map(\.damage) == [.tooLarge])
        #expect(history.bytes < 8_192)
        // The reads of events leave it in the database too, and go on without it.
        let events = try f.store.read { tx in try tx.events(id: nil, originalTransactionID: Self.otid, limit: 10) }
        #expect(events.map(\.event.id) == ["e-2"])
    }
}
