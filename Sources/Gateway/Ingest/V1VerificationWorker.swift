internal import Canonical
public import HTTPClient
internal import Policy
public import ServiceKit
package import Store
import Synchronization
public import V1Adapter
internal import WireJSON

/// The V1 stage after the `200` (docs/architecture.md): each journaled V1 body's receipt goes to verifyReceipt, and the
/// event built from Apple's answer is stored and queued for delivery. Apple being down only delays it; an invalid
/// receipt ends it without an event (logged and counted); a 21004 keeps it waiting for a config fix.
public final class V1VerificationWorker: JobTable, ContextualWorker {
    /// The slices of the store it works on.
    package typealias Transaction = any ReceiptJobTransaction & JournalTransaction & ComparisonTransaction
    package let store: StoreSlice<Transaction>
    public struct Tuning: Sendable {
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

    package let context: WorkerContext
    /// Who receives what, from the config.
    let router: Router
    let client: VerifyReceiptClient
    let apps: [String: V1App]
    let tuning: Tuning
    private let scheduler: JobScheduler

    public init(
        context: WorkerContext,
        router: Router,
        client: VerifyReceiptClient,
        apps: [V1App],
        tuning: Tuning = .init()
    ) {
        self.context = context
        self.router = router
        self.store = StoreSlice(context.store) { $0 }
        self.client = client
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { a, _ in a })
        self.tuning = tuning
        self.scheduler = JobScheduler(context: context, idlePollMillis: tuning.pollMillis)
    }

    package typealias Job = ReceiptJob

    /// Runs until ``stop()``; returns after the verifications in flight finished.
    public func run() async { await scheduler.run(self) }

    public func stop() { scheduler.stop() }

    package var lanes: [String] { [""] }

    package func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: Transaction) throws -> [Job] {
        try tx.claimDueReceiptJobs(at: time, limit: count, lease: lease)
    }

    package func limit(lane: String) -> Int { tuning.concurrency }

    package var claimedJobs: ClaimedJobs { .receiptJobs }

    package func housekeeping() async {
        await gaugePending(as: .receiptJobsPending) { tx in try tx.pendingReceiptJobs() }
    }

    package func process(_ job: Job) async {
        if job.version == .v2 {
            await processV1View(job)
            return
        }
        guard let body = try? JSONValueDecoder().decode(ResponseBodyV1.self, from: job.body) else {
            await settle(job, .bodyUnreadable)
            return
        }
        guard let secret = apps[job.bundleID]?.sharedSecrets.first(where: { $0.name == job.secretName }) else {
            // The secret that authenticated this body is no longer configured: wait for the configuration.
            await settle(job, .secretNotConfigured(job.secretName))
            return
        }
        guard let receipt = body.receiptData else {
            await settle(job, .noReceipt)
            return
        }
        let answer: VerifyReceiptClient.Answer
        do { answer = try await client.verify(receiptData: receipt, sharedSecret: secret) } catch {
            metrics.increment(.verifyReceiptTotal, ["outcome": error.code.rawValue])
            await settle(job, appleFailed: error)
            return
        }
        let facts = V1EventBuilder.facts(fromReceipt: answer.response, subscription: body.subscriptionID)
        guard !facts.transactions.isEmpty else {
            metrics.increment(.verifyReceiptTotal, ["outcome": "receipt_invalid"])
            await settle(job, .answerLacksSubscription(appleStatus: answer.status))
            return
        }
        let event = V1EventBuilder().event(for: body, id: job.key, facts: facts, arrival: job.receivedAt)
        let routing = router.routing
        let time = now()
        let (id, status) = (job.journalID, answer.status)
        // The V1 path's view of this subscription later (and the comparisons waiting for it): the receipt as Apple
        // last gave it; for a compared bundle, the V1 snapshot of Apple's answer.
        let kept = StoredReceipt(
            receipt: answer.response.latestReceipt ?? receipt,
            secretName: job.secretName,
            updatedAt: time
        )
        let snapshot = event.originalTransactionID.flatMap { otid in
            V1EventBuilder.snapshots(from: answer.response, observedAt: time).first { $0.originalTransactionID == otid }
        }
        let plan = NotificationPolicy.afterV1Event(
            event,
            bundleID: job.bundleID,
            v1Snapshot: snapshot,
            authority: job.authority,
            routing: routing
        )
        let job = job
        do {
            let done = try await store.write { tx in
                var done = try tx.storeEventsReporting(
                    [event],
                    journalID: id,
                    routing: routing,
                    now: time,
                    authority: job.authority
                )
                if let key = Self.subscription(of: event, bundleID: job.bundleID) { try tx.putReceipt(kept, of: key) }
                done.add(try tx.execute(plan, journalID: id, now: time))
                try Self.settleDone(job, appleStatus: status, at: time, in: tx)
                return done
            }
            metrics.countFiltered(done)
        } catch {
            await settle(job, .storeUnavailable)
            return
        }
        metrics.increment(.verifyReceiptTotal, ["outcome": "ok"])
    }

    /// The V1 path's event of a V2 notification that stands alone while V1 is authoritative (docs/architecture.md, "One
    /// authoritative event per notification"): its V1 shape, read by the V1 adapter like any V1 body, with the facts
    /// of verifyReceipt's answer for the subscription's latest stored receipt where there is one, else of the shape
    /// itself — built from Apple-signed data, so the event is `verified` either way; where V1 has no counterpart,
    /// the V2 event itself (``storeV1View(of:)``). Its id is `v1-view:` and the notification's UUID; it is
    /// authoritative on the V1 path as the notification arrived under V1 authority.
    func processV1View(_ job: Job) async {
        guard let app = apps[job.bundleID], let secret = app.sharedSecrets.first else {
            await settle(job, .noV1Path)
            return
        }
        let (key, body, ownership) = (job.key, job.body, app.assignedOwnership)
        let built: V1Shape?
        do {
            built = try await store.read { tx in
                try V1Shape.build(
                    notificationKey: key,
                    journalBody: body,
                    secretName: secret.name,
                    assignedOwnership: ownership,
                    in: tx
                )
            }
        } catch {
            await settle(job, .storeUnavailable)
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
        let kept = answer.map { verified in
            let (receipt, name) = (verified.response.latestReceipt ?? shape.receipt?.receipt ?? "", secret.name)
            return { @Sendable (time: Int64) in StoredReceipt(receipt: receipt, secretName: name, updatedAt: time) }
        }
        await storeV1PathEvent(event, of: job, appleStatus: answer?.status, keeping: kept)
    }

    /// The V1 path's event of a V2 notification whose type V1 has no counterpart for (an expiry Apple never notified in
    /// V1, a declined refund, a test): the V2 event itself, on the V1 path — the change is real whatever the generation.
    func storeV1View(of job: Job) async {
        let key = job.key
        let found: CanonicalEvent?
        do {
            found = try await store.read { tx in
                try tx.events(id: key, originalTransactionID: nil, limit: 1).first?.event
            }
        } catch {
            await settle(job, .storeUnavailable)
            return
        }
        guard let found else {
            await settle(job, .eventNotStored)
            return
        }
        await storeV1PathEvent(V1View.event(of: found, notificationKey: job.key), of: job, appleStatus: nil)
    }

    /// Stores the V1 path's event of a V2 notification with its deliveries, and what verifyReceipt answered for the
    /// subscription's receipt (`keeping`, made at the write's time) where it was asked, and settles the job — in one
    /// transaction.
    func storeV1PathEvent(
        _ event: CanonicalEvent,
        of job: Job,
        appleStatus: Int?,
        keeping kept: (@Sendable (Int64) -> StoredReceipt)? = nil
    ) async {
        let routing = router.routing
        let time = now()
        do {
            let done = try await store.write { tx in
                let done = try tx.storeEventsReporting(
                    [event],
                    journalID: job.journalID,
                    routing: routing,
                    now: time,
                    authority: job.authority
                )
                if let kept, let key = Self.subscription(of: event, bundleID: job.bundleID) {
                    try tx.putReceipt(kept(time), of: key)
                }
                try Self.settleDone(job, appleStatus: appleStatus, at: time, in: tx)
                return done
            }
            metrics.countFiltered(done)
        } catch {
            await settle(job, .storeUnavailable)
        }
    }

    static func subscription(of event: CanonicalEvent, bundleID: String) -> SubscriptionKey? {
        guard let otid = event.originalTransactionID, let environment = event.environment else { return nil }
        return SubscriptionKey(bundleID: bundleID, environment: environment, originalTransactionID: otid)
    }

    /// The job done, in the transaction that stored what it made.
    static func settleDone(_ job: Job, appleStatus: Int?, at time: Int64, in tx: Transaction) throws {
        try tx.settleReceiptJob(
            journalID: job.journalID,
            state: .done,
            attempts: job.attempts + 1,
            nextAttemptAt: time,
            error: nil,
            appleStatus: appleStatus,
            now: time
        )
    }

    /// Why a job did not finish, and so what becomes of it: failed for good, or pending until a retry.
    enum Failure: Equatable, CustomStringConvertible {
        /// The store could not be read or written: tried again soon (``Policy/storeRetryMillis``).
        case storeUnavailable
        /// The journaled V1 body does not read as one.
        case bodyUnreadable
        /// The secret that authenticated the body is not configured any more: waits for the configuration.
        case secretNotConfigured(String)
        /// The V1 body carries no receipt.
        case noReceipt
        /// Apple's answer does not list the notification's subscription.
        case answerLacksSubscription(appleStatus: Int)
        /// A V2 notification's V1 view, for an app without a shared secret.
        case noV1Path
        /// A V2 notification's V1 view, whose event is not stored.
        case eventNotStored

        /// What the job's row records: a code (``description`` says the rest, for the log).
        var error: String { code.rawValue }

        var code: OutcomeCode {
            switch self {
            case .storeUnavailable: .storeUnavailable
            case .bodyUnreadable: OutcomeCode("body_unreadable")
            case .secretNotConfigured: OutcomeCode("secret_not_configured")
            case .noReceipt: OutcomeCode("no_receipt")
            case .answerLacksSubscription: OutcomeCode("answer_lacks_subscription")
            case .noV1Path: OutcomeCode("no_v1_path")
            case .eventNotStored: OutcomeCode("event_not_stored")
            }
        }

        var description: String {
            switch self {
            case .storeUnavailable: "the store is unavailable"
            case .bodyUnreadable: "the journaled body does not read as a V1 notification"
            case .secretNotConfigured(let name): "shared secret \(name) is not configured"
            case .noReceipt: "the body carries no receipt"
            case .answerLacksSubscription(let status):
                "Apple's answer (status \(status)) does not list the notification's subscription"
            case .noV1Path: "the app has no shared secret: no V1 path"
            case .eventNotStored: "the notification's event is not stored"
            }
        }
    }

    func settle(_ job: Job, _ failure: Failure) async {
        if failure != .storeUnavailable {
            log.warn(
                "verifyReceipt job not done",
                [
                    "journal_id": .int(job.journalID), "error": .string(failure.error),
                    "detail": .string(failure.description),
                ]
            )
        }
        switch failure {
        case .storeUnavailable:
            await settle(job, state: .pending, error: failure.error, status: nil, retryIn: tuning.storeRetryMillis)
        case .secretNotConfigured:
            await settle(
                job,
                state: .pending,
                error: failure.error,
                status: nil,
                retryIn: tuning.configErrorDelayMillis
            )
        case .answerLacksSubscription(let status):
            await settle(job, state: .failed, error: failure.error, status: status, retryIn: nil)
        case .bodyUnreadable, .noReceipt, .noV1Path, .eventNotStored:
            await settle(job, state: .failed, error: failure.error, status: nil, retryIn: nil)
        }
    }

    /// verifyReceipt failed: Apple down waits out the backoff, a 21004 waits for the configuration, anything else ends
    /// the job (the receipt is not valid).
    func settle(_ job: Job, appleFailed error: V1AdapterError) async {
        switch error.code {
        case .appleUnavailable:
            let delay = tuning.retry.delayMillis(afterAttempt: job.attempts + 1, jitter: jitter())
            await settle(job, state: .pending, error: error.code.rawValue, status: error.appleStatus, retryIn: delay)
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
                retryIn: tuning.configErrorDelayMillis
            )
        default:
            log.warn(
                "V1 notification dropped: its receipt is invalid",
                ["id": .string(job.key), "bundle": .string(job.bundleID), "code": .string(error.code.rawValue)]
            )
            await settle(job, state: .failed, error: error.code.rawValue, status: error.appleStatus, retryIn: nil)
        }
    }

    func settle(_ job: Job, state: JobState, error: String, status: Int?, retryIn: Int64?) async {
        let time = now()
        let attempts = job.attempts + 1
        let final = tuning.retry.jobState(state, attempts: attempts)
        let id = job.journalID
        await recordOutcome { tx in
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
    package var id: Int64 { journalID }
    package var lane: String { "" }
}

extension V1VerificationWorker: BackgroundService {}
