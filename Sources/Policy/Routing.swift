public import Canonical

/// Who receives what, and which bundles are compared or have a V1 path (docs/architecture.md, "Delivery"): a value
/// made from the config, read by the notification rule (``NotificationPolicy``) and by the workers. An app's
/// downstreams are those it names (every downstream when it names none); each downstream takes the environments it
/// lists; the non-authoritative generation's events go only to downstreams with `shadow`.
public struct Routing: Sendable, Hashable {
    public struct Downstream: Sendable, Hashable {
        public var name: String
        public var kind: DeliveryKind
        public var environments: Set<AppStoreEnvironment>
        /// Also takes the events of the non-authoritative generation.
        public var shadow: Bool
        /// The events it takes of those its apps and environments give it.
        public var filter: EventFilter
        public init(
            name: String,
            kind: DeliveryKind,
            environments: Set<AppStoreEnvironment>,
            shadow: Bool,
            filter: EventFilter = EventFilter()
        ) {
            (self.name, self.kind, self.environments, self.shadow, self.filter) = (
                name, kind, environments, shadow, filter
            )
        }
    }

    public struct App: Sendable, Hashable {
        public var bundleID: String
        /// The downstreams it names; empty: every downstream.
        public var downstreams: [String]
        /// `compare: true`: the two paths' views of its subscriptions are compared.
        public var compares: Bool
        /// It has V1 shared secrets: V1 bodies can be read and verifyReceipt asked.
        public var hasV1Path: Bool
        /// `consumption.respond`: Apple's refund requests are answered, within this long of Apple's signed date (ms);
        /// nil: they are not.
        public var consumptionDeadlineMillis: Int64?
        public init(
            bundleID: String,
            downstreams: [String],
            compares: Bool,
            hasV1Path: Bool,
            consumptionDeadlineMillis: Int64? = nil
        ) {
            (self.bundleID, self.downstreams, self.compares, self.hasV1Path) = (
                bundleID, downstreams, compares, hasV1Path
            )
            self.consumptionDeadlineMillis = consumptionDeadlineMillis
        }
    }

    /// Every downstream by name.
    public let downstreams: [String: Downstream]
    /// Per app, the names of its downstreams in the config's order (every downstream's when it names none).
    let appDownstreams: [String: [String]]
    let compared: Set<String>
    let v1Bundles: Set<String>
    /// Per bundle that answers refund requests, the answer's deadline after Apple's signed date (ms).
    let consumptionDeadlines: [String: Int64]

    /// The first of two downstreams or apps with one name counts (the config refuses such duplicates).
    public init(downstreams: [Downstream], apps: [App]) {
        self.downstreams = Dictionary(downstreams.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let all = downstreams.map(\.name)
        appDownstreams = Dictionary(
            apps.map { ($0.bundleID, $0.downstreams.isEmpty ? all : $0.downstreams) },
            uniquingKeysWith: { a, _ in a }
        )
        compared = Set(apps.filter(\.compares).map(\.bundleID))
        v1Bundles = Set(apps.filter(\.hasV1Path).map(\.bundleID))
        consumptionDeadlines = Dictionary(
            apps.compactMap { app in app.consumptionDeadlineMillis.map { (app.bundleID, $0) } },
            uniquingKeysWith: { a, _ in a }
        )
    }

    /// Webhook and database downstreams for an event: an authoritative event goes to every one of the app's that
    /// takes the event's environment; the other generation's only to those with `shadow`.
    public func eventTargets(bundleID: String?, environment: AppStoreEnvironment?, authoritative: Bool) -> [String] {
        targets(bundleID, environment) { $0.kind.takesEvents && (authoritative || $0.shadow) }
    }

    /// The downstreams an event is queued to, and those of its app and environment whose filter it does not match
    /// (not queued, counted): ``eventTargets(bundleID:environment:authoritative:)``, each downstream's
    /// ``Downstream/filter`` applied.
    public func eventDelivery(_ event: CanonicalEvent, authoritative: Bool) -> Delivery {
        split(eventTargets(bundleID: event.bundleID, environment: event.environment, authoritative: authoritative)) {
            $0.matches(event, authoritative: authoritative)
        }
    }

    /// Pass-through downstreams for a notification's body (a V1 body, or a V2 notification's V1 shape).
    public func passthroughTargets(bundleID: String?, environment: AppStoreEnvironment?) -> [String] {
        targets(bundleID, environment) { $0.kind == .v1Passthrough }
    }

    /// `v2_passthrough` downstreams for a V2 notification's body: each of its app's that takes its environment and
    /// whose filter one of its events matches (`authoritative`: V2 is the app's authority).
    public func v2PassthroughDelivery(
        _ events: [CanonicalEvent],
        bundleID: String?,
        environment: AppStoreEnvironment?,
        authoritative: Bool
    ) -> Delivery {
        split(targets(bundleID, environment) { $0.kind == .v2Passthrough }) { filter in
            events.contains { filter.matches($0, authoritative: authoritative) }
        }
    }

    /// Where something is queued, and the downstreams that would take it but for their filter.
    public struct Delivery: Sendable, Hashable {
        public var targets: [String]
        public var filteredOut: [String]
    }

    private func split(_ names: [String], _ takes: (EventFilter) -> Bool) -> Delivery {
        var d = Delivery(targets: [], filteredOut: [])
        for name in names {
            if downstreams[name].map({ takes($0.filter) }) ?? true {
                d.targets.append(name)
            } else {
                d.filteredOut.append(name)
            }
        }
        return d
    }

    /// Whether the bundle's two paths are compared.
    public func compares(_ bundleID: String?) -> Bool { bundleID.map(compared.contains) ?? false }

    /// How long after Apple's signed date the bundle's refund requests are answered; nil: they are not answered.
    public func consumptionDeadline(_ bundleID: String?) -> Int64? { bundleID.flatMap { consumptionDeadlines[$0] } }

    /// Whether the bundle has a V1 path.
    public func hasV1Path(_ bundleID: String?) -> Bool { bundleID.map(v1Bundles.contains) ?? false }

    /// Every downstream's name, sorted.
    public var downstreamNames: [String] { downstreams.keys.sorted() }

    private func targets(
        _ bundleID: String?,
        _ environment: AppStoreEnvironment?,
        _ takes: (Downstream) -> Bool
    ) -> [String] {
        guard let bundleID, let environment, let names = appDownstreams[bundleID] else { return [] }
        return names.filter { name in
            guard let d = downstreams[name], d.environments.contains(environment) else { return false }
            return takes(d)
        }
    }
}
