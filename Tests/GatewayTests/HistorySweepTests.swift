import Canonical
import Foundation
import Gateway
import HTTPClient
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter

/// The notification-history sweep (docs/operations.md, "Reconciliation") against Apple's history as a test scripts it:
/// what it does with an item it cannot serve, that it works page by page within its budget, and its lag.
@Suite struct HistorySweepTests {
    static let bundleID = "com.example.gateway"

    /// Apple's Get Notification History for the app's sandbox, scripted: `page(index, startDate, endDate)` answers the
    /// window's page `index` (0-based, followed by `page-1`, `page-2`… tokens), its size the sum of its payloads'. Each
    /// sandbox request is recorded, and `observe` sees its index before it is answered. Production's history is empty.
    final class FakeHistory: NotificationHistorySource {
        typealias Page = (payloads: [String], more: Bool)
        let page: @Sendable (Int, Int64, Int64) -> Page
        let observer = Mutex<(@Sendable (Int) -> Void)?>(nil)
        let requests = Mutex<[(start: Int64, end: Int64, token: String?)]>([])

        init(_ page: @escaping @Sendable (Int, Int64, Int64) -> Page) { self.page = page }

        func serves(bundleID: String) -> Bool { bundleID == HistorySweepTests.bundleID }

        func notificationHistoryPage(
            bundleID: String,
            environment: AppStoreEnvironment,
            startDate: Int64,
            endDate: Int64,
            paginationToken: String?
        ) async throws(PathFetchError) -> NotificationHistorySlice {
            guard environment == .sandbox else {
                return NotificationHistorySlice(signedPayloads: [], nextPaginationToken: nil)
            }
            requests.withLock { $0.append((startDate, endDate, paginationToken)) }
            let index = paginationToken.flatMap { Int($0.dropFirst("page-".count)) } ?? 0
            observer.withLock { $0 }?(index)
            let answer = page(index, startDate, endDate)
            return NotificationHistorySlice(
                signedPayloads: answer.payloads,
                nextPaginationToken: answer.more ? "page-\(index + 1)" : nil,
                byteCount: answer.payloads.reduce(0) { $0 + $1.utf8.count }
            )
        }
    }

    /// The harness's apps over a scratch SQLite store, with `reconcile` (and `limits`) as given, Apple's history from
    /// `history`, and a clock the test moves.
    final class Rig {
        let directory: String
        let service: GatewayService
        let history: FakeHistory
        let clock: Clock
        let log = LogLines()

        final class Clock: Sendable {
            let time: Mutex<Int64>
            init(_ time: Int64) { self.time = Mutex(time) }
        }

        final class LogLines: Sendable {
            let lines = Mutex<[String]>([])
        }

        init(
            reconcile: String,
            limits: String = "{}",
            at time: Int64 = GatewayHarness.t + 3_600_000,
            history page: @escaping @Sendable (Int, Int64, Int64) -> FakeHistory.Page
        ) throws {
            directory = try Scratch.directory()
            let base = GatewayHarness.configJSON
            let json =
                String(base[..<base.lastIndex(of: "}")!]) + #", "reconcile": {\#(reconcile)}, "limits": \#(limits) }"#
            var config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: directory)
            config.sqlitePath = directory + "/gateway.db"
            let clock = Clock(time)
            self.clock = clock
            history = FakeHistory(page)
            let log = self.log
            var dependencies = GatewayService.Dependencies(
                environment: ["APP_SECRET": GatewayHarness.v1Secret],
                transport: CurlTransport(),
                now: { clock.time.withLock { $0 } },
                jitter: { 0 },
                logSink: { line in log.lines.withLock { $0.append(line) } }
            )
            dependencies.v2PathSource = GatewayHarness.NoV2Path()
            dependencies.historySource = history
            dependencies.reconcileTuning.pollMillis = 10
            dependencies.trustAnchors = try TrustAnchors(appleRoots: [
                TrustAnchors.appleRootCAG3, try TestPKI.der("root"),
            ])
            service = try GatewayService(config: config, dependencies: dependencies)
            try service.seedAuthority()
        }

        var store: any GatewayStore { service.store }

        func set(_ time: Int64) { clock.time.withLock { $0 = time } }

        func journalKeys() throws -> [String] { try store.journal().map(\.key) }

        func quarantined() throws -> [QuarantineRecord] {
            try store.read { tx in try tx.quarantined(lane: nil, id: nil, limit: 100) }
        }

        /// The warning lines logged so far that contain `text`.
        func warnings(_ text: String) -> [String] {
            log.lines.withLock { $0 }.filter { $0.contains(#""level":"warn""#) && $0.contains(text) }
        }

        func skipped(_ code: String) -> Double {
            service.metrics.counter(
                "iapgw_reconcile_skipped_total",
                ["bundle": HistorySweepTests.bundleID, "code": code]
            )
        }

        func close() {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// A TEST notification for `bundle` in the sandbox, signed by the test PKI's leaf (trusted like Apple's here).
    static func signed(_ uuid: String, bundle: String = bundleID, at date: Int64 = GatewayHarness.t) throws -> String {
        let payload = #"""
            {"notificationType":"TEST","notificationUUID":"\#(uuid)","data":{"bundleId":"\#(bundle)","environment":"Sandbox"},\#
            "version":"2.0","signedDate":\#(date)}
            """#
        return String(
            decoding: try TestJWS.sign(
                headerJSON: try TestJWS.standardHeader(),
                payloadJSON: payload,
                key: try TestPKI.key("leaf")
            ),
            as: UTF8.self
        )
    }

    static func uuid(_ n: Int) -> String {
        let digits = String(n)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - digits.count)) + digits
    }

    // MARK: An item the config does not serve

    @Test func anItemForABundleTheConfigDoesNotServeIsSkippedAndTheRestOfTheHistoryRecovered() async throws {
        let missed = [Self.uuid(1), Self.uuid(2), Self.uuid(3)]
        let pages = [
            [
                try Self.signed(missed[0]), try Self.signed(Self.uuid(99), bundle: "com.example.unconfigured"),
                try Self.signed(missed[1]),
            ],
            [try Self.signed(missed[2])],
        ]
        let rig = try Rig(reconcile: #""every": "off""#) { index, _, _ in (pages[index], index + 1 < pages.count) }
        defer { rig.close() }

        let first = try await rig.service.reconcile.runNow(bundleID: Self.bundleID, environment: .sandbox)
        // The run succeeds: every missed notification of the page and of the next one is recovered, the other skipped.
        #expect(first.map(\.error) == [nil])
        #expect(first.map(\.recovered) == [3])
        #expect(Set(try rig.journalKeys()) == Set(missed))
        #expect(rig.skipped("unknown_bundle") == 1)

        // The next sweep meets it again (the windows overlap; Apple keeps listing it): skipped again, quarantined once.
        let second = try await rig.service.reconcile.runNow(bundleID: Self.bundleID, environment: .sandbox)
        #expect(second.map(\.error) == [nil])
        #expect(second.map(\.recovered) == [0])
        #expect(rig.skipped("unknown_bundle") == 2)
        let rows = try rig.quarantined()
        #expect(rows.count == 1)
        #expect(
            rows.first?.lane == .genuine && rows.first?.code == "unknown_bundle"
                && rows.first?.bundleID == "com.example.unconfigured"
        )
        // One warning for the bundle, not one per item met.
        #expect(rig.warnings("com.example.unconfigured").count == 1, "\(rig.warnings("com.example.unconfigured"))")
    }

    @Test func aGenuineLaneTooFullToHoldTheItemStillEndsTheSweep() async throws {
        // The lane holds one row: the second unservable item cannot be kept, so the run stops before going past it
        // (the next run tries again), as for any write the store cannot make.
        let page = [
            try Self.signed(Self.uuid(91), bundle: "com.example.unconfigured"),
            try Self.signed(Self.uuid(92), bundle: "com.example.unconfigured"),
            try Self.signed(Self.uuid(1)),
        ]
        let rig = try Rig(reconcile: #""every": "off""#, limits: #"{"genuine_quarantine": 1}"#) { _, _, _ in
            (page, false)
        }
        defer { rig.close() }
        let report = try await rig.service.reconcile.runNow(bundleID: Self.bundleID, environment: .sandbox)
        #expect(report.map(\.error) == ["unknown_bundle"])
        #expect(try rig.journalKeys().isEmpty)
        #expect(try rig.quarantined().count == 1)
    }

    // MARK: Page by page, within the budget

    @Test func aSweepFeedsEachPageToThePipelineBeforeAskingForTheNextAndStopsAtItsBudget() async throws {
        // A history that never ends (`hasMore` forever), a budget of 3 requests per run.
        let notifications = try (1...5).map { try Self.signed(Self.uuid($0)) }
        let rig = try Rig(reconcile: #""every": "off", "requests_per_hour": 3"#) { index, _, _ in
            ([notifications[min(index, notifications.count - 1)]], true)
        }
        defer { rig.close() }
        let store = rig.store
        let journaledBefore = Mutex<[Int]>([])
        rig.history.observer.withLock { observe in
            observe = { _ in
                journaledBefore.withLock { $0.append((try? store.read { tx in try tx.counts() }.journal) ?? -1) }
            }
        }
        let report = try await rig.service.reconcile.runNow(bundleID: Self.bundleID, environment: .sandbox)
        #expect(report.map(\.calls) == [3] && report.map(\.recovered) == [3] && report.map(\.error) == [nil])
        #expect(rig.history.requests.withLock { $0.count } == 3)
        // Each page's notification was journaled before the next page was asked for: nothing waits for the whole history.
        #expect(journaledBefore.withLock { $0 } == [0, 1, 2])
    }

    // MARK: The lag

    /// Runs the reconcile worker on its schedule (never `runNow`) until `done` holds.
    static func runScheduled(_ rig: Rig, until done: @escaping @Sendable () throws -> Bool) async throws {
        let worker = rig.service.reconcile
        try worker.schedule()
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }, done)
    }

    @Test func withNoLagAScheduledSweepTakesANotificationAppleListedJustNow() async throws {
        let start = GatewayHarness.t + 3_600_000
        let sweepAt = start + 3_600_000  // every first run (spread over the hour) is due by then
        let listed = try Self.signed(Self.uuid(7), at: sweepAt - 1_000)
        let rig = try Rig(reconcile: #""every": "off", "history_sweep": "1h", "history_lag": "0s""#, at: start) {
            _,
            from,
            until in
            // Apple lists it from the moment it was sent.
            (from <= sweepAt - 1_000 && sweepAt - 1_000 < until ? [listed] : [], false)
        }
        defer { rig.close() }
        try rig.service.reconcile.schedule()
        rig.set(sweepAt)
        let store = rig.store
        try await Self.runScheduled(rig) { try store.journal().contains { $0.key == Self.uuid(7) } }
        #expect(rig.history.requests.withLock { $0 }.first?.end == sweepAt)
        let events = try await store.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 10) }.map(
            \.event
        )
        #expect(events.map(\.recoveredBy) == [.history])
    }

    @Test func withTheDefaultLagASweepLeavesANotificationAppleListedJustNowToItsLiveDelivery() async throws {
        let start = GatewayHarness.t + 3_600_000
        let sweepAt = start + 3_600_000
        let listed = try Self.signed(Self.uuid(7), at: sweepAt - 1_000)
        let rig = try Rig(reconcile: #""every": "off", "history_sweep": "1h""#, at: start) { _, from, until in
            (from <= sweepAt - 1_000 && sweepAt - 1_000 < until ? [listed] : [], false)
        }
        defer { rig.close() }
        try rig.service.reconcile.schedule()
        rig.set(sweepAt)
        let store = rig.store
        try await Self.runScheduled(rig) {
            try store.read { tx in try tx.reconcileRuns() }.filter { $0.key.environment == .sandbox }.allSatisfy {
                ($0.lastRunAt ?? 0) >= sweepAt
            }
        }
        // The window ended ten minutes ago: what Apple is delivering now is not taken from the history first.
        #expect(rig.history.requests.withLock { $0 }.map(\.end) == [sweepAt - 600_000])
        #expect(try rig.journalKeys().isEmpty)
    }
}
