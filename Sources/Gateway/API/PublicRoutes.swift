internal import Canonical
internal import HTTPServer
internal import ReceiptPath
internal import ServiceKit

/// The Apple-facing listener's routes: `POST /notifications` (ingest, then its metrics and log line) and
/// `GET /healthz`. `/metrics` is served on the admin listener only (``AdminAPI``): it names downstreams and shows
/// queue depths.
struct PublicRoutes: Sendable {
    let ingest: NotificationIngest
    let receipts: ReceiptEndpoint
    let metrics: Metrics
    let log: Log
    /// Each version's series (and "unknown"'s), resolved once: a request counts without the metrics' lock.
    private let series: [VersionSeries]

    private struct VersionSeries: Sendable {
        let version: String
        let received: Metrics.CounterSeries
        let accepted: Metrics.CounterSeries
        let duplicate: Metrics.CounterSeries
        let seconds: Metrics.HistogramSeries

        init(_ version: String, _ metrics: Metrics) {
            let labels = ["version": version]
            self.version = version
            received = metrics.counterSeries(.notificationsReceivedTotal, labels)
            accepted = metrics.counterSeries(.notificationsAcceptedTotal, labels)
            duplicate = metrics.counterSeries(.notificationsDuplicateTotal, labels)
            seconds = metrics.histogramSeries(.requestSeconds, labels)
        }
    }

    init(ingest: NotificationIngest, receipts: ReceiptEndpoint, metrics: Metrics, log: Log) {
        self.ingest = ingest
        self.receipts = receipts
        self.metrics = metrics
        self.log = log
        // Indexed as `index(of:)` says: v1, v2, unknown.
        series = [Generation.v1.rawValue, Generation.v2.rawValue, "unknown"].map { VersionSeries($0, metrics) }
    }

    private static func index(of version: Generation?) -> Int {
        switch version {
        case .v1?: 0
        case .v2?: 1
        case nil: 2
        }
    }

    typealias Handler = @Sendable (PublicRoutes, ServerRequest) -> ServerResponse

    /// The notifications' own routes.
    static let notificationRoutes: [(method: String, pattern: String, handler: Handler)] = [
        ("POST", "/notifications", { $0.notification($1) }),
        ("GET", "/healthz", { _, _ in .json(200, Array(#"{"ok":true}"#.utf8)) }),
    ]

    /// The routes of the public listener (docs/architecture.md, "The endpoint"): the notifications' own, then those
    /// the receipt path contributes.
    static let table = RouteTable<Handler>(
        notificationRoutes
            + ReceiptEndpoint.routes.map { route in
                let handle = route.handle
                return (route.method, route.pattern, { routes, request in handle(routes.receipts, request) })
            }
    )

    func handle(_ request: ServerRequest) -> ServerResponse {
        switch Self.table.match(method: request.method, path: request.path) {
        case .found(let handler, _): return handler(self, request)
        case .methodNotAllowed(let allow): return .methodNotAllowed(allow: allow)
        case .notFound: return .answer(GatewayError(.notFound, "no such endpoint"))
        }
    }

    private func notification(_ request: ServerRequest) -> ServerResponse {
        let started = ContinuousClock.now
        let r = ingest.handle(request.body)
        let latency = ContinuousClock.now - started
        let seconds = Double(latency.components.seconds) + Double(latency.components.attoseconds) / 1e18
        record(r, seconds: seconds)
        return .json(r.status, r.body)
    }

    /// One notification's metrics and log line.
    private func record(_ r: NotificationIngest.Result, seconds: Double) {
        let counted = series[Self.index(of: r.version)]
        let version = counted.version
        counted.received.increment(by: 1)
        counted.seconds.observe(seconds)
        let outcome: String
        if r.status == 200 {
            outcome = r.duplicate ? "duplicate" : "accepted"
            (r.duplicate ? counted.duplicate : counted.accepted).increment(by: 1)
        } else {
            outcome = "rejected"
            metrics.increment(.notificationsRejectedTotal, ["version": version, "code": r.code ?? "unknown"])
        }
        if case .notStored(let lane)? = r.quarantine {
            log.warn(
                "quarantine lane full: refused body not stored",
                ["lane": .string(lane.rawValue), "code": r.code.map { .string($0) }]
            )
        }
        log.info(
            "notification",
            [
                "id": r.id.map { .string($0) }, "version": .string(version),
                "type": r.notificationType.map { .string($0) },
                "subtype": r.subtype.map { .string($0) }, "bundle": r.bundleID.map { .string($0) },
                "environment": r.environment.map { .string($0) }, "leaf_serial": r.leafSerial.map { .string($0) },
                "outcome": .string(outcome), "status": .int(Int64(r.status)), "code": r.code.map { .string($0) },
                "latency_ms": .double((seconds * 1e6).rounded() / 1e3),
            ]
        )
    }
}
