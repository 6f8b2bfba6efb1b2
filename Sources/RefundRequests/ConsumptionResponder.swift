public import Canonical
public import HTTPClient
internal import Policy
public import ServiceKit
package import Store
public import V2Adapter
internal import WireJSON

/// Sends Send Consumption Information for a bundle's purchase: the App Store Server API client of the bundle, one
/// attempt per call (the responder reschedules the job itself).
public protocol ConsumptionSender: Sendable {
    func sendConsumptionInformation(
        bundleID: String,
        transactionID: String,
        _ information: ConsumptionInformation,
        productType: ProductType?,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError)
}

extension AppStoreAPIClients: ConsumptionSender {
    public func sendConsumptionInformation(
        bundleID: String,
        transactionID: String,
        _ information: ConsumptionInformation,
        productType: ProductType?,
        environment: AppStoreEnvironment
    ) async throws(AppStoreAPIError) {
        guard let client = client(for: bundleID) else {
            throw AppStoreAPIError(.unauthorized, "no App Store Server API client for \(bundleID)")
        }
        try await client.sendConsumptionInformation(
            transactionID: transactionID,
            information,
            productType: productType,
            environment: environment
        )
    }
}

/// Answers Apple's refund requests (docs/operations.md, "Refund requests"). Each CONSUMPTION_REQUEST of an app with
/// `consumption.respond` is a durable job, queued in the notification's own transaction; this worker asks the team's
/// service for the answer (a Standard-Webhooks-signed POST of the request and its canonical event; JSON in Apple's
/// member names, or 204 for "do not answer"), asks again after a failure until `ask_for` has passed since Apple's
/// signed date, then takes the app's `default`; keeps the answer chosen on the job (a retry, or a restart, sends
/// the same answer without asking again); sends nothing without the customer's consent, and takes the team's "no
/// consent" as final whatever else its answer holds; judges every answer by Apple's rules for the purchase's product
/// (a team's answer Apple would refuse is no answer); sends it to Apple before the deadline, retrying with backoff
/// (Apple's `Retry-After` honoured); and dead-letters the request — counted in `iapgw_consumption_dead_total` and sent
/// to `alerts.webhook` — when Apple refuses the answer (400, 404), the gateway refuses to send it
/// (`gateway_refused`), or the next try would come after the deadline.
public final class ConsumptionResponder: JobTable, ContextualWorker {
    package typealias Transaction = any ConsumptionTransaction & JournalTransaction
    package let store: StoreSlice<Transaction>

    public struct Tuning: Sendable {
        public var concurrency = 4
        public var pollMillis: Int64 = 500
        public init() {}
    }

    package let context: WorkerContext
    package let apps: [String: ConsumptionSettings]
    package let signers: [String: WebhookSigner]
    package let sender: (any ConsumptionSender)?
    package let transport: any HTTPTransport
    package let alerts: AlertWebhook?
    package let tuning: Tuning
    private let scheduler: JobScheduler

    public init(
        context: WorkerContext,
        apps: [String: ConsumptionSettings],
        signers: [String: WebhookSigner],
        sender: (any ConsumptionSender)?,
        transport: any HTTPTransport,
        alerts: AlertWebhook? = nil,
        tuning: Tuning = .init()
    ) {
        self.context = context
        self.store = StoreSlice(context.store) { $0 }
        (self.apps, self.signers, self.sender, self.transport, self.alerts, self.tuning) = (
            apps, signers, sender, transport, alerts, tuning
        )
        self.scheduler = JobScheduler(context: context, idlePollMillis: tuning.pollMillis)
    }

    package typealias Job = ConsumptionJob

    public func run() async { await scheduler.run(self) }
    public func stop() { scheduler.stop() }

    package var lanes: [String] { [""] }
    package func limit(lane: String) -> Int { tuning.concurrency }
    package var claimedJobs: ClaimedJobs { .consumptionJobs }

    package func due(at time: Int64, lane: String, count: Int, lease: Lease, in tx: Transaction) throws -> [Job] {
        try tx.claimDueConsumptionJobs(at: time, limit: count, lease: lease)
    }

    package func housekeeping() async {
        await gaugePending(as: .consumptionJobsPending) { tx in try tx.pendingConsumptionJobs() }
    }

    /// Where a job stands while it runs: what was asked and sent so far, the answer once chosen.
    package struct Progress {
        package var asks: Int
        package var sends: Int
        package var answer: ConsumptionInformation?
        package var answerBytes: [UInt8]?
        package var source: ConsumptionAnswerSource?
    }

    package func process(_ job: Job) async {
        let r = job.request
        var progress = Progress(
            asks: job.asks,
            sends: job.sends,
            answer: job.answer.flatMap { try? ConsumptionAnswer.read($0) },
            answerBytes: job.answer,
            source: job.answerSource
        )
        guard let settings = apps[r.bundleID], settings.respond else {
            // The app no longer answers refund requests (its configuration changed): nothing is sent.
            await settle(job, settlement(job, progress, .unanswered, error: "not_configured"))
            return
        }
        let time = now()
        guard time < r.deadlineAt else {
            let never = progress.asks == 0 && progress.sends == 0 && progress.answer == nil
            // Tried and past the deadline before the next try: the last failure (and Apple's answer to it) stays the
            // reason, whether the deadline came while the job waited or before its next try was due.
            let s = settlement(
                job,
                progress,
                never ? .expired : .dead,
                error: never ? "deadline_passed" : job.lastError ?? "deadline_passed",
                appleStatus: job.appleStatus,
                appleErrorCode: job.appleErrorCode
            )
            await settle(job, s)
            return
        }
        if progress.answer == nil {
            switch await choose(job, settings, &progress, at: time) {
            case .chosen: break
            case .askAgain(let at, let error):
                await settle(job, settlement(job, progress, .pending, error: error, next: at))
                return
            case .final(let state, let error):
                await settle(job, settlement(job, progress, state, error: error))
                return
            }
        }
        guard let answer = progress.answer else { return }
        guard answer.customerConsented else {
            await settle(job, settlement(job, progress, .noConsent, error: nil))
            return
        }
        do throws(ConsumptionAnswer.Refusal) { try ConsumptionAnswer.check(answer, for: r.product) } catch {
            // Chosen answers are judged for the product before they are kept; one kept otherwise (by an earlier
            // version) is the gateway's own refusal, never sent and never reported as Apple's.
            await settle(job, settlement(job, progress, .gatewayRefused, error: error.code))
            return
        }
        await send(job, answer, settings, &progress)
    }

    // MARK: Choosing the answer

    package enum Choice {
        case chosen
        case askAgain(at: Int64, error: String)
        case final(ConsumptionState, error: String?)
    }

    /// Asks the team's service while `ask_for` lasts; then the default; kept on the job before anything is sent.
    package func choose(
        _ job: Job,
        _ settings: ConsumptionSettings,
        _ p: inout Progress,
        at time: Int64
    ) async -> Choice {
        let r = job.request
        let askUntil = r.requestedAt.clampedAdding(settings.askForMillis)
        var lastError: String?
        if let url = settings.askURL, let signer = signers[r.bundleID], time < askUntil || p.asks == 0 {
            p.asks += 1
            var result = await ask(job, url: url, signer: signer, timeoutMillis: settings.askTimeoutMillis)
            if case .answered(let info, _) = result {
                // An answer Apple would refuse for this purchase's product (a percentage for an auto-renewable
                // subscription, a consumable's GRANT_PRORATED without one) is no answer: refused here, where the
                // team's service can still be asked again and the default still follows.
                do throws(ConsumptionAnswer.Refusal) { try ConsumptionAnswer.check(info, for: r.product) } catch {
                    result = .failed(code: "answer_\(error.code)", detail: error.detail)
                }
            }
            switch result {
            case .answered(let info, let bytes):
                metrics.increment(.consumptionAsksTotal, ["bundle": r.bundleID, "outcome": "answered"])
                (p.answer, p.answerBytes, p.source) = (info, bytes, .team)
            case .noConsent(let info, let bytes):
                // The team's "no consent" is final: never a failed ask, never replaced by the default.
                metrics.increment(.consumptionAsksTotal, ["bundle": r.bundleID, "outcome": "no_consent"])
                (p.answer, p.answerBytes, p.source) = (info, bytes, .team)
                return .final(.noConsent, error: nil)
            case .declined:
                metrics.increment(.consumptionAsksTotal, ["bundle": r.bundleID, "outcome": "declined"])
                return .final(.declined, error: nil)
            case .failed(let code, let detail):
                metrics.increment(.consumptionAsksTotal, ["bundle": r.bundleID, "outcome": code])
                log.warn(
                    "refund request: the team's service gave no answer",
                    ["event_id": .string(r.eventID), "error": .string(code), "detail": .string(detail)]
                )
                let next = now().clampedAdding(retryMillis(settings, afterAttempt: p.asks))
                if next < askUntil, next < r.deadlineAt { return .askAgain(at: next, error: code) }
                lastError = code
            }
        }
        if p.answer == nil, let fallback = settings.defaultAnswer(for: r.product) {
            // Its consent is the app's own assertion, for a customer the team's service did not answer for.
            (p.answer, p.answerBytes, p.source) = (fallback, JSONOutput.encode(fallback), .default)
        }
        guard p.answer != nil else { return .final(.unanswered, error: lastError ?? "no_answer") }
        // Kept before it is sent: a retry — or a restart — sends this answer, never asks again.
        let kept = settlement(job, p, .pending, error: lastError, next: now())
        guard (try? await store.write({ tx in try tx.settleConsumptionJob(kept, now: self.now()) })) != nil else {
            return .askAgain(at: now().clampedAdding(5_000), error: OutcomeCode.storeUnavailable.rawValue)
        }
        return .chosen
    }

    package enum AskResult {
        case answered(ConsumptionInformation, [UInt8])
        /// `customerConsented: false`, whatever else the answer holds: the answer when it reads whole, and what is
        /// kept on the job (the team's bytes, or `{"customerConsented":false}` when the rest does not read).
        case noConsent(ConsumptionInformation?, [UInt8])
        case declined
        case failed(code: String, detail: String)
    }

    /// One ask: the request and its canonical event, signed like a webhook delivery (the same `webhook-id` on every
    /// ask of one request, so the team's service can tell a repeat).
    package func ask(_ job: Job, url: String, signer: WebhookSigner, timeoutMillis: Int64) async -> AskResult {
        let r = job.request
        let event = try? await store.read { tx in try tx.events(id: r.eventID, originalTransactionID: nil, limit: 1) }
        var request = JSONObjectWriter()
        request.string("event_id", r.eventID)
        request.string("bundle_id", r.bundleID)
        request.string("environment", r.environment.rawValue)
        request.string("transaction_id", r.transactionID)
        request.string("original_transaction_id", r.originalTransactionID)
        request.string("product_type", r.productType)
        request.string("reason", r.reason)
        request.int("requested_at", r.requestedAt)
        request.int("deadline_at", r.deadlineAt)
        var body = JSONObjectWriter()
        body.string("type", "consumption.request")
        body.raw("request", request.finish())
        body.raw("event", event?.first?.json)
        let bytes = body.finish()
        let headers = signer.jsonHeaders(id: "consumption-\(r.eventID)", timestamp: now() / 1000, body: bytes)
        let response: HTTPResponse
        do {
            response = try await transport.send(
                HTTPRequest(
                    method: .post,
                    url: url,
                    headers: headers,
                    body: bytes,
                    timeoutMillis: Int(timeoutMillis),
                    maxResponseBytes: 64 * 1024
                )
            )
        } catch {
            return .failed(code: error.code == .timeout ? "ask_timeout" : "ask_\(error.code.rawValue)", detail: "")
        }
        switch response.status {
        case 204: return .declined
        case 200..<300:
            if ConsumptionAnswer.refusesConsent(response.body) {
                guard let info = try? ConsumptionAnswer.read(response.body) else {
                    return .noConsent(nil, Array(#"{"customerConsented":false}"#.utf8))
                }
                return .noConsent(info, response.body)
            }
            do throws(ConsumptionAnswer.Refusal) {
                return .answered(try ConsumptionAnswer.read(response.body), response.body)
            } catch {
                return .failed(code: error.code, detail: error.detail)
            }
        default: return .failed(code: "ask_http_\(response.status)", detail: "")
        }
    }

    // MARK: Sending

    package func send(
        _ job: Job,
        _ answer: ConsumptionInformation,
        _ settings: ConsumptionSettings,
        _ p: inout Progress
    ) async {
        let r = job.request
        guard let sender else {
            await settle(job, settlement(job, p, .dead, error: "no_app_store_api"))
            return
        }
        p.sends += 1
        do throws(AppStoreAPIError) {
            try await sender.sendConsumptionInformation(
                bundleID: r.bundleID,
                transactionID: r.transactionID,
                answer,
                productType: r.product,
                environment: r.environment
            )
        } catch {
            if error.httpStatus == nil, error.code == .badRequest || error.code == .notFound {
                // The client refused to make the request (Apple never answered): the gateway's refusal, not Apple's.
                metrics.increment(.consumptionSendsTotal, ["bundle": r.bundleID, "outcome": "gateway_refused"])
                await settle(job, settlement(job, p, .gatewayRefused, error: "invalid_request"))
                return
            }
            switch error.code {
            case .badRequest, .notFound:
                // Apple refused this answer for this purchase: sending it again changes nothing.
                metrics.increment(.consumptionSendsTotal, ["bundle": r.bundleID, "outcome": "rejected"])
                await settle(job, settlement(job, p, .rejected, error: error.code.rawValue, apple: error))
            default:
                metrics.increment(.consumptionSendsTotal, ["bundle": r.bundleID, "outcome": "retry"])
                let wait = retryMillis(
                    settings,
                    afterAttempt: p.sends,
                    retryAfterMillis: error.retryAfter.map { Int64($0.components.seconds) * 1000 }
                )
                let next = now().clampedAdding(wait)
                if next >= r.deadlineAt {
                    await settle(job, settlement(job, p, .dead, error: error.code.rawValue, apple: error))
                } else {
                    await settle(
                        job,
                        settlement(job, p, .pending, error: error.code.rawValue, next: next, apple: error)
                    )
                }
            }
            return
        }
        metrics.increment(.consumptionSendsTotal, ["bundle": r.bundleID, "outcome": "accepted"])
        await settle(job, settlement(job, p, .sent, error: nil, sentAt: now(), appleStatus: 202))
    }

    package func retryMillis(
        _ s: ConsumptionSettings,
        afterAttempt attempt: Int,
        retryAfterMillis: Int64? = nil
    ) -> Int64 {
        let retry = RetryPolicy(
            maxAttempts: .max,
            baseDelay: .milliseconds(s.retryDelayMillis),
            maxDelay: .milliseconds(s.maxRetryDelayMillis),
            maxRetryAfter: .milliseconds(ConsumptionSettings.appleLimitMillis)
        )
        return retry.delayMillis(afterAttempt: attempt, jitter: jitter(), retryAfterMillis: retryAfterMillis)
    }

    // MARK: Settling

    package func settlement(
        _ job: Job,
        _ p: Progress,
        _ state: ConsumptionState,
        error: String?,
        next: Int64? = nil,
        sentAt: Int64? = nil,
        appleStatus: Int? = nil,
        appleErrorCode: Int64? = nil,
        apple: AppStoreAPIError? = nil
    ) -> ConsumptionSettlement {
        ConsumptionSettlement(
            id: job.id,
            state: state,
            asks: p.asks,
            sends: p.sends,
            nextAttemptAt: next ?? now(),
            answer: p.answerBytes,
            answerSource: p.source,
            refundPreference: p.answer?.refundPreference?.rawValue,
            sentAt: sentAt,
            appleStatus: appleStatus ?? apple?.httpStatus,
            appleErrorCode: appleErrorCode ?? apple?.appleErrorCode,
            lastError: error
        )
    }

    /// Writes the attempt's outcome (retried while the store refuses writes); a final state is counted, and a dead
    /// letter alerted.
    package func settle(_ job: Job, _ s: ConsumptionSettlement) async {
        let (state, error) = (s.state, s.lastError)
        let time = now()
        await recordOutcome { tx in try tx.settleConsumptionJob(s, now: time) }
        guard state != .pending else { return }
        let r = job.request
        metrics.increment(.consumptionRequestsTotal, ["bundle": r.bundleID, "state": state.rawValue])
        switch state {
        case .rejected, .gatewayRefused, .dead, .expired:
            metrics.increment(.consumptionDeadTotal, ["bundle": r.bundleID, "reason": error ?? state.rawValue])
            log.error(
                "refund request left unanswered",
                [
                    "event_id": .string(r.eventID), "bundle_id": .string(r.bundleID), "state": .string(state.rawValue),
                    "error": .string(error ?? ""),
                ]
            )
            alerts?.send(
                AlertWebhook.Alert(
                    type: "consumption.dead_lettered",
                    at: time,
                    eventID: r.eventID,
                    attempts: s.sends,
                    error: error ?? state.rawValue,
                    bundleID: r.bundleID,
                    transactionID: r.transactionID
                )
            )
        default:
            log.info(
                "refund request settled",
                ["event_id": .string(r.eventID), "state": .string(state.rawValue)]
            )
        }
    }
}

extension ConsumptionJob: ScheduledJob {
    /// One lane: the responder's concurrency is the app's whole.
    package var lane: String { "" }
}

extension ConsumptionRequest {
    /// The purchase's product type, which Apple's rules for the answer depend on (nil: the request did not say).
    package var product: ProductType? { productType.map(ProductType.init(rawValue:)) }
}

extension ConsumptionResponder: BackgroundService {}
