import Canonical
import Foundation
import Policy
import SQLite
import TestSupport
import Testing

@testable import Store

/// What compression saves on the same data (not part of the regular run): `IAPGW_MEASURE_STORE_DIR=DIR` journals
/// `IAPGW_MEASURE_STORE_COUNT` (3000) notifications — Apple's real sandbox V2 bodies (`Fixtures/v2`, about 20 KB
/// each) and synthetic V1 bodies (`Fixtures/v1-synthetic`), one in five, each with its golden canonical events, its
/// subscription state and deliveries to two downstreams — into `DIR/compressed.db`; `DIR/plain.db` is the same store
/// with every value plain (as a store written before compression holds it), `DIR/upgraded.db` that one opened again
/// (the migration compresses it). VACUUM them and compare their sizes.
@Suite struct StoreCompressionMeasurement {
    static let directory = ProcessInfo.processInfo.environment["IAPGW_MEASURE_STORE_DIR"]
    static let count = ProcessInfo.processInfo.environment["IAPGW_MEASURE_STORE_COUNT"].flatMap(Int.init) ?? 3_000

    /// `IAPGW_MEASURE_UPGRADE=FILE`: opens an SQLite store whose rows are plain (schema 9 or 10), which compresses them.
    static let upgrade = ProcessInfo.processInfo.environment["IAPGW_MEASURE_UPGRADE"]

    struct Golden: Decodable { var events: [CanonicalEvent] }

    @Test(.enabled(if: upgrade != nil, "IAPGW_MEASURE_UPGRADE is not set"))
    func upgradeOfALargeStore() throws {
        let path = try #require(Self.upgrade)
        let started = ContinuousClock.now
        try SQLiteStore(path: path).close()
        print("measure: \(path) upgraded in \(ContinuousClock.now - started)")
    }

    /// (body, events) of each fixture.
    static func samples(_ folder: String, body: (String) throws -> [UInt8]) throws -> [([UInt8], [CanonicalEvent])] {
        try Fixtures.names(in: folder).filter { !$0.hasSuffix(".expected.json") && !$0.hasSuffix(".receipt.json") }
            .compactMap { name in
                let golden = folder + "/" + Fixtures.goldenName(name)
                guard FileManager.default.fileExists(atPath: Fixtures.url(golden).path) else { return nil }
                let events = try JSONDecoder().decode(Golden.self, from: Data(try Fixtures.bytes(golden))).events
                return events.isEmpty ? nil : (try body(folder + "/" + name), events)
            }
    }

    @Test(.enabled(if: directory != nil, "IAPGW_MEASURE_STORE_DIR is not set"))
    func bytesPerNotification() throws {
        let directory = try #require(Self.directory)
        let v2 = try Self.samples("v2") { path in
            Array(#"{"signedPayload":""#.utf8) + (try Fixtures.token(path)) + Array(#""}"#.utf8)
        }
        let v1 = try Self.samples("v1-synthetic") { path in try Fixtures.bytes(path) }
        #expect(v2.count >= 10 && v1.count >= 5)
        let path = directory + "/compressed.db"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let store = try SQLiteStore(path: path)
        let bundles = Set((v2 + v1).flatMap { $0.1.compactMap(\.bundleID) })
        let seeds = bundles.flatMap { bundle in
            [AppStoreEnvironment.production, .sandbox].map {
                AuthorityEntry(bundleID: bundle, environment: $0, authority: .v2, origin: .config)
            }
        }
        _ = try store.write { tx in try tx.seedAuthority(seeds, now: 1) }
        var n = 0
        while n < Self.count {
            let batch = (n..<min(Self.count, n + 100)).map { i in
                let isV1 = i % 5 == 4
                let (body, events) = isV1 ? v1[i % v1.count] : v2[i % v2.count]
                var item = JournalItem(
                    key: "measure-\(i)",
                    version: isV1 ? .v1 : .v2,
                    receivedAt: 1_760_000_000_000 + Int64(i),
                    body: body
                )
                (item.bundleID, item.environment) = (events[0].bundleID, events[0].environment)
                item.events = events.map { e in
                    var e = e
                    e.id = "\(e.id)-\(i)"
                    e.originalTransactionID = "\(e.originalTransactionID ?? "otid")-\(i / 4)"
                    return e
                }
                return item
            }
            _ = try store.write { tx in
                for item in batch { _ = try tx.journal(item, routing: TestRouting.routing(), now: 1_760_000_000_000) }
            }
            n += batch.count
        }
        try store.database.checkpointAndTruncate()
        store.close()
        for name in ["plain.db", "upgraded.db"] {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
            try FileManager.default.copyItem(atPath: path, toPath: directory + "/" + name)
        }
        try StoreCompressionTests.decompressInPlace(directory + "/plain.db")
        try StoreCompressionTests.decompressInPlace(directory + "/upgraded.db")
        try SQLiteStore(path: directory + "/upgraded.db").close()
        print("measure: \(Self.count) notifications in \(directory)/{compressed,plain,upgraded}.db")
    }
}
