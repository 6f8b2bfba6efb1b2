internal import Canonical
internal import FoundationEssentials
public import HTTPClient
public import ServiceKit
package import Store
import Synchronization
public import V1Adapter
internal import V2Adapter
internal import WireJSON

/// Fetches the other path's view of subscriptions, off the request path (docs/architecture.md):
/// - `v2` jobs ask the App Store Server API (Get All Subscription Statuses). When V2 is authoritative for a bundle
///   Apple still sends V1 for, the job also derives the `v2-api` event standing in for the V1 notification —
///   authoritative exactly when the V1 event is not, so a cutover between the two loses or doubles nothing.
/// - `v1` jobs ask verifyReceipt with the subscription's stored receipt.
/// Each result becomes that path's snapshot and, for compared bundles, a ledger row. A path that still does not know
/// the subscription once `grace` has passed is recorded as one-sided. Failures are retried with backoff; the silence
/// alert is checked here too.
public final class CompareWorker: JobTable, ContextualWorker {
    /// The slices of the store it works on.
    package typealias Transaction = any ComparisonTransaction & JournalTransaction & AuthorityTransaction
    package let store: StoreSlice<Transaction>
    public struct Tuning: Sendable {
        public var pollMillis: Int64 = 500
        /// The wait after a failed fetch, and give up (state failed) after `maxAttempts`.
        public var retry: RetryPolicy = .compareWorker
        public init() {}
    }

    package let context: WorkerContext
    /// Who receives what, from the config.
    let router: Router
    let settings: GatewayConfig.CompareSettings
    let silenceAlertMillis: Int64
    let v2Source: (any V2PathSource)?
    let receiptClient: VerifyReceiptClient
    let apps: [String: V1App]
    let tuning: Tuning
    private let scheduler: JobScheduler
    private let silent = Mutex<Set<String>>([])
    private let lastSilenceCheck = Mutex<Int64>(0)

    public init(
        context: WorkerContext,
        router: Router,
        settings: GatewayConfig.CompareSettings,
        silenceAlertMillis: Int64,
        v2Source: (any V2PathSource)?,
        receiptClient: VerifyReceiptClient,
        apps: [V1App],
        tuning: Tuning = .init()
    ) {
        self.context = context
        self.router = router
        self.store = StoreSlice(context.store) { $0 }
        self.settings = settings
        self.silenceAlertMillis = silenceAlertMillis
        self.v2Source = v2Source
        self.receiptClient = receiptClient
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a })
        self.tuning = tuning
        self.scheduler = JobScheduler(context: context, idlePollMillis: tuning.pollMillis)
    }

    package typealias Job = FetchJob

    public func run() async { await scheduler.run(self) }

    public func stop() { scheduler.stop() }

    package var lanes: [String] { [""] }

    package func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: Transaction) throws -> [Job] {
        try tx.claimDueFetches(at: time, limit: count, lease: lease)
    }

    package func limit(lane: String) -> Int { settings.concurrency }

    package func process(_ job: Job) async {
        do {
            switch job.fetch {
            case .v2: try await fetchV2(job)
            case .v1: try await fetchV1(job)
            }
        } catch let error as PathFetchError {
            metrics.increment(.compareFetchFailuresTotal, ["path": job.fetch.rawValue, "code": error.code])
            if error.retryable {
                await retry(job, error: error.code)
            } else {
                log.warn(
                    "comparison fetch failed",
                    ["bundle": .string(job.bundleID), "path": .string(job.fetch.rawValue), "code": .string(error.code)]
                )
                await settle(job, state: .failed, error: error.code)
            }
        } catch {
            await retry(job, error: OutcomeCode.storeUnavailable.rawValue)
        }
    }

    // MARK: The V2 path: App Store Server API

    func fetchV2(_ job: Job) async throws {
        guard let source = v2Source else {
            throw PathFetchError(code: "no_app_store_api", message: "app_store_api is not configured", retryable: false)
        }
        let time = now()
        guard
            let status = try await source.status(
                bundleID: job.bundleID,
                environment: job.environment,
                originalTransactionID: job.originalTransactionID,
                observedAt: time
            )
        else {
            try await notSeen(job, by: .v2, time: time)
            return
        }
        let router = self.router
        var derivedFrom: CanonicalEvent?
        if let id = job.v1EventID {
            derivedFrom = try await store.read { tx in
                try tx.events(id: id, originalTransactionID: nil, limit: 1).first?.event
            }
        }
        let v1Event = derivedFrom
        let (comparison, done) = try await store.write { tx in
            let done = try v1Event.map {
                try tx.storeEventsReporting(
                    [Self.v2APIEvent(from: $0, status: status)],
                    journalID: nil,
                    routing: router.routing,
                    now: time,
                    authority: job.authority
                )
            }
            try tx.putSnapshot(status.snapshot, path: .v2)
            return (try self.finish(job, at: time, in: tx), done)
        }
        if let done { metrics.countFiltered(done) }
        metrics.increment(.compareFetchesTotal, ["path": Generation.v2.rawValue])
        count(comparison)
    }

    /// The event the V2 path stands for in place of a V1 notification: the V1 event's kind and date, the facts Apple's
    /// App Store Server API signed.
    static func v2APIEvent(from v1: CanonicalEvent, status: V2PathStatus) -> CanonicalEvent {
        let suffix = v1.id.hasPrefix("v1:") ? String(v1.id.dropFirst(3)) : v1.id
        var e = CanonicalEvent(
            id: "v2-api:" + suffix,
            source: .v2API,
            kind: v1.kind,
            reason: v1.reason,
            rawType: v1.rawType,
            rawSubtype: nil,
            eventDate: v1.eventDate,
            eventDateSource: v1.eventDateSource,
            verified: true
        )
        e.bundleID = v1.bundleID
        e.appAppleID = v1.appAppleID
        e.environment = v1.environment
        e.productID = status.transaction.productID
        e.apply(status.transaction)
        if let renewal = status.renewal { e.apply(renewal) }
        e.computeEntitlement()
        return e
    }

    // MARK: The V1 path: verifyReceipt of the stored receipt

    func fetchV1(_ job: Job) async throws {
        let time = now()
        let stored = try await store.read { tx in try tx.receipt(of: job.subscription) }
        guard let stored else {
            try await notSeen(job, by: .v1, time: time, receipt: nil)
            return
        }
        guard
            let secret = apps[job.bundleID]?.sharedSecrets.first(where: { $0.name == stored.secretName })
                ?? apps[job.bundleID]?.sharedSecrets.first
        else {
            throw PathFetchError(
                code: "no_shared_secret",
                message: "no shared secret configured for \(job.bundleID)",
                retryable: false
            )
        }
        let answer: VerifyReceiptClient.Answer
        do { answer = try await receiptClient.verify(receiptData: stored.receipt, sharedSecret: secret) } catch {
            throw PathFetchError(
                code: error.code.rawValue,
                message: "verifyReceipt",
                retryable: error.code == .appleUnavailable
            )
        }
        guard
            let snapshot = V1EventBuilder.snapshots(from: answer.response, observedAt: time).first(where: {
                $0.originalTransactionID == job.originalTransactionID
            })
        else {
            try await notSeen(job, by: .v1, time: time, receipt: stored)
            return
        }
        let comparison = try await store.write { tx in
            try tx.putSnapshot(snapshot, path: .v1)
            return try self.finish(job, at: time, in: tx)
        }
        metrics.increment(.compareFetchesTotal, ["path": Generation.v1.rawValue])
        count(comparison)
    }

    /// Marks the job done (first, so a refetch it asks for is not taken for this job still pending) and, for
    /// compared bundles, compares the two paths' snapshots.
    func finish(_ job: Job, at time: Int64, in tx: Transaction) throws -> ComparisonRule.Comparison? {
        try tx.settleFetch(
            id: job.id,
            state: .done,
            attempts: job.attempts + 1,
            nextAttemptAt: nil,
            error: nil,
            now: time
        )
        guard job.compare else { return nil }
        return try ComparisonRule.compareIfReady(
            job.subscription,
            tolerance: settings.toleranceMillis,
            confirms: job.confirms,
            confirmDelay: settings.confirmDelayMillis,
            at: time,
            in: tx
        )
    }

    func count(_ comparison: ComparisonRule.Comparison?) {
        guard let comparison, comparison != .waiting else { return }
        metrics.increment(.compareComparisonsTotal, ["result": comparison.rawValue])
    }

    /// What ``notSeen(_:by:time:receipt:)`` did.
    enum NotSeen: Equatable {
        /// Asked again after `notSeenRetryMillis`: the grace window is still open.
        case waiting
        /// The receipt was stored while the V1 fetch was under way: asked again at once.
        case receiptStored
        /// Recorded as seen by the other path only.
        case oneSided
    }

    /// How long a fetch of a path that does not know the subscription yet waits before asking again. Only a fallback:
    /// the V1 path's knowledge arrives as a stored receipt, which wakes the fetch at once (`StoreTransaction.putReceipt`).
    var notSeenRetryMillis: Int64 { max(1_000, min(settings.graceMillis / 4, 300_000)) }

    /// One path does not know the subscription: ask again until the grace window has passed, then record it as seen
    /// by the other path only. `receipt` is the stored receipt a V1 fetch asked about (nil: there was none).
    @discardableResult
    func notSeen(_ job: Job, by path: Generation, time: Int64, receipt: StoredReceipt? = nil) async throws -> NotSeen {
        let outcome = CompareOutcome.onlySeen(by: path.other)
        let otherPath = path.other
        let graceMillis = settings.graceMillis
        let graceOver = time.clampedSubtracting(job.createdAt) >= graceMillis
        let retryAt = now().clampedAdding(notSeenRetryMillis)
        let retry = tuning.retry
        let result = try await store.write { tx -> NotSeen in
            // The receipt may have been stored since this fetch read it. Its wake-up then found this job pending — it
            // is in flight — and the retry set below would overwrite it: the comparison would wait minutes for a
            // receipt that is already here (and, past the grace window, be recorded as V2-only). The writer runs one
            // transaction at a time, so either that receipt is visible here, or its wake-up comes after this update.
            if path == .v1, try tx.receipt(of: job.subscription) != receipt {
                try Self.reschedule(job, error: "v1_receipt_stored", at: time, due: time, retry: retry, in: tx)
                return .receiptStored
            }
            guard graceOver else {
                // Waiting for the other path is not a failed attempt: it does not count towards the limit (a grace
                // window longer than the attempts allow would otherwise fail the job before the one-sided outcome is
                // ever recorded), and the last look is at the end of the window.
                let due = min(retryAt, job.createdAt.clampedAdding(graceMillis))
                try Self.reschedule(
                    job,
                    error: "\(path.rawValue)_not_seen_yet",
                    at: time,
                    due: due,
                    retry: retry,
                    counts: false,
                    in: tx
                )
                return .waiting
            }
            if job.compare {
                let other = try tx.snapshot(of: job.subscription, path: otherPath)
                try tx.recordComparison(
                    LedgerEntry(
                        subscription: job.subscription,
                        comparedAt: time,
                        outcome: outcome,
                        fields: [],
                        v1: path == .v1 ? nil : other,
                        v2: path == .v2 ? nil : other
                    )
                )
            }
            try tx.settleFetch(
                id: job.id,
                state: .done,
                attempts: job.attempts + 1,
                nextAttemptAt: nil,
                error: outcome.rawValue,
                now: time
            )
            return .oneSided
        }
        if result == .oneSided {
            if job.v1EventID != nil {
                log.error(
                    "V2 is authoritative but the App Store Server API does not know this subscription: no authoritative event",
                    ["bundle": .string(job.bundleID), "original_transaction_id": .string(job.originalTransactionID)]
                )
            }
            metrics.increment(.compareOneSidedTotal, ["side": outcome.rawValue])
        }
        return result
    }

    /// Leaves the job pending, due at `due` (failed once it has had `retry.maxAttempts`, when this attempt `counts`).
    static func reschedule(
        _ job: Job,
        error: String,
        at time: Int64,
        due: Int64,
        retry: RetryPolicy,
        counts: Bool = true,
        in tx: Transaction
    ) throws {
        let attempts = job.attempts + (counts ? 1 : 0)
        try tx.settleFetch(
            id: job.id,
            state: retry.jobState(.pending, attempts: attempts),
            attempts: attempts,
            nextAttemptAt: due,
            error: error,
            now: time
        )
    }

    func retry(_ job: Job, error: String) async {
        let delay = tuning.retry.delayMillis(afterAttempt: job.attempts + 1, jitter: jitter())
        await settle(job, state: .pending, error: error, retryIn: delay)
    }

    func settle(_ job: Job, state: JobState, error: String, retryIn: Int64 = 0) async {
        let time = now()
        let attempts = job.attempts + 1
        let final = tuning.retry.jobState(state, attempts: attempts)
        let id = job.id
        await recordOutcome { tx in
            try tx.settleFetch(
                id: id,
                state: final,
                attempts: attempts,
                nextAttemptAt: time.clampedAdding(retryIn),
                error: error,
                now: time
            )
        }
    }

    // MARK: Gauges and the silence alert

    package var claimedJobs: ClaimedJobs { .fetches }

    package func housekeeping() async {
        await gaugePending(as: .compareJobsPending) { tx in try tx.pendingFetches() }
        let time = now()
        let due = lastSilenceCheck.withLock { last -> Bool in
            guard time - last >= 60_000 else { return false }
            last = time
            return true
        }
        if due { await checkSilence(at: time) }
    }

    /// The silence alert (docs/operations.md): the authoritative path silent for `silence_alert` while the other path is not.
    func checkSilence(at time: Int64) async {
        guard let activity = try? await store.read({ tx in try tx.authorityActivity() }) else { return }
        for a in activity {
            let (bundle, env, authority) = (a.bundleID, a.environment.rawValue, a.authority.rawValue)
            let lastAuthoritative = a.lastAuthoritative ?? 0
            let lastOther = a.lastOther ?? 0
            let isSilent =
                lastOther > lastAuthoritative.clampedAdding(silenceAlertMillis)
                && time.clampedSubtracting(lastAuthoritative) > silenceAlertMillis
            let key = bundle + "|" + env
            metrics.set(.authoritySilent, ["bundle": bundle, "environment": env], isSilent ? 1 : 0)
            let changed = silent.withLock { set -> Bool in
                isSilent ? set.insert(key).inserted : set.remove(key) != nil
            }
            if changed, isSilent {
                log.warn(
                    "the authoritative path is silent while the other path is not",
                    [
                        "bundle": .string(bundle), "environment": .string(env), "authority": .string(authority),
                        "silent_for_ms": .int(time.clampedSubtracting(lastAuthoritative)),
                    ]
                )
            }
        }
    }
}

extension FetchJob: ScheduledJob {
    package var lane: String { "" }
}

extension CompareWorker: BackgroundService {}
