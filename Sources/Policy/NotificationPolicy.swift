public import Canonical

/// What a verified notification becomes (docs/architecture.md, "The rule"): its events and the path each is
/// authoritative on, their deliveries, the pass-through deliveries of its body, its receipt job, the comparison's
/// snapshot and fetches — and, after verifyReceipt, what the V1 path's event asks for. Pure: the same facts always
/// give the same ``Plan``; the store carries it out and decides nothing.
public enum NotificationPolicy {
    /// What the rule needs to know of a journaled notification.
    public struct Notification: Sendable, Hashable {
        public var version: Generation
        public var bundleID: String?
        public var environment: AppStoreEnvironment?
        /// The events known when it was journaled: a V2 notification's; a V1 body's only when its app skips
        /// verifyReceipt (then built from the unsigned body).
        public var events: [CanonicalEvent]
        /// A V1 body whose event comes from verifyReceipt.
        public var needsReceipt: Bool
        /// A V2 notification's V1 `notification_type`, nil when V1 has no counterpart for it (docs/architecture.md,
        /// "The V1 shape of a V2 notification").
        public var v1NotificationType: String?

        /// The V1 `notification_type` its V1 shape goes out with: none for a group's partial revocation (a seat
        /// refund, one transaction of a period that goes on), which V1 could only say as a cancellation of the whole
        /// subscription (``GroupPeriod/isPartialRevocation(_:)``).
        public var v1ShapeType: String? {
            events.contains(where: GroupPeriod.isPartialRevocation) ? nil : v1NotificationType
        }

        public init(
            version: Generation,
            bundleID: String?,
            environment: AppStoreEnvironment?,
            events: [CanonicalEvent],
            needsReceipt: Bool,
            v1NotificationType: String?
        ) {
            (self.version, self.bundleID, self.environment, self.events) = (version, bundleID, environment, events)
            (self.needsReceipt, self.v1NotificationType) = (needsReceipt, v1NotificationType)
        }
    }

    /// A journaled notification, with the authority in force for its app when it was journaled:
    /// - its events, each on its own path, authoritative when that path is the authority's, delivered accordingly
    ///   (``events(_:authority:routing:)``), each downstream's filter applied;
    /// - a V2 notification's body as Apple sent it to the `v2_passthrough` downstreams whose filter its events match;
    /// - for a compared bundle, a V2 notification's signed data is the V2 path's snapshot, and the V1 path's view is
    ///   fetched (verifyReceipt);
    /// - a V1 body waiting for verifyReceipt gets its receipt job, and goes to the pass-through downstreams as it is;
    /// - a V2 notification that is the only notification of its event keeps the V1 side fed: its V1 shape to the
    ///   pass-through downstreams (when V1 has a counterpart), and under V1 authority a receipt job for the V1 path's
    ///   event (the V1 shape read like a V1 body, or the V2 event itself where V1 has no counterpart).
    public static func journal(_ n: Notification, authority: Generation, routing: Routing) -> Plan {
        var plan = Plan(writes: events(n.events, authority: authority, routing: routing))
        if n.version == .v2 {
            // A group's seats and its members are V2's alone (V1 never had them): nothing to compare.
            for e in n.events
            where routing.compares(e.bundleID) && e.isSubscription && !GroupPeriod.isBeyondV1(e) {
                guard let bundle = e.bundleID, let environment = e.environment, let otid = e.originalTransactionID
                else { continue }
                let key = SubscriptionKey(bundleID: bundle, environment: environment, originalTransactionID: otid)
                plan.writes.append(
                    .snapshot(OutcomeSnapshot(event: e, source: .v2, observedAt: e.eventDate), path: .v2)
                )
                plan.writes.append(.fetch(FetchRequest(subscription: key, fetch: .v1, compare: true)))
            }
        }
        if n.version == .v2 { plan.writes += consumptionJobs(n.events, routing: routing) }
        if n.needsReceipt { plan.writes.append(.receiptJob) }
        if n.version == .v1 {
            plan.writes += routing.passthroughTargets(bundleID: n.bundleID, environment: n.environment)
                .map { .bodyDelivery(downstream: $0) }
        }
        if n.version == .v2 {
            // The body as Apple sent it, to the team's own V2 code: every V2 notification, whatever Apple also sends.
            let v2 = routing.v2PassthroughDelivery(
                n.events,
                bundleID: n.bundleID,
                environment: n.environment,
                authoritative: authority == .v2
            )
            plan.writes += v2.targets.map { .bodyDelivery(downstream: $0) }
            plan.writes += v2.filteredOut.map { .bodyFilteredOut(downstream: $0) }
        }
        if n.version == .v2, !n.events.isEmpty, let bundle = n.bundleID, let environment = n.environment {
            let passthrough =
                n.v1ShapeType == nil
                ? [] : routing.passthroughTargets(bundleID: bundle, environment: environment)
            let view = authority == .v1 && routing.hasV1Path(bundle)
            if !passthrough.isEmpty || view {
                plan.question = StandsAloneQuestion(version: .v2, bundleID: bundle, environment: environment)
                plan.ifAlone = passthrough.map { .bodyDelivery(downstream: $0) } + (view ? [.receiptJob] : [])
            }
        }
        return plan
    }

    /// Events, with the authority in force: each on its source's path, authoritative when that path is the
    /// authority's, queued to every downstream of its app that takes its environment — the other generation's only to
    /// those with `shadow` — and whose filter (``EventFilter``) it matches.
    /// An event of Apple's decision on a refund request (REFUND, REFUND_DECLINED) of a bundle that answers refund
    /// requests is recorded on the request as well (``refundDecision(_:routing:)``).
    public static func events(_ events: [CanonicalEvent], authority: Generation, routing: Routing) -> [PlannedWrite] {
        events.flatMap { event -> [PlannedWrite] in
            let path = event.source.generation
            let authoritative = path == authority
            let delivery = routing.eventDelivery(event, authoritative: authoritative)
            let write = PlannedWrite.event(
                event,
                path: path,
                authoritative: authoritative,
                targets: delivery.targets,
                filteredOut: delivery.filteredOut
            )
            return [write] + (refundDecision(event, routing: routing).map { [.refundDecision($0)] } ?? [])
        }
    }

    /// A V2 notification's refund requests (CONSUMPTION_REQUEST) of a bundle whose refund requests are answered
    /// (`consumption.respond`): one responder job each, due by Apple's signed date plus the bundle's deadline. Only
    /// V2 requests: Send Consumption Information takes the V2 transaction id, and Apple sends the V1 copy of a request
    /// to the same app's V1 URL as well — answering both would answer twice.
    static func consumptionJobs(_ events: [CanonicalEvent], routing: Routing) -> [PlannedWrite] {
        events.compactMap { e in
            guard e.kind == .consumptionRequest, let deadline = routing.consumptionDeadline(e.bundleID),
                let bundle = e.bundleID, let environment = e.environment,
                environment == .production || environment == .sandbox,
                let transactionID = e.transactionID, !transactionID.isEmpty
            else { return nil }
            var request = ConsumptionRequest(
                eventID: e.id,
                bundleID: bundle,
                environment: environment,
                transactionID: transactionID,
                originalTransactionID: e.originalTransactionID,
                productType: e.productType?.rawValue,
                reason: e.consumptionRequestReason,
                requestedAt: e.eventDate,
                deadlineAt: e.eventDate.clampedAdding(deadline)
            )
            request.assigned = e.ownership == "assigned"
            return .consumptionJob(request)
        }
    }

    /// Apple's decision on a refund request — a REFUND or REFUND_DECLINED event of a purchase of a bundle that
    /// answers refund requests — to be recorded on the request.
    static func refundDecision(_ e: CanonicalEvent, routing: Routing) -> RefundDecision? {
        guard e.kind == .refund || e.kind == .refundDeclined, routing.consumptionDeadline(e.bundleID) != nil,
            let bundle = e.bundleID, let environment = e.environment, let transactionID = e.transactionID
        else { return nil }
        return RefundDecision(
            bundleID: bundle,
            environment: environment,
            transactionID: transactionID,
            kind: e.kind,
            at: e.eventDate
        )
    }

    /// After verifyReceipt gave a V1 notification's event (`authority`: the one the notification arrived under): for a
    /// compared bundle the V1 path's snapshot (`v1Snapshot`, from Apple's answer) and a fetch of the V2 path's view;
    /// under V2 authority, when the V1 notification is the only notification of its event, the V2 path's event is
    /// fetched to stand in for it (the fetch names the V1 event).
    public static func afterV1Event(
        _ event: CanonicalEvent,
        bundleID: String,
        v1Snapshot: OutcomeSnapshot?,
        authority: Generation?,
        routing: Routing
    ) -> Plan {
        guard let otid = event.originalTransactionID, let environment = event.environment else { return Plan() }
        let key = SubscriptionKey(bundleID: bundleID, environment: environment, originalTransactionID: otid)
        let compare = routing.compares(bundleID) && event.isSubscription
        var plan = Plan()
        if compare, let v1Snapshot { plan.writes.append(.snapshot(v1Snapshot, path: .v1)) }
        func fetch(standingIn: Bool) -> PlannedWrite {
            .fetch(
                FetchRequest(
                    subscription: key,
                    fetch: .v2,
                    v1EventID: standingIn ? event.id : nil,
                    authority: authority,
                    compare: compare
                )
            )
        }
        if authority == .v2 {
            plan.question = StandsAloneQuestion(version: .v1, bundleID: bundleID, environment: environment)
            plan.ifAlone = [fetch(standingIn: true)]
            plan.ifNotAlone = compare ? [fetch(standingIn: false)] : []
        } else if compare {
            plan.writes.append(fetch(standingIn: false))
        }
        return plan
    }

    /// A V2 notification whose V1 shape cannot be sent to the app's pass-through downstreams: V1 has no counterpart
    /// for its type (counted: `iapgw_v1_shapes_unsent_total`).
    public static func v1ShapeUnsent(_ n: Notification, routing: Routing) -> Bool {
        n.version == .v2 && n.v1ShapeType == nil
            && !routing.passthroughTargets(bundleID: n.bundleID, environment: n.environment).isEmpty
    }

    /// What a pass-through downstream receives of a journaled notification: a V1 body as it was journaled (its secret
    /// restored), a V2 notification as its V1 shape, built when it is sent.
    public enum PassthroughBody: Sendable, Hashable {
        case asJournaled
        case v1Shape
    }

    public static func passthroughBody(of version: Generation) -> PassthroughBody {
        version == .v1 ? .asJournaled : .v1Shape
    }
}
