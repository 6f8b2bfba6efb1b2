public import Canonical
internal import FoundationEssentials
public import ServiceKit
public import Store
import Synchronization

/// What `iap-gateway migrate` (and `POST /admin/migrate`) is asked to do.
public struct MigrationRequest: Sendable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var target: Generation
    public var dryRun = false
    /// Moves to V2 without a ready verdict.
    public var force = false
    public var reason: String?
    /// The admin token's name or the OS user.
    public var who: String
    /// How long the probe waits for proof that Apple sends the target version.
    public var probeTimeoutMillis: Int64 = 120_000

    public init(bundleID: String, environment: AppStoreEnvironment, target: Generation, who: String) {
        (self.bundleID, self.environment, self.target, self.who) = (bundleID, environment, target, who)
    }

    /// The request from its text form, the same for the command's flags and the admin API's parameters: `environment`
    /// `production` or `sandbox`, `to` `v1` or `v2`, `probeTimeout` a duration from 1 s to 1 h (default 2 m).
    public static func parse(
        bundleID: String,
        environment: String?,
        to: String?,
        dryRun: Bool,
        force: Bool,
        reason: String?,
        probeTimeout: String?,
        who: String
    ) throws(GatewayError) -> MigrationRequest {
        guard let environment, environment == "production" || environment == "sandbox" else {
            throw GatewayError(.badRequest, "environment is production or sandbox (sandbox first: docs/operations.md)")
        }
        guard let to, let target = Generation(rawValue: to) else { throw GatewayError(.badRequest, "to is v2 or v1") }
        var request = MigrationRequest(
            bundleID: bundleID,
            environment: AppStoreEnvironment(rawValue: environment),
            target: target,
            who: who
        )
        (request.dryRun, request.force, request.reason) = (dryRun, force, reason)
        if let probeTimeout {
            guard let millis = DurationText.milliseconds(probeTimeout), (1_000...3_600_000).contains(millis) else {
                throw GatewayError(.badRequest, "probe timeout is a duration from 1s to 1h, e.g. 2m")
            }
            request.probeTimeoutMillis = millis
        }
        return request
    }
}

/// One step of a switch as it happened: one JSON line of `migrate`'s output, one row of the switch log.
public struct MigrationStepReport: Sendable, Encodable, Equatable {
    public var at: Int64
    public var bundleID: String
    public var environment: String
    public var migrationID: String?
    public var step: String
    /// `ok`, `skipped`, `failed`, `refused`, `planned` (a dry run).
    public var outcome: String
    public var appleVersion: String?
    public var appleURL: String?
    public var target: String?
    public var previous: String?
    public var verdict: String?
    public var testNotification: String?
    public var notificationID: String?
    public var authorityFrom: String?
    public var authorityTo: String?
    public var elapsedMillis: Int64?
    public var code: String?
    public var message: String?

    enum CodingKeys: String, CodingKey {
        case at
        case bundleID = "bundle_id"
        case environment
        case migrationID = "migration_id"
        case step, outcome
        case appleVersion = "apple_version"
        case appleURL = "apple_url"
        case target, previous, verdict
        case testNotification = "test_notification"
        case notificationID = "notification_id"
        case authorityFrom = "authority_from"
        case authorityTo = "authority_to"
        case elapsedMillis = "elapsed_ms"
        case code, message
    }
}

/// Why a switch was refused or failed. Every refusal changes nothing: neither Apple nor the authority.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        case unknownBundle = "unknown_bundle"
        case unknownEnvironment = "unknown_environment"
        /// The app has no `notification_url` for the environment: the gateway cannot tell Apple's URL is its own.
        case noNotificationURL = "no_notification_url"
        /// No `app_store_connect` (or no `app_store_api` for the probe to V2).
        case noCredentials = "no_credentials"
        /// Apple's URL for the environment is not this gateway's `notification_url`.
        case urlNotOurs = "url_not_ours"
        /// The comparison verdict is not ready and the switch to V2 was not forced.
        case notReady = "not_ready"
        /// The target generation has no path here (V1 without shared secrets; V2 without the App Store Server API
        /// while Apple may still send V1).
        case noPath = "no_path"
        /// Another run is working on the same app and environment.
        case inProgress = "in_progress"
        /// App Store Connect refused or failed (`cause` says how: `unauthorized`, `forbidden`, `not_found`, …).
        case appleRefused = "apple_refused"
        /// App Store Connect did not answer a change (no answer, a 5xx, an answer that is not Apple's): the switch
        /// read the app back and set Apple back to the version it had (`cause` says how the answer was lost).
        case appleUnanswered = "apple_unanswered"
        /// Apple did not prove it sends the target version in time: it was set back, the authority unchanged.
        case probeFailed = "probe_failed"
        case storeUnavailable = "store_unavailable"

        /// The admin API's status.
        public var status: Int {
            switch self {
            case .unknownBundle, .unknownEnvironment, .noNotificationURL, .noCredentials, .noPath: 400
            case .urlNotOurs, .notReady, .inProgress: 409
            case .appleRefused, .appleUnanswered, .probeFailed: 502
            case .storeUnavailable: 503
            }
        }
    }

    public var code: Code
    /// Apple's own code, for `apple_refused`.
    public var cause: String?
    public var message: String
    public var retryAfterMillis: Int64?
    /// Whether a step line already said it (every failure is one line of `migrate`'s output, once).
    var reported = false

    public init(_ code: Code, _ message: String, cause: String? = nil, retryAfterMillis: Int64? = nil) {
        (self.code, self.message, self.cause, self.retryAfterMillis) = (code, message, cause, retryAfterMillis)
    }

    public var wireCode: String { cause.map { "\(code.rawValue):\($0)" } ?? code.rawValue }
    public var description: String { "\(wireCode): \(message)" }
}

/// Switches the version of the notifications Apple sends for one app and environment, and the gateway's authority
/// with it (docs/operations.md, "Migrating a bundle"):
///
/// 1. **preflight** — the app and environment are configured with a `notification_url`; Apple's URL for the
///    environment is that URL (Apple would otherwise send elsewhere); to V2, the comparison verdict is ready (unless
///    forced). Apple's version is recorded: what a revert restores.
/// 2. **patch** — App Store Connect is set to the target version (skipped when it is already).
/// 3. **probe** — to V2: Apple is asked for a test notification, until this gateway has journaled one (Apple may take
///    a while to honour the change); to V1, where Apple has no test notification: App Store Connect reads V1. A probe
///    that fails within its timeout sets Apple back to the recorded version and ends the run non-zero, the authority
///    unchanged.
/// 4. **authority** — the gateway's authority moves to the target (a cutover record with `origin: migrate`).
///
/// Each step is stored before it acts, under a lease the run renews: a run that died is resumed by the next run to
/// the same target, or reverted by a run to the other one; a run still alive is not disturbed. Every notification
/// that arrives meanwhile, in either version, yields exactly one authoritative event
/// (``StoreTransaction/standsAlone(_:bundleID:environment:now:)``).
public struct AppleSwitcher: Sendable {
    let store: any GatewayStore
    let config: GatewayConfig
    let ledger: CompareLedger
    let settings: (any AppleNotificationSettings)?
    let probe: (any TestNotificationProbe)?
    let now: @Sendable () -> Int64
    let newID: @Sendable () -> String
    /// A run whose record was not touched for this long is dead: the next run takes over.
    public var leaseMillis: Int64 = 10_000
    /// How often the probe looks at the journal and Apple's answer, and asks Apple for another test notification.
    public var pollMillis: Int64 = 250
    public var retestMillis: Int64 = 10_000

    public init(
        store: any GatewayStore,
        config: GatewayConfig,
        ledger: CompareLedger,
        settings: (any AppleNotificationSettings)?,
        probe: (any TestNotificationProbe)?,
        now: @escaping @Sendable () -> Int64,
        newID: (@Sendable () -> String)? = nil
    ) {
        (self.store, self.config, self.ledger, self.settings, self.probe, self.now) = (
            store, config, ledger, settings, probe, now
        )
        self.newID = newID ?? { UUID().uuidString.lowercased() }
    }

    /// Runs (or resumes) the switch; `emit` gets each step as it happens. Returns the final record; throws a refusal
    /// (nothing changed) or a failure (Apple set back).
    @discardableResult
    public func run(
        _ request: MigrationRequest,
        emit: @escaping @Sendable (MigrationStepReport) -> Void
    ) async throws(MigrationError)
        -> AppleSwitchState
    {
        let run = Run(switcher: self, request: request, emit: emit)
        return try await run.start()
    }

    /// Reads Apple's settings of every configured app and environment with a `notification_url` and records them (as
    /// `/admin/status` shows them). Failures are returned per app, never thrown.
    public func readAll() async -> [String: String] {
        guard let settings else { return [:] }
        var failures: [String: String] = [:]
        for app in config.apps where !app.notificationURL.isEmpty {
            do {
                let read = try await settings.app(bundleID: app.bundleID)
                let time = now()
                // Apple's settings alone: a switch in progress keeps its record.
                try await store.write { tx in
                    for environment in app.environments {
                        try tx.recordAppleRead(
                            bundleID: app.bundleID,
                            environment: environment,
                            appID: read.appID,
                            version: read.version(environment),
                            url: read.urls[environment],
                            at: time
                        )
                    }
                }
            } catch let error as AppleSettingsError {
                failures[app.bundleID] = error.code
            } catch {
                failures[app.bundleID] = OutcomeCode.storeUnavailable.rawValue
            }
        }
        return failures
    }

    /// ``readAll()`` now and every `everyMillis` until cancelled, a warning per app App Store Connect did not answer
    /// for; nothing when App Store Connect is not configured or no app has a `notification_url`.
    public func readPeriodically(everyMillis: Int64, log: Log) async {
        guard settings != nil, config.apps.contains(where: { !$0.notificationURL.isEmpty }) else { return }
        while !Task.isCancelled {
            for (bundle, code) in await readAll().sorted(by: { $0.key < $1.key }) {
                log.warn("App Store Connect could not be read", ["bundle": .string(bundle), "code": .string(code)])
            }
            try? await Task.sleep(for: .milliseconds(everyMillis))
        }
    }

    static func record(
        _ read: AppleAppSettings,
        _ environment: AppStoreEnvironment,
        at time: Int64,
        in s: inout AppleSwitchState
    ) {
        s.appID = read.appID
        s.appleVersion = read.version(environment)
        s.appleURL = read.urls[environment]
        s.readAt = time
    }
}

/// One run of ``AppleSwitcher/run(_:emit:)``.
///
/// The run holds the app and environment from its first write — the claim, taken before any call to Apple — to its
/// last: every save of its record is conditional on the record still naming the run's migration id
/// (``StoreTransaction/replaceAppleSwitch(_:ifMigrationIs:)``), and the lease is renewed while Apple is slow to
/// answer. A run that finds another holding it is refused `in_progress`; one that lost its hold stops.
private struct Run: Sendable {
    let switcher: AppleSwitcher
    let request: MigrationRequest
    let emit: @Sendable (MigrationStepReport) -> Void
    let started: Int64
    let progress = Progress()

    init(switcher: AppleSwitcher, request: MigrationRequest, emit: @escaping @Sendable (MigrationStepReport) -> Void) {
        (self.switcher, self.request, self.emit) = (switcher, request, emit)
        started = switcher.now()
    }

    /// What the run holds and where it is: what a failure is reported with, and given back with.
    final class Progress: Sendable {
        struct Value {
            /// The record as the run last stored it (nil before its claim).
            var held: AppleSwitchState?
            /// The record as the claim found it, finished: what a run that changed nothing gives back.
            var before: AppleSwitchState?
            /// The step a failure is reported as.
            var step = "preflight"
        }
        private let value = Mutex(Value())
        var current: Value { value.withLock { $0 } }
        func hold(_ state: AppleSwitchState) { value.withLock { $0.held = state } }
        func enter(_ step: String) { value.withLock { $0.step = step } }
        func setBefore(_ state: AppleSwitchState) { value.withLock { $0.before = state } }
    }

    /// How the claim went.
    enum Claim: Sendable {
        /// Another run holds the app and environment and is alive.
        case busy(AppleSwitchState)
        /// Taken afresh; `before` is the record as it was.
        case fresh(AppleSwitchState, before: AppleSwitchState)
        /// Taken over from a run that died after it may have changed Apple: resumed or reverted.
        case dead(AppleSwitchState, from: AppleSwitchState)
    }

    var store: any GatewayStore { switcher.store }
    var bundle: String { request.bundleID }
    var environment: AppStoreEnvironment { request.environment }

    func start() async throws(MigrationError) -> AppleSwitchState {
        let (app, url, settings) = try configured()
        if request.dryRun { return try await plan(app: app, url: url, settings: settings) }
        let claim = try claim()
        do {
            return try await run(claim, app: app, url: url, settings: settings)
        } catch {
            throw ended(error)
        }
    }

    /// The checks that need neither Apple nor the store.
    func configured() throws(MigrationError) -> (GatewayConfig.App, String, any AppleNotificationSettings) {
        guard let app = switcher.config.apps.first(where: { $0.bundleID == bundle }) else {
            throw refuse(.unknownBundle, "\(bundle) is not configured")
        }
        guard app.environments.contains(environment) else {
            throw refuse(.unknownEnvironment, "\(bundle) does not take \(environment.rawValue) notifications")
        }
        guard let url = app.notificationURL[environment] else {
            throw refuse(
                .noNotificationURL,
                "\(bundle) has no notification_url.\(environment.rawValue): the URL Apple must point at"
            )
        }
        guard let settings = switcher.settings else {
            throw refuse(
                .noCredentials,
                "moving Apple needs app_store_connect (issuer_id, key_id, private_key_env) in the config"
            )
        }
        if request.target == .v2, switcher.probe == nil {
            throw refuse(.noCredentials, "proving that Apple sends V2 needs app_store_api (its test notification)")
        }
        if request.target == .v1, !app.acceptsV1 {
            throw refuse(.noPath, "\(bundle) has no shared_secret_env: the gateway could not read V1 notifications")
        }
        return (app, url, settings)
    }

    /// Takes the app and environment for this run in one write, before any call to Apple: refused when a live run
    /// holds it; a dead one is taken over (and then resumed or reverted) when it may have changed Apple, replaced
    /// when it had not.
    func claim() throws(MigrationError) -> Claim {
        let (b, e, id, time, lease) = (bundle, environment, switcher.newID(), switcher.now(), switcher.leaseMillis)
        let request = self.request
        let claim = try storeWrite { tx -> Claim in
            let current =
                try tx.appleSwitch(bundleID: b, environment: e) ?? AppleSwitchState(bundleID: b, environment: e)
            var before = current
            if let step = current.step, !step.isFinished {
                if let updated = current.updatedAt, time - updated < lease { return .busy(current) }
                if !step.changedNothing {
                    var s = current
                    (s.migrationID, s.updatedAt) = (id, time)
                    return try tx.replaceAppleSwitch(s, ifMigrationIs: current.migrationID)
                        ? .dead(s, from: current) : .busy(current)
                }
                // It stopped before it changed anything: what it leaves behind is a run that ended.
                (before.step, before.error) = (.reverted, current.error ?? "stopped before any change")
            }
            let s = Self.fresh(current, id: id, request: request, at: time)
            return try tx.replaceAppleSwitch(s, ifMigrationIs: current.migrationID)
                ? .fresh(s, before: before) : .busy(current)
        }
        switch claim {
        case .busy(let other):
            throw refuse(
                .inProgress,
                "a switch of \(bundle) (\(environment.rawValue)) to \(other.target?.rawValue ?? "?") is running"
                    + (other.migrationID.map { " (\($0))" } ?? "")
            )
        case .fresh(let s, let before):
            progress.hold(s)
            progress.setBefore(before)
        case .dead(let s, _):
            progress.hold(s)
        }
        return claim
    }

    /// `record` taken by the run `id` for this request: its switch fields new, Apple's as they were.
    static func fresh(
        _ record: AppleSwitchState,
        id: String,
        request: MigrationRequest,
        at time: Int64
    )
        -> AppleSwitchState
    {
        var s = record
        (s.migrationID, s.target, s.previous, s.step, s.probeToken) = (id, request.target, nil, .starting, nil)
        (s.who, s.reason, s.forced, s.startedAt, s.updatedAt, s.error) =
            (request.who, request.reason, false, time, time, nil)
        return s
    }

    func run(
        _ claim: Claim,
        app: GatewayConfig.App,
        url: String,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
        var state: AppleSwitchState
        switch claim {
        case .busy:
            preconditionFailure("a busy claim is refused before the run")
        case .fresh(let s, _):
            state = s
        case .dead(let s, let from):
            // A run that died after it may have changed Apple: resumed to the same target, or Apple set back first.
            let step = from.step ?? .patching
            guard step == .reverting || s.target != request.target else {
                report(s, "resume", "ok") {
                    $0.message = "resuming \(from.migrationID ?? "a run") from \(step.rawValue)"
                }
                return try await proceed(s, from: step, settings: settings)
            }
            let reverted = try await revert(s, settings: settings, why: step == .reverting ? "resumed" : "superseded")
            progress.setBefore(reverted)
            state = Self.fresh(reverted, id: reverted.migrationID ?? "", request: request, at: switcher.now())
            try save(state)
        }

        let (previous, verdict) = try await preflight(&state, app: app, url: url, settings: settings)
        state.previous = previous
        state.forced = request.target == .v2 && !verdict.ready
        state.step = .preflight
        try save(state)
        report(state, "preflight", "ok") {
            $0.previous = previous.rawValue
            $0.verdict = verdict.text
        }
        return try await proceed(state, from: .patching, settings: settings)
    }

    /// A dry run: the preflight's reads and checks, nothing held or changed.
    func plan(
        app: GatewayConfig.App,
        url: String,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
        var state = try load()
        if let step = state.step, !step.isFinished, let updated = state.updatedAt,
            switcher.now() - updated < switcher.leaseMillis
        {
            throw refuse(
                .inProgress,
                "a switch of \(bundle) (\(environment.rawValue)) to \(state.target?.rawValue ?? "?") is running"
            )
        }
        let planned = state
        let (previous, verdict) = try await preflight(&state, app: app, url: url, settings: settings)
        report(planned, "preflight", "planned") {
            $0.target = request.target.rawValue
            $0.previous = previous.rawValue
            $0.verdict = verdict.text
            $0.message =
                previous == request.target
                ? "Apple sends \(previous.rawValue) already: probe, then authority"
                : "set Apple to \(request.target.rawValue), probe, then move the authority"
        }
        return state
    }

    /// Preflight: what Apple has now (recorded), and whether this switch may happen.
    func preflight(
        _ state: inout AppleSwitchState,
        app: GatewayConfig.App,
        url: String,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> (previous: Generation, verdict: (ready: Bool, text: String, reasons: [String])) {
        progress.enter("preflight")
        let read = try await apple { () async throws(AppleSettingsError) in try await settings.app(bundleID: bundle) }
        AppleSwitcher.record(read, environment, at: switcher.now(), in: &state)
        if state.migrationID != nil, progress.current.held?.migrationID == state.migrationID {
            try save(state)
        } else {
            try recordRead(read)
        }
        let previous = read.version(environment)
        guard read.urls[environment] == url else {
            throw refuse(
                .urlNotOurs,
                "Apple sends \(bundle)'s \(environment.rawValue) notifications to \(read.urls[environment] ?? "no URL"), "
                    + "not to notification_url \(url)",
                state: state
            )
        }
        let verdict = try verdict()
        if request.target == .v2, verdict.ready == false, !request.force {
            throw refuse(
                .notReady,
                "the verdict for \(bundle) (\(environment.rawValue)) is not ready; --force overrides"
                    + (verdict.reasons.isEmpty ? "" : " (" + verdict.reasons.joined(separator: "; ") + ")"),
                state: state
            )
        }
        if request.target == .v2, app.acceptsV1, !switcher.ledger.v2PathAvailable {
            throw refuse(.noPath, "Apple may still send V1 for \(bundle): V2's path needs app_store_api", state: state)
        }
        return (previous, verdict)
    }

    /// A run that ends with an error: the record given back when the run changed nothing yet, and the step it failed
    /// in reported when no line said so yet (one JSON line per step, failures included).
    func ended(_ error: MigrationError) -> MigrationError {
        let current = progress.current
        if let held = current.held, let step = held.step, step.changedNothing { release(held, to: current.before) }
        guard !error.reported else { return error }
        report(current.held, current.step, current.step == "preflight" ? "refused" : "failed") {
            $0.code = error.wireCode
            $0.message = error.message
        }
        var reported = error
        reported.reported = true
        return reported
    }

    /// Gives the record back as the claim found it (with Apple's settings as this run read them), when this run still
    /// holds it.
    func release(_ held: AppleSwitchState, to before: AppleSwitchState?) {
        guard let id = held.migrationID, var back = before else { return }
        (back.appID, back.appleVersion, back.appleURL, back.readAt) = (
            held.appID, held.appleVersion, held.appleURL, held.readAt
        )
        let record = back
        _ = try? store.write { tx in try tx.replaceAppleSwitch(record, ifMigrationIs: id) }
    }

    /// Runs the steps from `step` on.
    func proceed(
        _ initial: AppleSwitchState,
        from step: AppleSwitchStep,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError)
        -> AppleSwitchState
    {
        var state = initial
        if step == .patching || step == .preflight || step == .starting {
            state = try await patch(state, settings: settings)
        }
        if step != .authority {
            state.step = .probing
            try save(state)
            do {
                state = try await prove(state, settings: settings)
            } catch let failure {
                report(state, "probe", "failed") {
                    $0.code = failure.wireCode
                    $0.message = failure.message
                }
                var reverted = try await revert(state, settings: settings, why: failure.wireCode)
                reverted.error = failure.wireCode
                try save(reverted)
                var reported = failure
                reported.reported = true
                throw reported
            }
        }
        return try moveAuthority(state)
    }

    /// Sets Apple to the target. Only a refusal (a 4xx) means Apple did not change; after any other failure the app is
    /// read back: the run goes on when Apple took the change, and sets Apple back when it did not or cannot tell.
    func patch(
        _ initial: AppleSwitchState,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
        progress.enter("patch")
        var state = initial
        guard let target = state.target, let appID = state.appID else { return state }
        // A resumed run does not know whether its PATCH reached Apple: it reads first.
        if initial.step == .patching {
            let read = try await apple { () async throws(AppleSettingsError) in try await settings.app(bundleID: bundle)
            }
            AppleSwitcher.record(read, environment, at: switcher.now(), in: &state)
        }
        if state.appleVersion == target {
            state.step = .patching
            try save(state)
            report(state, "patch", "skipped") {
                $0.appleVersion = target.rawValue
                $0.message = "Apple sends \(target.rawValue) already"
            }
            return state
        }
        state.step = .patching
        try save(state)
        let previous = state.previous?.rawValue ?? "its earlier version"
        switch await set(target, appID: appID, settings: settings) {
        case .set(let answer, let lost):
            AppleSwitcher.record(answer, environment, at: switcher.now(), in: &state)
            try save(state)
            report(state, "patch", "ok") {
                $0.appleVersion = answer.version(environment).rawValue
                if let lost {
                    $0.message =
                        "App Store Connect's answer was lost (\(lost.code)); read back, it sends \(target.rawValue)"
                }
            }
            return state
        case .unchanged(let error, let read):
            if let read { AppleSwitcher.record(read, environment, at: switcher.now(), in: &state) }
            guard let read, !error.leavesAppleUnchanged else {
                // Apple refused: it did not change. The switch ends here, nothing moved.
                state.step = .reverted
                state.error = "apple_refused:\(error.code)"
                try save(state)
                throw refuse(
                    .appleRefused,
                    "App Store Connect refused to set \(target.rawValue): \(error.message)",
                    cause: error.code,
                    retryAfterMillis: error.retryAfterMillis,
                    state: state,
                    step: "patch"
                )
            }
            // No answer, and the app still reads the earlier version: the change may yet be applied, so it is set
            // back explicitly.
            try save(state)
            report(state, "patch", "failed") {
                $0.code = "apple_unanswered:\(error.code)"
                $0.appleVersion = read.version(environment).rawValue
                $0.message =
                    "App Store Connect did not answer the change (\(error.message)); read back, it still sends "
                    + "\(read.version(environment).rawValue): setting it to \(previous) to be sure"
            }
            return try await unanswered(state, error, settings: settings)
        case .unknown(let error):
            report(state, "patch", "failed") {
                $0.code = "apple_unanswered:\(error.code)"
                $0.message =
                    "App Store Connect did not answer the change (\(error.message)) and could not be read back: "
                    + "setting Apple back to \(previous)"
            }
            return try await unanswered(state, error, settings: settings)
        }
    }

    /// After a change App Store Connect did not answer and that the run does not go on with: Apple set back, the run
    /// ended with `apple_unanswered`.
    func unanswered(
        _ state: AppleSwitchState,
        _ error: AppleSettingsError,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
        let why = "apple_unanswered:\(error.code)"
        var reverted = try await revert(state, settings: settings, why: why, force: true)
        reverted.error = why
        try save(reverted)
        var failure = MigrationError(
            .appleUnanswered,
            "App Store Connect did not answer the change: \(error.message)",
            cause: error.code,
            retryAfterMillis: error.retryAfterMillis
        )
        failure.reported = true
        throw failure
    }

    /// What became of a change asked of App Store Connect.
    enum SetOutcome {
        /// Apple holds the version: its answer, or (`lost` the failure) the app read back after the answer was lost.
        case set(AppleAppSettings, lost: AppleSettingsError?)
        /// Apple refused (`read` nil), or did not answer and reads otherwise (`read`).
        case unchanged(AppleSettingsError, read: AppleAppSettings?)
        /// Apple did not answer and could not be read back.
        case unknown(AppleSettingsError)
    }

    /// Sets `environment`'s version, reading the app back when the answer is lost (no answer, a 5xx, an answer that
    /// is not Apple's): only a refusal means Apple did not change.
    func set(_ version: Generation, appID: String, settings: any AppleNotificationSettings) async -> SetOutcome {
        let environment = self.environment
        let failure: AppleSettingsError
        switch await outcome({ () async throws(AppleSettingsError) in
            try await settings.setVersion(version, environment: environment, appID: appID)
        }) {
        case .success(let answer): return .set(answer, lost: nil)
        case .failure(let error): failure = error
        }
        if failure.leavesAppleUnchanged { return .unchanged(failure, read: nil) }
        for attempt in 0..<3 {
            if attempt > 0 { await pause(switcher.pollMillis) }
            if case .success(let read) = await outcome({ () async throws(AppleSettingsError) in
                try await settings.app(bundleID: bundle)
            }) {
                return read.version(environment) == version
                    ? .set(read, lost: failure) : .unchanged(failure, read: read)
            }
        }
        return .unknown(failure)
    }

    /// The probe: proof that Apple sends the target version, within the timeout.
    func prove(
        _ initial: AppleSwitchState,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
        progress.enter("probe")
        var state = initial
        let (bundle, environment) = (self.bundle, self.environment)
        let deadline = switcher.now().clampedAdding(request.probeTimeoutMillis)
        if state.target == .v1 {
            // Apple has no V1 test notification: App Store Connect must read V1.
            while true {
                let read = try await apple { () async throws(AppleSettingsError) in
                    try await settings.app(bundleID: bundle)
                }
                AppleSwitcher.record(read, environment, at: switcher.now(), in: &state)
                try save(state)
                if read.version(environment) == .v1 {
                    report(state, "probe", "ok") {
                        $0.appleVersion = "v1"
                        $0.message = "App Store Connect reads V1"
                    }
                    return state
                }
                guard switcher.now() < deadline else { break }
                await pause(switcher.pollMillis)
            }
            throw MigrationError(
                .probeFailed,
                "App Store Connect still reads \(state.appleVersion?.rawValue ?? "?") after the timeout"
            )
        }
        guard let probe = switcher.probe else {
            throw MigrationError(.noCredentials, "no App Store Server API for the probe")
        }
        var token: String?
        var askedAt: Int64 = 0
        var attempts: [String] = []
        var renewedAt = switcher.now()
        while true {
            let time = switcher.now()
            if token == nil || time - askedAt >= switcher.retestMillis {
                // Apple may not honour the change at once: a test notification that did not arrive is asked for again.
                askedAt = time
                switch await outcome({ () async throws(AppleSettingsError) in
                    try await probe.request(bundleID: bundle, environment: environment)
                }) {
                case .success(let asked): token = asked
                case .failure(let error) where error.code == "rate_limited" || error.code == "unavailable":
                    break  // Asked again at the next round.
                case .failure(let error):
                    throw MigrationError(
                        .probeFailed,
                        "Apple refused the test notification: \(error.message)",
                        cause: error.code
                    )
                }
                if let token, token != state.probeToken {
                    state.probeToken = token
                    try save(state)
                    report(state, "probe", "requested") { $0.testNotification = token }
                }
            }
            if let token,
                case .success(let status) = await outcome({ () async throws(AppleSettingsError) in
                    try await probe.status(bundleID: bundle, environment: environment, token: token)
                })
            {
                attempts = status.attempts
                if let id = status.notificationID, try journaled(id) {
                    report(state, "probe", "ok") {
                        $0.testNotification = token
                        $0.notificationID = id
                        $0.message = "the gateway journaled Apple's test notification"
                    }
                    return state
                }
            }
            if switcher.now() - renewedAt >= switcher.leaseMillis / 4 {
                try save(state)  // the run's lease
                renewedAt = switcher.now()
            }
            guard switcher.now() < deadline else { break }
            await pause(switcher.pollMillis)
        }
        throw MigrationError(
            .probeFailed,
            "no test notification reached this gateway within \(request.probeTimeoutMillis / 1_000) s"
                + (attempts.isEmpty ? "" : " (Apple's attempts: \(attempts.joined(separator: ", ")))")
        )
    }

    /// Sets Apple back to the version it had before the switch; the authority is left as it is. Nothing is sent (and
    /// the step says so) when this run never changed Apple; `force` sends the earlier version even when Apple is
    /// believed to have it (a change whose answer was lost may still be applied). A set-back Apple does not take
    /// leaves the record `reverting`: the next run finishes it.
    func revert(
        _ initial: AppleSwitchState,
        settings: any AppleNotificationSettings,
        why: String,
        force: Bool = false
    ) async throws(MigrationError)
        -> AppleSwitchState
    {
        progress.enter("revert")
        var state = initial
        state.step = .reverting
        try save(state)
        guard let previous = state.previous, previous != state.target || force, let appID = state.appID else {
            // Apple sent the target before the switch (or the run never learnt what it sent): it was never changed.
            state.step = .reverted
            state.error = why
            try save(state)
            report(state, "revert", "skipped") {
                $0.appleVersion = state.appleVersion?.rawValue
                $0.message =
                    "nothing to set back: this run did not change Apple"
                    + (state.appleVersion.map { ", which sends \($0.rawValue)" } ?? "") + " (\(why))"
            }
            return state
        }
        switch await set(previous, appID: appID, settings: settings) {
        case .set(let answer, let lost):
            AppleSwitcher.record(answer, environment, at: switcher.now(), in: &state)
            state.step = .reverted
            state.error = why
            try save(state)
            report(state, "revert", "ok") {
                $0.appleVersion = state.appleVersion?.rawValue
                $0.message =
                    "Apple set back to \(previous.rawValue) (\(why))"
                    + (lost.map { "; its answer was lost (\($0.code)), read back" } ?? "")
            }
            return state
        case .unchanged(let error, let read):
            if let read { AppleSwitcher.record(read, environment, at: switcher.now(), in: &state) }
            try save(state)
            throw revertFailed(state, previous, error)
        case .unknown(let error):
            throw revertFailed(state, previous, error)
        }
    }

    /// A set-back that did not happen: reported, the record left `reverting` for the next run.
    func revertFailed(_ state: AppleSwitchState, _ previous: Generation, _ error: AppleSettingsError) -> MigrationError
    {
        let message =
            "Apple could not be set back to \(previous.rawValue) (\(error.message)); it sends "
            + "\(state.appleVersion?.rawValue ?? "an unknown version") as last read. The switch stays 'reverting': "
            + "run migrate again for \(bundle) (\(environment.rawValue)) to finish it"
        report(state, "revert", "failed") {
            $0.code = "apple_refused:\(error.code)"
            $0.appleVersion = state.appleVersion?.rawValue
            $0.message = message
        }
        var failure = MigrationError(
            error.leavesAppleUnchanged ? .appleRefused : .appleUnanswered,
            message,
            cause: error.code,
            retryAfterMillis: error.retryAfterMillis
        )
        failure.reported = true
        return failure
    }

    func moveAuthority(_ initial: AppleSwitchState) throws(MigrationError) -> AppleSwitchState {
        progress.enter("authority")
        var state = initial
        guard let target = state.target else { return state }
        state.step = .authority
        try save(state)
        let time = switcher.now()
        let record = CutoverRecord(
            at: time,
            bundleID: bundle,
            environment: environment.rawValue,
            from: "",
            to: target.rawValue,
            who: state.who ?? request.who,
            reason: state.reason,
            verdict: state.forced ? "not_ready" : "ready",
            forced: state.forced,
            origin: "migrate"
        )
        let (b, e, id) = (bundle, environment, state.migrationID)
        let moved: (Generation, Bool)? = try storeWrite { tx -> (Generation, Bool)? in
            // Only while this run still holds the app and environment.
            guard try tx.appleSwitch(bundleID: b, environment: e)?.migrationID == id else { return nil }
            let current = try tx.authority(bundleID: b, environment: e)
            guard current != target else { return (current, false) }
            var r = record
            r.from = current.rawValue
            try tx.recordCutover(r, to: target)
            return (current, true)
        }
        guard let (from, changed) = moved else { throw lostHold() }
        state.step = .done
        state.appleVersion = target
        state.error = nil
        try save(state)
        report(state, "authority", changed ? "ok" : "skipped") {
            $0.authorityFrom = from.rawValue
            $0.authorityTo = target.rawValue
            $0.elapsedMillis = switcher.now() - started
        }
        return state
    }

    // MARK: Support

    func verdict() throws(MigrationError) -> (ready: Bool, text: String, reasons: [String]) {
        let time = switcher.now()
        do {
            let report = try switcher.ledger.report(
                bundleID: bundle,
                since: time - switcher.config.compareSettings.rule.windowMillis,
                until: time
            )
            let verdict = report.bundles.first { $0.environment == environment.rawValue }
            let ready = verdict?.verdict == .ready
            return (ready, ready ? "ready" : "not_ready", verdict?.reasons ?? [])
        } catch {
            throw MigrationError(.storeUnavailable, "the comparison verdict could not be read")
        }
    }

    /// Whether the gateway journaled Apple's test notification `id` for this app and environment: a V2 notification of
    /// this bundle and environment whose type is TEST. Apple's status names the notification; the journal must say it
    /// is the one asked for, not another notification that happens to carry the id.
    func journaled(_ id: String) throws(MigrationError) -> Bool {
        let (b, e) = (bundle, environment)
        do {
            return try store.read { tx in
                guard let entry = try tx.journalEntries(id: nil, key: id, limit: 1).first, entry.version == .v2,
                    entry.bundleID == b, entry.environment == e
                else { return false }
                return try tx.events(id: id, originalTransactionID: nil, limit: 1).first?.event.rawType == "TEST"
            }
        } catch {
            throw MigrationError(.storeUnavailable, "the journal could not be read")
        }
    }

    func load() throws(MigrationError) -> AppleSwitchState {
        let (b, e) = (bundle, environment)
        do {
            return try store.read { tx in try tx.appleSwitch(bundleID: b, environment: e) }
                ?? AppleSwitchState(bundleID: b, environment: e)
        } catch {
            throw MigrationError(.storeUnavailable, "the switch record could not be read")
        }
    }

    /// Stores the record, which renews the run's lease; only while the run holds it (its migration id is the one on
    /// record): a run that lost it stops here.
    func save(_ state: AppleSwitchState) throws(MigrationError) {
        var s = state
        s.updatedAt = switcher.now()
        let record = s
        guard try storeWrite({ tx in try tx.replaceAppleSwitch(record, ifMigrationIs: record.migrationID) }) else {
            throw lostHold()
        }
        progress.hold(record)
    }

    /// Apple's settings as a dry run read them: recorded without holding the record.
    func recordRead(_ read: AppleAppSettings) throws(MigrationError) {
        let (b, e, time) = (bundle, environment, switcher.now())
        try storeWrite { tx in
            try tx.recordAppleRead(
                bundleID: b,
                environment: e,
                appID: read.appID,
                version: read.version(e),
                url: read.urls[e],
                at: time
            )
        }
    }

    func lostHold() -> MigrationError {
        MigrationError(
            .inProgress,
            "another run took over the switch of \(bundle) (\(environment.rawValue)) after this one's lease ran out: "
                + "this one stops"
        )
    }

    func storeWrite<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) throws(MigrationError) -> T {
        do { return try store.write(body) } catch {
            throw MigrationError(.storeUnavailable, "the switch could not be stored")
        }
    }

    /// One call to App Store Connect, a failure as the switch's `apple_refused`.
    func apple<T: Sendable>(_ call: () async throws(AppleSettingsError) -> T) async throws(MigrationError) -> T {
        switch await outcome(call) {
        case .success(let value): return value
        case .failure(let error):
            throw MigrationError(
                .appleRefused,
                "App Store Connect: \(error.message)",
                cause: error.code,
                retryAfterMillis: error.retryAfterMillis
            )
        }
    }

    /// One call to Apple, while the run's lease is renewed beside it: an App Store Connect that is slow to answer
    /// never makes a live run look dead to the next.
    func outcome<T: Sendable>(
        _ call: () async throws(AppleSettingsError) -> T
    ) async -> Result<T, AppleSettingsError> {
        let (store, b, e, now) = (switcher.store, bundle, environment, switcher.now)
        let every = max(1, switcher.leaseMillis / 4)
        guard let id = progress.current.held?.migrationID else {
            do { return .success(try await call()) } catch { return .failure(error) }
        }
        return await withTaskGroup(of: Void.self, returning: Result<T, AppleSettingsError>.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(every))
                    guard !Task.isCancelled else { return }
                    let renewed = try? await store.write { tx in
                        try tx.renewAppleSwitch(bundleID: b, environment: e, migrationID: id, at: now())
                    }
                    if renewed == false { return }
                }
            }
            let result: Result<T, AppleSettingsError>
            do throws(AppleSettingsError) { result = .success(try await call()) } catch { result = .failure(error) }
            group.cancelAll()
            return result
        }
    }

    func pause(_ millis: Int64) async { try? await Task.sleep(for: .milliseconds(millis)) }

    /// Reports and logs one step.
    func report(
        _ state: AppleSwitchState?,
        _ step: String,
        _ outcome: String,
        detail: (inout MigrationStepReport) -> Void = { _ in }
    ) {
        var r = MigrationStepReport(
            at: switcher.now(),
            bundleID: bundle,
            environment: environment.rawValue,
            migrationID: state?.migrationID,
            step: step,
            outcome: outcome,
            target: (state?.target ?? request.target).rawValue
        )
        r.appleURL = state?.appleURL
        detail(&r)
        emit(r)
        guard let id = state?.migrationID else { return }
        let entry = AppleSwitchLogEntry(
            at: r.at,
            bundleID: bundle,
            environment: environment,
            migrationID: id,
            step: AppleSwitchStep(rawValue: step),
            outcome: outcome,
            detail: r.message ?? r.code
        )
        _ = try? store.write { tx in try tx.logAppleSwitch(entry) }
    }

    /// A refusal: reported as the failed step, returned to throw.
    func refuse(
        _ code: MigrationError.Code,
        _ message: String,
        cause: String? = nil,
        retryAfterMillis: Int64? = nil,
        state: AppleSwitchState? = nil,
        step: String = "preflight"
    ) -> MigrationError {
        var error = MigrationError(code, message, cause: cause, retryAfterMillis: retryAfterMillis)
        report(state, step, "refused") {
            $0.code = error.wireCode
            $0.message = message
        }
        error.reported = true
        return error
    }
}
