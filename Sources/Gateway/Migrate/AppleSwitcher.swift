public import Canonical
internal import FoundationEssentials
public import Store

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
        /// Apple did not prove it sends the target version in time: it was set back, the authority unchanged.
        case probeFailed = "probe_failed"
        case storeUnavailable = "store_unavailable"

        /// The admin API's status.
        public var status: Int {
            switch self {
            case .unknownBundle, .unknownEnvironment, .noNotificationURL, .noCredentials, .noPath: 400
            case .urlNotOurs, .notReady, .inProgress: 409
            case .appleRefused, .probeFailed: 502
            case .storeUnavailable: 503
            }
        }
    }

    public var code: Code
    /// Apple's own code, for `apple_refused`.
    public var cause: String?
    public var message: String
    public var retryAfterMillis: Int64?

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
                try await store.write { tx in
                    for environment in app.environments {
                        var s =
                            try tx.appleSwitch(bundleID: app.bundleID, environment: environment)
                            ?? AppleSwitchState(bundleID: app.bundleID, environment: environment)
                        Self.record(read, environment, at: time, in: &s)
                        try tx.putAppleSwitch(s)
                    }
                }
            } catch let error as AppleSettingsError {
                failures[app.bundleID] = error.code
            } catch {
                failures[app.bundleID] = "store_unavailable"
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
private struct Run: Sendable {
    let switcher: AppleSwitcher
    let request: MigrationRequest
    let emit: @Sendable (MigrationStepReport) -> Void
    let started: Int64

    init(switcher: AppleSwitcher, request: MigrationRequest, emit: @escaping @Sendable (MigrationStepReport) -> Void) {
        (self.switcher, self.request, self.emit) = (switcher, request, emit)
        started = switcher.now()
    }

    var store: any GatewayStore { switcher.store }
    var bundle: String { request.bundleID }
    var environment: AppStoreEnvironment { request.environment }

    func start() async throws(MigrationError) -> AppleSwitchState {
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

        var state = try load()
        // An earlier run that did not finish: alive (leave it), or dead (resume it, or set Apple back first).
        if let step = state.step, !step.isFinished {
            if let updated = state.updatedAt, switcher.now() - updated < switcher.leaseMillis {
                throw refuse(
                    .inProgress,
                    "a switch of \(bundle) (\(environment.rawValue)) to \(state.target?.rawValue ?? "?") is running"
                )
            }
            if step == .reverting || state.target != request.target {
                state = try await revert(state, settings: settings, why: step == .reverting ? "resumed" : "superseded")
            } else {
                report(state, "resume", "ok", detail: { $0.message = "resuming from \(step.rawValue)" })
                return try await proceed(state, from: step, settings: settings)
            }
        }

        // Preflight: what Apple has now, and whether this switch may happen.
        let read = try await apple { () async throws(AppleSettingsError) in try await settings.app(bundleID: bundle) }
        let time = switcher.now()
        AppleSwitcher.record(read, environment, at: time, in: &state)
        try save(state)
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
        if request.dryRun {
            report(state, "preflight", "planned") {
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
        state.migrationID = switcher.newID()
        state.target = request.target
        state.previous = previous
        state.who = request.who
        state.reason = request.reason
        state.forced = request.target == .v2 && !verdict.ready
        state.startedAt = time
        state.error = nil
        state.step = .preflight
        try save(state)
        report(state, "preflight", "ok") {
            $0.previous = previous.rawValue
            $0.verdict = verdict.text
        }
        return try await proceed(state, from: .patching, settings: settings)
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
        if step == .patching || step == .preflight {
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
                throw failure
            }
        }
        return try moveAuthority(state)
    }

    func patch(
        _ initial: AppleSwitchState,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
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
        let answer: AppleAppSettings
        do {
            answer = try await settings.setVersion(target, environment: environment, appID: appID)
        } catch {
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
        AppleSwitcher.record(answer, environment, at: switcher.now(), in: &state)
        try save(state)
        report(state, "patch", "ok") { $0.appleVersion = answer.version(environment).rawValue }
        return state
    }

    /// The probe: proof that Apple sends the target version, within the timeout.
    func prove(
        _ initial: AppleSwitchState,
        settings: any AppleNotificationSettings
    ) async throws(MigrationError) -> AppleSwitchState {
        var state = initial
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
                do {
                    token = try await probe.request(bundleID: bundle, environment: environment)
                } catch  where error.code == "rate_limited" || error.code == "unavailable" {
                    // Asked again at the next round.
                } catch {
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
            if let token, let status = try? await probe.status(bundleID: bundle, environment: environment, token: token)
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

    /// Sets Apple back to the version it had before the switch; the authority is left as it is.
    func revert(
        _ initial: AppleSwitchState,
        settings: any AppleNotificationSettings,
        why: String
    ) async throws(MigrationError)
        -> AppleSwitchState
    {
        var state = initial
        state.step = .reverting
        try save(state)
        // Nothing to set back when Apple already sent the target before the switch (it was never changed).
        if let previous = state.previous, previous != state.target, let appID = state.appID {
            let answer = try await apple { () async throws(AppleSettingsError) in
                try await settings.setVersion(previous, environment: environment, appID: appID)
            }
            AppleSwitcher.record(answer, environment, at: switcher.now(), in: &state)
        }
        state.step = .reverted
        state.error = why
        try save(state)
        report(state, "revert", "ok") {
            $0.appleVersion = state.appleVersion?.rawValue
            $0.message = "Apple set back to \(state.previous?.rawValue ?? "?") (\(why))"
        }
        return state
    }

    func moveAuthority(_ initial: AppleSwitchState) throws(MigrationError) -> AppleSwitchState {
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
        let (from, moved) = try storeWrite { tx -> (Generation, Bool) in
            let current = try tx.authority(bundleID: self.bundle, environment: self.environment)
            guard current != target else { return (current, false) }
            var r = record
            r.from = current.rawValue
            try tx.recordCutover(r, to: target)
            return (current, true)
        }
        state.step = .done
        state.appleVersion = target
        state.error = nil
        try save(state)
        report(state, "authority", moved ? "ok" : "skipped") {
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

    func journaled(_ id: String) throws(MigrationError) -> Bool {
        do { return try store.read { tx in try !tx.journalEntries(id: nil, key: id, limit: 1).isEmpty } } catch {
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

    /// Stores the record, which renews the run's lease.
    func save(_ state: AppleSwitchState) throws(MigrationError) {
        var s = state
        s.updatedAt = switcher.now()
        let record = s
        _ = try storeWrite { tx in try tx.putAppleSwitch(record) }
    }

    func storeWrite<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) throws(MigrationError) -> T {
        do { return try store.write(body) } catch {
            throw MigrationError(.storeUnavailable, "the switch could not be stored")
        }
    }

    func apple<T>(_ call: () async throws(AppleSettingsError) -> T) async throws(MigrationError) -> T {
        do { return try await call() } catch {
            throw MigrationError(
                .appleRefused,
                "App Store Connect: \(error.message)",
                cause: error.code,
                retryAfterMillis: error.retryAfterMillis
            )
        }
    }

    func pause(_ millis: Int64) async { try? await Task.sleep(for: .milliseconds(millis)) }

    /// Reports and logs one step.
    func report(
        _ state: AppleSwitchState,
        _ step: String,
        _ outcome: String,
        detail: (inout MigrationStepReport) -> Void = { _ in }
    ) {
        var r = MigrationStepReport(
            at: switcher.now(),
            bundleID: bundle,
            environment: environment.rawValue,
            migrationID: state.migrationID,
            step: step,
            outcome: outcome,
            target: (state.target ?? request.target).rawValue
        )
        r.appleURL = state.appleURL
        detail(&r)
        emit(r)
        guard let id = state.migrationID else { return }
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
        let error = MigrationError(code, message, cause: cause, retryAfterMillis: retryAfterMillis)
        report(state ?? AppleSwitchState(bundleID: bundle, environment: environment), step, "refused") {
            $0.code = error.wireCode
            $0.message = message
        }
        return error
    }
}
