internal import Contracts
internal import Crypto
internal import HTTPServer
internal import ReportModel
internal import ServiceKit
internal import Store
import Synchronization
internal import Threads
internal import V1Adapter
internal import WireJSON

/// The admin listener's routes, behind the bearer token: `/metrics` (also `/admin/metrics`), `/admin/status`,
/// dead letters, replay, the delivery log, the quarantine, one subscription, the comparison report and cutover (docs/operations.md).
/// A store that cannot answer is a 503 `store_unavailable`; a bad parameter (``AdminQuery``) a 400.
///
/// Every answer — 401 and 404 included — carries ``securityHeaders``: a browser that opens an admin address never sniffs
/// a type, never sends the address on, keeps no copy, and loads nothing. The HTML report's policy adds its own page's
/// styles alone, by a nonce drawn for each response (``reportPolicy(styleNonce:)``); the page has no script.
struct AdminAPI: Sendable {
    /// The policy of every admin answer that is not the HTML report: nothing may be loaded, framed, or submitted to.
    static let basePolicy = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Sent with every admin answer; the admin listener's server adds them to its own refusals too (413, 503).
    static let securityHeaders: [(name: String, value: String)] = [
        ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"),
        ("Content-Security-Policy", basePolicy),
    ]

    /// The HTML report's policy: ``basePolicy`` plus the page's inline `<style>` carrying `styleNonce`. No script runs:
    /// `script-src` falls back to `default-src 'none'`, and nothing is `unsafe-inline`.
    static func reportPolicy(styleNonce: String) -> String {
        "default-src 'none'; style-src 'nonce-\(styleNonce)'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// The bearer token every request must present.
    let token: [UInt8]
    /// The token's environment variable: who made a cutover, in its record.
    let tokenEnv: String
    /// How far back the report looks when no `since` is given (the comparison rule's window).
    let reportWindowMillis: Int64
    let metrics: Metrics
    let operations: Operations
    let ledger: CompareLedger
    let switcher: AppleSwitcher
    let ingest: NotificationIngest
    let v1Secrets: [SharedSecret]
    let log: Log
    let now: @Sendable () -> Int64
    /// Renders the report: the report, the format asked for, the nonce its inline styles must carry.
    let reportRenderer:
        @Sendable (CompareReport, _ format: String, _ styleNonce: String) -> (contentType: String, body: [UInt8])?
    /// Random bytes (injected): the HTML report's nonce is 16 of them, fresh for each response.
    let randomBytes: @Sendable (Int) -> [UInt8]

    func handle(_ request: ServerRequest) -> ServerResponse {
        var response = answer(request)
        for field in Self.securityHeaders where response.header(field.name) == nil {
            response.headers.append(field)
        }
        return response
    }

    private func answer(_ request: ServerRequest) -> ServerResponse {
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer "),
            Bytes.constantTimeEqual(Array(header.utf8.dropFirst(7)), token)
        else {
            var refused = ServerResponse.answer(GatewayError(.unauthorized, "a valid bearer token is required"))
            refused.headers.append(("WWW-Authenticate", "Bearer"))
            return refused
        }
        do {
            return try route(request)
        } catch let refusal as Refusal {
            return .answer(refusal.error)
        } catch {
            return .answer(GatewayError(.storeUnavailable, "the store could not answer"))
        }
    }

    /// A parameter the API refuses, answered as is (every other error thrown while routing is the store's).
    private struct Refusal: Error {
        let error: GatewayError
    }

    /// `parse`'s value, or its error thrown as a ``Refusal``.
    private func checked<T>(_ parse: () throws(GatewayError) -> T) throws(Refusal) -> T {
        do { return try parse() } catch { throw Refusal(error: error) }
    }

    typealias Handler = @Sendable (AdminAPI, AdminQuery, _ parameters: [String]) throws -> ServerResponse

    /// The admin listener's routes (docs/commands.md, "The admin API"; the OpenAPI document lists the same).
    static let table = RouteTable<Handler>([
        ("GET", "/metrics", { api, _, _ in api.metricsPage() }),
        ("GET", "/admin/metrics", { api, _, _ in api.metricsPage() }),
        // The contract of both listeners (docs/contracts.md), behind the token like every admin route.
        ("GET", "/admin/openapi.json", { _, _, _ in .json(200, Contracts.openAPI) }),
        ("GET", "/admin/status", { api, _, _ in .json(200, try api.operations.status().canonicalBytes()) }),
        ("GET", "/admin/dead-letters", { api, query, _ in try api.deadLetters(query) }),
        ("GET", "/admin/deliveries", { api, query, _ in try api.deliveries(query) }),
        ("POST", "/admin/replay", { api, query, _ in try api.replay(query) }),
        ("GET", "/admin/refund-requests", { api, query, _ in try api.refundRequests(query) }),
        ("GET", "/admin/quarantine", { api, query, _ in try api.quarantine(query) }),
        ("POST", "/admin/quarantine/replay", { api, query, _ in try api.quarantineReplay(query) }),
        (
            "GET", "/admin/subscriptions/{original_transaction_id}",
            { api, _, parameters in .json(200, try api.operations.subscription(parameters[0]).canonicalBytes()) }
        ),
        ("GET", "/admin/report", { api, query, _ in try api.report(query) }),
        ("POST", "/admin/cutover", { api, query, _ in try api.cutover(query) }),
        ("POST", "/admin/migrate", { api, query, _ in try api.migrate(query) }),
    ])

    private func route(_ request: ServerRequest) throws -> ServerResponse {
        switch Self.table.match(method: request.method, path: request.path) {
        case .found(let handler, let parameters): return try handler(self, AdminQuery(request.query), parameters)
        case .methodNotAllowed(let allow): return .methodNotAllowed(allow: allow)
        case .notFound: return .answer(GatewayError(.notFound, "no such admin endpoint"))
        }
    }

    private func metricsPage() -> ServerResponse {
        ServerResponse(
            status: 200,
            headers: [("Content-Type", "text/plain; version=0.0.4")],
            body: Array(metrics.render().utf8)
        )
    }

    private func deadLetters(_ query: AdminQuery) throws -> ServerResponse {
        let limit = try checked { () throws(GatewayError) in try query.limit(maximum: 10_000) }
        return .json(200, try operations.deadLetters(limit: limit).canonicalBytes())
    }

    private func replay(_ query: AdminQuery) throws -> ServerResponse {
        if let one = try checked({ () throws(GatewayError) in try query.replayDownstream() }) {
            do {
                let n = try operations.replay(eventID: one.eventID, downstream: one.downstream)
                return .json(200, Array("{\"requeued\":\(n)}".utf8))
            } catch let unknown as Operations.UnknownDownstream {
                return .answer(GatewayError(.badRequest, unknown.description))
            }
        }
        let selection = try checked { () throws(GatewayError) in try query.replaySelection(now: now) }
        let n = try operations.replay(selection)
        return .json(200, Array("{\"requeued\":\(n)}".utf8))
    }

    private func refundRequests(_ query: AdminQuery) throws -> ServerResponse {
        let state = try checked { () throws(GatewayError) in try query.refundRequestState() }
        let limit = try checked { () throws(GatewayError) in try query.limit(maximum: 1_000) }
        return .json(200, try operations.refundRequests(state: state, limit: limit).canonicalBytes())
    }

    private func quarantine(_ query: AdminQuery) throws -> ServerResponse {
        let lane = try checked { () throws(GatewayError) in try query.lane() }
        let limit = try checked { () throws(GatewayError) in try query.limit(maximum: 10_000) }
        return .json(200, try operations.quarantineList(lane: lane, limit: limit).canonicalBytes())
    }

    private func quarantineReplay(_ query: AdminQuery) throws -> ServerResponse {
        let selection = try checked { () throws(GatewayError) in try query.quarantineSelection() }
        return .json(
            200,
            try operations.quarantineReplay(ingest: ingest, secrets: v1Secrets, selection: selection).canonicalBytes()
        )
    }

    private func report(_ query: AdminQuery) throws -> ServerResponse {
        let time = now()
        let since = try checked { () throws(GatewayError) in
            try query.reportSince(now: time, window: reportWindowMillis)
        }
        let report = try ledger.report(bundleID: query["bundle"], since: since, until: time)
        let nonce = Hex.encode(randomBytes(16))
        // Unknown formats get JSON, the API's default.
        guard let rendered = reportRenderer(report, query["format"] ?? "json", nonce) else {
            return .json(200, JSONOutput.encode(report))
        }
        var headers = [(name: "Content-Type", value: rendered.contentType)]
        if rendered.contentType.lowercased().hasPrefix("text/html") {
            headers.append(("Content-Security-Policy", Self.reportPolicy(styleNonce: nonce)))
        }
        return ServerResponse(status: 200, headers: headers, body: rendered.body)
    }

    /// `GET /admin/deliveries?event=ID` (the event's deliveries and their attempts; 404 for an unknown event) or
    /// `?downstream=NAME&status=pending|delivered|dead[&since=T][&cursor=C][&limit=N]` (a page of them).
    private func deliveries(_ query: AdminQuery) throws -> ServerResponse {
        switch try checked({ () throws(GatewayError) in try query.deliverySelection(now: now) }) {
        case .event(let event):
            guard let log = try operations.deliveryLog(eventID: event) else {
                return .answer(GatewayError(.notFound, "no such event"))
            }
            return .json(200, log.canonicalBytes())
        case .page(let downstream, let state, let cursor, let limit):
            return .json(
                200,
                try operations.deliveryPage(downstream: downstream, state: state, after: cursor, limit: limit)
                    .canonicalBytes()
            )
        }
    }

    /// `POST /admin/migrate?bundle=…&environment=…&to=v2|v1[&dry_run=true][&force=true][&reason=…][&probe_timeout=2m]`:
    /// switches Apple's notification version and then the authority (``AppleSwitcher``), answering when the switch is
    /// over — `{"outcome": "done"|"planned", "steps": [...]}` — or with the refusal's code and status and the steps so
    /// far. The request holds one of the admin listener's threads for up to the probe's timeout.
    private func migrate(_ query: AdminQuery) throws -> ServerResponse {
        guard let bundle = query["bundle"] else {
            return .answer(GatewayError(.badRequest, "give bundle, environment and to (v2 or v1)"))
        }
        let request = try checked { () throws(GatewayError) in
            try MigrationRequest.parse(
                bundleID: bundle,
                environment: query["environment"],
                to: query["to"],
                dryRun: query["dry_run"] == "true",
                force: query["force"] == "true",
                reason: query["reason"],
                probeTimeout: query["probe_timeout"],
                who: "admin-api (\(tokenEnv))"
            )
        }
        let steps = StepCollector()
        let switcher = self.switcher
        let outcome = Blocking.wait { () async -> Result<AppleSwitchState, MigrationError> in
            do throws(MigrationError) {
                return .success(try await switcher.run(request) { steps.append($0) })
            } catch {
                return .failure(error)
            }
        }
        var w = JSONObjectWriter()
        switch outcome {
        case .success(let state):
            w.string("outcome", request.dryRun ? "planned" : state.step?.rawValue ?? "done")
            w.raw("steps", JSONOutput.encode(steps.all))
            log.warn(
                "Apple's notification version switched",
                [
                    "bundle": .string(bundle), "environment": .string(request.environment.rawValue),
                    "to": .string(request.target.rawValue), "dry_run": .bool(request.dryRun),
                ]
            )
            return .json(200, w.finish())
        case .failure(let error):
            var e = JSONObjectWriter()
            e.string("code", error.code.rawValue)
            e.string("cause", error.cause)
            e.string("message", error.message)
            w.raw("error", e.finish())
            w.raw("steps", JSONOutput.encode(steps.all))
            return .json(error.code.status, w.finish())
        }
    }

    /// `POST /admin/cutover?bundle=…&environment=…&to=v1|v2[&reason=…][&force=true]` (the authority), or with
    /// `receipts=api|shadow|apple` instead of `to` (how verifyReceipt is answered): its record, or the refusal with its
    /// own code and status (``CutoverError``).
    private func cutover(_ query: AdminQuery) throws -> ServerResponse {
        let receipts = query["receipts"]
        guard let bundle = query["bundle"], let env = query["environment"], let to = query["to"] ?? receipts,
            query["to"] == nil || receipts == nil
        else {
            return .answer(GatewayError(.badRequest, "give bundle, environment and to (v1 or v2) or receipts"))
        }
        do {
            let move = receipts == nil ? ledger.cutover : ledger.cutoverReceipts
            let record = try move(
                bundle,
                env,
                to,
                "admin-api (\(tokenEnv))",
                query["reason"],
                query["force"] == "true",
                now()
            )
            CompareLedger.logCutover(record, receipts: receipts != nil, to: log)
            return .json(200, JSONOutput.encode(record))
        } catch let error as CutoverError {
            return .json(
                error.code.status,
                NotificationIngest.errorBody(code: error.code.rawValue, message: error.description)
            )
        }
    }
}

/// The steps a switch reports, collected from its task.
final class StepCollector: Sendable {
    private let steps = Mutex<[MigrationStepReport]>([])
    func append(_ step: MigrationStepReport) { steps.withLock { $0.append(step) } }
    var all: [MigrationStepReport] { steps.withLock { $0 } }
}
