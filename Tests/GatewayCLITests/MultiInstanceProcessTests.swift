import Foundation
import HTTPClient
import Postgres
import Synchronization
import TestSupport
import Testing
import WireJSON

@testable import Benchmarks
@testable import Store

#if canImport(Glibc)
import Glibc
#endif

/// Two real gateway processes (the built `iap-gateway serve`, started by the bench rig) on one real PostgreSQL
/// database (`scripts/with-postgres`; skipped without it): one killed with SIGKILL under load, the server itself
/// stopped and started under load, both starting at the same moment. Every wait is for a condition.
@Suite(.serialized, .enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
struct MultiInstanceProcessTests {
    /// The `iap-gateway` built beside this test binary (`swift build --build-tests` builds both).
    static let binary: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let beside = URL(filePath: exe).deletingLastPathComponent().appending(path: "iap-gateway").path()
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appending(path: ".build/debug/iap-gateway").path()
    }()

    /// Delivery leases short enough for a test: a dead instance's claims are free again after this.
    static let lease = "2s"

    /// Two gateways on a fresh schema, delivering every event to `receiver` (a webhook that records each request's
    /// webhook id and event id, and holds requests while its gate is closed).
    final class Pair {
        let schema: TestSchema
        let receiver: LoopbackHTTPServer
        let webhook: Webhook
        let rig: BenchRig

        init() throws {
            schema = try TestSchema()
            let webhook = Webhook()
            self.webhook = webhook
            receiver = try LoopbackHTTPServer { request in webhook.receive(request) }
            rig = try BenchRig(label: "multi", executable: MultiInstanceProcessTests.binary)
            try rig.startGateways(
                count: 2,
                store: .postgres(url: schema.url),
                downstreams: """
                    [ { "name": "main", "url": "\(receiver.url("/events"))", "environments": ["production", "sandbox"],
                        "shadow": true, "concurrency": 8, "retry_delay": "100ms", "max_retry_delay": "1s" } ]
                    """,
                appDownstreams: ["main"],
                limits: #"{ "job_lease": "\#(MultiInstanceProcessTests.lease)" }"#
            )
        }

        /// `count` V2 notifications signed by the rig's test PKI (body i's webhook id: `BenchRig.v2NotificationUUID(i)`).
        func bodies(_ count: Int) throws -> [[UInt8]] { try (0..<count).map { try rig.v2Body($0) } }

        func instance(_ index: Int) -> String { rig.gateways[index].listeningField("instance") ?? "?" }

        /// One number from the database (the column `n` of the first row).
        func count(_ sql: String, _ values: [PostgresValue] = []) throws -> Int {
            try ids(sql, values, column: "n").first.map { Int($0) } ?? -1
        }

        /// One column of every row, as integers.
        func ids(_ sql: String, _ values: [PostgresValue] = [], column: String = "id") throws -> [Int64] {
            let c = try schema.connect()
            defer { c.close() }
            return try c.query(sql, values).compactMap { $0.int64(column) }
        }

        deinit {
            webhook.open()
            _ = rig.finishAll()
            receiver.stop()
        }
    }

    /// The webhook receiver's side: what it got, and a gate that holds requests (each stays in flight at its sender).
    final class Webhook: Sendable {
        private let got = Mutex<[(webhookID: String, eventID: String)]>([])
        private let closed = Atomic<Bool>(false)
        private let holding = Mutex<[String: Int]>([:])

        func receive(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Action {
            guard request.path == "/events" else { return .respond(status: 404) }
            let id = request.header("webhook-id") ?? ""
            if case .object(let envelope)? = try? JSONParser.parse(request.body),
                let eventID = envelope["event"]?.objectValue?["id"]?.stringValue
            {
                got.withLock { $0.append((id, eventID)) }
            }
            holding.withLock { $0[id, default: 0] += 1 }
            eventuallyBlocking("the gate open", every: .milliseconds(2), recordsIssue: false) {
                !closed.load(ordering: .relaxed)
            }
            holding.withLock { $0[id, default: 0] -= 1 }
            return .respond(status: 200)
        }

        func close() { closed.store(true, ordering: .relaxed) }
        func open() { closed.store(false, ordering: .relaxed) }
        /// The webhook ids of the requests held now.
        var held: Set<String> { holding.withLock { Set($0.filter { $0.value > 0 }.keys) } }
        var deliveries: [(webhookID: String, eventID: String)] { got.withLock { $0 } }
        var webhookIDs: Set<String> { Set(deliveries.map(\.webhookID)) }

        /// True when no webhook id was ever delivered with two different events.
        var duplicatesOnlyUnderOneID: Bool {
            Dictionary(grouping: deliveries, by: \.webhookID).values.allSatisfy { Set($0.map(\.eventID)).count == 1 }
        }
    }

    /// Posts bodies as Apple would, `concurrency` at a time: body i first to gateway i % n, and after anything but a
    /// 200 again (to the next gateway, after a short pause) until a 200 — every body ends acknowledged. Takes no new
    /// body once ``stop()`` was called.
    final class Poster: Sendable {
        let urls: [String]
        private let statuses = Mutex<[Int: Int]>([:])
        private let okByURL = Mutex<[Int]>([])
        private let acked = Mutex<Set<Int>>([])
        private let stopping = Atomic<Bool>(false)
        private let next = Atomic<Int>(0)

        init(urls: [String]) {
            self.urls = urls
            okByURL.withLock { $0 = Array(repeating: 0, count: urls.count) }
        }

        func stop() { stopping.store(true, ordering: .relaxed) }
        func count(_ status: Int) -> Int { statuses.withLock { $0[status] ?? 0 } }
        var statusCounts: [Int: Int] { statuses.withLock { $0 } }
        func ok(at index: Int) -> Int { okByURL.withLock { $0[index] } }
        var acknowledged: Set<Int> { acked.withLock { $0 } }

        func run(bodies: [[UInt8]], concurrency: Int) async {
            let transport = CurlTransport(maxConcurrentTransfers: concurrency)
            let deadline = ContinuousClock.now.advanced(by: .seconds(120))  // a bound on the loop, not a wait
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        while !self.stopping.load(ordering: .relaxed) {
                            let i = self.next.add(1, ordering: .relaxed).oldValue
                            guard i < bodies.count else { return }
                            var attempt = 0
                            while ContinuousClock.now < deadline {
                                let target = (i + attempt) % self.urls.count
                                let r = try? await transport.send(
                                    HTTPRequest(
                                        method: .post,
                                        url: self.urls[target],
                                        body: bodies[i],
                                        timeoutMillis: 20_000
                                    )
                                )
                                let status = r?.status ?? 0
                                self.statuses.withLock { $0[status, default: 0] += 1 }
                                if status == 200 {
                                    self.okByURL.withLock { $0[target] += 1 }
                                    _ = self.acked.withLock { $0.insert(i) }
                                    break
                                }
                                attempt += 1
                                try? await Task.sleep(for: .milliseconds(20))  // Apple's retry, much sooner
                            }
                        }
                    }
                }
            }
        }
    }

    static func uuids(_ indices: Set<Int>) -> Set<String> { Set(indices.map(BenchRig.v2NotificationUUID)) }

    /// The webhook ids the notifications' events are delivered under: the bench app is V1-authoritative and receives
    /// V2 alone, so each notification yields its V2 event (shadow) and the V1 path's authoritative event from its V1
    /// shape (docs/architecture.md, "One authoritative event per notification").
    static func eventIDs(_ indices: Set<Int>) -> Set<String> {
        let notifications = uuids(indices)
        return notifications.union(notifications.map { "v1-view:" + $0 })
    }

    @Test func killDashNineOfOneInstanceLosesNothingAndTheSurvivorTakesOverItsClaims() async throws {
        #expect(
            FileManager.default.isExecutableFile(atPath: Self.binary),
            "build the package first (swift build --build-tests)"
        )
        let pair = try Pair()
        let total = 1_000
        let bodies = try pair.bodies(total)
        let poster = Poster(urls: pair.rig.notificationsURLs)
        let posting = Task { await poster.run(bodies: bodies, concurrency: 8) }
        let victim = pair.instance(0)

        // In the middle of the load, with deliveries of the victim held in flight at the webhook (claimed, not settled).
        guard await eventually("a third of the notifications acknowledged", { poster.acknowledged.count >= total / 3 })
        else { return }
        pair.webhook.close()
        // A delivery the victim claimed and sent, held at the webhook: it reached the webhook, the victim never learns.
        guard
            try await eventually(
                "a delivery of the victim held at the webhook",
                {
                    let held = pair.webhook.held
                    guard !held.isEmpty else { return false }
                    let c = try pair.schema.connect()
                    defer { c.close() }
                    return try c.query(
                        "SELECT event_id FROM outbox WHERE claimed_by = $1 AND state = 'pending'",
                        [.text(victim)]
                    )
                    .contains { $0.string("event_id").map(held.contains) ?? false }
                }
            )
        else { return }
        let killedAt = ContinuousClock.now
        #expect(pair.rig.gateways[0].terminate(signal: SIGKILL) == 128 + SIGKILL)
        let orphans = try pair.ids("SELECT id FROM outbox WHERE claimed_by = $1 AND state = 'pending'", [.text(victim)])
        pair.webhook.open()
        #expect(!orphans.isEmpty)

        // The survivor takes the victim's claims over once their lease ran out, and delivers them.
        let orphanList = orphans.map(String.init).joined(separator: ",")
        guard
            try await eventually(
                "the victim's claimed deliveries delivered by the survivor",
                {
                    try pair.count(
                        "SELECT count(*) AS n FROM outbox WHERE id IN (\(orphanList)) AND state = 'delivered'"
                    ) == orphans.count
                }
            )
        else { return }
        let takeover = ContinuousClock.now - killedAt

        await posting.value
        let acknowledged = poster.acknowledged
        #expect(acknowledged.count == total, "every body was answered 200 in the end, by the survivor when not before")
        guard
            await eventually(
                "every acknowledged notification delivered",
                {
                    pair.webhook.webhookIDs.isSuperset(of: Self.eventIDs(acknowledged))
                }
            )
        else { return }
        guard
            try await eventually(
                "the outbox settled",
                {
                    try pair.count("SELECT count(*) AS n FROM outbox WHERE state <> 'delivered'") == 0
                }
            )
        else { return }
        let deliveries = pair.webhook.deliveries
        let unique = pair.webhook.webhookIDs
        #expect(unique == Self.eventIDs(acknowledged), "unique webhook ids = the acknowledged notifications' events")
        #expect(pair.webhook.duplicatesOnlyUnderOneID, "a duplicate only ever under the same webhook id")
        #expect(
            deliveries.count > unique.count,
            "the victim's held delivery was sent again by the survivor, under its webhook id"
        )
        #expect(try pair.count("SELECT count(*) AS n FROM journal") == total)
        let failures = poster.statusCounts.filter { $0.key != 200 }.values.reduce(0, +)
        print(
            """
            multi-instance kill -9: acknowledged \(acknowledged.count) (answers other than 200 before a retry: \(failures)), \
            delivered \(unique.count) unique webhook ids in \(deliveries.count) requests (duplicates \(deliveries.count - unique.count)), \
            \(orphans.count) claims of the killed instance taken over \(takeover) after the kill (lease \(Self.lease))
            """
        )
    }

    @Test func postgresStoppedAndStartedUnderLoad() async throws {
        #expect(
            FileManager.default.isExecutableFile(atPath: Self.binary),
            "build the package first (swift build --build-tests)"
        )
        #expect(TestPostgresServer.ctl != nil, "scripts/with-postgres sets IAPGW_TEST_PG_CTL")
        let pair = try Pair()
        let bodies = try pair.bodies(3_000)
        let poster = Poster(urls: pair.rig.notificationsURLs)
        let posting = Task { await poster.run(bodies: bodies, concurrency: 6) }

        guard await eventually("load under way", { poster.acknowledged.count >= 100 }) else { return }
        // The restart, in its two halves, each waited for: down (and answered 503 meanwhile), then up again.
        #expect(try TestPostgresServer.control("stop") == 0)
        let okBefore = (poster.ok(at: 0), poster.ok(at: 1))
        guard await eventually("503s while PostgreSQL is down", { poster.count(503) >= 10 }) else { return }
        let acknowledgedWhileDown = poster.acknowledged.count
        #expect(try TestPostgresServer.control("start") == 0)
        let okAtStart = (poster.ok(at: 0), poster.ok(at: 1))
        guard
            await eventually(
                "both gateways answer 200 again, neither restarted",
                {
                    poster.ok(at: 0) >= okAtStart.0 + 50 && poster.ok(at: 1) >= okAtStart.1 + 50
                }
            )
        else { return }
        poster.stop()
        await posting.value

        let acknowledged = poster.acknowledged
        guard
            await eventually(
                "every acknowledged notification delivered",
                {
                    pair.webhook.webhookIDs.isSuperset(of: Self.eventIDs(acknowledged))
                }
            )
        else { return }
        let unique = pair.webhook.webhookIDs
        #expect(unique == Self.eventIDs(acknowledged), "unique webhook ids = the acknowledged notifications' events")
        #expect(pair.webhook.duplicatesOnlyUnderOneID)
        #expect(try pair.count("SELECT count(*) AS n FROM journal") == acknowledged.count)
        let unexpected = poster.statusCounts.keys.filter { $0 != 200 && $0 != 503 }.sorted()
        #expect(unexpected.isEmpty, "only 200 and 503 answered (and no dropped connection): \(unexpected)")
        for gateway in pair.rig.gateways { #expect(kill(gateway.pid, 0) == 0, "the gateway process kept running") }
        let deliveries = pair.webhook.deliveries.count
        print(
            """
            multi-instance PostgreSQL restart: acknowledged \(acknowledged.count) (\(okBefore.0 + okBefore.1) before the stop, \
            \(acknowledgedWhileDown) when it started again), 503s \(poster.count(503)), delivered \(unique.count) unique webhook \
            ids in \(deliveries) requests (duplicates \(deliveries - unique.count))
            """
        )
    }

    @Test func twoInstancesStartingTogetherMigrateOnce() async throws {
        #expect(
            FileManager.default.isExecutableFile(atPath: Self.binary),
            "build the package first (swift build --build-tests)"
        )
        let pair = try Pair()  // both spawned before either is waited for
        let transport = CurlTransport()
        for port in pair.rig.ports {
            let health = try await transport.send(
                HTTPRequest(method: .get, url: "http://127.0.0.1:\(port)/healthz", timeoutMillis: 10_000)
            )
            #expect(health.status == 200)
        }
        #expect(pair.instance(0) != pair.instance(1))
        // Each version this gateway knows applied once, none missing (the numbering may have gaps: a version is
        // left free for a step of the other database's list).
        let known = StoreSchema.postgres.map(\.version)
        let versions = try pair.count("SELECT count(*) AS n FROM schema_migrations")
        #expect(versions == known.count)
        #expect(
            try pair.count(
                "SELECT count(*) AS n FROM schema_migrations WHERE version IN (\(known.map(String.init).joined(separator: ", ")))"
            ) == known.count,
            "each version applied once, none missing"
        )
        // Both serve the one journal.
        let bodies = try pair.bodies(2)
        for (i, url) in pair.rig.notificationsURLs.enumerated() {
            let r = try await transport.send(
                HTTPRequest(method: .post, url: url, body: bodies[i], timeoutMillis: 10_000)
            )
            #expect(r.status == 200)
        }
        #expect(try pair.count("SELECT count(*) AS n FROM journal") == 2)
    }
}
