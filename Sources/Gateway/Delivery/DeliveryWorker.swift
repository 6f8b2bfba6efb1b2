internal import Canonical
import Dispatch
public import HTTPClient
internal import Policy
public import ServiceKit
public import Store
import Synchronization
public import TeamDatabase
public import V1Adapter
public import WireJSON

/// How a downstream is delivered to and retried.
public struct DeliveryTuning: Sendable {
    /// How deliveries are retried. A downstream's config replaces the attempts (`max_attempts`) and, where it sets
    /// them, the backoff (`retry_delay`, `max_retry_delay`: also the longest `Retry-After` honoured).
    public var retry: RetryPolicy = .deliveryWorker
    /// Deliveries in flight per downstream.
    public var concurrency = 4
    public var timeoutMillis = 15_000
    /// How often the queue is polled when idle.
    public var pollMillis: Int64 = 200
    public init() {}
}

/// Delivers the outbox (docs/architecture.md): at least once, per-downstream concurrency limit, exponential backoff with
/// jitter, dead letter after the downstream's `max_attempts`. Webhooks get the signed envelope; pass-through
/// downstreams get the V1 body exactly as Apple sent it — or a V2 notification's V1 shape, with the header
/// `X-IAP-Gateway-Source: v2` — the secret restored at this moment only; database downstreams
/// get the event written into their tables (docs/database-downstream.md), a failure to connect or write being a failed
/// attempt like an HTTP error.
public final class DeliveryWorker: JobTable, ContextualWorker {
    /// The slices of the store it works on.
    package typealias Transaction = any OutboxTransaction & JournalTransaction & ComparisonTransaction
    package let store: StoreSlice<Transaction>
    package typealias Job = DeliveryJob

    package let context: WorkerContext
    /// Who receives what, from the config.
    let router: Router
    let transport: any HTTPTransport
    /// Per downstream (by name), the transport with its own slots (``OutgoingTransports/deliveries``); one not named
    /// here uses ``transport``.
    let downstreamTransports: [String: any HTTPTransport]
    let signers: [String: WebhookSigner]
    let passthroughSecrets: [SharedSecret]
    /// Every configured secret (``ServiceSecrets/redactor``): kept out of the answers' heads the delivery log stores.
    let redactor: SecretRedactor
    /// Per app, the shared secret whose marker a V1 shape carries (its first): what the pass-through restores.
    let passthroughSecretNames: [String: String]
    /// Per app, what its V1 shapes say for a group member's transaction (``V1App/assignedOwnership``).
    let assignedOwnership: [String: String]
    /// Per database downstream (by name), its writer (``DatabaseDownstreams/make(config:connectionStrings:timeoutMillis:)``).
    let databases: [String: any DownstreamDatabase]
    let tuning: DeliveryTuning
    /// `max_per_second` per downstream.
    let rateLimiter: RateLimiter
    /// `alerts.webhook`, when configured.
    let alerts: AlertWebhook?
    private let scheduler: JobScheduler

    /// `v1Apps`: the apps whose V2 notifications may reach a pass-through downstream as V1 shapes. `redactor`: every
    /// configured secret, replaced in each answer's head before the delivery log keeps it.
    public init(
        context: WorkerContext,
        router: Router,
        transport: any HTTPTransport,
        downstreamTransports: [String: any HTTPTransport] = [:],
        signers: [String: WebhookSigner],
        passthroughSecrets: [SharedSecret],
        redactor: SecretRedactor,
        v1Apps: [V1App] = [],
        databases: [String: any DownstreamDatabase] = [:],
        tuning: DeliveryTuning = .init(),
        alerts: AlertWebhook? = nil
    ) {
        self.context = context
        self.router = router
        self.store = StoreSlice(context.store) { $0 }
        self.transport = transport
        self.downstreamTransports = downstreamTransports
        self.signers = signers
        self.passthroughSecrets = passthroughSecrets
        self.redactor = redactor
        assignedOwnership = Dictionary(
            v1Apps.map { ($0.bundleID, $0.assignedOwnership) },
            uniquingKeysWith: { a, _ in a }
        )
        passthroughSecretNames = Dictionary(
            v1Apps.compactMap { app in app.sharedSecrets.first.map { (app.bundleID, $0.name) } },
            uniquingKeysWith: { a, _ in a }
        )
        self.databases = databases
        self.tuning = tuning
        self.alerts = alerts
        self.rateLimiter = RateLimiter(
            limits: router.downstreams.compactMapValues(\.maxPerSecond),
            now: context.now
        )
        self.scheduler = JobScheduler(context: context, idlePollMillis: tuning.pollMillis)
    }

    /// Runs until ``stop()``: polls for due deliveries and sends them; returns after in-flight sends finished (and
    /// closes the database downstreams' connections, which the next run opens again).
    public func run() async {
        await deadLetterUnconfigured()
        await scheduler.run(self)
        for database in databases.values { database.close() }
    }

    /// Deliveries queued for a downstream the config no longer has can never be sent: dead letters (replayable once
    /// the downstream is back in the config), not rows pending forever.
    func deadLetterUnconfigured() async {
        let names = router.downstreamNames
        let dropped = try? await store.write { tx in
            try tx.deadLetterDeliveries(notTo: names, error: OutcomeCode.downstreamUnconfigured.rawValue)
        }
        if let dropped, dropped > 0 {
            metrics.increment(.deliveryDeadTotal, ["downstream": "(unconfigured)"], by: Double(dropped))
            log.warn("deliveries to downstreams no longer configured dead-lettered", ["count": .int(Int64(dropped))])
            alerts?.send(
                .init(
                    type: "deliveries.unconfigured",
                    at: now(),
                    error: OutcomeCode.downstreamUnconfigured.rawValue,
                    count: dropped
                )
            )
        }
    }

    /// Asks ``run()`` to finish its current sends and return.
    public func stop() { scheduler.stop() }

    /// One lane per downstream, so a slow one never holds back the others.
    package var lanes: [String] { router.downstreamNames }

    /// With each job what it sends, read in the claim's statement: the event (and the notification's body for a
    /// downstream with `include_raw`) for webhooks and databases, nothing for pass-through (its body is the journal's).
    package func due(
        at time: Int64,
        lane downstream: String,
        count: Int,
        lease: Lease,
        in tx: Transaction
    ) throws -> [Job] {
        let payload: PayloadRead
        switch router.downstream(downstream) {
        case let d? where d.kind == .webhook: payload = d.includeRaw ? .eventAndBody : .event
        case let d? where d.kind == .database: payload = .event
        default: payload = .none
        }
        return try tx.claimDueDeliveries(downstream: downstream, at: time, limit: count, lease: lease, payload: payload)
    }

    /// The job's payload as its claim read it, or — a job claimed without it — read now.
    func payload(of job: Job, eventID: String, withBody: Bool) async throws -> DeliveryPayload {
        if let payload = job.payload, !withBody || payload.rawBody != nil { return payload }
        guard
            let payload = try await store.readStatement({ tx in
                try tx.deliveryPayload(eventID: eventID, withBody: withBody)
            })
        else {
            throw BuildFailure(description: "event no longer stored")
        }
        return payload
    }

    package func limit(lane downstream: String) -> Int {
        router.downstream(downstream)?.concurrency ?? tuning.concurrency
    }

    package func process(_ job: Job) async {
        guard await rateLimiter.acquire(job.downstream) else { return }
        await deliver(job)
    }

    package var claimedJobs: ClaimedJobs { .deliveries }

    package func housekeeping() async { await updateQueueGauges() }

    func deliver(_ job: Job) async {
        guard let downstream = router.downstream(job.downstream) else {
            await finish(job, status: nil, error: .downstreamUnconfigured, dead: true)
            return
        }
        if downstream.kind == .database {
            await deliverToDatabase(job, downstream: downstream)
            return
        }
        let request: HTTPRequest
        do { request = try await buildRequest(job, downstream: downstream) } catch {
            await finish(job, status: nil, error: .requestUnbuildable, detail: "\(error)", dead: false)
            return
        }
        metrics.increment(.deliveryAttemptsTotal, ["downstream": job.downstream])
        // The log's timing, by the injected clock; the answer's head is capped and redacted by `DeliveryAttempt`.
        let started = now()
        do {
            let response = try await (downstreamTransports[job.downstream] ?? transport).send(request)
            let attempt = DeliveryAttempt(
                startedAt: started,
                latencyMillis: now() - started,
                responseHead: response.body,
                redactor: redactor.adding(Self.signatures(of: request))
            )
            if (200..<300).contains(response.status) {
                await finish(job, status: response.status, error: nil, dead: false, attempt: attempt)
            } else {
                // A downstream's Retry-After is honoured up to the policy's longest delay, never trusted as a number:
                // `Retry-After: 99999999999999999` once overflowed here and crash-looped the gateway.
                let retryAfter = retryPolicy(for: downstream).retryAfterMillis(of: response, now: now())
                await finish(
                    job,
                    status: response.status,
                    error: .http(response.status),
                    dead: response.status == 410,
                    minDelay: retryAfter,
                    attempt: attempt
                )
            }
        } catch {
            let attempt = DeliveryAttempt(startedAt: started, latencyMillis: now() - started)
            await finish(job, status: nil, error: OutcomeCode(error.code.rawValue), dead: false, attempt: attempt)
        }
    }

    /// The request's own `webhook-signature` values (the base64 of each `v1,` entry), as secrets to keep out of the
    /// answer's head: a receiver that echoes its request's headers would otherwise put them in the delivery log.
    static func signatures(of request: HTTPRequest) -> [SecretRedactor.Secret] {
        request.headers.filter { $0.name.lowercased() == "webhook-signature" }
            .flatMap { $0.value.split(separator: " ") }
            .compactMap { $0.split(separator: ",", maxSplits: 1).dropFirst().first }
            .map { SecretRedactor.Secret(name: SecretRedactor.webhookSignatureName, value: Array($0.utf8)) }
    }

    /// The retry policy with the downstream's own attempts and backoff, where its config sets them.
    func retryPolicy(for downstream: GatewayConfig.Downstream) -> RetryPolicy {
        var r = tuning.retry
        r.maxAttempts = downstream.maxAttempts
        if let base = downstream.retryDelayMillis { r.baseDelay = .milliseconds(base) }
        if let cap = downstream.maxRetryDelayMillis { r.maxDelay = .milliseconds(cap) }
        return r
    }

    struct BuildFailure: Error, CustomStringConvertible { var description: String }

    func buildRequest(_ job: Job, downstream: GatewayConfig.Downstream) async throws -> HTTPRequest {
        if downstream.kind.takesBodies {
            let generation = downstream.kind == .v2Passthrough ? "V2" : "V1"
            guard let journalID = job.journalID,
                let entry = try await store.read({ tx in
                    try tx.journalEntries(id: journalID, key: nil, limit: 1).first
                }),
                var redacted = entry.body
            else { throw BuildFailure(description: "\(generation) body no longer stored") }
            // The notification's key (Apple's UUID, or `v1:` and the body's hash): the same on every attempt, so the old
            // backend can drop the copy a delivery repeated after a crash sends (docs/configuration.md, downstreams).
            var headers = [HTTPHeader("Content-Type", "application/json"), HTTPHeader("webhook-id", entry.key)]
            if downstream.kind == .v2Passthrough {
                // Apple's V2 body as it came (it holds no secret), unsigned: the receiver verifies Apple's JWS itself.
                return HTTPRequest(
                    method: .post,
                    url: downstream.url,
                    headers: headers,
                    body: redacted,
                    timeoutMillis: tuning.timeoutMillis
                )
            }
            if NotificationPolicy.passthroughBody(of: entry.version) == .v1Shape {
                // A V2 notification reaches the old backend as its V1 shape, built now from what the store holds.
                let journalBody = redacted
                let ownership = entry.bundleID.flatMap { assignedOwnership[$0] } ?? V1App.defaultAssignedOwnership
                guard let secret = entry.bundleID.flatMap({ passthroughSecretNames[$0] }),
                    let shape = try await store.read({ tx in
                        try V1Shape.build(
                            notificationKey: entry.key,
                            journalBody: journalBody,
                            secretName: secret,
                            assignedOwnership: ownership,
                            in: tx
                        )
                    })
                else { throw BuildFailure(description: "the V1 shape of this notification cannot be built") }
                redacted = shape.body
                headers.append(HTTPHeader("X-IAP-Gateway-Source", "v2"))
                metrics.increment(.v1ShapesTotal, ["use": "passthrough", "type": shape.type])
            }
            guard let body = V1Adapter.restore(redactedBody: redacted, secrets: passthroughSecrets) else {
                throw BuildFailure(description: "the shared secret of this body is not configured any more")
            }
            return HTTPRequest(
                method: .post,
                url: downstream.url,
                headers: headers,
                body: body,
                timeoutMillis: tuning.timeoutMillis
            )
        }
        guard let eventID = job.eventID else { throw BuildFailure(description: "outbox row without event") }
        let payload = try await payload(of: job, eventID: eventID, withBody: downstream.includeRaw)
        // The event and state are stored as the JSON we deliver: spliced, not decoded and re-encoded.
        let raw = downstream.includeRaw ? payload.rawBody.flatMap(Envelope.rawBody) : nil
        let body = Envelope.body(
            authoritative: payload.authoritative,
            eventJSON: payload.eventJSON,
            stateJSON: payload.stateJSON,
            raw: raw
        )
        let headers = (signers[downstream.name] ?? WebhookSigner(secrets: [])).jsonHeaders(
            id: eventID,
            timestamp: now() / 1000,
            body: body
        )
        return HTTPRequest(
            method: .post,
            url: downstream.url,
            headers: headers,
            body: body,
            timeoutMillis: tuning.timeoutMillis
        )
    }

    /// `attempt`: the send's timing and answer; an attempt that sent nothing is logged at this moment, taking no time.
    /// `error` is what the row keeps (nil: delivered); `detail`, what the log line of a failure says beside it.
    func finish(
        _ job: Job,
        status: Int?,
        error code: OutcomeCode?,
        detail: String? = nil,
        dead: Bool,
        minDelay: Int64? = nil,
        attempt: DeliveryAttempt? = nil
    ) async {
        let time = now()
        let retry = router.downstream(job.downstream).map(retryPolicy(for:)) ?? tuning.retry
        let attempts = job.attempts + 1
        let error = code?.rawValue
        let delivered = code == nil
        let exhausted = dead || !retry.allowsRetry(afterAttempt: attempts)
        let next = time.clampedAdding(
            retry.delayMillis(afterAttempt: attempts, jitter: jitter(), retryAfterMillis: minDelay)
        )
        let id = job.id
        let outcome = DeliveryOutcome(
            state: delivered ? .delivered : (exhausted ? .dead : .pending),
            attempts: attempts,
            nextAttemptAt: next,
            deliveredAt: delivered ? time : nil,
            status: status,
            error: error,
            attempt: attempt ?? DeliveryAttempt(startedAt: time, latencyMillis: 0)
        )
        await recordOutcome { tx in try tx.settleDelivery(id: id, outcome) }
        if let detail, !exhausted {
            log.warn(
                "delivery attempt failed",
                [
                    "downstream": .string(job.downstream), "event_id": job.eventID.map { .string($0) },
                    "error": error.map { .string($0) }, "detail": .string(detail),
                ]
            )
        }
        if !delivered {
            metrics.increment(.deliveryFailuresTotal, ["downstream": job.downstream])
            if exhausted {
                metrics.increment(.deliveryDeadTotal, ["downstream": job.downstream])
                alerts?.send(
                    .init(
                        type: "delivery.dead_lettered",
                        at: time,
                        downstream: job.downstream,
                        eventID: job.eventID,
                        attempts: attempts,
                        error: error
                    )
                )
                log.warn(
                    "delivery dead-lettered",
                    [
                        "downstream": .string(job.downstream), "event_id": job.eventID.map { .string($0) },
                        "attempts": .int(Int64(attempts)), "error": error.map { .string($0) },
                        "detail": detail.map { .string($0) },
                    ]
                )
            }
        }
    }

    func updateQueueGauges() async {
        let time = now()
        guard let pending = try? await store.read({ tx in try tx.pendingDeliveries() }) else { return }
        var seen: Set<String> = []
        for p in pending {
            seen.insert(p.downstream)
            metrics.set(.deliveryQueueDepth, ["downstream": p.downstream], Double(p.count))
            metrics.set(
                .deliveryOldestAgeSeconds,
                ["downstream": p.downstream],
                Double(time - p.oldestCreatedAt) / 1000
            )
        }
        for name in router.downstreams.keys where !seen.contains(name) {
            metrics.set(.deliveryQueueDepth, ["downstream": name], 0)
            metrics.set(.deliveryOldestAgeSeconds, ["downstream": name], 0)
        }
    }

}

extension DeliveryJob: ScheduledJob {
    /// Concurrency is limited per downstream.
    package var lane: String { downstream }
}

extension DeliveryWorker: BackgroundService {}

/// What a delivery's row keeps when an attempt fails (besides a transport's own codes: `timeout`, `protocol_error` …).
extension OutcomeCode {
    /// The downstream is no longer in the config: dead-lettered, replayable once it is back.
    static let downstreamUnconfigured = OutcomeCode("downstream_unconfigured")
    /// The request could not be made (the body or event it carries is no longer stored); the log says what.
    static let requestUnbuildable = OutcomeCode("request_unbuildable")
    /// A database downstream without its connection string (`url_env` unset at start).
    static let databaseUnconfigured = OutcomeCode("database_unconfigured")
    /// The database downstream refused or failed the write; its message is in the log and the delivery log.
    static let databaseError = OutcomeCode("database_error")
    /// The downstream answered with a status other than 2xx: `http_503`.
    static func http(_ status: Int) -> OutcomeCode { OutcomeCode("http_\(status)") }
}
