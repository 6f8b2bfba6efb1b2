import Canonical
import Foundation
import Gateway
import HTTPClient
import Policy
import SQLite
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TeamDatabase
import TestSupport
import Testing
import WireJSON

/// `database` downstreams (docs/database-downstream.md): the same scenarios against a SQLite file (always) and the test
/// PostgreSQL (when `IAPGW_TEST_DATABASE_URL` is set; each target in a schema of its own), delivered by the real
/// `DeliveryWorker` from the outbox.
@Suite struct DatabaseDownstreamSQLiteTests {
    @Test func eventsAndStatesLand() async throws { try await DatabaseDownstreamScenarios.eventsAndStatesLand(.sqlite) }
    @Test func aRedeliveredEventChangesNothing() async throws {
        try await DatabaseDownstreamScenarios.redeliveryChangesNothing(.sqlite)
    }
    @Test func outOfOrderEventsConverge() async throws {
        try await DatabaseDownstreamScenarios.outOfOrderEventsConverge(.sqlite)
    }
    @Test func shadowEventsAreRecordedButDoNotMoveSubscriptions() async throws {
        try await DatabaseDownstreamScenarios.shadowRouting(.sqlite)
    }
    @Test func aReplayedDeadLetterIsDelivered() async throws {
        try await DatabaseDownstreamScenarios.replayedDeadLetterIsDelivered(.sqlite)
    }
    @Test func oddValuesAreWritten() async throws { try await DatabaseDownstreamScenarios.oddValuesAreWritten(.sqlite) }

    /// The file's folder is a regular file (the path cannot be opened, even by root): attempts fail and are retried;
    /// once a folder is there, everything pending is delivered.
    @Test func anUnwritablePathIsRetriedUntilFixed() async throws {
        let team = try TeamDatabase.make(.sqlite, folderIsAFile: true)
        defer { team.cleanup() }
        let h = try DatabaseDownstreamScenarios.harness([team.downstream("warehouse", maxAttempts: 1000)], team: team)
        defer { h.close() }
        try await DatabaseDownstreamScenarios.store(
            h,
            DatabaseDownstreamScenarios.sample("e1", .purchase, at: 1, state: .active)
        )
        let worker = DatabaseDownstreamScenarios.worker(h, team: team)
        let task = Task { await worker.run() }
        try await eventually("failed attempts") { try h.store.deliveries().first.map { $0.attempts >= 2 } ?? false }
        let pending = try #require(h.store.deliveries().first)
        #expect(pending.state == .pending)
        #expect(pending.lastError == "database_error")
        #expect(
            try DatabaseDownstreamScenarios.reason(h, pending)
                .contains("downstream warehouse: cannot open the SQLite file")
        )
        try team.fixFolder()
        try await eventually("delivered once the folder exists") { try h.store.deliveries().first?.state == .delivered }
        worker.stop()
        await task.value
        #expect(try team.contents().events.map(\.id) == ["e1"])
        #expect(h.metrics.counter("iapgw_delivery_failures_total", ["downstream": "warehouse"]) >= 2)
    }

    /// The team's own tables in the same file — one of them named `events` — are left as they were; with a prefix the
    /// gateway's tables sit beside them, without one the gateway refuses the file. The gateway's own store holds the
    /// same events and journal as before the deliveries.
    @Test func theTeamsOtherTablesAndTheGatewaysOwnAreUntouched() async throws {
        let team = try TeamDatabase.make(.sqlite, prefix: "iap")
        defer { team.cleanup() }
        let teamDB = try SQLiteDatabase(path: team.sqlitePath)
        defer { teamDB.close() }
        try teamDB.write { c in
            try c.execute(
                """
                CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                INSERT INTO users (id, name) VALUES (1, 'ada'), (2, 'grace');
                CREATE TABLE events (id TEXT PRIMARY KEY, what TEXT);
                INSERT INTO events (id, what) VALUES ('team-1', 'signup');
                CREATE VIEW user_names AS SELECT name FROM users;
                """
            )
        }
        func teamRows() throws -> [String] {
            try teamDB.read { c in
                try c.query(
                    "SELECT 'users:' || id || ':' || name AS r FROM users UNION ALL SELECT 'events:' || id || ':' || what FROM events ORDER BY r"
                )
                .compactMap { $0.string("r") }
            }
        }
        func tables() throws -> [String] {
            try teamDB.read { c in
                try c.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name").compactMap {
                    $0.string("name")
                }
            }
        }
        let before = try teamRows()

        // The same file without a prefix: its `events` is the team's, so the gateway refuses it.
        let refused = TeamDatabase(backend: .sqlite, sqlitePath: team.sqlitePath, schema: "", folder: team.folder)
        let h = try DatabaseDownstreamScenarios.harness(
            [team.downstream("warehouse"), refused.downstream("refused", maxAttempts: 2)],
            team: team
        )
        defer { h.close() }
        for name in ["notif-did-renew", "notif-subscribed-initial-buy", "notif-refund"] {
            #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/\(name).json")).status == 200)
        }
        let gatewayEvents = try h.store.events()
        let gatewayJournal = try h.store.journal()
        try await DatabaseDownstreamScenarios.deliver(h, team: team) {
            $0.filter { $0.downstream == "warehouse" }.allSatisfy { $0.state == .delivered }
                && $0.filter { $0.downstream == "refused" }.allSatisfy { $0.state == .dead }
        }
        let refusals = try h.store.deliveries().filter { $0.downstream == "refused" }
        #expect(refusals.count == 3)
        #expect(refusals.allSatisfy { $0.lastError == "database_error" })
        for refusal in refusals {
            let reason = try DatabaseDownstreamScenarios.reason(h, refusal)
            #expect(reason.contains("a table events exists that iap-gateway did not create"), "\(reason)")
        }
        #expect(try team.contents().events.count == 3)
        #expect(try teamRows() == before)
        #expect(
            try tables() == ["events", "iap_events", "iap_schema_version", "iap_subscriptions", "user_names", "users"]
        )
        // The gateway's own store: the same events and journal; no table of the downstream in it.
        #expect(try h.store.events() == gatewayEvents)
        #expect(try h.store.journal() == gatewayJournal)
        let storeDB = try SQLiteDatabase(path: h.config.sqlitePath)
        defer { storeDB.close() }
        let storeTables = try storeDB.read { c in
            try c.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.string("name") }
        }
        #expect(!storeTables.contains { $0.hasPrefix("iap_") || $0 == "subscriptions" || $0 == "schema_version" })
    }

    /// docs/database-downstream.md shows the DDL the gateway runs, exactly.
    @Test func theDocumentedSchemaIsTheOneCreated() throws {
        let doc = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appending(path: "docs").appending(path: "database-downstream.md")
        let text = String(decoding: try Data(contentsOf: doc), as: UTF8.self)
        #expect(
            text.contains("```sql\n" + DownstreamSchema.postgresDDL(schema: "iap") + "\n```"),
            "the PostgreSQL DDL block differs"
        )
        #expect(
            text.contains("```sql\n" + DownstreamSchema.sqliteDDL(prefix: "") + "\n```"),
            "the SQLite DDL block differs"
        )
    }
}

@Suite(
    .serialized,
    .enabled(
        if: TeamDatabase.postgresURL != nil,
        "IAPGW_TEST_DATABASE_URL is not set (run under scripts/with-postgres)"
    )
)
struct DatabaseDownstreamPostgresTests {
    @Test func eventsAndStatesLand() async throws {
        try await DatabaseDownstreamScenarios.eventsAndStatesLand(.postgres)
    }
    @Test func aRedeliveredEventChangesNothing() async throws {
        try await DatabaseDownstreamScenarios.redeliveryChangesNothing(.postgres)
    }
    @Test func outOfOrderEventsConverge() async throws {
        try await DatabaseDownstreamScenarios.outOfOrderEventsConverge(.postgres)
    }
    @Test func shadowEventsAreRecordedButDoNotMoveSubscriptions() async throws {
        try await DatabaseDownstreamScenarios.shadowRouting(.postgres)
    }
    @Test func aReplayedDeadLetterIsDelivered() async throws {
        try await DatabaseDownstreamScenarios.replayedDeadLetterIsDelivered(.postgres)
    }
    @Test func oddValuesAreWritten() async throws {
        try await DatabaseDownstreamScenarios.oddValuesAreWritten(.postgres)
    }

    /// The server stops while the gateway holds connections to it: attempts fail fast and are retried; once it is
    /// back, the pool reconnects and everything pending is delivered.
    @Test(
        .enabled(
            if: TeamDatabase.postgresControl != nil,
            "IAPGW_TEST_PG_CTL is not set (run under scripts/with-postgres)"
        )
    )
    func theTeamDatabaseDownIsRetriedUntilItIsBack() async throws {
        let team = try TeamDatabase.make(.postgres)
        defer { team.cleanup() }
        let h = try DatabaseDownstreamScenarios.harness([team.downstream("warehouse", maxAttempts: 1000)], team: team)
        defer { h.close() }
        let worker = DatabaseDownstreamScenarios.worker(h, team: team)
        let task = Task { await worker.run() }
        var stopped = false
        defer { if stopped { _ = try? TeamDatabase.control("start") } }
        try await DatabaseDownstreamScenarios.store(
            h,
            DatabaseDownstreamScenarios.sample("e1", .purchase, at: 1, state: .active)
        )
        try await eventually("the first event delivered") {
            try h.store.deliveries().allSatisfy { $0.state == .delivered }
        }

        #expect(try TeamDatabase.control("stop") == 0)
        stopped = true
        try await DatabaseDownstreamScenarios.store(
            h,
            DatabaseDownstreamScenarios.sample("e2", .renewal, at: 2, state: .active)
        )
        try await eventually("failed attempts while the server is down") {
            try h.store.deliveries().first { $0.eventID == "e2" }.map { $0.attempts >= 2 } ?? false
        }
        let pending = try #require(h.store.deliveries().first { $0.eventID == "e2" })
        #expect(pending.state == .pending)
        #expect(pending.lastError == "database_error", "\(pending.lastError ?? "")")
        // The database's reason is in the delivery log (the row keeps the code), never the connection string.
        let reason = String(
            decoding: try #require(DeliveryLogTests.log(h, "e2", "warehouse").first).responseHead,
            as: UTF8.self
        )
        #expect(reason.hasPrefix("downstream warehouse: PostgreSQL: "), "\(reason)")
        #expect(!reason.contains(TeamDatabase.postgresURL!))

        #expect(try TeamDatabase.control("start") == 0)
        stopped = false
        try await eventually("delivered once the server is back") {
            try h.store.deliveries().allSatisfy { $0.state == .delivered }
        }
        worker.stop()
        await task.value
        let contents = try team.contents()
        #expect(contents.events.map(\.id) == ["e1", "e2"])
        #expect(contents.subscriptions.map(\.lastEventID) == ["e2"])
        #expect(h.metrics.counter("iapgw_delivery_failures_total", ["downstream": "warehouse"]) >= 2)
    }

    /// The team's other tables — in the gateway's schema and in another one — keep their rows; a schema whose
    /// `events` table the gateway did not create is refused and left alone.
    @Test func theTeamsOtherTablesAreUntouched() async throws {
        let team = try TeamDatabase.make(.postgres)
        let foreign = try TeamDatabase.make(.postgres)
        defer {
            team.cleanup()
            foreign.cleanup()
        }
        try Psql.run(
            """
            CREATE SCHEMA \(team.schema);
            CREATE TABLE \(team.schema).team_accounts (id int PRIMARY KEY, name text NOT NULL);
            INSERT INTO \(team.schema).team_accounts VALUES (1, 'ada'), (2, 'grace');
            CREATE SCHEMA \(foreign.schema);
            CREATE TABLE \(foreign.schema).events (id text PRIMARY KEY, what text);
            INSERT INTO \(foreign.schema).events VALUES ('team-1', 'signup');
            """
        )
        func teamRows() throws -> String {
            try Psql.run(
                """
                SELECT string_agg(r, ',' ORDER BY r) FROM (
                    SELECT 'accounts:' || id || ':' || name AS r FROM \(team.schema).team_accounts
                    UNION ALL SELECT 'events:' || id || ':' || what FROM \(foreign.schema).events) x
                """
            )
        }
        let before = try teamRows()
        #expect(before == "accounts:1:ada,accounts:2:grace,events:team-1:signup")
        let h = try DatabaseDownstreamScenarios.harness(
            [team.downstream("warehouse"), foreign.downstream("refused", maxAttempts: 2)],
            team: team
        )
        defer { h.close() }
        for name in ["notif-did-renew", "notif-subscribed-initial-buy"] {
            #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/\(name).json")).status == 200)
        }
        try await DatabaseDownstreamScenarios.deliver(h, team: team) {
            $0.filter { $0.downstream == "warehouse" }.allSatisfy { $0.state == .delivered }
                && $0.filter { $0.downstream == "refused" }.allSatisfy { $0.state == .dead }
        }
        #expect(
            try h.store.deliveries().filter { $0.downstream == "refused" }.allSatisfy {
                try DatabaseDownstreamScenarios.reason(h, $0)
                    .contains("a table \(foreign.schema).events exists that iap-gateway did not create")
            }
        )
        #expect(try team.contents().events.count == 2)
        #expect(try teamRows() == before)
        let tables = try Psql.run(
            "SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY table_schema, table_name) FROM information_schema.tables "
                + "WHERE table_schema IN ('\(team.schema)', '\(foreign.schema)')"
        )
        #expect(
            Set(tables.split(separator: ",").map(String.init)) == [
                "\(foreign.schema).events", "\(team.schema).events", "\(team.schema).schema_version",
                "\(team.schema).subscriptions",
                "\(team.schema).team_accounts",
            ]
        )
    }
}

/// What both databases must do.
enum DatabaseDownstreamScenarios {
    /// The database's reason for a delivery's latest failed attempt: the delivery log keeps it (the row keeps the
    /// code `database_error`).
    static func reason(_ h: GatewayHarness, _ delivery: Delivery) throws -> String {
        let attempt = try DeliveryLogTests.log(h, try #require(delivery.eventID), delivery.downstream).first
        return String(decoding: attempt?.responseHead ?? [], as: UTF8.self)
    }

    static let now: Int64 = GatewayHarness.t + 3_600_000
    static let otid = "2000000000000777"

    static func config(_ downstreams: [String]) -> String {
        """
        {
          "apps": [
            { "bundle_id": "com.example.gateway", "app_apple_id": 1234567890, "environments": ["production", "sandbox"],
              "shared_secret_env": ["APP_SECRET"], "authority": "v2" }
          ],
          "downstreams": [ \(downstreams.joined(separator: ",\n")) ]
        }
        """
    }

    static func harness(_ downstreams: [String], team: TeamDatabase, url: String? = nil) throws -> GatewayHarness {
        try GatewayHarness(
            configJSON: config(downstreams),
            environment: ["TEAM_DATABASE_URL": url ?? TeamDatabase.postgresURL ?? "unused"]
        )
    }

    /// A delivery worker over the harness's store that retries at once (the test's clock does not move).
    static func worker(
        _ h: GatewayHarness,
        team: TeamDatabase,
        url: String? = nil,
        clock: Int64 = now,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) -> DeliveryWorker {
        var policy = DeliveryTuning()
        policy.retry.baseDelay = .zero
        policy.pollMillis = 20
        let time: @Sendable () -> Int64 = { clock }
        let context = WorkerContext(
            store: h.store,
            metrics: h.metrics,
            log: Log(now: time, sink: log),
            now: time,
            jitter: { 0 }
        )
        let urls = Dictionary(
            uniqueKeysWithValues: h.config.downstreams.map { ($0.name, url ?? TeamDatabase.postgresURL ?? "") }
        )
        return DeliveryWorker(
            context: context,
            router: h.router,
            transport: CurlTransport(),
            signers: [:],
            passthroughSecrets: [],
            redactor: SecretRedactor([]),
            databases: DatabaseDownstreams.make(config: h.config, connectionStrings: urls, timeoutMillis: 15_000),
            tuning: policy
        )
    }

    /// Runs a worker until `done` holds for the outbox.
    static func deliver(
        _ h: GatewayHarness,
        team: TeamDatabase,
        url: String? = nil,
        clock: Int64 = now,
        until done: @escaping @Sendable ([Delivery]) -> Bool = { $0.allSatisfy { $0.state == .delivered } }
    ) async throws {
        let worker = worker(h, team: team, url: url, clock: clock)
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }) {
            done(try h.store.deliveries())
        }
    }

    /// A subscription event of `otid` in sandbox, `hours` after the fixtures' time, in the state given.
    static func sample(
        _ id: String,
        _ kind: EventKind,
        at hours: Int64,
        state: Entitlement.State,
        source: EventSource = .v2,
        otid: String = otid
    ) -> CanonicalEvent {
        let date = GatewayHarness.t + hours * 3_600_000
        var e = CanonicalEvent(
            id: id,
            source: source,
            kind: kind,
            rawType: kind.rawValue.uppercased(),
            eventDate: date,
            eventDateSource: .signedDate,
            verified: true
        )
        e.bundleID = "com.example.gateway"
        e.environment = .sandbox
        e.originalTransactionID = otid
        e.transactionID = "tx-" + id
        e.productID = "com.example.monthly"
        e.productType = .autoRenewable
        e.expiresDate = date + 30 * 86_400_000
        e.autoRenew = state == .active
        e.entitlement = Entitlement(state: state, until: state == .active ? e.expiresDate : nil)
        return e
    }

    /// Stores events as the journal does (deliveries queued by the harness's router).
    static func store(_ h: GatewayHarness, _ events: CanonicalEvent...) async throws {
        let router = h.router
        _ = try await h.store.write { tx in
            try tx.storeEvents(events, journalID: nil, routing: router.routing, now: now, authority: nil)
        }
    }

    // MARK: Scenarios

    /// Real notifications through ingest: every event lands with its columns and its JSON, each subscription holds the
    /// newest authoritative event (by event date, then id), and the version is recorded.
    static func eventsAndStatesLand(_ backend: TeamDatabase.Backend) async throws {
        let team = try TeamDatabase.make(backend)
        defer { team.cleanup() }
        let h = try harness([team.downstream("warehouse")], team: team)
        defer { h.close() }
        for name in ["notif-did-renew", "notif-subscribed-initial-buy", "notif-refund", "notif-expired-voluntary"] {
            #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/\(name).json")).status == 200)
        }
        let stored = try h.store.events()
        #expect(stored.count == 4)
        try await deliver(h, team: team)
        try team.recordContractSamples()
        let contents = try team.contents()
        #expect(contents.schemaVersion == DownstreamSchema.version)
        #expect(
            contents.events.map(\.id)
                == stored.map(\.event.id).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        )
        for row in contents.events {
            let event = try #require(stored.first { $0.event.id == row.id })
            #expect(row.event == event.event, "the event column decodes to the stored event")
            #expect(row.kind == event.event.kind.rawValue && row.source == event.event.source.rawValue)
            #expect(row.bundleID == "com.example.gateway" && row.environment == event.event.environment?.rawValue)
            #expect(
                row.originalTransactionID == event.event.originalTransactionID && row.productID == event.event.productID
            )
            #expect(row.eventDate == event.event.eventDate && row.expiresDate == event.event.expiresDate)
            #expect(
                row.entitlementState == event.event.entitlement?.state.rawValue
                    && row.entitlementUntil == event.event.entitlement?.until
            )
            #expect(row.autoRenew == event.event.autoRenew && row.authoritative == event.authoritative)
            #expect(row.deliveredAt == now)
        }
        // One row per subscription and environment: the newest authoritative event's state.
        let bySubscription = Dictionary(
            grouping: stored.filter { $0.authoritative && $0.event.originalTransactionID != nil }
        ) {
            "\($0.event.originalTransactionID!)|\($0.event.environment!.rawValue)"
        }
        #expect(contents.subscriptions.count == bySubscription.count)
        for row in contents.subscriptions {
            let events = try #require(bySubscription["\(row.originalTransactionID)|\(row.environment)"]).map(\.event)
            let newest = try #require(
                events.max { a, b in
                    a.eventDate != b.eventDate
                        ? a.eventDate < b.eventDate : Array(a.id.utf8).lexicographicallyPrecedes(Array(b.id.utf8))
                }
            )
            #expect(
                row.lastEventID == newest.id && row.lastEventKind == newest.kind.rawValue
                    && row.lastEventDate == newest.eventDate
            )
            #expect(
                row.entitlementState == newest.entitlement?.state.rawValue
                    && row.entitlementUntil == newest.entitlement?.until
            )
            #expect(
                row.expiresDate == newest.expiresDate && row.autoRenew == newest.autoRenew
                    && row.productID == newest.productID
            )
            #expect(row.bundleID == newest.bundleID && row.updatedAt == now)
        }
        #expect(h.metrics.counter("iapgw_delivery_attempts_total", ["downstream": "warehouse"]) == 4)
    }

    /// A replay delivers every event again, later: no row changes (not even `delivered_at` or `updated_at`), and the
    /// writer says so.
    static func redeliveryChangesNothing(_ backend: TeamDatabase.Backend) async throws {
        let team = try TeamDatabase.make(backend)
        defer { team.cleanup() }
        let h = try harness([team.downstream("warehouse")], team: team)
        defer { h.close() }
        try await store(h, sample("a", .purchase, at: 1, state: .active), sample("b", .renewal, at: 2, state: .active))
        try await deliver(h, team: team)
        let first = try team.contents()
        #expect(first.events.count == 2 && first.subscriptions.count == 1)

        let operations = Operations(store: h.store, now: { now + 86_400_000 })
        #expect(try operations.replay(.range(since: .min, until: .max)) == 2)
        #expect(try h.store.deliveries().allSatisfy { $0.state == .pending && $0.attempts == 0 })
        try await deliver(h, team: team, clock: now + 86_400_000)
        #expect(try h.store.deliveries().allSatisfy { $0.state == .delivered && $0.attempts == 1 })
        #expect(try team.contents() == first)

        // The writer itself: nothing inserted, nothing updated.
        let writer = team.writer()
        defer { writer.close() }
        let event = try #require(h.store.events().first { $0.event.id == "b" })
        let outcome = try writer.write(
            DownstreamEvent(event: event.event, json: event.json, authoritative: true, deliveredAt: now + 1)
        )
        #expect(outcome == DownstreamWrite(eventInserted: false, subscriptionUpdated: false))
        #expect(try team.contents() == first)
    }

    /// Older after newer keeps the newer state; an equal event date is decided by the event id; and every delivery
    /// order of the same events ends in the same rows.
    static func outOfOrderEventsConverge(_ backend: TeamDatabase.Backend) async throws {
        let team = try TeamDatabase.make(backend)
        defer { team.cleanup() }
        let h = try harness([team.downstream("warehouse")], team: team)
        defer { h.close() }
        // Through the worker: the newer event first, then an older one.
        try await store(h, sample("n-expired", .expiration, at: 5, state: .expired))
        try await deliver(h, team: team)
        try await store(h, sample("o-renewal", .renewal, at: 2, state: .active))
        try await deliver(h, team: team)
        let contents = try team.contents()
        #expect(contents.events.map(\.id) == ["n-expired", "o-renewal"])
        let row = try #require(contents.subscriptions.first)
        #expect(contents.subscriptions.count == 1)
        #expect(row.lastEventID == "n-expired" && row.entitlementState == "expired" && row.autoRenew == false)

        // Every order of four events (two of them at the same date) into targets of their own: the same rows.
        let events = [
            sample("e1-buy", .purchase, at: 1, state: .active),
            sample("e2-fail", .renewalFailure, at: 3, state: .billingRetry),
            sample("e3-recover", .renewal, at: 3, state: .active), sample("e4-refund", .refund, at: 2, state: .revoked),
        ].map { DownstreamEvent(event: $0, json: CanonicalJSON.encode($0), authoritative: true, deliveredAt: now) }
        var outcomes: [DownstreamContents] = []
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]] {
            let target = try TeamDatabase.make(backend)
            defer { target.cleanup() }
            let writer = target.writer()
            defer { writer.close() }
            for i in order + order.reversed() { _ = try writer.write(events[i]) }  // and each delivered twice
            outcomes.append(try writer.contents())
        }
        #expect(Set(outcomes).count == 1, "every order converges")
        let converged = try #require(outcomes.first?.subscriptions.first)
        #expect(converged.lastEventID == "e3-recover", "event date 3 twice: the greater id wins")
        #expect(converged.entitlementState == "active")
        #expect(outcomes.first?.events.count == 4)
    }

    /// Authoritative events go to every database downstream; the other path's only to `shadow: true` ones, recorded
    /// with `authoritative` false and never moving `subscriptions`.
    static func shadowRouting(_ backend: TeamDatabase.Backend) async throws {
        let main = try TeamDatabase.make(backend)
        let audit = try TeamDatabase.make(backend)
        defer {
            main.cleanup()
            audit.cleanup()
        }
        let h = try harness([main.downstream("warehouse"), audit.downstream("audit", shadow: true)], team: main)
        defer { h.close() }
        #expect(
            h.router.eventTargets(bundleID: "com.example.gateway", environment: .sandbox, authoritative: true) == [
                "warehouse", "audit",
            ]
        )
        #expect(
            h.router.eventTargets(bundleID: "com.example.gateway", environment: .sandbox, authoritative: false) == [
                "audit"
            ]
        )
        try await store(
            h,
            sample("v2-event", .renewal, at: 1, state: .active),
            sample("v1-event", .expiration, at: 2, state: .expired, source: .v1)
        )
        try await deliver(h, team: main)
        try main.recordContractSamples()
        try audit.recordContractSamples()
        let warehouse = try main.contents()
        #expect(warehouse.events.map(\.id) == ["v2-event"])
        #expect(warehouse.subscriptions.map(\.lastEventID) == ["v2-event"])
        let shadow = try audit.contents()
        #expect(shadow.events.map { "\($0.id):\($0.authoritative)" } == ["v1-event:false", "v2-event:true"])
        #expect(
            shadow.subscriptions.map(\.lastEventID) == ["v2-event"],
            "the newer shadow event does not move the subscription"
        )
    }

    /// A target that cannot be reached dead-letters after `max_attempts` (its errors and the log carry no connection
    /// string); once fixed, replaying the dead letters delivers them.
    static func replayedDeadLetterIsDelivered(_ backend: TeamDatabase.Backend) async throws {
        let team = try TeamDatabase.make(backend, folderMissing: true)
        defer { team.cleanup() }
        let password = "not-the-password-7f3a91"
        let broken = "postgresql://iapgw:\(password)@127.0.0.1:1/iapgw_test?connect_timeout=5"
        let h = try harness([team.downstream("warehouse", maxAttempts: 2)], team: team, url: broken)
        defer { h.close() }
        try await store(h, sample("a", .purchase, at: 1, state: .active), sample("b", .refund, at: 2, state: .revoked))
        let lines = Mutex<[String]>([])
        let worker = worker(h, team: team, url: broken, log: { line in lines.withLock { $0.append(line) } })
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }) {
            try h.store.deliveries().allSatisfy { $0.state == .dead }
        }
        let dead = try h.store.deliveries()
        #expect(dead.map(\.attempts) == [2, 2])
        for error in dead.map({ $0.lastError ?? "" }) + lines.withLock({ $0 }) {
            #expect(!error.contains(password) && !error.contains(broken), "\(error)")
        }
        #expect(dead.allSatisfy { $0.lastError == "database_error" }, "\(dead.map(\.lastError))")
        #expect(
            lines.withLock { $0 }.filter { $0.contains(#""detail":"downstream warehouse: "#) }.count == 4,
            "each failed attempt's reason logged"
        )
        #expect(lines.withLock { $0 }.filter { $0.contains("delivery dead-lettered") }.count == 2)

        try team.fixFolder()
        #expect(try Operations(store: h.store, now: { now }).replay(.deadLetters) == 2)
        try await deliver(h, team: team)
        let contents = try team.contents()
        #expect(contents.events.map(\.id) == ["a", "b"])
        #expect(contents.subscriptions.map(\.entitlementState) == ["revoked"])
    }

    /// Values PostgreSQL text cannot hold as they are (NUL) and text beyond ASCII are written, not dead-lettered.
    static func oddValuesAreWritten(_ backend: TeamDatabase.Backend) async throws {
        let team = try TeamDatabase.make(backend)
        defer { team.cleanup() }
        let h = try harness([team.downstream("warehouse")], team: team)
        defer { h.close() }
        var odd = sample("odd", .purchase, at: 1, state: .active)
        odd.productID = "com.example.\u{0}nul"
        odd.appAccountToken = "émoji 🎉 \u{0} and \\u0000 written"
        try await store(h, odd)
        try await deliver(h, team: team)
        try team.recordContractSamples()
        let row = try #require(try team.contents().events.first)
        #expect(row.productID?.hasPrefix("com.example.") == true && row.productID?.hasSuffix("nul") == true)
        #expect(row.event?.appAccountToken?.contains("émoji 🎉") == true)
        #expect(row.event?.appAccountToken?.hasSuffix("\\u0000 written") == true, "a literal backslash-u0000 is kept")
    }
}

/// One target for one test: a SQLite file in a scratch folder, or a schema of its own in the test PostgreSQL.
struct TeamDatabase: Sendable {
    enum Backend: Sendable { case sqlite, postgres }

    static let postgresURL: String? = nonEmpty("IAPGW_TEST_DATABASE_URL")
    static let postgresControl: String? = nonEmpty("IAPGW_TEST_PG_CTL")

    let backend: Backend
    /// SQLite: the file (in `folder`/team/).
    let sqlitePath: String
    /// PostgreSQL: the schema; SQLite: the table-name prefix.
    let schema: String
    /// SQLite: the scratch folder.
    let folder: String

    /// `folderMissing`/`folderIsAFile`: the SQLite file's folder is not there, or is a regular file, until ``fixFolder()``.
    static func make(
        _ backend: Backend,
        prefix: String = "",
        folderMissing: Bool = false,
        folderIsAFile: Bool = false
    ) throws -> TeamDatabase {
        let unique = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        switch backend {
        case .sqlite:
            let folder = try Scratch.directory("iapgw-team")
            if folderIsAFile {
                try Data("not a folder".utf8).write(to: URL(filePath: folder + "/team"))
            } else if !folderMissing {
                try FileManager.default.createDirectory(atPath: folder + "/team", withIntermediateDirectories: true)
            }
            return TeamDatabase(backend: .sqlite, sqlitePath: folder + "/team/team.db", schema: prefix, folder: folder)
        case .postgres:
            return TeamDatabase(backend: .postgres, sqlitePath: "", schema: "dd_\(unique)", folder: "")
        }
    }

    /// The downstream's element of `downstreams[]`.
    func downstream(_ name: String, maxAttempts: Int = 12, shadow: Bool = false) -> String {
        let target =
            switch backend {
            case .sqlite: "\"sqlite\": \"\(sqlitePath)\"" + (schema.isEmpty ? "" : ", \"schema\": \"\(schema)\"")
            case .postgres: "\"url_env\": \"TEAM_DATABASE_URL\", \"schema\": \"\(schema)\""
            }
        return """
            { "name": "\(name)", "kind": "database", \(target), "environments": ["production", "sandbox"], "shadow": \(shadow),
              "max_attempts": \(maxAttempts) }
            """
    }

    /// A writer of its own, to look at the rows (or write directly).
    func writer() -> any DownstreamDatabase {
        switch backend {
        case .sqlite: SQLiteDownstream(path: sqlitePath, prefix: schema, label: "test")
        case .postgres: PostgresDownstream(connectionString: Self.postgresURL!, schema: schema, label: "test")
        }
    }

    func contents() throws -> DownstreamContents {
        let w = writer()
        defer { w.close() }
        return try w.contents()
    }

    /// Leaves every row of the downstream's tables as a sample of its contract (``ContractSamples``, when samples are
    /// wanted): as PostgreSQL's `to_jsonb(row)` gives it, or SQLite's `json_object(…)` over every column — what a team
    /// reading the tables as JSON sees (docs/database-downstream.md; schemas/database-rows.schema.json).
    func recordContractSamples() throws {
        guard ContractSamples.folder != nil else { return }
        for table in ["events", "subscriptions", "schema_version"] {
            switch backend {
            case .postgres:
                for line in try Psql.run("SELECT to_jsonb(t)::text FROM \(schema).\(table) t").split(separator: "\n") {
                    ContractSamples.record("database-rows/\(table)", Array(line.utf8))
                }
            case .sqlite:
                let name = schema.isEmpty ? table : "\(schema)_\(table)"
                let database = try SQLiteDatabase(path: sqlitePath)
                defer { database.close() }
                let rows = try database.read { c in
                    let columns = try c.query("SELECT name FROM pragma_table_info('\(name)')").compactMap {
                        $0.string("name")
                    }
                    let members = columns.map { "'\($0)', \"\($0)\"" }.joined(separator: ", ")
                    return try c.query("SELECT json_object(\(members)) AS row FROM \"\(name)\"").compactMap {
                        $0.string("row")
                    }
                }
                for row in rows { ContractSamples.record("database-rows/\(table)", Array(row.utf8)) }
            }
        }
    }

    /// Makes the SQLite file's folder a folder.
    func fixFolder() throws {
        guard backend == .sqlite else { return }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder + "/team", isDirectory: &isFolder), !isFolder.boolValue {
            try FileManager.default.removeItem(atPath: folder + "/team")
        }
        try FileManager.default.createDirectory(atPath: folder + "/team", withIntermediateDirectories: true)
    }

    func cleanup() {
        switch backend {
        case .sqlite: try? FileManager.default.removeItem(atPath: folder)
        case .postgres: _ = try? Psql.run("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        }
    }

    /// Runs `IAPGW_TEST_PG_CTL ARGUMENT` (stop, start) to completion.
    static func control(_ argument: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(filePath: postgresControl!)
        process.arguments = [argument]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    private static func nonEmpty(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }
}

/// SQL the gateway never runs (the team's own tables), through `psql` against the test server.
enum Psql {
    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Runs `sql` (several statements allowed) and returns the last statement's rows, unaligned, without headers.
    @discardableResult
    static func run(_ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = [
            "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", TeamDatabase.postgresURL!, "-c", sql,
        ]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "psql: \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
