internal import Canonical

/// The rows a journaled notification and its events are made of, as each implementation writes them. What a
/// notification stores and queues — its events, each subscription's state, the deliveries, the comparison snapshot
/// and fetch, the verifyReceipt job — is decided once, below, for every implementation.
protocol JournalRows: StoreTransaction {
    /// Reads the authority in force for the item's app (the path its events are authoritative on) and inserts the
    /// journal row unless its key is journaled: accepted with the new row's id, or a duplicate with the first one's.
    func journalRow(_ item: JournalItem) throws -> (outcome: JournalOutcome, authority: Generation)
    /// Inserts the event unless its id is stored, and then, in the same step: makes it the subscription's state on
    /// `path` unless the state holds a later one — last write wins on (event date, arrival order), so an older event
    /// arriving late never overwrites a newer one — and queues its deliveries to `targets`. True when the event was new.
    func storeEvent(
        _ event: CanonicalEvent,
        journalID: Int64?,
        path: Generation,
        authoritative: Bool,
        targets: [String],
        now: Int64
    ) throws -> Bool
    /// Queues a delivery of an event (webhooks) or of a journaled V1 body (pass-through), unless it is queued already.
    func insertDelivery(downstream: String, eventID: String?, journalID: Int64?, now: Int64) throws
    /// Queues the verifyReceipt job of a journaled V1 notification.
    func insertReceiptJob(journalID: Int64, now: Int64) throws
}

extension JournalRows {
    func journal(_ item: JournalItem, routing: any DeliveryRouting, now: Int64) throws -> JournalOutcome {
        // The authority in force now decides, once, which path this notification's events are authoritative on.
        let (outcome, authority) = try journalRow(item)
        guard case .accepted(let journalID) = outcome else { return outcome }
        try storeEvents(item.events, journalID: journalID, routing: routing, now: now, authority: authority)
        if item.version == .v2 {
            // Compared bundles: the signed data is the V2 path's snapshot; the V1 path's comes from verifyReceipt.
            for e in item.events where routing.compares(e.bundleID) && e.isSubscription {
                guard let bundle = e.bundleID, let env = e.environment, let otid = e.originalTransactionID else {
                    continue
                }
                try putSnapshot(OutcomeSnapshot(event: e, source: .v2, observedAt: e.eventDate), path: .v2)
                let key = SubscriptionKey(bundleID: bundle, environment: env, originalTransactionID: otid)
                try enqueueFetch(FetchRequest(subscription: key, fetch: .v1, compare: true), at: now, due: nil)
            }
        }
        if item.needsReceipt { try insertReceiptJob(journalID: journalID, now: now) }
        if item.version == .v1 {
            for name in routing.passthroughTargets(bundleID: item.bundleID, environment: item.environment) {
                try insertDelivery(downstream: name, eventID: nil, journalID: journalID, now: now)
            }
        }
        // A V2 notification that is the only notification of its event keeps the V1 side fed: the old backend gets its
        // V1 shape (when V1 has a counterpart), and under V1 authority the V1 path gets its event (a receipt job on the
        // V2 row: from the V1 shape, or the V2 event itself where V1 has no counterpart).
        if item.version == .v2, !item.events.isEmpty, let bundle = item.bundleID, let environment = item.environment {
            let passthrough =
                item.v1NotificationType == nil
                ? [] : routing.passthroughTargets(bundleID: bundle, environment: environment)
            let view = authority == .v1 && routing.hasV1Path(bundle)
            if !passthrough.isEmpty || view, try standsAlone(.v2, bundleID: bundle, environment: environment, now: now)
            {
                for name in passthrough {
                    try insertDelivery(downstream: name, eventID: nil, journalID: journalID, now: now)
                }
                if view { try insertReceiptJob(journalID: journalID, now: now) }
            }
        }
        return outcome
    }

    @discardableResult
    func storeEvents(
        _ events: [CanonicalEvent],
        journalID: Int64?,
        routing: any DeliveryRouting,
        now: Int64,
        authority: Generation?
    ) throws -> Int {
        var stored = 0
        for event in events {
            let path = event.source.generation
            let authoritative =
                try (authority ?? self.authority(bundleID: event.bundleID, environment: event.environment)) == path
            let targets = routing.eventTargets(
                bundleID: event.bundleID,
                environment: event.environment,
                authoritative: authoritative
            )
            if try storeEvent(
                event,
                journalID: journalID,
                path: path,
                authoritative: authoritative,
                targets: targets,
                now: now
            ) {
                stored += 1
            }
        }
        return stored
    }
}
