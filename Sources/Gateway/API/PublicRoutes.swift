internal import HTTPServer

/// The Apple-facing listener's routes: `POST /notifications` (ingest, then its metrics and log line) and
/// `GET /healthz`. `/metrics` is served on the admin listener only (``AdminAPI``): it names downstreams and shows
/// queue depths.
struct PublicRoutes: Sendable {
    let ingest: NotificationIngest
    let metrics: Metrics
    let log: Log

    func handle(_ request: ServerRequest) -> ServerResponse {
        let started = ContinuousClock.now
        switch (request.method, request.path) {
        case ("POST", "/notifications"):
            let r = ingest.handle(request.body)
            let latency = ContinuousClock.now - started
            let seconds = Double(latency.components.seconds) + Double(latency.components.attoseconds) / 1e18
            record(r, seconds: seconds)
            return .json(r.status, r.body)
        case ("GET", "/healthz"):
            return .json(200, Array(#"{"ok":true}"#.utf8))
        case (_, "/notifications"), (_, "/healthz"):
            return .answer(GatewayError(.methodNotAllowed, "method not allowed"))
        default:
            return .answer(GatewayError(.notFound, "no such endpoint"))
        }
    }

    /// One notification's metrics and log line.
    private func record(_ r: NotificationIngest.Result, seconds: Double) {
        let version = r.version?.rawValue ?? "unknown"
        metrics.increment(.notificationsReceivedTotal, ["version": version])
        metrics.observe(.requestSeconds, ["version": version], seconds)
        let outcome: String
        if r.status == 200 {
            outcome = r.duplicate ? "duplicate" : "accepted"
            metrics.increment(
                r.duplicate ? .notificationsDuplicateTotal : .notificationsAcceptedTotal,
                ["version": version]
            )
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
