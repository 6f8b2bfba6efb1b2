import AppStoreConnect
import Canonical
import Foundation
import Gateway
import GatewayCLI
import HTTPClient
import HTTPServer
import Reports
import ServiceKit
import Simulator
import SimulatorServer
import SimulatorTestSupport
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V2Adapter
import WireJSON

/// The comparison and cutover end to end: the simulator against the real gateway in compare mode — full agreement when the two
/// generations tell the same story, exactly the planted disagreements when the fake Apple is skewed, and a cutover
/// and its undo that move authority between the paths with no event lost or doubled.
@Suite struct CompareEndToEndTests {
    /// The story's time: set to each step's time, flowing in real time from there (so retries come due).
    final class StoryClock: Sendable {
        private let state = Mutex((base: WallClock.wallMillis(), wall: ContinuousClock.now))
        func set(_ time: Int64) { state.withLock { $0 = (time, ContinuousClock.now) } }
        var now: Int64 {
            state.withLock { c in
                let elapsed = ContinuousClock.now - c.wall
                return c.base + elapsed.components.seconds * 1000 + elapsed.components.attoseconds
                    / 1_000_000_000_000_000
            }
        }
    }

    /// A gateway, the fake Apple, a downstream and a story clock that flows from each step's time.
    final class Rig {
        let pki: SimulatorPKI
        let apple: HTTPServer
        let receiver: LoopbackHTTPServer
        let gateway: GatewayService
        let port: UInt16
        let folder: String
        let clock = StoryClock()

        init(
            authority: String,
            compareSettings: String = #""min_pairs": 5, "grace": "1h", "tolerance": "10m", "confirm_delay": "100ms""#
        ) throws {
            folder = try Scratch.directory()
            pki = try Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
            let clock = self.clock
            let now: @Sendable () -> Int64 = { clock.now }
            let fake = try FakeAppleServer(pki: pki.folder, notifyURL: nil, transport: CurlTransport(), now: now)
            apple = HTTPServer(configuration: .init(), handler: fake.handle)
            try apple.start()
            receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
            (gateway, port) = try SimulatorLifecycleTests.startGateway(
                pki: pki,
                apple: apple.port,
                receiver: receiver,
                authority: authority,
                compare: true,
                compareSettings: compareSettings,
                now: now
            )
        }

        func set(_ time: Int64) { clock.set(time) }
        var now: Int64 { clock.now }

        var store: any GatewayStore { gateway.store }

        /// Until nothing is pending: receipts, comparisons, deliveries (with `patient`, comparisons waiting for a path
        /// that has not seen the subscription yet do not count). Nothing here waits for a retry to come due: a
        /// comparison waiting for V1 runs once the receipt is stored, so the deadline only bounds a failing test —
        /// and being well below the 5-minute "not seen yet" retry, it still catches a lost wake-up.
        func settle(patient: Bool = false) async throws {
            // Not recorded by the wait: the issue below says what is still pending.
            let settled = try await eventually("nothing pending", recordsIssue: false) {
                let pending = try await store.read { tx in
                    try (tx.receiptJobCounts()[.pending] ?? 0)
                        + tx.fetchJobs(state: .pending).filter {
                            !patient || !($0.lastError ?? "").hasSuffix("not_seen_yet")
                        }.count
                        + (tx.deliveryCounts()[.pending] ?? 0)
                }
                return pending == 0
            }
            guard !settled else { return }
            let jobs = try await store.read { try $0.fetchJobs(state: .pending) }.map {
                "\($0.fetch.rawValue) attempts=\($0.attempts) error=\($0.lastError ?? "-") due_in=\($0.nextAttemptAt - now)"
            }
            let receipts = try await store.read { try $0.receiptJobs(state: .pending) }.map {
                "\($0.attempts) \($0.lastError ?? "-")"
            }
            Issue.record("work still pending after \(Patience.default): compare \(jobs) receipts \(receipts)")
        }

        /// Plays a lifecycle step by step, each step at its own time, waiting for everything it causes.
        @discardableResult
        func play(
            _ name: String,
            version: Simulation.LifecycleOptions.Version,
            patient: Bool = false
        ) async throws
            -> Simulation.LifecycleRun
        {
            var options = Simulation.LifecycleOptions(
                name: name,
                to: "http://127.0.0.1:\(port)/notifications",
                pkiFolder: pki.folder,
                bundleID: SimulatorLifecycleTests.bundleID,
                sharedSecret: SimulatorLifecycleTests.secret
            )
            options.version = version
            let run = try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() },
                sleep: { _ in },
                output: { _ in },
                beforeStep: { e in self.set(e.at) },
                afterStep: { _ in try await self.settle(patient: patient) }
            )
            #expect(run.ok, "\(name): every notification accepted")
            return run
        }

        func ledger() throws -> [(otid: String, outcome: CompareOutcome, fields: [String])] {
            try store.ledger().map { ($0.subscription.originalTransactionID, $0.outcome, $0.fields) }
        }

        func skew(_ body: @escaping @Sendable (inout SimWorld.V1Skew) -> Void) throws {
            try SimStateStore(folder: pki.folder).update { body(&$0.v1Skew) }
        }

        func stop() async {
            await gateway.shutdown()
            apple.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    @Test func whenBothGenerationsTellTheSameStoryEveryPairAgrees() async throws {
        let rig = try Rig(authority: "v1")
        for name in [
            "auto-renew", "billing-grace-recovery", "upgrade", "refund", "auto-renew-off-then-expiry",
            "price-increase-accepted",
        ] {
            try await rig.play(name, version: .both)
        }
        let ledger = try rig.ledger()
        #expect(ledger.count >= 20, "both paths compared at every step")
        #expect(
            ledger.filter { $0.outcome != .agree }.map {
                "\($0.otid) \($0.outcome.rawValue) \($0.fields.joined(separator: ","))"
            } == []
        )
        let report = try rig.gateway.ledger.report(since: rig.now - 86_400_000, until: rig.now + 1)
        let bundle = try #require(report.bundles.first)
        #expect(bundle.pairs == ledger.count && bundle.agreementRate == 1.0)
        #expect(bundle.oneSided.v1Only == 0 && bundle.oneSided.v2Only == 0)
        #expect(bundle.verdict == .ready, "\(bundle.reasons)")
        #expect(bundle.eventsBySource["v1"] ?? 0 > 0 && bundle.eventsBySource["v2"] ?? 0 > 0)
        #expect(ReportRenderer.html(report).contains("Ready"))
        await rig.stop()
    }

    @Test func aSkewedFakeShowsExactlyThePlantedDisagreements() async throws {
        let rig = try Rig(authority: "v1")
        try await rig.play("auto-renew", version: .both)  // agrees
        // 1. verifyReceipt reports every expiry a day late.
        try rig.skew { $0.expiresOffsetMillis = 86_400_000 }
        let late = try await rig.play("initial-buy", version: .both).plan.originalTransactionIDs[0]
        try rig.skew { $0.expiresOffsetMillis = 0 }
        // 2. A refund V1 never shows (verifyReceipt hides cancellations): V2-only.
        try rig.skew { $0.hideRevocations = true }
        let refunded = try await rig.play("refund", version: .both).plan.originalTransactionIDs[0]
        try rig.skew { $0.hideRevocations = false }
        // 3. A subscription whose V1 notification never came: V1 has no receipt for it, past the grace window.
        let unseen = try await rig.play("initial-buy", version: .v2, patient: true).plan.originalTransactionIDs[0]
        rig.set(rig.now + 2 * 3_600_000)
        try await rig.settle()

        let ledger = try rig.ledger()
        let wrong = ledger.filter { $0.outcome != .agree }
        // Only the three planted subscriptions disagree, and on what was planted.
        #expect(Set(wrong.map(\.otid)) == [late, refunded, unseen])
        #expect(
            wrong.filter { $0.otid == late }.allSatisfy { $0.outcome == .disagree && $0.fields == ["expires_date"] }
        )
        #expect(
            wrong.filter { $0.otid == refunded }.allSatisfy {
                $0.outcome == .disagree && Set($0.fields).isSuperset(of: ["revocation_date", "entitlement"])
            }
        )
        #expect(wrong.filter { $0.otid == unseen }.map(\.outcome) == [.v2Only])
        #expect(ledger.filter { $0.otid == unseen }.count == 1)

        let report = try rig.gateway.ledger.report(since: rig.now - 86_400_000, until: rig.now + 1)
        let bundle = try #require(report.bundles.first)
        #expect(bundle.disagreementsByField["expires_date"]?.examples == [late])
        #expect(bundle.disagreementsByField["revocation_date"]?.examples == [refunded])
        #expect(bundle.oneSided.v2Only == 1 && bundle.oneSided.v1Only == 0 && bundle.oneSided.examples == [unseen])
        #expect(bundle.verdict == .notReady)
        #expect(bundle.reasons.contains { $0.contains("V2 only") })
        await rig.stop()
    }

    @Test func cutoverAndUndoMoveAuthorityWithNoEventLostOrDoubled() async throws {
        // Apple sends V1 only, as before App Store Connect is switched; V2's path is the App Store Server API.
        let rig = try Rig(authority: "v1")
        let before = try await rig.play("auto-renew", version: .v1)
        let refused = #expect(throws: CutoverError.self) {
            try rig.gateway.ledger.cutover(
                bundleID: SimulatorLifecycleTests.bundleID,
                environment: "sandbox",
                to: "v2",
                who: "test",
                reason: nil,
                force: false,
                now: rig.now
            )
        }
        #expect(refused?.code == .notReady)  // 3 pairs; the rule here needs 5
        try await rig.play("billing-grace-recovery", version: .v1)
        let toV2 = try rig.gateway.ledger.cutover(
            bundleID: SimulatorLifecycleTests.bundleID,
            environment: "sandbox",
            to: "v2",
            who: "test",
            reason: "compare looks clean",
            force: false,
            now: rig.now
        )
        #expect(toV2.from == "v1" && toV2.to == "v2" && toV2.verdict == "ready" && !toV2.forced)
        let during = try await rig.play("upgrade", version: .v1)
        let back = try rig.gateway.ledger.cutover(
            bundleID: SimulatorLifecycleTests.bundleID,
            environment: "sandbox",
            to: "v1",
            who: "test",
            reason: "undo",
            force: false,
            now: rig.now
        )
        #expect(back.from == "v2" && back.to == "v1")
        try await rig.play("refund", version: .v1)

        // Every V1 notification led to exactly one authoritative event: its own before and after, the App Store
        // Server API's while V2 was authoritative — same kind, and nothing delivered twice.
        let authoritative = SimulatorLifecycleTests.events(rig.receiver, authoritative: true)
        let shadow = SimulatorLifecycleTests.events(rig.receiver, authoritative: false)
        let sent = try rig.store.journal().filter { $0.version == .v1 }.count
        #expect(authoritative.count == sent)
        let apiEvents = authoritative.filter { $0["source"]?.stringValue == "v2-api" }
        let duringIDs = Set(during.plan.originalTransactionIDs)
        #expect(
            !apiEvents.isEmpty
                && apiEvents.allSatisfy { duringIDs.contains($0["original_transaction_id"]?.stringValue ?? "") }
        )
        #expect(shadow.allSatisfy { $0["source"]?.stringValue == "v1" } && shadow.count == apiEvents.count)
        // The v2-api event says what its V1 notification said.
        for e in apiEvents {
            let twin = shadow.first {
                $0["id"]?.stringValue.map { "v2-api:" + $0.dropFirst(3) } == e["id"]?.stringValue
            }
            #expect(twin?["kind"] == e["kind"] && twin?["reason"] == e["reason"])
        }
        #expect(
            authoritative.filter { duringIDs.contains($0["original_transaction_id"]?.stringValue ?? "") }
                .allSatisfy { $0["source"]?.stringValue == "v2-api" }
        )
        #expect(!before.plan.originalTransactionIDs.isEmpty)
        let deliveries = rig.receiver.requests.filter { $0.path == "/events" }.count
        #expect(deliveries == authoritative.count + shadow.count, "nothing delivered twice")
        let log = try rig.gateway.ledger.report(since: 0, until: rig.now + 1).bundles.first?.cutovers ?? []
        #expect(log.map { "\($0.from)>\($0.to)" } == ["v1>v2", "v2>v1"])
        await rig.stop()
    }

    @Test func backfillFeedsWhatWasMissedThroughThePipelineOnce() async throws {
        let rig = try Rig(authority: "v2")
        // Apple "sent" a whole story while the gateway was unreachable.
        var options = Simulation.LifecycleOptions(
            name: "billing-grace-recovery",
            to: "http://127.0.0.1:1/notifications",
            pkiFolder: rig.pki.folder,
            bundleID: SimulatorLifecycleTests.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.version = .v2
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: { WallClock.wallMillis() },
            sleep: { _ in },
            output: { _ in },
            beforeStep: { e in rig.set(e.at) }
        )
        #expect(!run.ok)
        let source = try #require(rig.gateway.appStoreAPI)
        let since = run.plan.emissions[0].at - 1
        let first = try await BackfillCommand.backfill(
            service: rig.gateway,
            source: source,
            since: since,
            until: rig.now + 1,
            bundleID: nil,
            environment: .sandbox
        )
        #expect(
            first.map(\.added) == [run.plan.emissions.count] && first.map(\.duplicates) == [0]
                && first[0].refused.isEmpty
        )
        let again = try await BackfillCommand.backfill(
            service: rig.gateway,
            source: source,
            since: since,
            until: rig.now + 1,
            bundleID: nil,
            environment: .sandbox
        )
        #expect(again.map(\.added) == [0] && again.map(\.duplicates) == [run.plan.emissions.count])
        // V1 never saw this subscription: its comparison waits out the grace window
        try await rig.settle(patient: true)
        let delivered = SimulatorLifecycleTests.events(rig.receiver, authoritative: true).map(
            SimulatorLifecycleTests.describe
        )
        // Deliveries run concurrently: the same events, in whatever order they landed.
        #expect(delivered.sorted() == run.plan.emissions.compactMap { $0.expectedV2?.description }.sorted())
        #expect(try rig.store.journal().filter { $0.origin == .backfill }.count == run.plan.emissions.count)
        await rig.stop()
    }

    @Test func testNotificationIsRequestedDeliveredAndReported() async throws {
        let rig = try Rig(authority: "v2")
        let clock = rig.clock
        let notifying = try FakeAppleServer(
            pki: rig.pki.folder,
            notifyURL: "http://127.0.0.1:\(rig.port)/notifications",
            transport: CurlTransport(),
            now: { clock.now }
        )
        // Apple sends test notifications in V2 only: the app's sandbox notifications are V2.
        try notifying.appStoreConnect.setVersion(
            .v2,
            bundleID: SimulatorLifecycleTests.bundleID,
            environment: .sandbox,
            immediately: true
        )
        let apple = HTTPServer(configuration: .init(), handler: notifying.handle)
        try apple.start()
        defer { apple.stop() }
        let client = AppStoreAPIClient(
            configuration: .init(
                productionURL: "http://127.0.0.1:\(apple.port)",
                sandboxURL: "http://127.0.0.1:\(apple.port)",
                keyID: SimulatorPKI.apiKeyID,
                issuerID: SimulatorPKI.issuerID,
                bundleID: SimulatorLifecycleTests.bundleID,
                privateKey: rig.pki.apiKey
            ),
            transport: CurlTransport(),
            adapter: V2Adapter(
                verifier: AppleJWSVerifier(
                    anchors: try TrustAnchors(
                        appleRoots: [TrustAnchors.appleRootCAG3],
                        sandboxOnlyRoots: [rig.pki.root.der]
                    )
                ),
                apps: nil
            ),
            now: { clock.now }
        )
        let result = try await TestNotificationCommand.testNotification(
            client: client,
            environment: .sandbox,
            journal: rig.gateway.store,
            timeoutMillis: 60_000,
            pollMillis: 50
        )
        #expect(result.sendAttempts.map(\.sendAttemptResult) == ["SUCCESS"])
        #expect(result.received)
        await rig.stop()
    }
}
