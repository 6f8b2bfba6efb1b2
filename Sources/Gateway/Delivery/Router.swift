public import Canonical
public import Store

/// Who receives what (docs/architecture.md), decided from the config alone: an app's downstreams (all of them when it names
/// none), each downstream's environments (default production only), `shadow` for the non-authoritative generation,
/// and the legacy pass-through for raw V1 bodies. Webhook and database downstreams take events alike.
public struct Router: DeliveryRouting {
    let downstreams: [String: GatewayConfig.Downstream]
    let appDownstreams: [String: [String]]
    /// Bundles with `compare: true`.
    let compared: Set<String>
    /// Bundles with V1 shared secrets.
    let v1Bundles: Set<String>

    public init(config: GatewayConfig) {
        compared = Set(config.apps.filter(\.compare).map(\.bundleID))
        v1Bundles = Set(config.apps.filter(\.acceptsV1).map(\.bundleID))
        downstreams = Dictionary(config.downstreams.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let all = config.downstreams.map(\.name)
        appDownstreams = Dictionary(
            config.apps.map { ($0.bundleID, $0.downstreams.isEmpty ? all : $0.downstreams) },
            uniquingKeysWith: { a, _ in a }
        )
    }

    /// Webhook and database downstreams for an event: authoritative events go to every one of the app's that takes the
    /// event's environment; the other generation's only to those with `shadow: true`.
    public func eventTargets(bundleID: String?, environment: AppStoreEnvironment?, authoritative: Bool) -> [String] {
        guard let bundleID, let environment, let names = appDownstreams[bundleID] else { return [] }
        return names.filter { name in
            guard let d = downstreams[name], d.kind == .webhook || d.kind == .database,
                d.environments.contains(environment)
            else {
                return false
            }
            return authoritative || d.shadow
        }
    }

    /// Pass-through downstreams for a raw V1 body of `bundleID` in `environment`.
    public func passthroughTargets(bundleID: String?, environment: AppStoreEnvironment?) -> [String] {
        guard let bundleID, let environment, let names = appDownstreams[bundleID] else { return [] }
        return names.filter { name in
            guard let d = downstreams[name] else { return false }
            return d.kind == .v1Passthrough && d.environments.contains(environment)
        }
    }

    public func downstream(_ name: String) -> GatewayConfig.Downstream? { downstreams[name] }

    /// Every configured downstream's name, sorted.
    public var downstreamNames: [String] { downstreams.keys.sorted() }

    /// Whether the bundle's two paths are compared (`compare: true`).
    public func compares(_ bundleID: String?) -> Bool { bundleID.map(compared.contains) ?? false }

    /// Whether the bundle takes V1 (`shared_secret_env`).
    public func hasV1Path(_ bundleID: String?) -> Bool { bundleID.map(v1Bundles.contains) ?? false }
}
