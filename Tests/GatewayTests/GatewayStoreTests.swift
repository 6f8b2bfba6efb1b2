import Canonical
import Foundation
import Gateway
import TestSupport
import Testing
import WireJSON

@Suite struct GatewayStoreTests {
    static func event(_ id: String, date: Int64, kind: EventKind = .renewal, source: EventSource = .v2, expires: Int64? = nil) -> CanonicalEvent {
        var e = CanonicalEvent(id: id, source: source, kind: kind, rawType: "X", eventDate: date, eventDateSource: .signedDate, verified: true)
        e.bundleID = "com.example.gateway"
        e.environment = .sandbox
        e.originalTransactionID = "otid-1"
        e.expiresDate = expires
        e.computeEntitlement()
        return e
    }

    static func stateEventID(_ h: GatewayHarness, path: String = "v2") throws -> String? {
        try h.db.read { try $0.queryOne("SELECT event_id FROM subscription_state WHERE path = ?", [.text(path)])?.string("event_id") }
    }

    static func store(_ h: GatewayHarness, _ events: [CanonicalEvent]) throws {
        let router = h.router
        try h.writer.perform { c in try GatewayStore.storeEvents(events, journalID: nil, router: router, now: 1, in: c) }
    }

    @Test func anOlderEventArrivingLateNeverOverwritesANewerState() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        try Self.store(h, [Self.event("new", date: 2000)])
        try Self.store(h, [Self.event("old", date: 1000)])
        #expect(try Self.stateEventID(h) == "new")
        // Equal dates: the later arrival wins.
        try Self.store(h, [Self.event("same-date-later", date: 2000)])
        #expect(try Self.stateEventID(h) == "same-date-later")
        try Self.store(h, [Self.event("newest", date: 3000)])
        #expect(try Self.stateEventID(h) == "newest")
        // Every event is kept in the history regardless.
        #expect(try h.count("SELECT COUNT(*) AS n FROM events") == 4)
    }

    @Test func eachPathKeepsItsOwnStateAndOnlyTheAuthoritativeOneIsMarked() throws {
        let h = try GatewayHarness()  // com.example.gateway: authority v2
        defer { h.close() }
        try Self.store(h, [Self.event("v2-event", date: 1000), Self.event("v1-event", date: 5000, source: .v1)])
        #expect(try Self.stateEventID(h, path: "v2") == "v2-event")
        #expect(try Self.stateEventID(h, path: "v1") == "v1-event")
        #expect(try h.count("SELECT COUNT(*) AS n FROM events WHERE id = 'v2-event' AND authoritative = 1") == 1)
        #expect(try h.count("SELECT COUNT(*) AS n FROM events WHERE id = 'v1-event' AND authoritative = 0") == 1)
        // The shadow event reaches only the shadow downstream.
        #expect(try h.count("SELECT COUNT(*) AS n FROM outbox WHERE event_id = 'v1-event'") == 1)
        #expect(try h.count("SELECT COUNT(*) AS n FROM outbox WHERE event_id = 'v1-event' AND downstream = 'shadow'") == 1)
    }

    @Test func configSeedsAuthorityButACutoverWinsOnRestart() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        try h.writer.perform { c in
            try c.run("UPDATE authority SET authority = 'v1', origin = 'cutover' WHERE bundle_id = 'com.example.gateway' AND environment = 'sandbox'")
        }
        let config = h.config
        let rows = try h.writer.perform { c in try GatewayStore.seedAuthority(config, now: 2, in: c) }
        let sandbox = try #require(rows.first { $0.bundle == "com.example.gateway" && $0.environment == "sandbox" })
        let production = try #require(rows.first { $0.bundle == "com.example.gateway" && $0.environment == "production" })
        #expect(sandbox.authority == "v1" && sandbox.origin == "cutover")
        #expect(production.authority == "v2" && production.origin == "config")
    }

    @Test func quarantineLanesHaveTheirOwnCaps() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let untrustedCap = GatewayStore.QuarantineCap(rows: 3, bytes: .max, evictsOldest: true)
        let genuineCap = GatewayStore.QuarantineCap(rows: 3, bytes: .max, evictsOldest: false)
        for i in 0..<5 {
            let untrusted = QuarantineRecord(lane: .untrusted, receivedAt: Int64(i), version: "v2", code: "bad_signature", message: "", body: [UInt8(i)])
            try h.writer.perform { c in try GatewayStore.quarantine(untrusted, cap: untrustedCap, in: c) }
        }
        let genuine = QuarantineRecord(lane: .genuine, receivedAt: 9, version: "v2", code: "unknown_bundle", message: "", body: [9])
        try h.writer.perform { c in try GatewayStore.quarantine(genuine, cap: genuineCap, in: c) }
        #expect(try h.count("SELECT COUNT(*) AS n FROM quarantine WHERE lane = 'untrusted'") == 3)
        #expect(try h.count("SELECT COUNT(*) AS n FROM quarantine WHERE lane = 'genuine'") == 1)
        // The oldest untrusted rows went; flooding the untrusted lane never evicts a genuine row.
        #expect(try h.count("SELECT COUNT(*) AS n FROM quarantine WHERE lane = 'untrusted' AND received_at < 2") == 0)
        for i in 0..<10 {
            let flood = QuarantineRecord(lane: .untrusted, receivedAt: 100 + Int64(i), version: nil, code: "malformed", message: "", body: [])
            try h.writer.perform { c in try GatewayStore.quarantine(flood, cap: untrustedCap, in: c) }
        }
        #expect(try h.count("SELECT COUNT(*) AS n FROM quarantine WHERE lane = 'genuine'") == 1)
    }

    @Test func theUntrustedLaneIsCappedInBytesOldestFirst() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = [UInt8](repeating: 0x41, count: 100_000)
        let one = QuarantineRecord(lane: .untrusted, receivedAt: 0, version: nil, code: "malformed", message: "", body: body).storedSize
        let cap = GatewayStore.QuarantineCap(rows: 1_000, bytes: 3 * one + 10, evictsOldest: true)
        for i in 0..<10 {
            let r = QuarantineRecord(lane: .untrusted, receivedAt: Int64(i), version: nil, code: "malformed", message: "", body: body)
            let outcome = try h.writer.perform { c in try GatewayStore.quarantine(r, cap: cap, in: c) }
            guard case .stored = outcome else { Issue.record("row \(i) not stored: \(outcome)"); return }
        }
        // Rows, not bytes, used to be counted: ten 100 kB rows all stayed.
        #expect(try h.count("SELECT COUNT(*) AS n FROM quarantine") == 3)
        #expect(try h.count("SELECT MIN(received_at) AS n FROM quarantine") == 7)
        let usage = try h.db.read { c in try GatewayStore.quarantineUsage(in: c) }
        #expect(usage[.untrusted]?.rows == 3 && usage[.untrusted]?.bytes == 3 * one)
        #expect(try h.count("SELECT SUM(size) AS n FROM quarantine") == Int(3 * one))
    }

    @Test func theGenuineLaneRefusesWhenFullAndNeverEvicts() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let body = [UInt8](repeating: 0x42, count: 50_000)
        let one = QuarantineRecord(lane: .genuine, receivedAt: 0, version: "v2", code: "unknown_bundle", message: "", body: body).storedSize
        let cap = GatewayStore.QuarantineCap(rows: 1_000, bytes: 2 * one, evictsOldest: false)
        var outcomes: [GatewayStore.QuarantineOutcome] = []
        for i in 0..<4 {
            let r = QuarantineRecord(lane: .genuine, receivedAt: Int64(i), version: "v2", code: "unknown_bundle", message: "", body: body)
            outcomes.append(try h.writer.perform { c in try GatewayStore.quarantine(r, cap: cap, in: c) })
        }
        #expect(outcomes.filter { $0 == .full }.count == 2)
        #expect(try h.count("SELECT COUNT(*) AS n FROM quarantine WHERE received_at IN (0, 1)") == 2)
        // Room again once a row leaves (a replay that succeeded).
        try h.writer.perform { c in try c.run("DELETE FROM quarantine WHERE received_at = 0") }
        let r = QuarantineRecord(lane: .genuine, receivedAt: 9, version: "v2", code: "unknown_bundle", message: "", body: body)
        #expect(try h.writer.perform { c in try GatewayStore.quarantine(r, cap: cap, in: c) } != .full)
    }

    @Test func retentionDropsOldBodiesButKeepsEventsAndPendingWork() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        #expect(h.ingest.handle(try Fixtures.bytes("v1-synthetic/did-renew.json")).status == 200)  // receipt job pending
        let purged = try h.writer.perform { c in try GatewayStore.purgeBodies(olderThan: Int64.max, now: 5, in: c) }
        #expect(purged == 1)
        #expect(try h.count("SELECT COUNT(*) AS n FROM journal WHERE body IS NULL AND version = 'v2'") == 1)
        #expect(try h.count("SELECT COUNT(*) AS n FROM journal WHERE body IS NOT NULL AND version = 'v1'") == 1)
        #expect(try h.count("SELECT COUNT(*) AS n FROM events") == 1)
    }

    @Test func groupCommitBatchesConcurrentWorkAndIsolatesFailures() async throws {
        let h = try GatewayHarness()
        defer { h.close() }
        struct Boom: Error {}
        try h.writer.perform { c in try c.execute("CREATE TABLE probe (n INTEGER UNIQUE)") }
        let before = h.writer.statistics
        let writer = h.writer
        let failures = await withTaskGroup(of: Int.self) { group in
            for i in 0..<64 {
                group.addTask {
                    do {
                        try await writer.performAsync { c in
                            try c.run("INSERT INTO probe (n) VALUES (?)", [.integer(Int64(i))])
                            if i % 8 == 0 { throw Boom() }  // undone by its savepoint only
                        }
                        return 0
                    } catch { return 1 }
                }
            }
            return await group.reduce(0, +)
        }
        let after = h.writer.statistics
        #expect(failures == 8)
        #expect(try h.count("SELECT COUNT(*) AS n FROM probe") == 56)
        #expect(after.items - before.items == 64)
        #expect(after.batches - before.batches < 64)  // several items per transaction
    }

    @Test func workSubmittedAfterStopIsRefused() throws {
        let h = try GatewayHarness()
        defer { h.db.close() }
        h.writer.stop()
        #expect(throws: JournalWriter.StoreFailure.self) { try h.writer.perform { _ in 1 } }
    }
}
