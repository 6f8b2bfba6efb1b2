import Canonical
import Policy
import Testing
import WireJSON

@testable import Store

/// The delivery log: each attempt logged with its outcome, the newest 20 kept, read per event and a downstream's page
/// at a time; one event's delivery to one downstream replayed.
extension StoreTests {
    static func events(_ f: Fixture, _ ids: [String], createdAt: Int64) throws {
        let events = ids.map { event($0, date: 1_000) }
        _ = try f.store.write { tx in
            try tx.storeEvents(events, journalID: nil, routing: TestRouting.routing(), now: createdAt, authority: nil)
        }
    }

    static func delivery(_ f: Fixture, _ eventID: String, to downstream: String) throws -> Delivery {
        try #require(
            try f.store.read { tx in
                try tx.deliveries(state: nil, downstream: downstream, eventID: eventID, limit: 1)
            }.first
        )
    }

    /// Settles delivery `id` as attempt `n`: a 500 whose answer is `head`, started at `n` × 1000, taking `n` ms.
    static func attempt(
        _ f: Fixture,
        _ id: Int64,
        _ n: Int,
        head: [UInt8] = [],
        state: DeliveryState = .pending
    )
        throws
    {
        let attempt = DeliveryAttempt(
            startedAt: Int64(n) * 1_000,
            latencyMillis: Int64(n),
            responseHead: head,
            redactor: SecretRedactor([])
        )
        let outcome = DeliveryOutcome(
            state: state,
            attempts: n,
            nextAttemptAt: 0,
            deliveredAt: state == .delivered ? Int64(n) * 1_000 : nil,
            status: state == .delivered ? 200 : 500,
            error: state == .delivered ? nil : "HTTP 500",
            attempt: attempt
        )
        try f.store.write { tx in try tx.settleDelivery(id: id, outcome) }
    }

    static func log(_ f: Fixture, _ eventID: String) throws -> [DeliveryLogEntry]? {
        try f.store.read { tx in try tx.deliveryLog(eventID: eventID) }
    }

    @Test(arguments: StoreKind.available) func eachAttemptIsLoggedWithItsOutcomeTheNewest20Kept(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.events(f, ["e1"], createdAt: 5)
        let main = try Self.delivery(f, "e1", to: "main")
        // Bytes that are not UTF-8, a quote, a tag, a NUL: kept as received, cut at 1 KiB.
        let head: [UInt8] = Array("\"<b>\u{0}".utf8) + [0xFF, 0xFE] + Array(repeating: UInt8(ascii: "x"), count: 2_000)
        for n in 1...25 { try Self.attempt(f, main.id, n, head: n == 25 ? head : Array("n\(n)".utf8)) }

        let log = try #require(try Self.log(f, "e1"))
        #expect(log.map(\.delivery.downstream) == ["main", "shadow"])
        let attempts = log[0].attempts
        #expect(attempts.map(\.attempt) == Array((6...25).reversed()), "the newest 20, newest first")
        #expect(attempts[0].startedAt == 25_000 && attempts[0].latencyMillis == 25)
        #expect(attempts[0].status == 500 && attempts[0].error == "HTTP 500" && !attempts[0].replay)
        #expect(attempts[0].responseHead == Array(head.prefix(1_024)) && attempts[0].responseHead.count == 1_024)
        #expect(attempts[1].responseHead == Array("n24".utf8))
        #expect(log[1].attempts.isEmpty, "shadow was never attempted")
        // Kept in the store, not only in what is read back.
        let rows = try f.store.read { tx in
            try tx.deliveryPage(downstream: "main", state: .pending, after: .since(0), limit: 10)
        }
        #expect(rows.map { $0.attempts.map(\.attempt) } == [[25]])
        #expect(try Self.log(f, "missing") == nil)
    }

    @Test(arguments: StoreKind.available) func oneEventIsReplayedToOneDownstreamItsAttemptsMarked(
        _ kind: StoreKind
    ) throws {
        let f = try Fixture(kind)
        try Self.events(f, ["e1", "e2"], createdAt: 5)
        for id in ["e1", "e2"] {
            for downstream in ["main", "shadow"] {
                try Self.attempt(f, try Self.delivery(f, id, to: downstream).id, 1, state: .delivered)
            }
        }
        #expect(try f.store.write { tx in try tx.redeliver(eventID: "e1", downstream: "main", now: 90) } == 1)
        #expect(try f.store.write { tx in try tx.redeliver(eventID: "e1", downstream: "nowhere", now: 90) } == 0)
        let main = try Self.delivery(f, "e1", to: "main")
        #expect(main.state == .pending && main.attempts == 0 && main.nextAttemptAt == 90)
        for (id, downstream) in [("e1", "shadow"), ("e2", "main"), ("e2", "shadow")] {
            #expect(try Self.delivery(f, id, to: downstream).state == .delivered, "\(id) \(downstream)")
        }
        try Self.attempt(f, main.id, 1, state: .delivered)
        let log = try #require(try Self.log(f, "e1"))
        #expect(log[0].attempts.map(\.replay) == [true, false])
        #expect(log[1].attempts.map(\.replay) == [false])
    }

    @Test(arguments: StoreKind.available) func aDownstreamsDeliveriesAreReadAPageAtATime(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        // 250 events, several created in the same millisecond; every third one's delivery to main dead.
        for batch in 0..<25 {
            try Self.events(f, (0..<10).map { "e\(batch * 10 + $0)" }, createdAt: 100 + Int64(batch / 2))
        }
        let all = try f.store.read { tx in try tx.deliveries(state: nil, downstream: "main", eventID: nil, limit: 1_000)
        }
        for (i, d) in all.enumerated() where i % 3 == 0 { try Self.attempt(f, d.id, 1, state: .dead) }
        for (i, d) in all.enumerated() where i % 3 == 1 { try Self.attempt(f, d.id, 1, state: .delivered) }

        func pages(_ state: DeliveryState, since: Int64, limit: Int) throws -> [[Delivery]] {
            var (pages, cursor) = ([[Delivery]](), DeliveryCursor.since(since))
            while true {
                let page = try f.store.read { tx in
                    try tx.deliveryPage(downstream: "main", state: state, after: cursor, limit: limit)
                }
                pages.append(page.map(\.delivery))
                guard page.count == limit, let last = page.last?.delivery else { return pages }
                cursor = DeliveryCursor(createdAt: last.createdAt, id: last.id)
            }
        }
        for (state, residue) in [(DeliveryState.dead, 0), (.delivered, 1), (.pending, 2)] {
            let expected = all.enumerated().filter { $0.offset % 3 == residue }.map(\.element.id)
            let read = try pages(state, since: 0, limit: 30)
            #expect(read.dropLast().allSatisfy { $0.count == 30 })
            #expect(read.flatMap { $0 }.map(\.id) == expected, "\(state)")
            #expect(read.flatMap { $0 }.allSatisfy { $0.state == state && $0.downstream == "main" })
        }
        let since = try pages(.delivered, since: 110, limit: 1_000).flatMap { $0 }
        #expect(!since.isEmpty && since.allSatisfy { $0.createdAt >= 110 })
        #expect(since.count == all.enumerated().filter { $0.offset % 3 == 1 && $0.element.createdAt >= 110 }.count)
        #expect(try pages(.delivered, since: 0, limit: 5).first?.first?.state == .delivered)
        #expect(
            try f.store.read { tx in try tx.deliveryPage(downstream: "other", state: .dead, after: .since(0), limit: 10)
            }
            .isEmpty
        )
    }

    /// The log's reads stay bounded as the outbox grows: each on an index, in order, never a walk over a table.
    @Test(arguments: StoreKind.available) func theDeliveryLogsReadsAreAnsweredByIndexes(_ kind: StoreKind) throws {
        let f = try Fixture(kind)
        let reads: [(SQL, parameters: [StoreValue], indexes: [String])] = [
            (
                .deliveredPage, [.text("d"), .text("delivered"), .int64(1), .int64(1), .int64(10)],
                ["outbox_delivered_created"]
            ),
            (
                .undeliveredPage, [.text("d"), .text("dead"), .int64(1), .int64(1), .int64(10)],
                ["outbox_undelivered_created"]
            ),
            (
                .eventDeliveries, [.text("e"), .int64(1)],
                ["outbox_downstream_event_id_key", "sqlite_autoindex_outbox_1"]
            ),
        ]
        for (sql, parameters, indexes) in reads {
            let plan: [String]
            if let store = f.store as? SQLiteStore {
                plan = try store.writer.perform { c in
                    try c.query("EXPLAIN QUERY PLAN " + sql.sqlite, parameters.map(\.sqlite))
                        .compactMap { $0.string("detail") }
                }
                #expect(
                    !plan.contains { $0.hasPrefix("SCAN") && !$0.contains("USING") && !$0.contains("names") },
                    "\(plan)"
                )
            } else {
                let store = try #require(f.store as? PostgresStore)
                plan = try store.writer.perform { c in
                    try c.execute("SET LOCAL enable_seqscan = off")  // an empty table: the planner would rather read it
                    return try c.query("EXPLAIN " + sql.postgres, parameters.map(\.postgres))
                        .compactMap { $0.string("QUERY PLAN") }
                }
                #expect(!plan.contains { $0.contains("Seq Scan on outbox") }, "\(plan)")
            }
            #expect(plan.contains { line in indexes.contains { line.contains($0) } }, "\(sql.sqlite)\n\(plan)")
            // A page is read in its index's order; the event's few deliveries (one per downstream) are sorted.
            if sql.sqlite != SQL.eventDeliveries.sqlite {
                #expect(!plan.contains { $0.contains("TEMP B-TREE") || $0.contains("Sort") }, "\(plan)")
            }
        }
    }
}
