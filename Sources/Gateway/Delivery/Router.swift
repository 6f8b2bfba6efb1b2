public import Canonical
public import Policy

/// Who receives what (docs/architecture.md), decided from the config alone: the notification rule's ``Routing`` —
/// an app's downstreams (all of them when it names none), each downstream's environments (default production only),
/// `shadow` for the non-authoritative generation, the pass-through for notification bodies, compared bundles and V1
/// paths — and each downstream's own settings for the delivery worker.
public struct Router: Sendable {
    /// What the notification rule reads.
    public let routing: Routing
    let downstreams: [String: GatewayConfig.Downstream]

    public init(config: GatewayConfig) {
        routing = Routing(
            downstreams: config.downstreams.map {
                Routing.Downstream(
                    name: $0.name,
                    kind: $0.kind,
                    environments: $0.environments,
                    shadow: $0.shadow,
                    filter: $0.filter
                )
            },
            apps: config.apps.map {
                Routing.App(
                    bundleID: $0.bundleID,
                    downstreams: $0.downstreams,
                    compares: $0.compare,
                    hasV1Path: $0.acceptsV1,
                    consumptionDeadlineMillis: $0.consumption.flatMap { $0.respond ? $0.deadlineMillis : nil }
                )
            }
        )
        downstreams = Dictionary(config.downstreams.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Webhook and database downstreams for an event (``Routing/eventTargets(bundleID:environment:authoritative:)``).
    public func eventTargets(bundleID: String?, environment: AppStoreEnvironment?, authoritative: Bool) -> [String] {
        routing.eventTargets(bundleID: bundleID, environment: environment, authoritative: authoritative)
    }

    /// Pass-through downstreams for a notification's body.
    public func passthroughTargets(bundleID: String?, environment: AppStoreEnvironment?) -> [String] {
        routing.passthroughTargets(bundleID: bundleID, environment: environment)
    }

    public func downstream(_ name: String) -> GatewayConfig.Downstream? { downstreams[name] }

    /// Every configured downstream's name, sorted.
    public var downstreamNames: [String] { routing.downstreamNames }
}
