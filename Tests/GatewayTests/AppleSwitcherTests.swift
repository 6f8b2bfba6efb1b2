import Canonical
import Foundation
import Reports
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// The switch of Apple's notification version (``AppleSwitcher``) against in-memory stand-ins for App Store Connect and
/// the test notification: every step stored, refusals that change nothing, a failed probe that sets Apple back, a run
/// that died resumed or reverted. The same switch against the simulator's App Store Connect, with real processes, is in
/// `MigrationEndToEndTests`.
@Suite struct AppleSwitcherTests {
    static let bundle = "com.example.gateway"
    static let url = "https://gateway.example/notifications"

    /// App Store Connect: one app, its URL and version per environment; answers can be made to fail.
    final class FakeConnect: AppleNotificationSettings, Sendable {
        struct State {
            var urls: [AppStoreEnvironment: String] = [
                .sandbox: AppleSwitcherTests.url, .production: AppleSwitcherTests.url,
            ]
            var versions: [AppStoreEnvironment: Generation] = [.sandbox: .v1, .production: .v1]
            var failures: [AppleSettingsError] = []
            var patches: [(Generation, AppStoreEnvironment)] = []
            /// Reads of the app begun.
            var reads = 0
            /// While set, a read waits (App Store Connect slow to answer) until it is cleared.
            var holdsReads = false
            /// Called after each PATCH (the test's crash point).
            var afterPatch: (@Sendable () -> Void)? = nil
        }
        let state = Mutex(State())

        func app(bundleID: String) async throws(AppleSettingsError) -> AppleAppSettings {
            state.withLock { $0.reads += 1 }
            while state.withLock({ $0.holdsReads }) { try? await Task.sleep(for: .milliseconds(1)) }
            return try state.withLock { s throws(AppleSettingsError) in
                if !s.failures.isEmpty { throw s.failures.removeFirst() }
                guard bundleID == AppleSwitcherTests.bundle else {
                    throw AppleSettingsError(code: "not_found", message: "no app")
                }
                return AppleAppSettings(appID: "1234", urls: s.urls, versions: s.versions)
            }
        }

        func setVersion(
            _ version: Generation,
            environment: AppStoreEnvironment,
            appID: String
        ) async throws(AppleSettingsError)
            -> AppleAppSettings
        {
            let (answer, hook) = try state.withLock { s throws(AppleSettingsError) in
                if !s.failures.isEmpty { throw s.failures.removeFirst() }
                s.versions[environment] = version
                s.patches.append((version, environment))
                return (AppleAppSettings(appID: appID, urls: s.urls, versions: s.versions), s.afterPatch)
            }
            hook?()
            return answer
        }

        var sandbox: Generation { state.withLock { $0.versions[.sandbox] ?? .v1 } }
        var reads: Int { state.withLock { $0.reads } }
        var patches: [(Generation, AppStoreEnvironment)] { state.withLock { $0.patches } }
    }

    /// Apple's test notification: delivered to the gateway (its ingest) when Apple is set to V2 and `delivers` holds.
    final class FakeProbe: TestNotificationProbe, Sendable {
        let connect: FakeConnect
        let ingest: NotificationIngest
        let delivers: Bool
        let requests = Atomic<Int>(0)
        init(connect: FakeConnect, ingest: NotificationIngest, delivers: Bool = true) {
            (self.connect, self.ingest, self.delivers) = (connect, ingest, delivers)
        }

        func request(bundleID: String, environment: AppStoreEnvironment) async throws(AppleSettingsError) -> String {
            requests.add(1, ordering: .relaxed)
            if delivers, connect.sandbox == .v2 {
                _ = ingest.handle((try? Fixtures.bytes("v2-synthetic/notif-test.json")) ?? [])
            }
            return "token-\(requests.load(ordering: .relaxed))"
        }

        func status(
            bundleID: String,
            environment: AppStoreEnvironment,
            token: String
        ) async throws(AppleSettingsError)
            -> (notificationID: String?, attempts: [String])
        {
            ("1f9663b6-e292-5ed5-8aa3-d5be96430eb1", delivers && connect.sandbox == .v2 ? ["SUCCESS"] : [])
        }
    }

    /// The harness's gateway with a `notification_url` for its app, and a clock the test moves.
    final class Rig: Sendable {
        let h: GatewayHarness
        let connect = FakeConnect()
        let probe: FakeProbe
        let clock = TestClock(GatewayHarness.t + 3_600_000)
        let steps = StepCollector()
        let ids = IDs()
        let switcher: AppleSwitcher

        init(delivers: Bool = true, url: String = AppleSwitcherTests.url) throws {
            h = try GatewayHarness()
            var config = h.config
            if let i = config.apps.firstIndex(where: { $0.bundleID == AppleSwitcherTests.bundle }) {
                config.apps[i].notificationURL = [.sandbox: url, .production: url]
            }
            probe = FakeProbe(connect: connect, ingest: h.ingest, delivers: delivers)
            let clock = self.clock
            var switcher = AppleSwitcher(
                store: h.store,
                config: config,
                ledger: h.service.ledger,
                settings: connect,
                probe: probe,
                now: { clock.now },
                newID: { [ids] in ids.next() }
            )
            switcher.pollMillis = 1
            switcher.retestMillis = 0
            self.switcher = switcher
        }

        func request(_ target: Generation, force: Bool = true, timeout: Int64 = 2_000) -> MigrationRequest {
            var r = MigrationRequest(
                bundleID: AppleSwitcherTests.bundle,
                environment: .sandbox,
                target: target,
                who: "tester"
            )
            r.force = force
            r.probeTimeoutMillis = timeout
            return r
        }

        func run(_ request: MigrationRequest) async throws(MigrationError) -> AppleSwitchState {
            let steps = self.steps
            return try await switcher.run(request) { steps.append($0) }
        }

        var authority: Generation {
            (try? h.store.read { try $0.authority(bundleID: AppleSwitcherTests.bundle, environment: .sandbox) }) ?? .v1
        }
        var record: AppleSwitchState? {
            try? h.store.read { try $0.appleSwitch(bundleID: AppleSwitcherTests.bundle, environment: .sandbox) }
        }
        var outcomes: [String] { steps.all.map { "\($0.step):\($0.outcome)" } }
    }

    /// Each run's migration id: `m-1`, `m-2`, …
    final class IDs: Sendable {
        private let count = Atomic<Int>(0)
        func next() -> String { "m-\(count.add(1, ordering: .relaxed).newValue)" }
    }

    /// Time as the test moves it.
    final class TestClock: Sendable {
        private let value: Atomic<Int64>
        init(_ start: Int64) { value = Atomic(start) }
        var now: Int64 { value.load(ordering: .relaxed) }
        func advance(_ millis: Int64) { value.add(millis, ordering: .relaxed) }
    }

    static func seedAuthority(_ rig: Rig, _ authority: Generation) throws {
        _ = try rig.h.store.write { tx in
            try tx.recordCutover(
                CutoverRecord(
                    at: 0,
                    bundleID: Self.bundle,
                    environment: "sandbox",
                    from: "v2",
                    to: authority.rawValue,
                    who: "test",
                    reason: nil,
                    verdict: "ready",
                    forced: false
                ),
                to: authority
            )
        }
    }

    @Test func aSwitchToV2SetsAppleProvesItAndMovesTheAuthority() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        let state = try await rig.run(rig.request(.v2))
        #expect(state.step == .done && state.appleVersion == .v2 && state.previous == .v1)
        #expect(rig.connect.sandbox == .v2)
        #expect(rig.authority == .v2)
        #expect(rig.outcomes == ["preflight:ok", "patch:ok", "probe:requested", "probe:ok", "authority:ok"])
        let cutover = try #require(
            try await rig.h.store.read { try $0.cutovers(bundleID: Self.bundle, environment: .sandbox) }.last
        )
        #expect(cutover.origin == "migrate" && cutover.from == "v1" && cutover.to == "v2" && cutover.forced)
        // Every step is in the switch log, and the status shows what Apple sends.
        let log = try await rig.h.store.read {
            try $0.appleSwitchLog(bundleID: Self.bundle, environment: .sandbox, limit: 100)
        }
        #expect(log.map(\.step.rawValue) == ["preflight", "patch", "probe", "probe", "authority"])
        let status = try rig.h.service.operations.status()
        #expect(status.objectValue?["apple"]?.arrayValue?.first?.objectValue?["version"] == .string("v2"))
        // The report's cutover log shows the migration.
        let report = try rig.h.service.ledger.report(bundleID: Self.bundle, since: 0, until: rig.clock.now)
        let sandbox = try #require(report.bundles.first { $0.environment == "sandbox" })
        #expect(sandbox.appleSwitches.map(\.outcome) == ["done"])
        #expect(ReportRenderer.table(report).contains("v1 → v2 with Apple (migrate)"))
    }

    @Test func whatAppleSendsIsReadForTheStatus() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        rig.connect.state.withLock { $0.versions[.production] = .v2 }
        #expect(await rig.switcher.readAll().isEmpty)
        let apple =
            try rig.h.service.operations.status().objectValue?["apple"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(apple.map { $0["environment"]?.stringValue ?? "" } == ["production", "sandbox"])
        #expect(apple.map { $0["version"]?.stringValue ?? "" } == ["v2", "v1"])
        #expect(
            apple.allSatisfy {
                $0["url"] == .string(Self.url) && $0["read_at"] == .number(String(rig.clock.now))
                    && $0["switch"] == .null
            }
        )
        // A read that fails is reported per app, not thrown.
        rig.connect.state.withLock { $0.failures = [AppleSettingsError(code: "unauthorized", message: "no")] }
        #expect(await rig.switcher.readAll() == [Self.bundle: "unauthorized"])
    }

    @Test func backToV1ReadsAppleAndMovesTheAuthorityBack() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        _ = try await rig.run(rig.request(.v2))
        _ = try await rig.run(rig.request(.v1))
        #expect(rig.connect.sandbox == .v1 && rig.authority == .v1)
        #expect(rig.outcomes.suffix(4) == ["preflight:ok", "patch:ok", "probe:ok", "authority:ok"])
    }

    @Test func aProbeThatNeverArrivesSetsAppleBackAndLeavesTheAuthority() async throws {
        let rig = try Rig(delivers: false)
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        let clock = rig.clock
        // Time passes as the probe polls: each look at Apple's answer moves the clock on.
        rig.connect.state.withLock { $0.afterPatch = { clock.advance(500) } }
        let run = Task { try await rig.run(rig.request(.v2, timeout: 1_000)) }
        await eventually("the run set Apple back", every: .milliseconds(1)) {
            guard !rig.steps.all.contains(where: { $0.step == "revert" }) else { return true }
            clock.advance(100)
            return false
        }
        await #expect(throws: MigrationError.self) { try await run.value }
        #expect(rig.connect.sandbox == .v1, "Apple set back")
        #expect(rig.authority == .v1)
        #expect(rig.record?.step == .reverted && rig.record?.error == "probe_failed")
        #expect(rig.outcomes.contains("probe:failed") && rig.outcomes.last == "revert:ok")
        let report = try rig.h.service.ledger.report(bundleID: Self.bundle, since: 0, until: rig.clock.now)
        #expect(report.bundles.first { $0.environment == "sandbox" }?.appleSwitches.map(\.outcome) == ["reverted"])
        #expect(ReportRenderer.table(report).contains("Apple set back"))
    }

    @Test(arguments: [
        ("unauthorized", 401), ("forbidden", 403), ("not_found", 404), ("conflict", 409), ("rate_limited", 429),
        ("bad_request", 400),
    ])
    func appleRefusingThePatchChangesNothing(_ code: String, _ status: Int) async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        // The read of the preflight passes; the PATCH is refused.
        rig.connect.state.withLock { $0.failures = [] }
        let failing = AppleSettingsError(
            code: code,
            message: "Apple says \(status)",
            retryAfterMillis: code == "rate_limited" ? 3_000 : nil
        )
        let connect = rig.connect
        rig.connect.state.withLock { s in s.afterPatch = nil }
        var switcher = rig.switcher
        switcher = AppleSwitcher(
            store: rig.h.store,
            config: switcher.config,
            ledger: rig.h.service.ledger,
            settings: RefusingPatch(inner: connect, error: failing),
            probe: rig.probe,
            now: { GatewayHarness.t },
            newID: { "m" }
        )
        do {
            try await switcher.run(rig.request(.v2)) { _ in }
            Issue.record("the switch went through")
        } catch {
            #expect(error.code == .appleRefused && error.cause == code)
            #expect(error.retryAfterMillis == (code == "rate_limited" ? 3_000 : nil))
            #expect(error.message.contains("Apple says \(status)"))
        }
        #expect(rig.connect.sandbox == .v1 && rig.authority == .v1)
        #expect(rig.connect.patches.isEmpty)
    }

    struct RefusingPatch: AppleNotificationSettings {
        let inner: FakeConnect
        let error: AppleSettingsError
        func app(bundleID: String) async throws(AppleSettingsError) -> AppleAppSettings {
            try await inner.app(bundleID: bundleID)
        }
        func setVersion(
            _ version: Generation,
            environment: AppStoreEnvironment,
            appID: String
        ) async throws(AppleSettingsError)
            -> AppleAppSettings
        { throw error }
    }

    @Test func refusalsChangeNothing() async throws {
        // Apple points elsewhere.
        let elsewhere = try Rig(url: "https://other.example/notifications")
        defer { elsewhere.h.close() }
        await #expect { try await elsewhere.run(elsewhere.request(.v2)) } throws: {
            ($0 as? MigrationError)?.code == .urlNotOurs
        }
        // Not ready, not forced.
        let rig = try Rig()
        defer { rig.h.close() }
        await #expect { try await rig.run(rig.request(.v2, force: false)) } throws: {
            ($0 as? MigrationError)?.code == .notReady
        }
        #expect(rig.connect.patches.isEmpty && elsewhere.connect.patches.isEmpty)
        #expect(rig.record?.migrationID == nil, "no switch recorded: only what Apple was read to be")
        #expect(rig.record?.appleVersion == .v1)
        // A dry run plans and does nothing.
        var dry = rig.request(.v2)
        dry.dryRun = true
        _ = try await rig.run(dry)
        #expect(rig.connect.patches.isEmpty && rig.outcomes.last == "preflight:planned")
    }

    @Test func aRunThatDiedAfterThePatchIsResumedOrReverted() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        // The run dies right after Apple took the PATCH: its record says it was patching.
        rig.connect.state.withLock { $0.afterPatch = {} }
        var died = AppleSwitchState(bundleID: Self.bundle, environment: .sandbox)
        (died.appID, died.appleVersion, died.migrationID, died.target, died.previous, died.step, died.forced) =
            ("1234", .v1, "m-0", .v2, .v1, .patching, true)
        died.updatedAt = rig.clock.now
        rig.connect.state.withLock { $0.versions[.sandbox] = .v2 }
        let record = died
        _ = try await rig.h.store.write { tx in _ = try tx.replaceAppleSwitch(record, ifMigrationIs: nil) }
        // Still within its lease: the next run leaves it alone.
        await #expect { try await rig.run(rig.request(.v2)) } throws: { ($0 as? MigrationError)?.code == .inProgress }
        // Past it: the same target resumes (Apple is read, not patched again), the proof comes, the authority moves.
        rig.clock.advance(rig.switcher.leaseMillis + 1)
        let state = try await rig.run(rig.request(.v2))
        #expect(state.step == .done && rig.authority == .v2 && rig.connect.patches.isEmpty)
        #expect(rig.outcomes.contains("resume:ok") && rig.outcomes.contains("patch:skipped"))

        // The same death, and the operator asks for V1 instead: Apple is set back first, then the switch to V1 runs.
        let other = try Rig()
        defer { other.h.close() }
        try Self.seedAuthority(other, .v1)
        other.connect.state.withLock { $0.versions[.sandbox] = .v2 }
        _ = try await other.h.store.write { tx in _ = try tx.replaceAppleSwitch(record, ifMigrationIs: nil) }
        other.clock.advance(other.switcher.leaseMillis + 1)
        _ = try await other.run(other.request(.v1))
        #expect(other.connect.sandbox == .v1 && other.authority == .v1)
        #expect(other.outcomes.first == "revert:ok")
    }

    // MARK: One run at a time, and what Apple did

    @Test func aSecondRunIsRefusedBeforeAnyCallToAppleWhileTheFirstWaitsForApple() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        var switcher = rig.switcher
        switcher.leaseMillis = 200
        let clock = rig.clock
        // App Store Connect is slow: the first run's preflight read does not come back until released.
        rig.connect.state.withLock { $0.holdsReads = true }
        let first = Task { [switcher] in try await switcher.run(rig.request(.v2)) { _ in } }
        await eventually("the first run holds the switch") { rig.record?.step == .starting }
        #expect(rig.connect.reads == 1)

        // The other direction, started meanwhile: refused at once, Apple not asked, one line saying why.
        let second = StepCollector()
        await #expect { try await switcher.run(rig.request(.v1)) { second.append($0) } } throws: {
            ($0 as? MigrationError)?.code == .inProgress
        }
        #expect(rig.connect.reads == 1, "the refused run did not call Apple")
        #expect(second.all.map { "\($0.step):\($0.outcome)" } == ["preflight:refused"])
        #expect(second.all.first?.code == "in_progress")

        // Apple slower than the lease: the waiting run renews it, so it still holds the switch.
        clock.advance(1_000)
        await eventually("the lease renewed while Apple is slow") { rig.record?.updatedAt == clock.now }
        await #expect { try await switcher.run(rig.request(.v1)) { _ in } } throws: {
            ($0 as? MigrationError)?.code == .inProgress
        }

        rig.connect.state.withLock { $0.holdsReads = false }
        let state = try await first.value
        #expect(state.step == .done && rig.connect.sandbox == .v2 && rig.authority == .v2)
        #expect(rig.record?.migrationID == state.migrationID && rig.record?.target == .v2)
        #expect(rig.connect.patches.map(\.0) == [.v2], "one PATCH, the first run's")
    }

    @Test func aRunRefusedInItsPreflightGivesTheSwitchBack() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        _ = try await rig.run(rig.request(.v2))
        let done = try #require(rig.record)
        // Apple now points elsewhere: refused, and the record is the finished switch again, not a held one.
        rig.connect.state.withLock { $0.urls[.sandbox] = "https://other.example/notifications" }
        await #expect { try await rig.run(rig.request(.v1)) } throws: { ($0 as? MigrationError)?.code == .urlNotOurs }
        #expect(rig.record?.migrationID == done.migrationID && rig.record?.step == .done)
        // So the next run is not kept waiting for a lease.
        rig.connect.state.withLock { $0.urls[.sandbox] = Self.url }
        _ = try await rig.run(rig.request(.v1))
        #expect(rig.connect.sandbox == .v1 && rig.authority == .v1)
    }

    @Test(arguments: ["rate_limited", "malformed", "not_found", "unavailable"])
    func aPreflightReadAppleFailsPrintsOneLine(_ code: String) async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        rig.connect.state.withLock { $0.failures = [AppleSettingsError(code: code, message: "Apple says \(code)")] }
        await #expect { try await rig.run(rig.request(.v2)) } throws: {
            ($0 as? MigrationError)?.wireCode == "apple_refused:\(code)"
        }
        #expect(rig.outcomes == ["preflight:refused"])
        #expect(rig.steps.all.first?.code == "apple_refused:\(code)")
        #expect(rig.steps.all.first?.message?.contains("Apple says \(code)") == true)
        #expect(rig.record?.migrationID == nil && rig.connect.patches.isEmpty, "nothing held, nothing changed")
    }

    /// App Store Connect takes the PATCH (or not), and its answer is lost the first time.
    final class LosingPatch: AppleNotificationSettings {
        let inner: FakeConnect
        let error: AppleSettingsError
        let applies: Bool
        let lost = Atomic<Bool>(false)
        init(inner: FakeConnect, error: AppleSettingsError, applies: Bool) {
            (self.inner, self.error, self.applies) = (inner, error, applies)
        }
        func app(bundleID: String) async throws(AppleSettingsError) -> AppleAppSettings {
            try await inner.app(bundleID: bundleID)
        }
        func setVersion(
            _ version: Generation,
            environment: AppStoreEnvironment,
            appID: String
        ) async throws(AppleSettingsError)
            -> AppleAppSettings
        {
            guard !lost.exchange(true, ordering: .relaxed) else {
                return try await inner.setVersion(version, environment: environment, appID: appID)
            }
            if applies { _ = try await inner.setVersion(version, environment: environment, appID: appID) }
            throw error
        }
    }

    func switcher(_ rig: Rig, settings: any AppleNotificationSettings) -> AppleSwitcher {
        var switcher = AppleSwitcher(
            store: rig.h.store,
            config: rig.switcher.config,
            ledger: rig.h.service.ledger,
            settings: settings,
            probe: rig.probe,
            now: { [clock = rig.clock] in clock.now },
            newID: { "m-lost" }
        )
        (switcher.pollMillis, switcher.retestMillis) = (1, 0)
        return switcher
    }

    @Test(arguments: ["unavailable", "malformed"])
    func aPatchAppleTookWhoseAnswerWasLostGoesOnToTheProbe(_ code: String) async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        let settings = LosingPatch(inner: rig.connect, error: .init(code: code, message: "lost"), applies: true)
        let state = try await switcher(rig, settings: settings).run(rig.request(.v2)) { rig.steps.append($0) }
        #expect(state.step == .done && rig.connect.sandbox == .v2 && rig.authority == .v2)
        #expect(rig.outcomes == ["preflight:ok", "patch:ok", "probe:requested", "probe:ok", "authority:ok"])
        let patch = try #require(rig.steps.all.first { $0.step == "patch" })
        #expect(patch.message?.contains("answer was lost (\(code)); read back, it sends v2") == true)
        #expect(rig.record?.appleVersion == .v2 && rig.record?.error == nil)
    }

    @Test(arguments: ["unavailable", "malformed"])
    func aPatchAppleDidNotTakeWhoseAnswerWasLostIsSetBackAndSaysSo(_ code: String) async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        let settings = LosingPatch(inner: rig.connect, error: .init(code: code, message: "lost"), applies: false)
        await #expect {
            try await switcher(rig, settings: settings).run(rig.request(.v2)) { rig.steps.append($0) }
        } throws: {
            ($0 as? MigrationError)?.wireCode == "apple_unanswered:\(code)"
        }
        // The change may still land: Apple is set to its earlier version explicitly, and the record says so.
        #expect(rig.connect.patches.map(\.0) == [.v1])
        #expect(rig.connect.sandbox == .v1 && rig.authority == .v1)
        #expect(rig.outcomes == ["preflight:ok", "patch:failed", "revert:ok"])
        #expect(rig.record?.step == .reverted && rig.record?.error == "apple_unanswered:\(code)")
        #expect(rig.record?.appleVersion == .v1)
    }

    @Test func aLostAnswerThatCannotBeReadBackSetsAppleBack() async throws {
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        let settings = LosingPatch(
            inner: rig.connect,
            error: .init(code: "unavailable", message: "lost"),
            applies: true
        )
        // The PATCH went through; then App Store Connect cannot be read (three tries).
        let unreadable = AppleSettingsError(code: "unavailable", message: "down")
        let switcher = switcher(rig, settings: settings)
        let armed = LosingPatch.Armed(connect: rig.connect, failures: [unreadable, unreadable, unreadable])
        rig.connect.state.withLock { $0.afterPatch = armed.arm }
        await #expect { try await switcher.run(rig.request(.v2)) { rig.steps.append($0) } } throws: {
            ($0 as? MigrationError)?.code == .appleUnanswered
        }
        #expect(rig.connect.sandbox == .v1, "set back")
        #expect(rig.connect.patches.map(\.0) == [.v2, .v1])
        #expect(rig.outcomes == ["preflight:ok", "patch:failed", "revert:ok"])
        #expect(rig.steps.all.first { $0.step == "patch" }?.message?.contains("could not be read back") == true)
        #expect(rig.record?.step == .reverted && rig.authority == .v1)
    }

    @Test func aSetBackAppleRefusesLeavesTheSwitchRevertingForTheNextRun() async throws {
        let rig = try Rig(delivers: false)
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        let clock = rig.clock
        // The probe never comes; when the run sets Apple back, App Store Connect refuses.
        let armed = LosingPatch.Armed(
            connect: rig.connect,
            failures: [AppleSettingsError(code: "conflict", message: "not now")]
        )
        rig.connect.state.withLock { $0.afterPatch = armed.arm }
        let run = Task { try await rig.run(rig.request(.v2, timeout: 1_000)) }
        await eventually("the run tried to set Apple back", every: .milliseconds(1)) {
            guard !rig.steps.all.contains(where: { $0.step == "revert" }) else { return true }
            clock.advance(100)
            return false
        }
        await #expect { try await run.value } throws: {
            ($0 as? MigrationError)?.wireCode == "apple_refused:conflict"
        }
        #expect(rig.connect.sandbox == .v2 && rig.authority == .v1)
        #expect(rig.outcomes.suffix(2) == ["probe:failed", "revert:failed"])
        #expect(rig.steps.all.last?.message?.contains("run migrate again") == true)
        #expect(rig.record?.step == .reverting)
        // The next run, past the lease, finishes the set-back, then does what it was asked.
        rig.connect.state.withLock { $0.afterPatch = nil }
        clock.advance(rig.switcher.leaseMillis + 1)
        let earlier = rig.steps.all.count
        _ = try await rig.run(rig.request(.v1))
        #expect(rig.outcomes.dropFirst(earlier).first == "revert:ok")
        #expect(rig.connect.sandbox == .v1 && rig.authority == .v1)
    }

    @Test func aRunThatChangedNothingNeverSaysItSetAppleBack() async throws {
        let rig = try Rig(delivers: false)
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        // Apple sends V2 already, and the proof never comes: nothing was changed, so nothing is set back.
        rig.connect.state.withLock { $0.versions[.sandbox] = .v2 }
        let clock = rig.clock
        let run = Task { try await rig.run(rig.request(.v2, timeout: 1_000)) }
        await eventually("the run ended", every: .milliseconds(1)) {
            guard !rig.steps.all.contains(where: { $0.step == "revert" }) else { return true }
            clock.advance(100)
            return false
        }
        await #expect(throws: MigrationError.self) { try await run.value }
        #expect(rig.connect.patches.isEmpty)
        #expect(rig.outcomes.suffix(2) == ["probe:failed", "revert:skipped"])
        let revert = try #require(rig.steps.all.last)
        #expect(revert.message?.contains("nothing to set back") == true)
        #expect(revert.message?.contains("set back to") == false)
        #expect(rig.record?.step == .reverted && rig.connect.sandbox == .v2)
    }

    @Test func aTestNotificationOfAnotherAppEnvironmentOrTypeIsNoProof() async throws {
        // Apple's status names a notification the gateway journaled, but not a TEST of this app and environment.
        let rig = try Rig()
        defer { rig.h.close() }
        try Self.seedAuthority(rig, .v1)
        #expect(rig.h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let renewal = "ea8d9865-7f9c-57bd-8176-e0c3843815a6"
        let probe = NamingProbe(connect: rig.connect, notificationID: renewal)
        var switcher = AppleSwitcher(
            store: rig.h.store,
            config: rig.switcher.config,
            ledger: rig.h.service.ledger,
            settings: rig.connect,
            probe: probe,
            now: { [clock = rig.clock] in clock.now },
            newID: { "m-probe" }
        )
        (switcher.pollMillis, switcher.retestMillis) = (1, 0)
        let clock = rig.clock
        let run = Task { [switcher] in try await switcher.run(rig.request(.v2, timeout: 1_000)) { rig.steps.append($0) }
        }
        await eventually("the run ended", every: .milliseconds(1)) {
            guard !rig.steps.all.contains(where: { $0.step == "revert" }) else { return true }
            clock.advance(100)
            return false
        }
        await #expect { try await run.value } throws: { ($0 as? MigrationError)?.code == .probeFailed }
        #expect(rig.connect.sandbox == .v1 && rig.authority == .v1)
    }

    /// Apple's test notification status naming a fixed notification.
    struct NamingProbe: TestNotificationProbe {
        let connect: FakeConnect
        let notificationID: String
        func request(bundleID: String, environment: AppStoreEnvironment) async throws(AppleSettingsError) -> String {
            "token"
        }
        func status(
            bundleID: String,
            environment: AppStoreEnvironment,
            token: String
        ) async throws(AppleSettingsError)
            -> (notificationID: String?, attempts: [String])
        { (notificationID, ["SUCCESS"]) }
    }
}

extension AppleSwitcherTests.LosingPatch {
    /// Queues failures for App Store Connect's next calls once armed (from the fake's after-PATCH hook).
    struct Armed: Sendable {
        let connect: AppleSwitcherTests.FakeConnect
        let failures: [AppleSettingsError]
        func arm() {
            connect.state.withLock { s in
                s.failures += failures
                s.afterPatch = nil
            }
        }
    }
}
