internal import Canonical
public import HTTPClient
public import V1Adapter
internal import WireJSON
import Synchronization

/// The V1 stage after the `200` (DESIGN ch. 4): each journaled V1 body's receipt goes to verifyReceipt, and the
/// event built from Apple's answer is stored and queued for delivery. Apple being down only delays it; an invalid
/// receipt ends it without an event (logged and counted); a 21004 keeps it waiting for a config fix.
public final class ReceiptWorker: JobTable, ContextualWorker {
    public struct Policy: Sendable {
        public var concurrency = 4
        public var pollMillis: Int64 = 200
        /// The wait after Apple was unavailable, and give up (state failed) after `maxAttempts`.
        public var retry: RetryPolicy = .receiptWorker
        /// A 21004 (secret mismatch at Apple) is retried this often, waiting for the configuration to be fixed.
        public var configErrorDelayMillis: Int64 = 1_800_000
        public init() {}
    }

    let context: WorkerContext
    let client: VerifyReceiptClient
    let apps: [String: V1App]
    let policy: Policy
    private let scheduler: JobScheduler

    public init(context: WorkerContext, client: VerifyReceiptClient, apps: [V1App], policy: Policy = .init()) {
        self.context = context
        self.client = client
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a })
        self.policy = policy
        self.scheduler = JobScheduler(context: context, idlePollMillis: policy.pollMillis)
    }

    struct Job: ScheduledJob {
        var journalID: Int64
        var attempts: Int
        var body: [UInt8]
        var bundleID: String
        var secretName: String
        var receivedAt: Int64
        var key: String
        /// The authority the notification arrived under.
        var authority: String?
        var id: Int64 { journalID }
        var lane: String { "" }
    }

    /// Runs until ``stop()``; returns after the verifications in flight finished.
    public func run() async { await scheduler.run(self) }

    public func stop() { scheduler.stop() }

    var lanes: [String] { [""] }

    func due(at time: Int64, lane: String, count: Int, in c: SQLiteConnection) throws -> [Job] {
        try c.query(
            """
            SELECT r.journal_id, r.attempts, j.body, j.bundle_id, j.secret_name, j.received_at, j.notification_key, j.authority
            FROM receipt_jobs r JOIN journal j ON j.id = r.journal_id
            WHERE r.state = 'pending' AND r.next_attempt_at <= ? ORDER BY r.next_attempt_at LIMIT ?
            """, [.integer(time), .integer(Int64(count))]
        ).compactMap { row in
            guard let id = row.int64("journal_id") else { return nil }
            return Job(journalID: id, attempts: row.int("attempts") ?? 0, body: row.blob("body") ?? [], bundleID: row.string("bundle_id") ?? "",
                       secretName: row.string("secret_name") ?? "", receivedAt: row.int64("received_at") ?? time,
                       key: row.string("notification_key") ?? "", authority: row.string("authority"))
        }
    }

    func limit(lane: String) -> Int { policy.concurrency }

    func housekeeping() async { await context.gaugePending("receipt_jobs", as: "iapgw_receipt_jobs_pending") }

    func process(_ job: Job) async {
        guard let body = try? JSONValueDecoder().decode(ResponseBodyV1.self, from: job.body) else {
            await settle(job, state: "failed", error: "journaled body unreadable", status: nil, retryIn: nil)
            return
        }
        guard let secret = apps[job.bundleID]?.sharedSecrets.first(where: { $0.name == job.secretName }) else {
            // The secret that authenticated this body is no longer configured: wait for the configuration.
            await settle(job, state: "pending", error: "shared secret \(job.secretName) not configured", status: nil,
                         retryIn: policy.configErrorDelayMillis)
            return
        }
        guard let receipt = body.receiptData else {
            await settle(job, state: "failed", error: "receipt_invalid: no receipt in the body", status: nil, retryIn: nil)
            return
        }
        do {
            let answer = try await client.verify(receiptData: receipt, sharedSecret: secret)
            let facts = V1EventBuilder.facts(fromReceipt: answer.response, subscription: body.subscriptionID)
            guard !facts.transactions.isEmpty else {
                metrics.increment("iapgw_verify_receipt_total", ["outcome": "receipt_invalid"])
                await settle(job, state: "failed", error: "receipt_invalid: answer lacks the subscription", status: answer.status, retryIn: nil)
                return
            }
            let event = V1EventBuilder().event(for: body, id: job.key, facts: facts, arrival: job.receivedAt)
            let router = self.router
            let time = now()
            let id = job.journalID
            let status = answer.status
            let job = job
            try await writer.performAsync { c in
                try GatewayStore.storeEvents([event], journalID: id, router: router, now: time, authority: job.authority, in: c)
                try Self.followUp(event: event, answer: answer.response, receipt: receipt, job: job, router: router, at: time, in: c)
                try c.run("UPDATE receipt_jobs SET state = 'done', attempts = attempts + 1, apple_status = ?, last_error = NULL, updated_at = ? WHERE journal_id = ?",
                          [.integer(Int64(status)), .integer(time), .integer(id)])
            }
            metrics.increment("iapgw_verify_receipt_total", ["outcome": "ok"])
        } catch let error as V1AdapterError {
            metrics.increment("iapgw_verify_receipt_total", ["outcome": error.code.rawValue])
            switch error.code {
            case .appleUnavailable:
                let delay = policy.retry.delayMillis(afterAttempt: job.attempts + 1, jitter: jitter())
                await settle(job, state: "pending", error: error.code.rawValue, status: error.appleStatus, retryIn: delay)
            case .receiptConfigError:
                log.error("verifyReceipt says the shared secret differs (21004): check App Store Connect and the config",
                          ["bundle": .string(job.bundleID), "secret": .string(job.secretName)])
                await settle(job, state: "pending", error: error.code.rawValue, status: error.appleStatus, retryIn: policy.configErrorDelayMillis)
            default:
                log.warn("V1 notification dropped: its receipt is invalid",
                         ["id": .string(job.key), "bundle": .string(job.bundleID), "code": .string(error.code.rawValue)])
                await settle(job, state: "failed", error: error.code.rawValue, status: error.appleStatus, retryIn: nil)
            }
        } catch {
            await settle(job, state: "pending", error: "store_unavailable", status: nil, retryIn: policy.retry.baseDelayMillis)
        }
    }

    /// After a V1 event: keep the receipt (the V1 path's view of this subscription later), and for compared bundles
    /// the V1 snapshot; ask for the V2 path's view when comparing, or when V2 is authoritative (its event then comes
    /// from the App Store Server API, authoritative in this notification's place).
    static func followUp(event: CanonicalEvent, answer: VerifyReceiptResponse, receipt: String, job: Job, router: Router, at time: Int64,
                         in c: SQLiteConnection) throws {
        guard let otid = event.originalTransactionID, let env = event.environment?.rawValue else { return }
        try CompareStore.putReceipt(bundleID: job.bundleID, environment: env, otid: otid, receipt: answer.latestReceipt ?? receipt,
                                    secretName: job.secretName, now: time, in: c)  // and wakes the comparisons waiting for it
        let compare = router.compares(job.bundleID) && event.isSubscription
        if compare, let snapshot = V1EventBuilder.snapshots(from: answer, observedAt: time).first(where: { $0.originalTransactionID == otid }) {
            try CompareStore.putSnapshot(snapshot, path: "v1", in: c)
        }
        // The V2 path's event stands in for this V1 notification only while Apple is not sending V2 itself (then its
        // V2 notifications are that path, and deriving another event from V1 would double it).
        var derive = false
        if job.authority == "v2" {
            derive = try !Self.receivesV2(bundleID: job.bundleID, environment: env, since: time - 86_400_000, in: c)
        }
        if compare || derive {
            try CompareStore.enqueue(bundleID: job.bundleID, environment: env, otid: otid, fetch: "v2",
                                     v1EventID: derive ? event.id : nil, authority: job.authority, compare: compare, at: time, in: c)
        }
    }

    /// Whether Apple sent V2 notifications for the bundle and environment since `since`.
    static func receivesV2(bundleID: String, environment: String, since: Int64, in c: SQLiteConnection) throws -> Bool {
        try c.queryOne(
            "SELECT 1 AS y FROM journal WHERE bundle_id = ? AND environment = ? AND version = 'v2' AND received_at >= ? LIMIT 1",
            [.text(bundleID), .text(environment), .integer(since)]) != nil
    }

    func settle(_ job: Job, state: String, error: String, status: Int?, retryIn: Int64?) async {
        let time = now()
        let attempts = job.attempts + 1
        let final = policy.retry.jobState(state, attempts: attempts)
        let id = job.journalID
        await context.recordOutcome { c in
            try c.run(
                "UPDATE receipt_jobs SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?, apple_status = ?, updated_at = ? WHERE journal_id = ?",
                [.text(final), .integer(Int64(attempts)), .integer(time.clampedAdding(retryIn ?? 0)), .text(error),
                 SQLiteValue(status.map { Int64($0) }), .integer(time), .integer(id)])
        }
    }
}
