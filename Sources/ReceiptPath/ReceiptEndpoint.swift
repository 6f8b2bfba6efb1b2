internal import Canonical
package import HTTPClient
package import ServiceKit
package import Store
import Synchronization
package import V1Adapter

/// `POST /verifyReceipt` and `POST /sandbox/verifyReceipt` (docs/operations.md, "Moving the receipt path"): the old
/// backend's verifyReceipt, answered per bundle and environment by Apple (`apple`: a transparent proxy), by Apple with
/// the gateway's own answer compared beside it (`shadow`), or by the gateway from the App Store Server API (`api`).
/// Every answer is Apple's shape with Apple's status codes, HTTP 200. The `password` is compared and forwarded, never
/// logged, stored or put in an error.
public final class ReceiptEndpoint: Sendable {
    /// `receipts`: the endpoint's settings.
    package let settings: ReceiptSettings
    /// Apple's verifyReceipt, where `apple` and `shadow` forward a receipt.
    package let verifyReceipt: VerifyReceiptURLs
    /// The configured apps, as the receipt path knows them, by bundle.
    package let apps: [String: ReceiptPathApp]
    package let store: any GatewayStore
    package let read: @Sendable ([UInt8]) -> ReceiptReading
    /// Customers' histories; nil without the App Store Server API (then `shadow` and `api` cannot answer).
    package let histories: ReceiptHistories?
    /// Apple's verifyReceipt, for `apple` and `shadow`.
    package let apple: any HTTPTransport
    /// Each bundle's shared secrets.
    package let secrets: [String: [SharedSecret]]
    package let metrics: Metrics
    package let log: Log
    package let now: @Sendable () -> Int64
    /// Requests being answered now (``ReceiptSettings/maxInFlight``, ``ReceiptSettings/maxInFlightPerAddress``).
    package let admission: ReceiptAdmission
    /// Shadow comparisons running now (at most ``ReceiptSettings/shadowConcurrency``).
    private let shadows = Atomic<Int>(0)
    private let shadowTasks = Mutex<[Int: Task<Void, Never>]>([:])
    private let shadowIDs = Atomic<Int>(0)
    /// The (app, environment, failure) an unauthenticated receipt was warned of: once each per process.
    private let unauthenticatedWarned = Mutex<Set<String>>([])

    package init(
        settings: ReceiptSettings,
        verifyReceipt: VerifyReceiptURLs,
        apps: [ReceiptPathApp],
        store: any GatewayStore,
        read: @escaping @Sendable ([UInt8]) -> ReceiptReading,
        histories: ReceiptHistories?,
        apple: any HTTPTransport,
        secrets: [String: [SharedSecret]],
        metrics: Metrics,
        log: Log,
        now: @escaping @Sendable () -> Int64
    ) {
        (self.settings, self.verifyReceipt, self.store, self.read, self.histories, self.apple, self.secrets) =
            (settings, verifyReceipt, store, read, histories, apple, secrets)
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { first, _ in first })
        (self.metrics, self.log, self.now) = (metrics, log, now)
        admission = ReceiptAdmission(
            limit: settings.maxInFlight,
            perAddressLimit: settings.maxInFlightPerAddress,
            onChange: { [metrics] n in metrics.set(.receiptInFlight, [:], Double(n)) }
        )
    }

    /// The answer to a request the receipt path has no room for: Apple's own "try again".
    package static let busyAnswer = ReceiptAnswer.status(.unavailable, retryable: true)

    /// Takes a request from `address` within the receipt path's bounds, or counts it refused (then answer
    /// ``busyAnswer``). Every ticket is handed back with ``release(_:)`` once its answer is made.
    package func admit(from address: String) -> ReceiptAdmission.Ticket? {
        switch admission.admit(from: address) {
        case .success(let ticket):
            return ticket
        case .failure(let refusal):
            metrics.increment(.receiptRefusedTotal, ["reason": refusal.rawValue])
            return nil
        }
    }

    package func release(_ ticket: ReceiptAdmission.Ticket) { admission.release(ticket) }

    /// The answer to one request; `sandboxURL`: it came to `/sandbox/verifyReceipt`.
    public func handle(_ body: [UInt8], sandboxURL: Bool) async -> [UInt8] {
        let started = ContinuousClock.now
        let (mode, answer) = await answer(body, sandboxURL: sandboxURL)
        metrics.increment(.receiptAnswersTotal, ["mode": mode, "status": String(Self.status(of: answer))])
        let elapsed = ContinuousClock.now - started
        metrics.observe(
            .receiptSeconds,
            ["mode": mode],
            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        )
        return answer
    }

    /// The service's shutdown: every history fetch ended (its pages kept for the next instance or start), then the
    /// shadow comparisons waited for.
    public func stop() async {
        await histories?.stop()
        await waitForShadows()
    }

    /// Shadow comparisons still running (tests and shutdown wait for them).
    public func waitForShadows() async {
        while true {
            let running = shadowTasks.withLock { Array($0.values) }
            guard !running.isEmpty else { return }
            for task in running { await task.value }
        }
    }

    private func answer(_ body: [UInt8], sandboxURL: Bool) async -> (mode: String, answer: [UInt8]) {
        guard let request = VerifyReceiptRequest.parse(body) else {
            return ("none", ReceiptAnswer.status(.unreadable))
        }
        guard case .receipt(let receipt) = read(request.receiptData) else {
            return ("none", ReceiptAnswer.status(.malformed))
        }
        let environment = receipt.environment
        guard let bundle = receipt.bundleID, let app = apps[bundle],
            app.environments.contains(environment)
        else {
            return ("none", ReceiptAnswer.status(.notAuthorized))
        }
        // The mode the store holds (a cutover), else the config's; a store that cannot be read falls back to the
        // config rather than failing the request.
        let mode =
            (try? await store.readStatement { tx in try tx.receiptMode(bundleID: bundle, environment: environment) })
            ?? app.receipts(for: environment)
        if !receipt.authenticated { warnUnauthenticated(receipt, bundle: bundle, mode: mode) }
        switch mode {
        case .api:
            return (mode.rawValue, await own(request, receipt, app: app, sandboxURL: sandboxURL))
        case .apple, .shadow:
            // Only a receipt Apple signed goes to Apple: a look-alike would spend Apple's time and the receipt
            // path's slots to be refused there anyway.
            guard receipt.authenticated else {
                return (mode.rawValue, ReceiptAnswer.status(.notAuthenticated))
            }
            let (answer, answered) = await askApple(body, sandboxURL: sandboxURL)
            if mode == .shadow, answered { shadow(apple: answer, request, receipt, app: app, sandboxURL: sandboxURL) }
            return (mode.rawValue, answer)
        }
    }

    /// One warning per app, environment and signature failure: a configured app's receipt whose signature is not
    /// Apple's is answered `21003`, and when every one is (a sandbox test chain whose root is not in
    /// `trust.extra_receipt_roots`), the log says why rather than leaving the operator with a wall of `21003`.
    private func warnUnauthenticated(_ receipt: SubmittedReceipt, bundle: String, mode: ReceiptMode) {
        let failure = receipt.signatureFailure ?? receipt.kind.rawValue
        let key = "\(bundle)|\(receipt.environment.rawValue)|\(failure)"
        guard unauthenticatedWarned.withLock({ $0.insert(key).inserted }) else { return }
        log.warn(
            "receipt not authenticated: answered 21003"
                + (receipt.isSandbox ? " (a sandbox test chain's root belongs in trust.extra_receipt_roots)" : ""),
            [
                "bundle": .string(bundle), "environment": .string(receipt.environment.rawValue),
                "mode": .string(mode.rawValue), "failure": .string(failure),
            ]
        )
    }

    /// Apple's answer to the same bytes, unchanged; `answered` false when Apple gave none (then a retryable 21005).
    private func askApple(_ body: [UInt8], sandboxURL: Bool) async -> (answer: [UInt8], answered: Bool) {
        let url = sandboxURL ? verifyReceipt.sandbox : verifyReceipt.production
        var request = HTTPRequest(
            method: .post,
            url: url,
            headers: [HTTPHeader("Content-Type", "application/json")],
            body: body,
            timeoutMillis: Int(settings.fetchTimeoutMillis)
        )
        request.maxResponseBytes = 16 << 20
        do {
            let response = try await apple.send(request)
            guard response.status == 200 else {
                log.warn("Apple's verifyReceipt answered HTTP \(response.status)", ["url": .string(url)])
                return (ReceiptAnswer.status(VerifyReceiptStatus.unavailable, retryable: true), false)
            }
            return (response.body, true)
        } catch {
            log.warn(
                "Apple's verifyReceipt did not answer",
                ["url": .string(url), "code": .string(error.code.rawValue)]
            )
            return (ReceiptAnswer.status(VerifyReceiptStatus.unavailable, retryable: true), false)
        }
    }

    /// The gateway's own answer (`api`, and the other side of `shadow`).
    package func own(
        _ request: VerifyReceiptRequest,
        _ receipt: SubmittedReceipt,
        app: ReceiptPathApp,
        sandboxURL: Bool
    ) async -> [UInt8] {
        let environment = receipt.environment
        switch receipt.kind {
        case .xcode: return ReceiptAnswer.status(.notAuthenticated)
        // The iOS 6 format is taken only where the app opts in, and then only signed by Apple, like an app receipt.
        case .transaction where !app.legacyTransactionReceipts: return ReceiptAnswer.status(.notAuthenticated)
        case .app, .transaction:
            guard receipt.authenticated else { return ReceiptAnswer.status(.notAuthenticated) }
        }
        // Apple's own routing: the old backend asks production first and sandbox on 21007.
        if receipt.isSandbox && !sandboxURL { return ReceiptAnswer.status(.sandboxReceipt) }
        if !receipt.isSandbox && sandboxURL { return ReceiptAnswer.status(.productionReceipt) }
        let withHistory: Bool
        if let password = request.password {
            guard (secrets[app.bundleID] ?? []).contains(where: { $0.matches(password) }) else {
                return ReceiptAnswer.status(.wrongSecret)
            }
            withHistory = true
        } else {
            // Without the shared secret Apple answered the receipt alone.
            withHistory = false
        }
        let time = now()
        let object = receipt.receiptObject(time)
        guard withHistory, let customer = receipt.lookupTransactionID else {
            return ReceiptAnswer.answer(
                environment: environment,
                receipt: object,
                latestReceipt: withHistory ? request.receiptData : nil,
                transactions: withHistory ? [] : nil,
                excludeOld: request.excludeOldTransactions,
                assignedOwnership: app.v1AssignedOwnership
            )
        }
        guard let histories else {
            return ReceiptAnswer.status(.unavailable, environment: environment, retryable: true)
        }
        let key = ReceiptHistoryKey(bundleID: app.bundleID, environment: environment, customer: customer)
        let (result, outcome) = await histories.history(key)
        let history: CustomerHistory
        switch result {
        case .success(let h):
            history = h
            metrics.increment(.receiptHistoryTotal, ["result": outcome.rawValue])
        case .failure(let failure):
            let known: Set = ["rate_limited", "budget_exhausted", "capped", "background", "queued"]
            metrics.increment(.receiptHistoryTotal, ["result": known.contains(failure.code) ? failure.code : "failed"])
            log.warn(
                "a customer's history could not be had from the App Store Server API",
                ["bundle": .string(app.bundleID), "code": .string(failure.code)]
            )
            return ReceiptAnswer.status(.unavailable, environment: environment, retryable: true)
        }
        var transactions = history.events(bundleID: app.bundleID, environment: environment)
        transactions += await journaledSince(history, bundleID: app.bundleID, environment: environment)
        return ReceiptAnswer.answer(
            environment: environment,
            receipt: object,
            latestReceipt: request.receiptData,
            transactions: transactions,
            excludeOld: request.excludeOldTransactions,
            assignedOwnership: app.v1AssignedOwnership
        )
    }

    /// The events the gateway journaled for the history's subscriptions since it was fetched (notifications,
    /// reconciliation), laid over it: each subscription's newest 200 stored after the fetch, read on its index.
    private func journaledSince(
        _ history: CustomerHistory,
        bundleID: String,
        environment: AppStoreEnvironment
    ) async -> [CanonicalEvent] {
        let otids = history.originalTransactionIDs
        guard !otids.isEmpty else { return [] }
        let events = try? await store.read { tx in
            try otids.flatMap { otid in
                try tx.subscriptionEvents(originalTransactionID: otid, createdAfter: history.fetchedAt, limit: 200)
                    .map(\.event)
            }
        }
        return (events ?? []).filter { $0.verified && $0.bundleID == bundleID && $0.environment == environment }
    }

    /// Starts the shadow comparison of one request, unless as many run already (then counted as skipped).
    private func shadow(
        apple: [UInt8],
        _ request: VerifyReceiptRequest,
        _ receipt: SubmittedReceipt,
        app: ReceiptPathApp,
        sandboxURL: Bool
    ) {
        let limit = settings.shadowConcurrency
        guard shadows.add(1, ordering: .relaxed).newValue <= limit else {
            shadows.subtract(1, ordering: .relaxed)
            metrics.increment(.receiptComparisonsTotal, ["outcome": "skipped"])
            // Not compared now, but its customer is warmed for the cutover all the same, behind the requests in
            // Apple's budget (docs/operations.md, "The receipt path at scale").
            if let key = historyKey(request, receipt, app: app) { histories?.enqueue(key) }
            return
        }
        let id = shadowIDs.add(1, ordering: .relaxed).newValue
        // Registered under the lock its own end takes to unregister it: never left behind.
        shadowTasks.withLock { tasks in
            tasks[id] = Task {
                await compare(apple: apple, request, receipt, app: app, sandboxURL: sandboxURL)
                shadows.subtract(1, ordering: .relaxed)
                _ = shadowTasks.withLock { $0.removeValue(forKey: id) }
            }
        }
    }

    /// The customer whose history the gateway's answer to this request would need: an authenticated receipt with a
    /// transaction id, sent with one of the app's shared secrets.
    private func historyKey(
        _ request: VerifyReceiptRequest,
        _ receipt: SubmittedReceipt,
        app: ReceiptPathApp
    ) -> ReceiptHistoryKey? {
        guard receipt.authenticated,
            receipt.kind == .app || (receipt.kind == .transaction && app.legacyTransactionReceipts),
            let customer = receipt.lookupTransactionID, let password = request.password,
            (secrets[app.bundleID] ?? []).contains(where: { $0.matches(password) })
        else { return nil }
        return ReceiptHistoryKey(bundleID: app.bundleID, environment: receipt.environment, customer: customer)
    }

    private func compare(
        apple: [UInt8],
        _ request: VerifyReceiptRequest,
        _ receipt: SubmittedReceipt,
        app: ReceiptPathApp,
        sandboxURL: Bool
    ) async {
        let ours = await own(request, receipt, app: app, sandboxURL: sandboxURL)
        // The gateway could not answer now (Apple's API down or rate limiting): no comparison, not a disagreement.
        guard Self.status(of: ours) != VerifyReceiptStatus.unavailable.rawValue else {
            metrics.increment(.receiptComparisonsTotal, ["outcome": "unavailable"])
            return
        }
        let entries = ReceiptComparison.entries(
            apple: apple,
            api: ours,
            bundleID: app.bundleID,
            environment: receipt.environment,
            at: now()
        )
        guard !entries.isEmpty else { return }
        do {
            try await store.write { tx in for e in entries { try tx.recordReceiptComparison(e) } }
            for e in entries { metrics.increment(.receiptComparisonsTotal, ["outcome": e.outcome.rawValue]) }
        } catch {
            metrics.increment(.receiptComparisonsTotal, ["outcome": OutcomeCode.storeUnavailable.rawValue])
        }
    }

    /// An answer's `status` (-1 when it has none): what the answers are counted by.
    public static func status(of answer: [UInt8]) -> Int {
        ReceiptComparison.status(answer) ?? -1
    }
}
