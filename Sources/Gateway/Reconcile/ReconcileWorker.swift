public import Canonical
internal import Crypto
public import ServiceKit
package import Store
import Synchronization
internal import Threads
public import V1Adapter
internal import V2Adapter

/// Recovers what Apple's notifications did not bring (docs/operations.md, "Reconciliation"), as scheduled runs per
/// app and environment, claimed like every job so that on several instances one runs each:
/// - `subscriptions`: every subscription of the V2 path whose stored expiry is within `expiring_within` of now and
///   whose state nothing changed for `silent_for` is asked for with Get All Subscription Statuses; where Apple's signed
///   state differs, a `v2-api` event with `recovered_by: "reconciliation"` and a kind from the difference is stored
///   and delivered like any other. One that agrees costs the call and produces nothing.
/// - `receipts`: the same for the V1 path of apps that take V1 with verifyReceipt, with verifyReceipt of the latest
///   stored receipt (`v1-receipt` events).
/// - `history`: Get Notification History over the window since the last sweep (overlapping it), every notification
///   fed through the normal pipeline: one never journaled is stored with its original type and id and
///   `recovered_by: "history"`; the others are duplicates and change nothing.
/// Each run spends at most its share of `requests_per_hour`; a 429 ends the run, which is due again only once
/// Apple's `Retry-After` has passed.
public final class ReconcileWorker: JobTable, ContextualWorker {
    /// The slices of the store it works on.
    package typealias Transaction = any ReconcileTransaction & JournalTransaction & ComparisonTransaction
    package let store: StoreSlice<Transaction>
    package typealias Job = ReconcileRun

    public struct Tuning: Sendable {
        public var pollMillis: Int64 = 1_000
        /// Runs at once per instance, each making its Apple calls one after another. One: a 429 met by one run then
        /// holds every other run of this instance before it sends another request (Apple counts an app's requests
        /// together); several instances share the work.
        public var concurrency = 1
        /// The wait after a failed run without `Retry-After`, doubling per consecutive failure up to `maxDelayMillis`.
        public var baseDelayMillis: Int64 = 60_000
        public var maxDelayMillis: Int64 = 3_600_000
        public init() {}
    }

    package let context: WorkerContext
    /// Who receives what, from the config.
    let router: Router
    let settings: ReconcileSettings
    let apps: [GatewayConfig.App]
    let statusSource: (any V2PathSource)?
    let historySource: (any NotificationHistorySource)?
    let receiptClient: VerifyReceiptClient
    let v1Apps: [String: V1App]
    let ingest: NotificationIngest
    let tuning: Tuning
    private let scheduler: JobScheduler
    /// Recovered events per app over the last day, as last read (the silence alert).
    private let alerting = Mutex<Set<String>>([])
    private let lastAlertCheck = Mutex<Int64>(0)
    /// Per app and environment, until when Apple asked this instance to wait (a 429's `Retry-After`): no run of it
    /// calls the App Store Server API before then.
    private let blockedUntil = Mutex<[String: Int64]>([:])
    /// The (app, code, bundle named) of the history items skipped so far, each logged once (``skip(_:key:)``).
    private let warnedSkips = Mutex<Set<String>>([])

    public init(
        context: WorkerContext,
        router: Router,
        settings: ReconcileSettings,
        apps: [GatewayConfig.App],
        statusSource: (any V2PathSource)?,
        historySource: (any NotificationHistorySource)?,
        receiptClient: VerifyReceiptClient,
        v1Apps: [V1App],
        ingest: NotificationIngest,
        tuning: Tuning = .init()
    ) {
        self.context = context
        self.router = router
        self.store = StoreSlice(context.store) { $0 }
        self.settings = settings
        self.apps = apps
        self.statusSource = statusSource
        self.historySource = historySource
        self.receiptClient = receiptClient
        self.v1Apps = Dictionary(v1Apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a })
        self.ingest = ingest
        self.tuning = tuning
        self.scheduler = JobScheduler(context: context, idlePollMillis: tuning.pollMillis)
    }

    /// Adds the runs the config and credentials allow and the store does not have yet (their schedule is kept
    /// across restarts). The service does this before it starts listening; blocking.
    public func schedule() throws {
        let runs = scheduledRuns(at: now())
        guard !runs.isEmpty else { return }
        try store.write { tx in try tx.scheduleReconcileRuns(runs) }
    }

    /// Runs the scheduled runs as they come due until ``stop()``.
    public func run() async { await scheduler.run(self) }

    public func stop() { scheduler.stop() }

    /// Every run the config asks for: each app and environment, each kind whose credentials exist. The first run of
    /// each is spread over its period (by a hash of its key), so that a fleet of apps does not ask Apple at once.
    func scheduledRuns(at time: Int64) -> [(key: ReconcileRunKey, firstRunAt: Int64)] {
        var runs: [(key: ReconcileRunKey, firstRunAt: Int64)] = []
        for app in apps {
            for environment in app.environments.sorted(by: { $0.rawValue < $1.rawValue }) {
                for kind in kinds(for: app.bundleID) {
                    let key = ReconcileRunKey(bundleID: app.bundleID, environment: environment, kind: kind)
                    runs.append((key, time.clampedAdding(Self.offset(of: key, within: period(of: kind) ?? 1))))
                }
            }
        }
        return runs
    }

    /// The kinds of run an app gets: the App Store Server API's two where it has credentials, and verifyReceipt for
    /// the V1 path wherever it takes V1 with verifyReceipt — a V1-authoritative app's downstream follows that path,
    /// so it is the one that must not stay wrong.
    func kinds(for bundleID: String) -> [ReconcileKind] {
        var kinds: [ReconcileKind] = []
        if settings.everyMillis != nil {
            if let v1 = v1Apps[bundleID], v1.verifyReceipt, !v1.sharedSecrets.isEmpty { kinds.append(.receipts) }
            if statusSource?.serves(bundleID: bundleID) == true { kinds.append(.subscriptions) }
        }
        if settings.historySweepMillis != nil, historySource?.serves(bundleID: bundleID) == true {
            kinds.append(.history)
        }
        return kinds
    }

    func period(of kind: ReconcileKind) -> Int64? {
        kind == .history ? settings.historySweepMillis : settings.everyMillis
    }

    static func offset(of key: ReconcileRunKey, within period: Int64) -> Int64 {
        let digest = SHA256.hash(Array(key.description.utf8))
        let n = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int64(n % UInt64(max(1, period)))
    }

    /// What ``runNow(bundleID:environment:)`` did for one run.
    public struct RunReport: Sendable, Encodable {
        public var bundleID: String
        public var environment: String
        public var kind: String
        public var checked: Int
        public var recovered: Int
        public var calls: Int
        public var error: String?
        enum CodingKeys: String, CodingKey {
            case bundleID = "bundle_id"
            case environment, kind, checked, recovered, calls, error
        }
    }

    /// Runs every scheduled run of the app (or all apps) now, whatever their schedule — `iap-gateway reconcile` —
    /// and records each as if it had come due. What a running gateway recovers at the same moment is not recovered
    /// twice (notifications dedupe on their id, events on theirs).
    public func runNow(bundleID: String? = nil, environment: AppStoreEnvironment? = nil) async throws -> [RunReport] {
        try schedule()
        let runs = try await store.read { tx in try tx.reconcileRuns() }
        var reports: [RunReport] = []
        for run in runs
        where (bundleID == nil || run.key.bundleID == bundleID)
            && (environment == nil || run.key.environment == environment)
        {
            let outcome = await perform(run)
            reports.append(
                RunReport(
                    bundleID: run.key.bundleID,
                    environment: run.key.environment.rawValue,
                    kind: run.key.kind.rawValue,
                    checked: outcome.checked,
                    recovered: outcome.recovered,
                    calls: outcome.calls,
                    error: outcome.error
                )
            )
        }
        return reports
    }

    // MARK: JobTable

    package var lanes: [String] { [""] }

    package func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: Transaction) throws -> [Job] {
        try tx.claimDueReconcileRuns(at: time, limit: count, lease: lease)
    }

    package func limit(lane: String) -> Int { tuning.concurrency }

    package var claimedJobs: ClaimedJobs { .reconcileRuns }

    package func housekeeping() async {
        let time = now()
        let due = lastAlertCheck.withLock { last -> Bool in
            guard time - last >= 60_000 else { return false }
            last = time
            return true
        }
        if due { await checkRecoveryAlert(at: time) }
    }

    package func process(_ run: Job) async { await perform(run) }

    /// Runs one run and records its outcome (returned as well).
    @discardableResult
    func perform(_ run: Job) async -> ReconcileRunOutcome {
        let time = now()
        // A run of an app or kind the config no longer has: looked at again in a day (the row stays for its history).
        guard let period = period(of: run.key.kind), kinds(for: run.key.bundleID).contains(run.key.kind),
            apps.contains(where: { $0.bundleID == run.key.bundleID && $0.environments.contains(run.key.environment) })
        else {
            let outcome = ReconcileRunOutcome(
                nextRunAt: time.clampedAdding(86_400_000),
                watermark: nil,
                attempts: 0,
                error: OutcomeCode.notConfigured.rawValue,
                checked: 0,
                recovered: 0,
                calls: 0
            )
            await settle(run, outcome, at: time)
            return outcome
        }
        var tally = Tally(budget: settings.budget(periodMillis: period))
        var watermark: Int64?
        var failure: PathFetchError?
        do {
            switch run.key.kind {
            case .subscriptions: try await reconcileSubscriptions(run.key, at: time, tally: &tally)
            case .receipts: try await reconcileReceipts(run.key, at: time, tally: &tally)
            case .history: watermark = try await sweepHistory(run, at: time, tally: &tally)
            }
        } catch let error as PathFetchError {
            failure = error
        } catch {
            failure = PathFetchError(
                code: OutcomeCode.storeUnavailable.rawValue,
                message: String(describing: error),
                retryable: true
            )
        }
        let labels = ["bundle": run.key.bundleID, "kind": run.key.kind.rawValue]
        metrics.set(.reconcileBudgetRemaining, labels, Double(max(0, tally.budget - tally.calls)))
        let next: Int64
        let attempts: Int
        if let failure {
            attempts = run.attempts + 1
            let backoff = tuning.baseDelayMillis.clampedMultiplied(by: Int64(1) << Int64(min(attempts - 1, 20)))
            let wait = failure.retryAfterMillis.map { max($0, 1_000) } ?? min(backoff, tuning.maxDelayMillis)
            // Not retryable (credentials refused, say): looked at again next period, not hammered.
            next = now().clampedAdding(failure.retryable ? wait : max(period, wait))
            if failure.code == "rate_limited" {
                metrics.increment(.reconcileRateLimitedTotal, ["bundle": run.key.bundleID])
                let until = next
                blockedUntil.withLock { $0[Self.blockKey(run.key)] = max($0[Self.blockKey(run.key)] ?? 0, until) }
            }
            log.warn(
                "reconciliation run failed",
                [
                    "bundle": .string(run.key.bundleID), "environment": .string(run.key.environment.rawValue),
                    "kind": .string(run.key.kind.rawValue), "code": .string(failure.code),
                    "retry_in_ms": .int(next - now()),
                ]
            )
        } else {
            attempts = 0
            next = time.clampedAdding(period)
        }
        let outcome = ReconcileRunOutcome(
            nextRunAt: next,
            watermark: watermark,
            attempts: attempts,
            error: failure?.code,
            checked: tally.checked,
            recovered: tally.recovered,
            calls: tally.calls
        )
        await settle(run, outcome, at: time, rateLimited: failure?.code == "rate_limited")
        return outcome
    }

    func settle(_ run: Job, _ outcome: ReconcileRunOutcome, at time: Int64, rateLimited: Bool = false) async {
        let id = run.id
        let key = run.key
        await recordOutcome { tx in
            try tx.settleReconcileRun(id: id, outcome, now: time)
            // Apple's wait holds for the app's other runs too (its limits count the whole key's requests).
            if rateLimited {
                try tx.deferReconcileRuns(
                    bundleID: key.bundleID,
                    environment: key.environment,
                    until: outcome.nextRunAt
                )
            }
        }
    }

    static func blockKey(_ key: ReconcileRunKey) -> String { key.bundleID + "|" + key.environment.rawValue }

    /// Throws `rate_limited` while a 429 seen by this instance still holds for the app.
    func checkNotBlocked(_ key: ReconcileRunKey) throws(PathFetchError) {
        let time = now()
        guard let until = blockedUntil.withLock({ $0[Self.blockKey(key)] }), until > time else { return }
        throw PathFetchError(
            code: "rate_limited",
            message: "waiting for Apple's Retry-After",
            retryable: true,
            retryAfterMillis: until - time
        )
    }

    /// What one run spent and found.
    struct Tally {
        let budget: Int
        var calls = 0
        var checked = 0
        var recovered = 0
        var exhausted: Bool { calls >= budget }
    }

    // MARK: Subscriptions: Get All Subscription Statuses (V2 path) and verifyReceipt (V1 path)

    func candidates(
        _ key: ReconcileRunKey,
        path: Generation,
        at time: Int64,
        limit: Int
    ) async throws -> [ReconcileCandidate] {
        let selection = ReconcileSelection(
            bundleID: key.bundleID,
            environment: key.environment,
            path: path,
            expiresFrom: time.clampedSubtracting(settings.expiringWithinMillis),
            expiresUntil: time.clampedAdding(settings.expiringWithinMillis),
            silentSince: time.clampedSubtracting(settings.silentForMillis),
            checkedBefore: time.clampedSubtracting(settings.silentForMillis),
            limit: limit
        )
        return try await store.read { tx in try tx.reconcileCandidates(selection) }
    }

    func reconcileSubscriptions(_ key: ReconcileRunKey, at time: Int64, tally: inout Tally) async throws {
        guard let source = statusSource else { return }
        for candidate in try await candidates(key, path: .v2, at: time, limit: tally.budget) {
            guard !tally.exhausted else { break }
            try checkNotBlocked(key)
            tally.calls += 1
            metrics.increment(.reconcileAPICallsTotal, ["bundle": key.bundleID, "endpoint": "subscription_statuses"])
            let status = try await source.status(
                bundleID: key.bundleID,
                environment: key.environment,
                originalTransactionID: candidate.originalTransactionID,
                observedAt: time
            )
            var recovered: CanonicalEvent?
            if let status, let stored = try await storedSnapshot(candidate, source: .v2, at: time),
                let change = Reconciliation.change(stored: stored, apple: status.snapshot, at: time)
            {
                var e = Self.recoveredEvent(
                    snapshot: status.snapshot,
                    source: .v2API,
                    kind: change.kind,
                    reason: change.reason,
                    at: time
                )
                e.apply(status.transaction)
                if let renewal = status.renewal { e.apply(renewal) }
                e.computeEntitlement()
                recovered = e
            }
            try await record(candidate, key: key, path: .v2, event: recovered, at: time, tally: &tally)
        }
    }

    func reconcileReceipts(_ key: ReconcileRunKey, at time: Int64, tally: inout Tally) async throws {
        guard let app = v1Apps[key.bundleID] else { return }
        for candidate in try await candidates(key, path: .v1, at: time, limit: tally.budget) {
            guard !tally.exhausted else { break }
            let subscription = SubscriptionKey(
                bundleID: key.bundleID,
                environment: key.environment,
                originalTransactionID: candidate.originalTransactionID
            )
            var recovered: CanonicalEvent?
            if let receipt = try await store.read({ tx in try tx.receipt(of: subscription) }),
                let secret = app.sharedSecrets.first(where: { $0.name == receipt.secretName })
                    ?? app.sharedSecrets.first
            {
                tally.calls += 1
                metrics.increment(.reconcileAPICallsTotal, ["bundle": key.bundleID, "endpoint": "verify_receipt"])
                let answer: VerifyReceiptClient.Answer
                do { answer = try await receiptClient.verify(receiptData: receipt.receipt, sharedSecret: secret) } catch
                {
                    guard error.code == .appleUnavailable else {
                        // This receipt cannot be checked (Apple calls it invalid): noted, the run goes on.
                        try await record(candidate, key: key, path: .v1, event: nil, at: time, tally: &tally)
                        continue
                    }
                    throw PathFetchError(code: error.code.rawValue, message: "verifyReceipt", retryable: true)
                }
                if let apple = V1EventBuilder.snapshots(from: answer.response, observedAt: time)
                    .first(where: { $0.originalTransactionID == candidate.originalTransactionID }),
                    let stored = try await storedSnapshot(candidate, source: .v1, at: time),
                    let change = Reconciliation.change(stored: stored, apple: apple, at: time)
                {
                    var e = Self.recoveredEvent(
                        snapshot: apple,
                        source: .v1Receipt,
                        kind: change.kind,
                        reason: change.reason,
                        at: time
                    )
                    e.computeEntitlement()
                    recovered = e
                }
            }
            try await record(candidate, key: key, path: .v1, event: recovered, at: time, tally: &tally)
        }
    }

    /// The facts of the stored state: its event's.
    func storedSnapshot(
        _ candidate: ReconcileCandidate,
        source: EventSource,
        at time: Int64
    ) async throws -> OutcomeSnapshot? {
        let id = candidate.eventID
        guard
            let event = try await store.read({ tx in
                try tx.events(id: id, originalTransactionID: nil, limit: 1).first?.event
            })
        else {
            return nil
        }
        return OutcomeSnapshot(event: event, source: source, observedAt: time)
    }

    /// Stores the recovered event (if any) — delivered like any other, its state the path's from now on — and marks
    /// the subscription checked.
    func record(
        _ candidate: ReconcileCandidate,
        key: ReconcileRunKey,
        path: Generation,
        event: CanonicalEvent?,
        at time: Int64,
        tally: inout Tally
    ) async throws {
        let router = self.router
        let otid = candidate.originalTransactionID
        let done = try await store.write { tx -> PlanOutcome in
            let done =
                try event.map {
                    try tx.storeEventsReporting(
                        [$0],
                        journalID: nil,
                        routing: router.routing,
                        now: time,
                        authority: nil
                    )
                }
                ?? PlanOutcome()
            try tx.markReconciled(path: path, environment: key.environment, originalTransactionID: otid, at: time)
            return done
        }
        metrics.countFiltered(done)
        let stored = done.newEvents > 0
        tally.checked += 1
        count(key, by: .reconciliation, recovered: stored && event != nil)
        if stored, let event {
            tally.recovered += 1
            log.info(
                "subscription reconciled: Apple's state differed",
                [
                    "bundle": .string(key.bundleID), "environment": .string(key.environment.rawValue),
                    "path": .string(path.rawValue),
                    "original_transaction_id": .string(otid), "kind": .string(event.kind.rawValue),
                    "event_id": .string(event.id),
                ]
            )
        }
    }

    /// The metrics of one subscription or notification a run checked, and of the event it recovered, if it did.
    func count(_ key: ReconcileRunKey, by mechanism: RecoveryMechanism, recovered: Bool) {
        let labels = ["bundle": key.bundleID, "mechanism": mechanism.rawValue]
        metrics.increment(.reconcileCheckedTotal, labels)
        if recovered { metrics.increment(.recoveredEventsTotal, labels) }
    }

    /// The event that brings a path in line with what Apple says now. Its id is fixed by the facts it carries, so two
    /// instances (or two runs) that find the same difference store it once.
    static func recoveredEvent(
        snapshot s: OutcomeSnapshot,
        source: EventSource,
        kind: EventKind,
        reason: EventReason?,
        at time: Int64
    )
        -> CanonicalEvent
    {
        func text<T>(_ v: T?) -> String { v.map { "\($0)" } ?? "" }
        let parts: [String] = [
            s.originalTransactionID, text(s.transactionID), text(s.productID), text(s.expiresDate),
            text(s.revocationDate),
            text(s.gracePeriodExpiresDate), text(s.autoRenew), text(s.autoRenewProductID), text(s.inBillingRetry),
        ]
        let facts = parts.joined(separator: "|")
        let id =
            "reconciliation:" + source.rawValue + ":" + Hex.encode(Array(SHA256.hash(Array(facts.utf8)).prefix(16)))
        var e = CanonicalEvent(
            id: id,
            source: source,
            kind: kind,
            reason: reason,
            rawType: "RECONCILIATION",
            eventDate: time,
            eventDateSource: .arrival,
            verified: true
        )
        e.recoveredBy = .reconciliation
        e.bundleID = s.bundleID
        e.environment = s.environment
        e.originalTransactionID = s.originalTransactionID
        e.transactionID = s.transactionID
        e.productID = s.productID
        e.productType = .autoRenewable
        e.expiresDate = s.expiresDate
        e.revocationDate = s.revocationDate
        e.gracePeriodExpiresDate = s.gracePeriodExpiresDate
        e.autoRenew = s.autoRenew
        e.autoRenewProductID = s.autoRenewProductID
        e.inBillingRetry = s.inBillingRetry
        e.expirationIntent = s.expirationIntent
        return e
    }

    // MARK: The notification-history sweep

    /// How far back Get Notification History reaches.
    static let appleHistoryRetentionMillis: Int64 = 180 * 86_400_000

    /// Sweeps [previous end − overlap, now − lag) (the first sweep: `history_first_window` back) with a
    /// ``HistoryWalker``; returns the new end. A run cut short by its budget (the walk's page cap) sweeps the same window
    /// again next time (what it fed is a duplicate then). One page at a time: its notifications go through the pipeline
    /// before the next page is asked for. A notification the store keeps nowhere ends the run; one the gateway cannot
    /// serve is skipped (``skip(_:key:)``).
    func sweepHistory(_ run: Job, at time: Int64, tally: inout Tally) async throws -> Int64? {
        guard let source = historySource else { return nil }
        let key = run.key
        let end = time.clampedSubtracting(settings.historyLagMillis)
        // Apple keeps 180 days of history and refuses a window starting earlier (a minute's margin for clock skew).
        let oldest = max(0, time.clampedSubtracting(Self.appleHistoryRetentionMillis - 60_000))
        let start = max(
            oldest,
            run.watermark.map { $0.clampedSubtracting(settings.historyOverlapMillis) }
                ?? end.clampedSubtracting(settings.historyFirstWindowMillis)
        )
        guard start < end else { return run.watermark }
        let walker = HistoryWalker(
            source: source,
            ingest: ingest,
            configuration: .init(origin: .historySweep, maxPages: max(0, tally.budget - tally.calls))
        )
        let walk = await walker.walk(
            HistoryWalker.Listing(bundleID: key.bundleID, environment: key.environment, startDate: start, endDate: end),
            beforeRequest: { _ throws(PathFetchError) in
                try checkNotBlocked(key)
                metrics.increment(
                    .reconcileAPICallsTotal,
                    ["bundle": key.bundleID, "endpoint": "notification_history"]
                )
            },
            observe: { event in
                if case .item(_, let result, let item) = event { note(result, item, key: key) }
            }
        )
        tally.calls += walk.requests
        tally.checked += walk.listed
        tally.recovered += walk.added
        switch walk.stop {
        case nil: return end
        case .pageCap?, .byteCap?: return nil
        case .failed(let error)?: throw error
        case .notKept(let code)?:
            // Kept nowhere (the store failed, or the genuine lane is full): the next run must meet it again.
            throw PathFetchError(code: code, message: "the store refused a recovered notification", retryable: true)
        }
    }

    /// The metrics and log of one notification of Apple's history the sweep fed through the pipeline.
    func note(_ result: NotificationIngest.Result, _ item: HistoryWalker.Item, key: ReconcileRunKey) {
        count(key, by: .history, recovered: item == .added)
        switch item {
        case .added:
            log.info(
                "missed notification recovered from Apple's history",
                [
                    "bundle": .string(key.bundleID), "environment": .string(key.environment.rawValue),
                    "id": result.id.map { .string($0) },
                    "type": result.notificationType.map { .string($0) },
                ]
            )
        case .refused: skip(result, key: key)
        case .duplicate, .notKept: break
        }
    }

    /// A notification of Apple's history the gateway cannot serve — Apple-signed for a bundle or environment the config
    /// does not have, say: counted (`iapgw_reconcile_skipped_total`), logged once per process for each app, code and
    /// bundle it names, and quarantined once (``NotificationIngest/Origin/quarantinesOnce``), where `quarantine replay`
    /// finds it after a config fix. The rest of the history is still recovered (docs/operations.md, "Reconciliation").
    func skip(_ result: NotificationIngest.Result, key: ReconcileRunKey) {
        let code = result.code ?? "status_\(result.status)"
        metrics.increment(.reconcileSkippedTotal, ["bundle": key.bundleID, "code": code])
        let first = warnedSkips.withLock { seen -> Bool in
            // Bounded: what a history item names is Apple-signed, but a process never keeps an unbounded set of it.
            guard seen.count < Self.maxWarnedSkips else { return false }
            return seen.insert([key.bundleID, code, result.bundleID ?? ""].joined(separator: "|")).inserted
        }
        guard first else { return }
        log.warn(
            "a notification in Apple's history cannot be served: skipped, quarantined once (more are counted, not logged)",
            [
                "bundle": .string(key.bundleID), "environment": .string(key.environment.rawValue),
                "code": .string(code),
                "notification_bundle": result.bundleID.map { .string($0) },
                "notification_environment": result.environment.map { .string($0) },
            ]
        )
    }

    static let maxWarnedSkips = 1_000

    // MARK: The silence alert

    /// An app whose recovery keeps finding what its notifications missed — at least `alert_after` events recovered
    /// over the last day — raises the silence alert (`iapgw_notifications_missed`, a warning once per episode): Apple's
    /// notifications are not reaching the gateway, whatever the recovery makes good.
    func checkRecoveryAlert(at time: Int64) async {
        let since = time.clampedSubtracting(86_400_000)
        guard
            let counts = try? await store.read({ tx in
                try tx.recoveredEventCounts(since: since, until: time.clampedAdding(1))
            })
        else {
            return
        }
        var perApp: [String: Int] = [:]
        for c in counts { perApp[c.bundleID + "|" + c.environment.rawValue, default: 0] += c.count }
        for app in apps {
            for environment in app.environments {
                let key = app.bundleID + "|" + environment.rawValue
                let recovered = perApp[key] ?? 0
                let raised = recovered >= settings.alertAfter
                metrics.set(
                    .notificationsMissed,
                    ["bundle": app.bundleID, "environment": environment.rawValue],
                    raised ? 1 : 0
                )
                let changed = alerting.withLock { set in raised ? set.insert(key).inserted : set.remove(key) != nil }
                if changed, raised {
                    log.warn(
                        "notifications are being missed: recovery keeps finding them (check the App Store Connect URL, proxies, WAF)",
                        [
                            "bundle": .string(app.bundleID), "environment": .string(environment.rawValue),
                            "recovered_last_day": .int(Int64(recovered)),
                        ]
                    )
                }
            }
        }
    }
}

extension ReconcileRun: ScheduledJob {
    package var lane: String { "" }
}

extension ReconcileWorker: BackgroundService {}
