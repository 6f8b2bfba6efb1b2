import Canonical
import Foundation
import Gateway
import GatewayCLI
import HTTPClient
import HTTPServer
import ReportModel
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
import WireJSON

/// Recovery of lost notifications end to end: lifecycles played with 30 % of their notifications lost on the way, the fake Apple still
/// holding the truth (its notification history, its subscription statuses, verifyReceipt), and the gateway's
/// recovery runs bringing every subscription back in line as its clock moves on (docs/operations.md, "Reconciliation").
@Suite(.serialized) struct RecoveryEndToEndTests {
    static let bundleID = SimulatorLifecycleTests.bundleID
    static let drop = try! DropPlan(fraction: 0.3, seed: 12)

    /// Every Apple request the gateway made, with the gateway's clock when it was sent and the status it got.
    final class RecordingTransport: HTTPTransport {
        let inner = CurlTransport()
        let clock: @Sendable () -> Int64
        let log = Mutex<[(at: Int64, path: String, status: Int, wait: Int64?)]>([])
        let bodies = Mutex<[String]>([])
        init(clock: @escaping @Sendable () -> Int64) { self.clock = clock }
        func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
            let at = clock()
            let response = try await inner.send(request)
            let path = request.url.split(separator: "?").first.map(String.init) ?? request.url
            let wait = response.retryAfter(maximum: .seconds(86_400), now: at).map { $0.components.seconds * 1000 }
            log.withLock { $0.append((at, path, response.status, wait)) }
            if path.hasSuffix("/notifications/history") {
                bodies.withLock { $0.append(request.url + " " + String(decoding: request.body, as: UTF8.self)) }
            }
            return response
        }
        func calls(_ fragment: String) -> [(at: Int64, path: String, status: Int, wait: Int64?)] {
            log.withLock { $0.filter { $0.path.contains(fragment) } }
        }
    }

    /// A gateway, the fake Apple and a downstream on one story clock (``CompareEndToEndTests/StoryClock``).
    final class Rig {
        let folder: String
        let pki: SimulatorPKI
        let apple: HTTPServer
        let receiver: LoopbackHTTPServer
        let gateway: GatewayService
        let port: UInt16
        let clock: CompareEndToEndTests.StoryClock
        let transport: RecordingTransport
        let owner: Bool

        /// `api`: the app has App Store Server API credentials (else it is V1-only and reconciles with verifyReceipt).
        /// `postgres`: the store is this schema (else SQLite); `sharing`: a second instance, with the first one's fake
        /// Apple, downstream and clock.
        init(
            authority: String,
            api: Bool = true,
            reconcile: String,
            rateLimit: SimWorld.APIRateLimit? = nil,
            postgres: TestSchema? = nil,
            instance: String? = nil,
            sharing first: Rig? = nil
        ) throws {
            owner = first == nil
            folder = try first?.folder ?? Scratch.directory()
            pki = try first?.pki ?? Sim.pki(folder: folder + "/sim", now: WallClock.wallMillis())
            let clock = first?.clock ?? CompareEndToEndTests.StoryClock()
            self.clock = clock
            let now: @Sendable () -> Int64 = { clock.now }
            if let rateLimit { try SimStateStore(folder: pki.folder).update { $0.apiRateLimit = rateLimit } }
            if let first {
                apple = first.apple
            } else {
                let fake = try FakeAppleServer(pki: pki.folder, notifyURL: nil, transport: CurlTransport(), now: now)
                apple = HTTPServer(configuration: .init(), handler: fake.handle)
                try apple.start()
            }
            receiver = try first?.receiver ?? LoopbackHTTPServer { _ in .respond(status: 200) }
            transport = RecordingTransport(clock: now)
            let a = apple.port
            let json = """
                {
                  "listen": "127.0.0.1:0",
                  "store": \(postgres == nil ? #"{ "sqlite": "gateway.db" }"# : #"{ "postgres": { "url_env": "IAPGW_DATABASE_URL" } }"#),
                  "trust": { "extra_roots": ["\(pki.folder)/root.der"] },
                  "verify_receipt": { "production_url": "http://127.0.0.1:\(a)/verifyReceipt",
                                      "sandbox_url": "http://127.0.0.1:\(a)/sandbox/verifyReceipt" },
                  \(api ? """
                  "app_store_api": { "production_url": "http://127.0.0.1:\(a)", "sandbox_url": "http://127.0.0.1:\(a)",
                                     "issuer_id": "\(SimulatorPKI.issuerID)", "key_id": "\(SimulatorPKI.apiKeyID)", "private_key_env": "SIM_API_KEY" },
                  """ : "")
                  "apps": [ { "bundle_id": "\(RecoveryEndToEndTests.bundleID)", "environments": ["sandbox"], "shared_secret_env": ["SIM_SECRET"],
                              "authority": "\(authority)", "downstreams": ["main"] } ],
                  "downstreams": [ { "name": "main", "url": "\(receiver.url("/events"))", "environments": ["sandbox"], "shadow": true } ],
                  "reconcile": { \(reconcile) },
                  "limits": { "http_threads": 4 }
                }
                """
            let config = try GatewayConfig.parse(Array(json.utf8), baseDirectory: folder)
            var deps = GatewayService.Dependencies(
                environment: [
                    "SIM_SECRET": SimulatorLifecycleTests.secret, "SIM_API_KEY": pki.apiKeyPEM,
                    "IAPGW_DATABASE_URL": postgres?.url ?? "",
                ],
                transport: transport,
                now: now,
                jitter: { 0 },
                logSink: { _ in }
            )
            deps.instanceID = instance
            deps.deliveryTuning.retry.baseDelay = .zero
            deps.deliveryTuning.pollMillis = 10
            deps.receiptTuning.pollMillis = 10
            deps.compareTuning.pollMillis = 10
            deps.reconcileTuning.pollMillis = 10
            deps.verifyReceiptBaseDelay = .zero
            gateway = try GatewayService(config: config, dependencies: deps)
            port = try gateway.start().port
        }

        var store: any GatewayStore { gateway.store }

        /// Until no receipt job, fetch or delivery is pending.
        func settle() async throws {
            try await eventually("work settles") {
                let pending = try await self.store.read { tx in
                    try (tx.receiptJobCounts()[.pending] ?? 0) + (tx.deliveryCounts()[.pending] ?? 0)
                }
                return pending == 0
            }
        }

        /// Plays a lifecycle with the drop plan, each step at its own time, waiting for what it causes.
        func play(_ name: String, version: Simulation.LifecycleOptions.Version) async throws -> Simulation.LifecycleRun
        {
            var options = Simulation.LifecycleOptions(
                name: name,
                to: "http://127.0.0.1:\(port)/notifications",
                pkiFolder: pki.folder,
                bundleID: RecoveryEndToEndTests.bundleID,
                sharedSecret: SimulatorLifecycleTests.secret
            )
            options.version = version
            options.drop = RecoveryEndToEndTests.drop
            return try await Simulation.lifecycle(
                options,
                transport: CurlTransport(),
                now: { WallClock.wallMillis() },
                sleep: { _ in },
                output: { _ in },
                beforeStep: { e in self.clock.set(e.at) },
                afterStep: { _ in try await self.settle() }
            )
        }

        /// Moves the clock past every run's next due time, then waits for each run to have run since.
        func runRecovery(after time: Int64) async throws {
            clock.set(time.clampedAdding(3 * 3_600_000))
            let moved = clock.now
            try await eventually("every recovery run ran after the story: \(describeRuns(relativeTo: moved))") {
                let runs = try await self.store.read { tx in try tx.reconcileRuns() }
                return !runs.isEmpty && runs.allSatisfy { ($0.lastRunAt ?? 0) >= moved }
            }
            try await settle()
        }

        func describeRuns(relativeTo time: Int64) -> String {
            let runs =
                (try? store.read { (tx: any StoreTransaction) throws -> [ReconcileRun] in try tx.reconcileRuns() })
                ?? []
            return runs.map {
                "\($0.key) last \(($0.lastRunAt ?? 0) - time) next \($0.nextRunAt - time) \($0.lastError ?? "ok")"
            }
            .joined(separator: "; ")
        }

        /// Each subscription's entitlement on `path` at `time`, from its stored state's event.
        func entitlements(_ otids: [String], path: Generation, at time: Int64) async throws -> [Entitlement.State?] {
            var out: [Entitlement.State?] = []
            for otid in otids {
                let states = try await store.read { tx in try tx.subscriptionStates(originalTransactionID: otid) }
                let id = states.first { $0.path == path }?.eventID
                let events = try await store.read { tx in
                    try id.map { try tx.events(id: $0, originalTransactionID: nil, limit: 1) } ?? []
                }
                guard let event = events.first?.event else {
                    out.append(nil)
                    continue
                }
                out.append(
                    Entitlement.compute(
                        expiresDate: event.expiresDate,
                        revocationDate: event.revocationDate,
                        gracePeriodExpiresDate: event.gracePeriodExpiresDate,
                        inBillingRetry: event.inBillingRetry,
                        at: time
                    ).state
                )
            }
            return out
        }

        func recovered(_ mechanism: RecoveryMechanism) async throws -> [CanonicalEvent] {
            try await store.read { tx in try tx.events(id: nil, originalTransactionID: nil, limit: 100_000) }.map(
                \.event
            )
            .filter { $0.recoveredBy == mechanism }
        }

        func stop() async {
            await gateway.shutdown()
            guard owner else { return }
            apple.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// Lifecycles whose V2 story has subscriptions to end in a state (all but the consumable's).
    static var v2Lifecycles: [String] { Lifecycles.all.filter { !$0.final.isEmpty }.map(\.name) }

    @Test(arguments: v2Lifecycles)
    func theHistorySweepRecoversEveryDroppedV2NotificationWithItsOriginalTypeOnce(name: String) async throws {
        let rig = try Rig(
            authority: "v2",
            reconcile: #""every": "off", "history_sweep": "1h", "history_first_window": "180d""#
        )
        let run = try await rig.play(name, version: .v2)
        try await rig.runRecovery(after: run.plan.end)

        let dropped = run.dropped.compactMap(\.v2)
        let recovered = try await rig.recovered(.history)
        let runs = try await rig.store.read { tx in try tx.reconcileRuns() }
        #expect(runs.allSatisfy { $0.lastError == nil }, "\(runs.map { "\($0.key) \($0.lastError ?? "ok")" })")
        // Exactly the dropped notifications, each once, with its original id and type.
        #expect(recovered.map(\.id).sorted() == dropped.compactMap(\.notificationUUID).sorted(), "\(name)")
        for d in dropped {
            let e = recovered.first { $0.id == d.notificationUUID }
            #expect(e?.rawType == d.type && e?.rawSubtype == d.subtype && e?.source == .v2, "\(name) \(d.type ?? "?")")
        }
        // Everything Apple sent is journaled once; every event reached the downstream once.
        let sent = run.plan.emissions.compactMap(\.v2NotificationUUID)
        #expect(try await rig.store.read { tx in try tx.counts() }.journal == sent.count)
        let deliveries = SimulatorLifecycleTests.events(rig.receiver)
        #expect(
            Set(deliveries.compactMap { $0["id"]?.stringValue }) == Set(sent),
            "\(name): every notification delivered"
        )
        #expect(deliveries.filter { $0["recovered_by"]?.stringValue == "history" }.count == dropped.count)
        // The report counts them per day and mechanism, in every rendering.
        let report = try rig.gateway.ledger.report(since: 0, until: Int64.max / 2)
        let days: [BundleReport.RecoveredDay] = report.bundles.flatMap(\.recovered)
        let reported = days.filter { $0.mechanism == "history" }.reduce(0) { $0 + $1.count }
        #expect(reported == dropped.count)
        if !dropped.isEmpty {
            #expect(ReportRenderer.table(report).contains("by history"))
            #expect(ReportRenderer.html(report).contains("Recovered events"))
        }
        // And each subscription ends where Apple says.
        let lifecycle = try #require(Lifecycles.named(name))
        #expect(
            try await rig.entitlements(run.plan.originalTransactionIDs, path: .v2, at: run.plan.end)
                == lifecycle.final.map(Optional.some),
            "\(name): final state"
        )
        await rig.stop()
    }

    @Test(arguments: v2Lifecycles)
    func subscriptionReconciliationBringsEveryV2StateInLineWithApple(name: String) async throws {
        let rig = try Rig(
            authority: "v2",
            reconcile: #""every": "1h", "history_sweep": "off", "expiring_within": "36500d", "silent_for": "1h""#
        )
        let run = try await rig.play(name, version: .v2)
        try await rig.runRecovery(after: run.plan.end)
        let lifecycle = try #require(Lifecycles.named(name))
        // Subscriptions whose every notification was lost are unknown to the gateway: nothing to reconcile.
        let known = try await rig.entitlements(run.plan.originalTransactionIDs, path: .v2, at: run.plan.end)
        for (i, state) in known.enumerated() where state != nil {
            #expect(state == lifecycle.final[i], "\(name): subscription \(i + 1) ends where Apple says")
        }
        let recovered = try await rig.recovered(.reconciliation)
        #expect(recovered.allSatisfy { $0.source == .v2API && $0.rawType == "RECONCILIATION" })
        // Nothing was recovered that was not missed: with nothing dropped there is nothing to reconcile.
        if run.dropped.isEmpty { #expect(recovered.isEmpty, "\(name)") }
        // One call per subscription checked, at most one check per subscription and period.
        let statuses = rig.transport.calls("/inApps/v1/subscriptions/")
        #expect(statuses.count <= run.plan.originalTransactionIDs.count * 2)
        await rig.stop()
    }

    /// Lifecycles with V1 traffic for their subscriptions.
    static var v1Lifecycles: [String] { Lifecycles.all.filter { !$0.final.isEmpty }.map(\.name) }

    @Test(arguments: v1Lifecycles)
    func aV1OnlyAppLosingNotificationsIsBroughtInLineThroughVerifyReceipt(name: String) async throws {
        let rig = try Rig(
            authority: "v1",
            api: false,
            reconcile: #""every": "1h", "expiring_within": "36500d", "silent_for": "1h""#
        )
        let run = try await rig.play(name, version: .v1)
        let before = try await rig.entitlements(run.plan.originalTransactionIDs, path: .v1, at: run.plan.end)
        try await rig.runRecovery(after: run.plan.end)
        let lifecycle = try #require(Lifecycles.named(name))
        // Every subscription the gateway heard of (one V1 notification reached it with its receipt) ends where
        // verifyReceipt says: Apple's truth, which V1 notifications alone cannot always tell.
        let states = try await rig.entitlements(run.plan.originalTransactionIDs, path: .v1, at: run.plan.end)
        for (i, state) in states.enumerated() where state != nil {
            #expect(state == lifecycle.final[i], "\(name): subscription \(i + 1)")
        }
        let recovered = try await rig.recovered(.reconciliation)
        #expect(recovered.allSatisfy { $0.source == .v1Receipt })
        // Nothing lost, nothing to change in the entitlement (a fact V1 notifications never carry — the auto-renew flag
        // of a product removed from sale — may still be brought in line).
        if run.dropped.isEmpty && lifecycle.v1Complete {
            #expect(states == before, "\(name): nothing recovered that was not missed")
        }
        await rig.stop()
    }

    /// With the clock running on in 5-minute ticks after the loss, a dropped notification is back within one sweep
    /// period plus the sweep's lag (docs/operations.md: "within about an hour").
    @Test func aDroppedNotificationIsBackWithinTheSweepPeriodPlusItsLag() async throws {
        let rig = try Rig(
            authority: "v2",
            reconcile: #""every": "off", "history_sweep": "1h", "history_first_window": "180d""#
        )
        let lifecycle = try #require(Lifecycles.named("auto-renew"))
        var options = Simulation.LifecycleOptions(
            name: "auto-renew",
            to: "http://127.0.0.1:\(rig.port)/notifications",
            pkiFolder: rig.pki.folder,
            bundleID: Self.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.version = .v2
        let steps = try lifecycle.plan(
            bundleID: Self.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret,
            emitter: Emitter(pki: rig.pki),
            start: 0,
            monthMillis: 1
        ).emissions.count
        options.drop = try DropPlan(outage: steps...steps)  // the last renewal is lost
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: { WallClock.wallMillis() },
            sleep: { _ in },
            output: { _ in },
            beforeStep: { e in rig.clock.set(e.at) },
            afterStep: { _ in try await rig.settle() }
        )
        let lost = try #require(run.dropped.first?.v2?.notificationUUID)
        let sent = try #require(run.plan.emissions.last?.at)
        var recoveredAfter: Int64?
        for tick in 1...30 {
            let time = sent + Int64(tick) * 300_000
            rig.clock.set(time)
            // Every run due by now has run (the run's own schedule decides; nothing waits on the wall clock).
            try await eventually("the runs due at tick \(tick) ran") {
                try await rig.store.read { tx in try tx.reconcileRuns() }.allSatisfy { $0.nextRunAt > time }
            }
            if try await rig.recovered(.history).contains(where: { $0.id == lost }) {
                recoveredAfter = time - sent
                break
            }
        }
        let after = try #require(recoveredAfter, "not recovered within 2.5 simulated hours")
        #expect(
            after <= 3_600_000 + 600_000 + 300_000,
            "recovered \(after / 60_000) simulated minutes after it was lost"
        )
        await rig.stop()
    }

    @Test func aV1OnlyAppIsReconciledThroughVerifyReceipt() async throws {
        let rig = try Rig(
            authority: "v1",
            api: false,
            reconcile: #""every": "1h", "expiring_within": "36500d", "silent_for": "1h""#
        )
        // auto-renew: buy, then renewals; lose the last renewals on the way.
        var options = Simulation.LifecycleOptions(
            name: "auto-renew",
            to: "http://127.0.0.1:\(rig.port)/notifications",
            pkiFolder: rig.pki.folder,
            bundleID: Self.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret
        )
        options.version = .v1
        let plan = try #require(Lifecycles.named("auto-renew")).plan(
            bundleID: Self.bundleID,
            sharedSecret: SimulatorLifecycleTests.secret,
            emitter: Emitter(pki: rig.pki),
            start: 0,
            monthMillis: 1
        )
        options.drop = try DropPlan(outage: 2...plan.emissions.count)
        let run = try await Simulation.lifecycle(
            options,
            transport: CurlTransport(),
            now: { WallClock.wallMillis() },
            sleep: { _ in },
            output: { _ in },
            beforeStep: { e in rig.clock.set(e.at) },
            afterStep: { _ in try await rig.settle() }
        )
        #expect(!run.dropped.isEmpty)
        let before = try await rig.entitlements(run.plan.originalTransactionIDs, path: .v1, at: run.plan.end)
        try await rig.runRecovery(after: run.plan.end)
        let lifecycle = try #require(Lifecycles.named("auto-renew"))
        let after = try await rig.entitlements(run.plan.originalTransactionIDs, path: .v1, at: run.plan.end)
        #expect(after == (lifecycle.v1Final ?? lifecycle.final).map(Optional.some), "before recovery: \(before)")
        let recovered = try await rig.recovered(.reconciliation)
        #expect(recovered.count == 1 && recovered.first?.source == .v1Receipt && recovered.first?.kind == .renewal)
        #expect(rig.transport.calls("/inApps/").isEmpty, "no App Store Server API without credentials")
        #expect(!rig.transport.calls("verifyReceipt").isEmpty)
        await rig.stop()
    }

    @Test func aRateLimitedRunWaitsForAppleRetryAfterBeforeAskingAgain() async throws {
        // One request per hour: the sweep's second page request, or the next run, meets the 429.
        let rig = try Rig(
            authority: "v2",
            reconcile:
                #""every": "1h", "history_sweep": "1h", "history_first_window": "180d", "expiring_within": "36500d", "silent_for": "1h""#,
            rateLimit: SimWorld.APIRateLimit(requests: 1, windowSeconds: 3600)
        )
        let run = try await rig.play("auto-renew", version: .v2)
        try await rig.runRecovery(after: run.plan.end)
        let calls = rig.transport.calls("/inApps/")
        let limited = calls.filter { $0.status == 429 }
        #expect(!limited.isEmpty, "the fake's rate limit was met")
        for hit in limited {
            let wait = try #require(hit.wait, "the 429 says how long to wait")
            // Nothing was asked of the API before Apple's Retry-After had passed.
            let early = calls.filter { $0.at > hit.at && $0.at < hit.at + wait }
            #expect(early.isEmpty, "requests \(early.map { $0.at - hit.at }) ms after a 429 asking for \(wait) ms")
        }
        let rateLimited = try await rig.store.read { tx in try tx.reconcileRuns() }.filter {
            $0.lastError == "rate_limited"
        }
        for r in rateLimited { #expect(r.nextRunAt > (r.lastRunAt ?? 0)) }
        await rig.stop()
    }

    @Test(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres"))
    func twoInstancesOnPostgreSQLRecoverWithoutDoingTheSameWorkTwice() async throws {
        let schema = try TestSchema()
        let settings =
            #""every": "1h", "history_sweep": "1h", "history_first_window": "180d", "expiring_within": "36500d", "silent_for": "1h""#
        let a = try Rig(authority: "v2", reconcile: settings, postgres: schema, instance: "a")
        let b = try Rig(authority: "v2", reconcile: settings, postgres: schema, instance: "b", sharing: a)
        var dropped: [String] = []
        var runs: [Simulation.LifecycleRun] = []
        for name in ["auto-renew", "refund", "billing-grace-recovery", "upgrade"] {
            let run = try await a.play(name, version: .v2)
            runs.append(run)
            dropped += run.dropped.compactMap(\.v2?.notificationUUID)
        }
        try await a.runRecovery(after: runs.map(\.plan.end).max() ?? 0)
        // Both instances took part in some run, and no history window was asked for twice.
        let requests = a.transport.bodies.withLock { $0 } + b.transport.bodies.withLock { $0 }
        #expect(!requests.isEmpty)
        #expect(Set(requests).count == requests.count, "a window swept twice: \(requests)")
        // Each run's calls were made once: what the runs recorded is what Apple saw, across both instances.
        let recorded = try await a.store.read { tx in try tx.reconcileRuns() }
        let seen = a.transport.calls("/inApps/").count + b.transport.calls("/inApps/").count
        #expect(recorded.reduce(0) { $0 + $1.calls } == Int64(seen))
        // Every dropped notification recovered once.
        let recovered = try await a.recovered(.history)
        #expect(recovered.map(\.id).sorted() == dropped.sorted())
        await b.stop()
        await a.stop()
    }
}
