internal import Canonical
internal import FoundationEssentials
public import HTTPClient
public import V1Adapter
internal import V2Adapter
internal import WireJSON
import Synchronization

/// Fetches the other path's view of subscriptions, off the request path (DESIGN ch. 5):
/// - `v2` jobs ask the App Store Server API (Get All Subscription Statuses). When V2 is authoritative for a bundle
///   Apple still sends V1 for, the job also derives the `v2-api` event standing in for the V1 notification —
///   authoritative exactly when the V1 event is not, so a cutover between the two loses or doubles nothing.
/// - `v1` jobs ask verifyReceipt with the subscription's stored receipt.
/// Each result becomes that path's snapshot and, for compared bundles, a ledger row. A path that still does not know
/// the subscription once `grace` has passed is recorded as one-sided. Failures are retried with backoff; the silence
/// alert is checked here too.
public final class CompareWorker: JobTable, ContextualWorker {
    public struct Policy: Sendable {
        public var pollMillis: Int64 = 500
        /// The wait after a failed fetch, and give up (state failed) after `maxAttempts`.
        public var retry: RetryPolicy = .compareWorker
        public init() {}
    }

    let context: WorkerContext
    let settings: GatewayConfig.CompareSettings
    let silenceAlertMillis: Int64
    let v2Source: (any V2PathSource)?
    let receiptClient: VerifyReceiptClient
    let apps: [String: V1App]
    let policy: Policy
    private let scheduler: JobScheduler
    private let silent = Mutex<Set<String>>([])
    private let lastSilenceCheck = Mutex<Int64>(0)

    public init(context: WorkerContext, settings: GatewayConfig.CompareSettings, silenceAlertMillis: Int64, v2Source: (any V2PathSource)?,
                receiptClient: VerifyReceiptClient, apps: [V1App], policy: Policy = .init()) {
        self.context = context
        self.settings = settings
        self.silenceAlertMillis = silenceAlertMillis
        self.v2Source = v2Source
        self.receiptClient = receiptClient
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a })
        self.policy = policy
        self.scheduler = JobScheduler(context: context, idlePollMillis: policy.pollMillis)
    }

    struct Job: ScheduledJob {
        var id: Int64
        var bundleID: String
        var environment: String
        var otid: String
        var fetch: String
        var v1EventID: String?
        var authority: String?
        var compare: Bool
        var attempts: Int
        var createdAt: Int64
        /// Refetches made to confirm a disagreement before this one.
        var confirms: Int
        var lane: String { "" }
    }

    public func run() async { await scheduler.run(self) }

    public func stop() { scheduler.stop() }

    var lanes: [String] { [""] }

    func due(at time: Int64, lane: String, count: Int, in c: SQLiteConnection) throws -> [Job] {
        try c.query(
            """
            SELECT id, bundle_id, environment, original_transaction_id, fetch, v1_event_id, authority, compare, attempts, created_at,
                   confirms
            FROM compare_jobs WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?
            """, [.integer(time), .integer(Int64(count))]
        ).compactMap { row in
            guard let id = row.int64("id") else { return nil }
            return Job(
                id: id, bundleID: row.string("bundle_id") ?? "", environment: row.string("environment") ?? "",
                otid: row.string("original_transaction_id") ?? "", fetch: row.string("fetch") ?? "", v1EventID: row.string("v1_event_id"),
                authority: row.string("authority"), compare: row.bool("compare") ?? false, attempts: row.int("attempts") ?? 0,
                createdAt: row.int64("created_at") ?? time, confirms: row.int("confirms") ?? 0)
        }
    }

    func limit(lane: String) -> Int { settings.concurrency }

    func process(_ job: Job) async {
        do {
            if job.fetch == "v2" { try await fetchV2(job) } else { try await fetchV1(job) }
        } catch let error as PathFetchError {
            metrics.increment("iapgw_compare_fetch_failures_total", ["path": job.fetch, "code": error.code])
            if error.retryable {
                await retry(job, error: error.code)
            } else {
                log.warn("comparison fetch failed", ["bundle": .string(job.bundleID), "path": .string(job.fetch), "code": .string(error.code)])
                await settle(job, state: "failed", error: error.code)
            }
        } catch {
            await retry(job, error: "store_unavailable")
        }
    }

    // MARK: The V2 path: App Store Server API

    func fetchV2(_ job: Job) async throws {
        guard let source = v2Source else {
            throw PathFetchError(code: "no_app_store_api", message: "app_store_api is not configured", retryable: false)
        }
        let time = now()
        let env = AppStoreEnvironment(rawValue: job.environment)
        guard let status = try await source.status(bundleID: job.bundleID, environment: env, originalTransactionID: job.otid, observedAt: time)
        else {
            try await notSeen(job, by: "v2", time: time)
            return
        }
        let router = self.router
        var derivedFrom: CanonicalEvent?
        if let id = job.v1EventID {
            derivedFrom = try await context.read { c in
                try c.queryOne("SELECT json FROM events WHERE id = ?", [.text(id)])?.blob("json").flatMap {
                    try? JSONDecoder().decode(CanonicalEvent.self, from: Data($0))
                }
            }
        }
        let v1Event = derivedFrom
        let comparison = try await writer.performAsync { c in
            if let v1Event {
                try GatewayStore.storeEvents([Self.v2APIEvent(from: v1Event, status: status)], journalID: nil, router: router, now: time,
                                             authority: job.authority, in: c)
            }
            try CompareStore.putSnapshot(status.snapshot, path: "v2", in: c)
            return try self.finish(job, at: time, in: c)
        }
        metrics.increment("iapgw_compare_fetches_total", ["path": "v2"])
        count(comparison)
    }

    /// The event the V2 path stands for in place of a V1 notification: the V1 event's kind and date, the facts Apple's
    /// App Store Server API signed.
    static func v2APIEvent(from v1: CanonicalEvent, status: V2PathStatus) -> CanonicalEvent {
        let suffix = v1.id.hasPrefix("v1:") ? String(v1.id.dropFirst(3)) : v1.id
        var e = CanonicalEvent(
            id: "v2-api:" + suffix, source: .v2API, kind: v1.kind, reason: v1.reason, rawType: v1.rawType, rawSubtype: nil,
            eventDate: v1.eventDate, eventDateSource: v1.eventDateSource, verified: true)
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
        let stored = try await context.read { c in
            try CompareStore.receipt(bundleID: job.bundleID, environment: job.environment, otid: job.otid, in: c)
        }
        guard let stored else {
            try await notSeen(job, by: "v1", time: time, receipt: nil)
            return
        }
        guard let secret = apps[job.bundleID]?.sharedSecrets.first(where: { $0.name == stored.secretName })
            ?? apps[job.bundleID]?.sharedSecrets.first
        else { throw PathFetchError(code: "no_shared_secret", message: "no shared secret configured for \(job.bundleID)", retryable: false) }
        let answer: VerifyReceiptClient.Answer
        do { answer = try await receiptClient.verify(receiptData: stored.receipt, sharedSecret: secret) } catch {
            throw PathFetchError(code: error.code.rawValue, message: "verifyReceipt", retryable: error.code == .appleUnavailable)
        }
        guard let snapshot = V1EventBuilder.snapshots(from: answer.response, observedAt: time).first(where: { $0.originalTransactionID == job.otid })
        else {
            try await notSeen(job, by: "v1", time: time, receipt: stored)
            return
        }
        let comparison = try await writer.performAsync { c in
            try CompareStore.putSnapshot(snapshot, path: "v1", in: c)
            return try self.finish(job, at: time, in: c)
        }
        metrics.increment("iapgw_compare_fetches_total", ["path": "v1"])
        count(comparison)
    }

    /// Marks the job done (first, so a refetch it asks for is not taken for this job still pending) and, for
    /// compared bundles, compares the two paths' snapshots.
    func finish(_ job: Job, at time: Int64, in c: SQLiteConnection) throws -> CompareStore.Comparison? {
        try c.run("UPDATE compare_jobs SET state = 'done', attempts = attempts + 1, updated_at = ?, last_error = NULL WHERE id = ?",
                  [.integer(time), .integer(job.id)])
        guard job.compare else { return nil }
        return try CompareStore.compareIfReady(
            bundleID: job.bundleID, environment: job.environment, otid: job.otid, tolerance: settings.toleranceMillis, confirms: job.confirms,
            confirmDelay: settings.confirmDelayMillis, at: time, in: c)
    }

    func count(_ comparison: CompareStore.Comparison?) {
        guard let comparison, comparison != .waiting else { return }
        metrics.increment("iapgw_compare_comparisons_total", ["result": comparison.rawValue])
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
    /// the V1 path's knowledge arrives as a stored receipt, which wakes the fetch at once (`CompareStore.putReceipt`).
    var notSeenRetryMillis: Int64 { max(1_000, min(settings.graceMillis / 4, 300_000)) }

    /// One path does not know the subscription: ask again until the grace window has passed, then record it as seen
    /// by the other path only. `receipt` is the stored receipt a V1 fetch asked about (nil: there was none).
    @discardableResult
    func notSeen(_ job: Job, by path: String, time: Int64, receipt: CompareStore.StoredReceipt? = nil) async throws -> NotSeen {
        let outcome = path == "v1" ? "v2_only" : "v1_only"
        let otherPath = path == "v1" ? "v2" : "v1"
        let graceMillis = settings.graceMillis
        let graceOver = time.clampedSubtracting(job.createdAt) >= graceMillis
        let retryAt = now().clampedAdding(notSeenRetryMillis)
        let retry = policy.retry
        let result = try await writer.performAsync { c -> NotSeen in
            // The receipt may have been stored since this fetch read it. Its wake-up then found this job pending — it
            // is in flight — and the retry set below would overwrite it: the comparison would wait minutes for a
            // receipt that is already here (and, past the grace window, be recorded as V2-only). The writer runs one
            // transaction at a time, so either that receipt is visible here, or its wake-up comes after this update.
            if path == "v1",
               try CompareStore.receipt(bundleID: job.bundleID, environment: job.environment, otid: job.otid, in: c) != receipt
            {
                try Self.reschedule(job, error: "v1_receipt_stored", at: time, due: time, retry: retry, in: c)
                return .receiptStored
            }
            guard graceOver else {
                // Waiting for the other path is not a failed attempt: it does not count towards the limit (a grace
                // window longer than the attempts allow would otherwise fail the job before the one-sided outcome is
                // ever recorded), and the last look is at the end of the window.
                let due = min(retryAt, job.createdAt.clampedAdding(graceMillis))
                try Self.reschedule(job, error: "\(path)_not_seen_yet", at: time, due: due, retry: retry, counts: false, in: c)
                return .waiting
            }
            if job.compare {
                let other = try CompareStore.snapshot(bundleID: job.bundleID, environment: job.environment, otid: job.otid, path: otherPath, in: c)
                try CompareStore.record(bundleID: job.bundleID, environment: job.environment, otid: job.otid, outcome: outcome, fields: [],
                                        v1: path == "v1" ? nil : other, v2: path == "v2" ? nil : other, at: time, in: c)
            }
            try c.run("UPDATE compare_jobs SET state = 'done', attempts = attempts + 1, updated_at = ?, last_error = ? WHERE id = ?",
                      [.integer(time), .text(outcome), .integer(job.id)])
            return .oneSided
        }
        if result == .oneSided {
            if job.v1EventID != nil {
                log.error("V2 is authoritative but the App Store Server API does not know this subscription: no authoritative event",
                          ["bundle": .string(job.bundleID), "original_transaction_id": .string(job.otid)])
            }
            metrics.increment("iapgw_compare_one_sided_total", ["side": outcome])
        }
        return result
    }

    /// Leaves the job pending, due at `due` (failed once it has had `retry.maxAttempts`, when this attempt `counts`).
    static func reschedule(_ job: Job, error: String, at time: Int64, due: Int64, retry: RetryPolicy, counts: Bool = true,
                           in c: SQLiteConnection) throws {
        let attempts = job.attempts + (counts ? 1 : 0)
        try c.run(
            "UPDATE compare_jobs SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
            [.text(retry.jobState("pending", attempts: attempts)), .integer(Int64(attempts)), .integer(due),
             .text(error), .integer(time), .integer(job.id)])
    }

    func retry(_ job: Job, error: String) async {
        let delay = policy.retry.delayMillis(afterAttempt: job.attempts + 1, jitter: jitter())
        await settle(job, state: "pending", error: error, retryIn: delay)
    }

    func settle(_ job: Job, state: String, error: String, retryIn: Int64 = 0) async {
        let time = now()
        let attempts = job.attempts + 1
        let final = policy.retry.jobState(state, attempts: attempts)
        await context.recordOutcome { c in
            try c.run(
                "UPDATE compare_jobs SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
                [.text(final), .integer(Int64(attempts)), .integer(time.clampedAdding(retryIn)), .text(error), .integer(time), .integer(job.id)])
        }
    }

    // MARK: Gauges and the silence alert

    func housekeeping() async {
        await context.gaugePending("compare_jobs", as: "iapgw_compare_jobs_pending")
        let time = now()
        let due = lastSilenceCheck.withLock { last -> Bool in
            guard time - last >= 60_000 else { return false }
            last = time
            return true
        }
        if due { await checkSilence(at: time) }
    }

    /// DESIGN ch. 5: the authoritative path silent for `silence_alert` while the other path is not.
    func checkSilence(at time: Int64) async {
        guard let rows = try? await context.read({ c in
            try c.query(
                """
                SELECT a.bundle_id, a.environment, a.authority,
                       (SELECT MAX(created_at) FROM events e WHERE e.bundle_id = a.bundle_id AND e.environment = a.environment
                            AND e.path = a.authority) AS last_authoritative,
                       (SELECT MAX(created_at) FROM events e WHERE e.bundle_id = a.bundle_id AND e.environment = a.environment
                            AND e.path <> a.authority) AS last_other
                FROM authority a
                """)
        }) else { return }
        for row in rows {
            guard let bundle = row.string("bundle_id"), let env = row.string("environment"), let authority = row.string("authority") else { continue }
            let lastAuthoritative = row.int64("last_authoritative") ?? 0
            let lastOther = row.int64("last_other") ?? 0
            let isSilent = lastOther > lastAuthoritative.clampedAdding(silenceAlertMillis)
                && time.clampedSubtracting(lastAuthoritative) > silenceAlertMillis
            let key = bundle + "|" + env
            metrics.set("iapgw_authority_silent", ["bundle": bundle, "environment": env], isSilent ? 1 : 0)
            let changed = silent.withLock { set -> Bool in
                isSilent ? set.insert(key).inserted : set.remove(key) != nil
            }
            if changed, isSilent {
                log.warn("the authoritative path is silent while the other path is not", [
                    "bundle": .string(bundle), "environment": .string(env), "authority": .string(authority),
                    "silent_for_ms": .int(time.clampedSubtracting(lastAuthoritative)),
                ])
            }
        }
    }
}
