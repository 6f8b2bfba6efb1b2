import Canonical
import Foundation
import Policy
import TestSupport
import Testing

@testable import Store

/// The store's contract, through its interface: what every implementation must do. Each test runs once per available
/// implementation (``StoreKind/available``), on a fresh store.
@Suite struct StoreTests {

    static let lease = Lease(owner: "test", until: .max)

    static func event(_ id: String, date: Int64, source: EventSource = .v2) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: id,
            source: source,
            kind: .renewal,
            rawType: "X",
            eventDate: date,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = "com.example.gateway"
        e.environment = .sandbox
        e.originalTransactionID = "otid-1"
        e.computeEntitlement()
        return e
    }

    static func storeEvents(_ f: Fixture, _ events: [CanonicalEvent]) throws {
        _ = try f.store.write { tx in
            try tx.storeEvents(events, journalID: nil, routing: TestRouting.routing(), now: 1, authority: nil)
        }
    }

    static func stateEventID(_ f: Fixture, path: Generation = .v2) throws -> String? {
        try f.store.read { tx in try tx.subscriptionStates(originalTransactionID: "otid-1") }.first { $0.path == path }?
            .eventID
    }

    static func deliveries(_ f: Fixture) throws -> [Delivery] {
        try f.store.read { tx in try tx.deliveries(state: nil, downstream: nil, eventID: nil, limit: .max) }
    }

    static func quarantined(_ f: Fixture) throws -> [QuarantineRecord] {
        try f.store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: .max) }
    }

    @Test(arguments: StoreKind.available) func anOlderEventArrivingLateNeverOverwritesANewerState(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.storeEvents(f, [Self.event("new", date: 2000)])
        try Self.storeEvents(f, [Self.event("old", date: 1000)])
        #expect(try Self.stateEventID(f) == "new")
        // Equal dates: the later arrival wins.
        try Self.storeEvents(f, [Self.event("same-date-later", date: 2000)])
        #expect(try Self.stateEventID(f) == "same-date-later")
        try Self.storeEvents(f, [Self.event("newest", date: 3000)])
        #expect(try Self.stateEventID(f) == "newest")
        // Every event is kept in the history regardless.
        #expect(try f.store.read { tx in try tx.counts() }.events == 4)
    }

    @Test(arguments: StoreKind.available) func eachPathKeepsItsOwnStateAndOnlyTheAuthoritativeOneIsMarked(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.storeEvents(f, [Self.event("v2-event", date: 1000), Self.event("v1-event", date: 5000, source: .v1)])
        #expect(try Self.stateEventID(f, path: .v2) == "v2-event")
        #expect(try Self.stateEventID(f, path: .v1) == "v1-event")
        let events = try f.store.read { tx in try tx.events(id: nil, originalTransactionID: "otid-1", limit: 10) }
        #expect(events.first { $0.event.id == "v2-event" }?.authoritative == true)
        #expect(events.first { $0.event.id == "v1-event" }?.authoritative == false)
        // The other path's event reaches only the shadow downstream.
        #expect(try Self.deliveries(f).filter { $0.eventID == "v1-event" }.map(\.downstream) == ["shadow"])
        #expect(
            try Self.deliveries(f).filter { $0.eventID == "v2-event" }.map(\.downstream).sorted() == ["main", "shadow"]
        )
    }

    @Test(arguments: StoreKind.available) func configSeedsAuthorityButACutoverWinsOnRestart(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let cutover = CutoverRecord(
            at: 2,
            bundleID: "com.example.gateway",
            environment: "sandbox",
            from: "v2",
            to: "v1",
            who: "test",
            reason: nil,
            verdict: "ready",
            forced: false
        )
        try f.store.write { tx in try tx.recordCutover(cutover, to: .v1) }
        let wanted = [AppStoreEnvironment.production, .sandbox].map {
            AuthorityEntry(bundleID: "com.example.gateway", environment: $0, authority: .v2, origin: .config)
        }
        let rows = try f.store.write { tx in try tx.seedAuthority(wanted, now: 3) }
        let sandbox = try #require(rows.first { $0.environment == .sandbox })
        let production = try #require(rows.first { $0.environment == .production })
        #expect(sandbox.authority == .v1 && sandbox.origin == .cutover)
        #expect(production.authority == .v2 && production.origin == .config)
        #expect(
            try f.store.read { tx in try tx.cutovers(bundleID: "com.example.gateway", environment: .sandbox) } == [
                cutover
            ]
        )
    }

    @Test(arguments: StoreKind.available) func journalingTwiceIsADuplicateAndQueuesNothingMore(_ kind: StoreKind) throws
    {
        let f = try Fixture(kind)
        var item = JournalItem(key: "k1", version: .v1, receivedAt: 5, body: Array("{}".utf8))
        item.bundleID = "com.example.gateway"
        item.environment = .production
        item.needsReceipt = true
        let journaled = item
        let first = try f.store.write { tx in try tx.journal(journaled, routing: TestRouting.routing(), now: 5) }
        let second = try f.store.write { tx in try tx.journal(journaled, routing: TestRouting.routing(), now: 6) }
        guard case .accepted(let id) = first else {
            Issue.record("\(first)")
            return
        }
        #expect(second == .duplicate(journalID: id))
        let entry = try #require(try f.store.read { tx in try tx.journalEntries(id: nil, key: "k1", limit: 10) }.first)
        #expect(entry.version == .v1 && entry.authority == .v2 && entry.origin == .live)
        #expect(try Self.deliveries(f).map(\.downstream) == ["legacy"])
        #expect(try f.store.read { tx in try tx.receiptJobs(state: .pending) }.map(\.journalID) == [id])
    }

    @Test(arguments: StoreKind.available) func quarantineLanesHaveTheirOwnCaps(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let untrustedCap = QuarantineCap(rows: 3, bytes: .max, evictsOldest: true)
        let genuineCap = QuarantineCap(rows: 3, bytes: .max, evictsOldest: false)
        for i in 0..<5 {
            let untrusted = QuarantineRecord(
                lane: .untrusted,
                receivedAt: Int64(i),
                version: .v2,
                code: "bad_signature",
                message: "",
                body: [UInt8(i)]
            )
            _ = try f.store.write { tx in try tx.quarantine(untrusted, cap: untrustedCap) }
        }
        let genuine = QuarantineRecord(
            lane: .genuine,
            receivedAt: 9,
            version: .v2,
            code: "unknown_bundle",
            message: "",
            body: [9]
        )
        _ = try f.store.write { tx in try tx.quarantine(genuine, cap: genuineCap) }
        #expect(try Self.quarantined(f).filter { $0.lane == .untrusted }.count == 3)
        #expect(try Self.quarantined(f).filter { $0.lane == .genuine }.count == 1)
        // The oldest untrusted rows went; flooding the untrusted lane never evicts a genuine row.
        #expect(try Self.quarantined(f).filter { $0.lane == .untrusted && $0.receivedAt < 2 }.isEmpty)
        for i in 0..<10 {
            let flood = QuarantineRecord(
                lane: .untrusted,
                receivedAt: 100 + Int64(i),
                version: nil,
                code: "malformed",
                message: "",
                body: []
            )
            _ = try f.store.write { tx in try tx.quarantine(flood, cap: untrustedCap) }
        }
        #expect(try Self.quarantined(f).filter { $0.lane == .genuine }.count == 1)
    }

    @Test(arguments: StoreKind.available) func theUntrustedLaneIsCappedInBytesOldestFirst(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let body = [UInt8](repeating: 0x41, count: 100_000)
        let one = QuarantineRecord(
            lane: .untrusted,
            receivedAt: 0,
            version: nil,
            code: "malformed",
            message: "",
            body: body
        ).storedSize
        let cap = QuarantineCap(rows: 1_000, bytes: 3 * one + 10, evictsOldest: true)
        for i in 0..<10 {
            let r = QuarantineRecord(
                lane: .untrusted,
                receivedAt: Int64(i),
                version: nil,
                code: "malformed",
                message: "",
                body: body
            )
            let outcome = try f.store.write { tx in try tx.quarantine(r, cap: cap) }
            guard case .stored = outcome else {
                Issue.record("row \(i) not stored: \(outcome)")
                return
            }
        }
        // Rows, not bytes, used to be counted: ten 100 kB rows all stayed.
        let rows = try Self.quarantined(f)
        #expect(rows.map(\.receivedAt) == [7, 8, 9])
        let usage = try f.store.read { tx in try tx.quarantineUsage() }
        #expect(usage[.untrusted]?.rows == 3 && usage[.untrusted]?.bytes == 3 * one)
    }

    @Test(arguments: StoreKind.available) func theGenuineLaneRefusesWhenFullAndNeverEvicts(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let body = [UInt8](repeating: 0x42, count: 50_000)
        let one = QuarantineRecord(
            lane: .genuine,
            receivedAt: 0,
            version: .v2,
            code: "unknown_bundle",
            message: "",
            body: body
        ).storedSize
        let cap = QuarantineCap(rows: 1_000, bytes: 2 * one, evictsOldest: false)
        var outcomes: [QuarantineOutcome] = []
        for i in 0..<4 {
            let r = QuarantineRecord(
                lane: .genuine,
                receivedAt: Int64(i),
                version: .v2,
                code: "unknown_bundle",
                message: "",
                body: body
            )
            outcomes.append(try f.store.write { tx in try tx.quarantine(r, cap: cap) })
        }
        #expect(outcomes.filter { $0 == .full }.count == 2)
        let kept = try Self.quarantined(f)
        #expect(kept.map(\.receivedAt) == [0, 1])
        // Room again once a row leaves (a replay that succeeded).
        let first = kept[0].id
        try f.store.write { tx in try tx.removeQuarantined(id: first) }
        let r = QuarantineRecord(
            lane: .genuine,
            receivedAt: 9,
            version: .v2,
            code: "unknown_bundle",
            message: "",
            body: body
        )
        #expect(try f.store.write { tx in try tx.quarantine(r, cap: cap) } != .full)
    }

    @Test(arguments: StoreKind.available) func aBodyQuarantinedOnceIsStoredOncePerLaneCodeAndBundle(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let cap = QuarantineCap(rows: 1_000, bytes: 1 << 30, evictsOldest: false)
        func row(
            _ body: String,
            code: String = "unknown_bundle",
            bundle: String? = "com.example.other",
            lane: QuarantineRecord.Lane = .genuine,
            at time: Int64 = 0
        ) -> QuarantineRecord {
            QuarantineRecord(
                lane: lane,
                receivedAt: time,
                version: .v2,
                code: code,
                message: "m",
                bundleID: bundle,
                body: Array(body.utf8)
            )
        }
        func add(_ r: QuarantineRecord, once: Bool = true) throws -> QuarantineOutcome {
            try f.store.write { tx in try tx.quarantine(r, cap: cap, once: once) }
        }
        guard case .stored(let id, _) = try add(row("a")) else {
            Issue.record("not stored")
            return
        }
        // The same body met again (a later run through Apple's history): the row it already has.
        #expect(try add(row("a", at: 5)) == .held(id: id))
        #expect(try add(row("a", at: 6)) == .held(id: id))
        // Anything else is a row of its own: another body (same length or not), code, bundle or lane…
        for other in [
            row("b"), row("ab"), row("a", code: "environment_mismatch"), row("a", bundle: nil),
            row("a", lane: .untrusted),
        ] {
            guard case .stored = try add(other) else {
                Issue.record("\(other.code) \(other.bundleID ?? "-") not stored")
                continue
            }
        }
        guard case .held = try add(row("a", bundle: nil)) else {
            Issue.record("a row without a bundle is not found again")
            return
        }
        // …and without `once`, the same body again is stored again (live traffic: each refusal of Apple's retries).
        guard case .stored = try add(row("a"), once: false) else {
            Issue.record("not stored without once")
            return
        }
        #expect(try Self.quarantined(f).count == 7)
    }

    @Test(arguments: StoreKind.available) func aDeliveryOutcomeNeverOverwritesARowNoLongerPending(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.storeEvents(f, [Self.event("e1", date: 1000)])
        let main = try #require(try Self.deliveries(f).first { $0.downstream == "main" })
        let dead = DeliveryOutcome(
            state: .dead,
            attempts: 3,
            nextAttemptAt: 9,
            deliveredAt: nil,
            status: 410,
            error: "HTTP 410"
        )
        try f.store.write { tx in try tx.settleDelivery(id: main.id, dead) }
        let late = DeliveryOutcome(
            state: .delivered,
            attempts: 4,
            nextAttemptAt: 9,
            deliveredAt: 9,
            status: 200,
            error: nil
        )
        try f.store.write { tx in try tx.settleDelivery(id: main.id, late) }
        let row = try #require(try Self.deliveries(f).first { $0.id == main.id })
        #expect(row.state == .dead && row.attempts == 3 && row.lastStatus == 410)
        #expect(try f.store.write { tx in try tx.redeliver(.deadLetters, now: 20) } == 1)
        #expect(
            try f.claim { tx in try tx.claimDueDeliveries(downstream: "main", at: 20, limit: 10, lease: Self.lease) }
                .map(\.id) == [main.id]
        )
    }

    @Test(arguments: StoreKind.available) func aStoredReceiptWakesThePendingV1FetchesOfItsSubscription(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        let key = SubscriptionKey(
            bundleID: "com.example.gateway",
            environment: .sandbox,
            originalTransactionID: "otid-1"
        )
        try f.store.write { tx in
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v1, compare: true), at: 10, due: 500)
        }
        // A plain comparison fetch is not queued twice while one is pending.
        try f.store.write { tx in
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v1, compare: true), at: 11, due: 500)
        }
        #expect(try f.claim { tx in try tx.claimDueFetches(at: 100, limit: 10, lease: Self.lease) }.isEmpty)
        try f.store.write { tx in
            try tx.putReceipt(StoredReceipt(receipt: "r", secretName: "S", updatedAt: 100), of: key)
        }
        let due = try f.claim { tx in try tx.claimDueFetches(at: 100, limit: 10, lease: Self.lease) }
        #expect(due.count == 1 && due.first?.fetch == .v1 && due.first?.subscription == key)
        #expect(
            try f.store.read { tx in try tx.receipt(of: key) }
                == StoredReceipt(receipt: "r", secretName: "S", updatedAt: 100)
        )
    }

    @Test(arguments: StoreKind.available) func workSubmittedAfterCloseIsRefused(_ kind: StoreKind) async throws {
        let f = try Fixture(kind)
        f.store.close()
        #expect(f.store.isClosing)
        #expect(throws: StoreFailure.self) { try f.store.write { _ in 1 } }
        await #expect(throws: StoreFailure.self) { try await f.store.write { _ in 1 } }
    }
}

/// The SQLite store's own machinery (its group commit's internals), beyond the contract.
@Suite struct SQLiteStoreTests {
    @Test func groupCommitBatchesConcurrentWorkAndIsolatesFailures() async throws {
        let f = try Fixture(.sqlite)
        let store = try #require(f.store as? SQLiteStore)
        struct Boom: Error {}
        try store.writer.perform { c in try c.execute("CREATE TABLE probe (n INTEGER UNIQUE)") }
        let before = store.writer.statistics
        let writer = store.writer
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
        let after = store.writer.statistics
        #expect(failures == 8)
        #expect(try store.database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM probe")?.int("n") } == 56)
        #expect(after.items - before.items == 64)
        #expect(after.batches - before.batches < 64)  // several items per transaction
        // Tried first as one plain transaction, each batch with a failing write was rolled back whole and run again
        // in savepoints.
        #expect(store.writer.rerunInSavepoints > 0)
    }

    /// Writes that all succeed run once each, in plain transactions: no savepoint, whose statement journal would copy
    /// every page they change.
    @Test func writesThatSucceedRunOnceWithoutSavepoints() async throws {
        let f = try Fixture(.sqlite)
        let store = try #require(f.store as? SQLiteStore)
        try store.writer.perform { c in try c.execute("CREATE TABLE probe (n INTEGER UNIQUE)") }
        let (writer, reruns) = (store.writer, store.writer.rerunInSavepoints)
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask {
                    _ = try? await writer.performAsync { c in
                        try c.run("INSERT INTO probe (n) VALUES (?)", [.integer(Int64(i))])
                    }
                }
            }
        }
        #expect(store.writer.rerunInSavepoints == reruns)
        #expect(try store.database.read { try $0.queryOne("SELECT COUNT(*) AS n FROM probe")?.int("n") } == 64)
    }
}
