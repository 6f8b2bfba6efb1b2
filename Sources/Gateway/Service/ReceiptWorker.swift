internal import Canonical
public import HTTPClient
internal import Store
import Synchronization
public import V1Adapter
internal import WireJSON

/// The V1 stage after the `200` (docs/architecture.md): each journaled V1 body's receipt goes to verifyReceipt, and the
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
        /// A job the store could not read or settle is tried again this soon: the store's trouble is not Apple's, and
        /// waiting out Apple's backoff would hold the event back for a minute after the store is back.
        public var storeRetryMillis: Int64 = 5_000
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

    typealias Job = ReceiptJob

    /// Runs until ``stop()``; returns after the verifications in flight finished.
    public func run() async { await scheduler.run(self) }

    public func stop() { scheduler.stop() }

    var lanes: [String] { [""] }

    func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: any StoreTransaction) throws -> [Job] {
        try tx.claimDueReceiptJobs(at: time, limit: count, lease: lease)
    }

    func limit(lane: String) -> Int { policy.concurrency }

    var claimedJobs: ClaimedJobs { .receiptJobs }

    func housekeeping() async {
        await context.gaugePending(as: .receiptJobsPending) { tx in try tx.pendingReceiptJobs() }
    }

    func process(_ job: Job) async {
        if job.version == .v2 {
            await processV1View(job)
            return
        }
        guard let body = try? JSONValueDecoder().decode(ResponseBodyV1.self, from: job.body) else {
            await settle(job, state: .failed, error: "journaled body unreadable", status: nil, retryIn: nil)
            return
        }
        guard let secret = apps[job.bundleID]?.sharedSecrets.first(where: { $0.name == job.secretName }) else {
            // The secret that authenticated this body is no longer configured: wait for the configuration.
            await settle(
                job,
                state: .pending,
                error: "shared secret \(job.secretName) not configured",
                status: nil,
                retryIn: policy.configErrorDelayMillis
            )
            return
        }
        guard let receipt = body.receiptData else {
            await settle(
                job,
                state: .failed,
                error: "receipt_invalid: no receipt in the body",
                status: nil,
                retryIn: nil
            )
            return
        }
        do {
            let answer = try await client.verify(receiptData: receipt, sharedSecret: secret)
            let facts = V1EventBuilder.facts(fromReceipt: answer.response, subscription: body.subscriptionID)
            guard !facts.transactions.isEmpty else {
                metrics.increment(.verifyReceiptTotal, ["outcome": "receipt_invalid"])
                await settle(
                    job,
                    state: .failed,
                    error: "receipt_invalid: answer lacks the subscription",
                    status: answer.status,
                    retryIn: nil
                )
                return
            }
            let event = V1EventBuilder().event(for: body, id: job.key, facts: facts, arrival: job.receivedAt)
            let router = self.router
            let time = now()
            let id = job.journalID
            let status = answer.status
            let job = job
            try await store.write { tx in
                try tx.storeEvents([event], journalID: id, routing: router, now: time, authority: job.authority)
                try Self.followUp(
                    event: event,
                    answer: answer.response,
                    receipt: receipt,
                    job: job,
                    router: router,
                    at: time,
                    in: tx
                )
                try tx.settleReceiptJob(
                    journalID: id,
                    state: .done,
                    attempts: job.attempts + 1,
                    nextAttemptAt: time,
                    error: nil,
                    appleStatus: status,
                    now: time
                )
            }
            metrics.increment(.verifyReceiptTotal, ["outcome": "ok"])
        } catch let error as V1AdapterError {
            metrics.increment(.verifyReceiptTotal, ["outcome": error.code.rawValue])
            switch error.code {
            case .appleUnavailable:
                let delay = policy.retry.delayMillis(afterAttempt: job.attempts + 1, jitter: jitter())
                await settle(
                    job,
                    state: .pending,
                    error: error.code.rawValue,
                    status: error.appleStatus,
                    retryIn: delay
                )
            case .receiptConfigError:
                log.error(
                    "verifyReceipt says the shared secret differs (21004): check App Store Connect and the config",
                    ["bundle": .string(job.bundleID), "secret": .string(job.secretName)]
                )
                await settle(
                    job,
                    state: .pending,
                    error: error.code.rawValue,
                    status: error.appleStatus,
                    retryIn: policy.configErrorDelayMillis
                )
            default:
                log.warn(
                    "V1 notification dropped: its receipt is invalid",
                    ["id": .string(job.key), "bundle": .string(job.bundleID), "code": .string(error.code.rawValue)]
                )
                await settle(job, state: .failed, error: error.code.rawValue, status: error.appleStatus, retryIn: nil)
            }
        } catch {
            await settle(
                job,
                state: .pending,
                error: "store_unavailable",
                status: nil,
                retryIn: policy.storeRetryMillis
            )
        }
    }

    /// The V1 path's event of a V2 notification that stands alone while V1 is authoritative (docs/architecture.md, "One
    /// authoritative event per notification"): its V1 shape, read by the V1 adapter like any V1 body, with the facts
    /// of verifyReceipt's answer for the subscription's latest stored receipt where there is one, else of the shape
    /// itself — built from Apple-signed data, so the event is `verified` either way; where V1 has no counterpart,
    /// the V2 event itself (``storeV1View(of:)``). Its id is `v1-view:` and the notification's UUID; it is
    /// authoritative on the V1 path as the notification arrived under V1 authority.
    func processV1View(_ job: Job) async {
        guard let app = apps[job.bundleID], let secret = app.sharedSecrets.first else {
            await settle(
                job,
                state: .failed,
                error: "no V1 path: the app has no shared secret",
                status: nil,
                retryIn: nil
            )
            return
        }
        let (key, body) = (job.key, job.body)
        let built: V1Shape?
        do {
            built = try await context.read { tx in
                try V1Shape.build(notificationKey: key, journalBody: body, secretName: secret.name, in: tx)
            }
        } catch {
            await settle(
                job,
                state: .pending,
                error: "store_unavailable",
                status: nil,
                retryIn: policy.storeRetryMillis
            )
            return
        }
        guard let shape = built,
            let v1 = try? JSONValueDecoder().decode(ResponseBodyV1.self, from: JSONParser.parse(shape.body))
        else {
            await storeV1View(of: job)
            return
        }
        var facts = V1EventBuilder.facts(fromBody: v1, subscription: v1.subscriptionID)
        var answer: VerifyReceiptClient.Answer?
        if let receipt = shape.receipt {
            let receiptSecret = app.sharedSecrets.first { $0.name == receipt.secretName } ?? secret
            if let verified = try? await client.verify(receiptData: receipt.receipt, sharedSecret: receiptSecret) {
                let fromApple = V1EventBuilder.facts(fromReceipt: verified.response, subscription: v1.subscriptionID)
                if !fromApple.transactions.isEmpty { (facts, answer) = (fromApple, verified) }
            }
        }
        var event = V1EventBuilder().event(
            for: v1,
            id: V1View.eventID(notificationKey: job.key),
            facts: facts,
            arrival: shape.eventDate
        )
        event.verified = true
        metrics.increment(.v1ShapesTotal, ["use": "event", "type": shape.type])
        let router = self.router
        let time = now()
        let stored = event
        let verified = answer
        do {
            try await store.write { tx in
                try tx.storeEvents(
                    [stored],
                    journalID: job.journalID,
                    routing: router,
                    now: time,
                    authority: job.authority
                )
                if let answer = verified, let otid = stored.originalTransactionID, let env = stored.environment {
                    let subscription = SubscriptionKey(
                        bundleID: job.bundleID,
                        environment: env,
                        originalTransactionID: otid
                    )
                    try tx.putReceipt(
                        StoredReceipt(
                            receipt: answer.response.latestReceipt ?? shape.receipt?.receipt ?? "",
                            secretName: secret.name,
                            updatedAt: time
                        ),
                        of: subscription
                    )
                }
                try tx.settleReceiptJob(
                    journalID: job.journalID,
                    state: .done,
                    attempts: job.attempts + 1,
                    nextAttemptAt: time,
                    error: nil,
                    appleStatus: verified?.status,
                    now: time
                )
            }
        } catch {
            await settle(
                job,
                state: .pending,
                error: "store_unavailable",
                status: nil,
                retryIn: policy.storeRetryMillis
            )
        }
    }

    /// The V1 path's event of a V2 notification whose type V1 has no counterpart for (an expiry Apple never notified in
    /// V1, a declined refund, a test): the V2 event itself, on the V1 path — the change is real whatever the generation.
    func storeV1View(of job: Job) async {
        let key = job.key
        let found: CanonicalEvent?
        do {
            found = try await context.read { tx in
                try tx.events(id: key, originalTransactionID: nil, limit: 1).first?.event
            }
        } catch {
            await settle(
                job,
                state: .pending,
                error: "store_unavailable",
                status: nil,
                retryIn: policy.storeRetryMillis
            )
            return
        }
        guard let found else {
            await settle(
                job,
                state: .failed,
                error: "the notification's event is not stored",
                status: nil,
                retryIn: nil
            )
            return
        }
        let event = V1View.event(of: found, notificationKey: job.key)
        let router = self.router
        let time = now()
        let stored = event
        do {
            try await store.write { tx in
                try tx.storeEvents(
                    [stored],
                    journalID: job.journalID,
                    routing: router,
                    now: time,
                    authority: job.authority
                )
                try tx.settleReceiptJob(
                    journalID: job.journalID,
                    state: .done,
                    attempts: job.attempts + 1,
                    nextAttemptAt: time,
                    error: nil,
                    appleStatus: nil,
                    now: time
                )
            }
        } catch {
            await settle(
                job,
                state: .pending,
                error: "store_unavailable",
                status: nil,
                retryIn: policy.storeRetryMillis
            )
        }
    }

    /// After a V1 event: keep the receipt (the V1 path's view of this subscription later), and for compared bundles
    /// the V1 snapshot; ask for the V2 path's view when comparing, or when V2 is authoritative (its event then comes
    /// from the App Store Server API, authoritative in this notification's place).
    static func followUp(
        event: CanonicalEvent,
        answer: VerifyReceiptResponse,
        receipt: String,
        job: Job,
        router: Router,
        at time: Int64,
        in tx: any StoreTransaction
    ) throws {
        guard let otid = event.originalTransactionID, let env = event.environment else { return }
        let key = SubscriptionKey(bundleID: job.bundleID, environment: env, originalTransactionID: otid)
        // Also wakes the comparisons waiting for it.
        try tx.putReceipt(
            StoredReceipt(receipt: answer.latestReceipt ?? receipt, secretName: job.secretName, updatedAt: time),
            of: key
        )
        let compare = router.compares(job.bundleID) && event.isSubscription
        if compare,
            let snapshot = V1EventBuilder.snapshots(from: answer, observedAt: time).first(where: {
                $0.originalTransactionID == otid
            })
        {
            try tx.putSnapshot(snapshot, path: .v1)
        }
        // The V2 path's event stands in for this V1 notification when it is the only notification of its event (always
        // once the gateway has switched Apple; before that, while no V2 arrives beside it, which would be that path).
        var derive = false
        if job.authority == .v2 {
            derive = try tx.standsAlone(.v1, bundleID: job.bundleID, environment: env, now: time)
        }
        if compare || derive {
            try tx.enqueueFetch(
                FetchRequest(
                    subscription: key,
                    fetch: .v2,
                    v1EventID: derive ? event.id : nil,
                    authority: job.authority,
                    compare: compare
                ),
                at: time,
                due: nil
            )
        }
    }

    func settle(_ job: Job, state: JobState, error: String, status: Int?, retryIn: Int64?) async {
        let time = now()
        let attempts = job.attempts + 1
        let final = policy.retry.jobState(state, attempts: attempts)
        let id = job.journalID
        await context.recordOutcome { tx in
            try tx.settleReceiptJob(
                journalID: id,
                state: final,
                attempts: attempts,
                nextAttemptAt: time.clampedAdding(retryIn ?? 0),
                error: error,
                appleStatus: status,
                now: time
            )
        }
    }
}

extension ReceiptJob: ScheduledJob {
    var id: Int64 { journalID }
    var lane: String { "" }
}
