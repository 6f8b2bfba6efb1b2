internal import Canonical
public import Policy

/// The rows a journaled notification and its events are made of, as each implementation writes them. What is written
/// and queued is decided by the notification rule (``NotificationPolicy``) as a ``Plan``; the store carries it out,
/// in order, in the caller's transaction, and decides nothing.
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
    /// Queues a delivery of an event (webhooks) or of a journaled body (pass-through), unless it is queued already.
    func insertDelivery(downstream: String, eventID: String?, journalID: Int64?, now: Int64) throws
    /// Queues the receipt job of a journal row.
    func insertReceiptJob(journalID: Int64, now: Int64) throws
    /// Queues the consumption responder's job of a refund request, unless its event has one: true when it is new.
    func insertConsumptionJob(_ request: ConsumptionRequest, journalID: Int64?, now: Int64) throws -> Bool
    /// Records Apple's decision on a purchase's refund request.
    func recordRefundDecision(_ decision: RefundDecision) throws
}

extension JournalRows {
    func journalReporting(_ item: JournalItem, routing: Routing, now: Int64) throws -> (JournalOutcome, PlanOutcome) {
        // The authority in force now decides, once, which path this notification's events are authoritative on.
        let (outcome, authority) = try journalRow(item)
        guard case .accepted(let journalID) = outcome else { return (outcome, PlanOutcome()) }
        var facts = item.policyFacts
        facts.events = try facts.events.map { try groupSettled($0) }
        let done = try execute(
            NotificationPolicy.journal(facts, authority: authority, routing: routing),
            journalID: journalID,
            now: now
        )
        return (outcome, done)
    }

    @discardableResult
    func storeEventsReporting(
        _ events: [CanonicalEvent],
        journalID: Int64?,
        routing: Routing,
        now: Int64,
        authority: Generation?
    ) throws -> PlanOutcome {
        var done = PlanOutcome()
        for event in events {
            let event = try groupSettled(event)
            let authority = try authority ?? self.authority(bundleID: event.bundleID, environment: event.environment)
            let plan = Plan(writes: NotificationPolicy.events([event], authority: authority, routing: routing))
            done.add(try execute(plan, journalID: journalID, now: now))
        }
        return done
    }

    @discardableResult
    func execute(_ plan: Plan, journalID: Int64?, now: Int64) throws -> PlanOutcome {
        var done = PlanOutcome()
        func run(_ writes: [PlannedWrite]) throws {
            for write in writes {
                switch write {
                case .event(let event, let path, let authoritative, let targets, let filteredOut):
                    let new = try storeEvent(
                        event,
                        journalID: journalID,
                        path: path,
                        authoritative: authoritative,
                        targets: targets,
                        now: now
                    )
                    if new {
                        done.newEvents += 1
                        for name in filteredOut { done.filtered[name, default: 0] += 1 }
                    }
                case .snapshot(let snapshot, let path):
                    try putSnapshot(snapshot, path: path)
                case .fetch(let request):
                    try enqueueFetch(request, at: now, due: nil)
                case .receiptJob:
                    guard let journalID else { throw PlanWithoutJournalRow(write: write) }
                    try insertReceiptJob(journalID: journalID, now: now)
                case .bodyDelivery(let downstream):
                    guard let journalID else { throw PlanWithoutJournalRow(write: write) }
                    try insertDelivery(downstream: downstream, eventID: nil, journalID: journalID, now: now)
                case .bodyFilteredOut(let downstream):
                    done.filtered[downstream, default: 0] += 1
                case .consumptionJob(let request):
                    if try insertConsumptionJob(request, journalID: journalID, now: now), request.assigned {
                        done.assignedRefundRequests[request.bundleID, default: 0] += 1
                    }
                case .refundDecision(let decision):
                    try recordRefundDecision(decision)
                }
            }
        }
        try run(plan.writes)
        if let q = plan.question {
            let alone = try standsAlone(q.version, bundleID: q.bundleID, environment: q.environment, now: now)
            try run(alone ? plan.ifAlone : plan.ifNotAlone)
        }
        return done
    }
}

extension JournalRows {
    /// A group purchaser's event settled against its period (``GroupPeriod/settle(_:earlier:)``) before the rule plans
    /// it: the subscription's events of the same path, app and environment the store holds up to the event's date,
    /// newest 400. Any other event as it is.
    func groupSettled(_ event: CanonicalEvent) throws -> CanonicalEvent {
        guard GroupPeriod.isPurchasers(event), let otid = event.originalTransactionID else { return event }
        let path = event.source.generation
        let earlier = try subscriptionEvents(originalTransactionID: otid, through: event.eventDate, limit: 400)
            .filter {
                $0.path == path && $0.event.bundleID == event.bundleID && $0.event.environment == event.environment
                    && $0.event.id != event.id
            }
            .map(\.event)
        return GroupPeriod.settle(event, earlier: earlier)
    }
}

/// A plan that queues work on the notification's journal row, carried out without one: a caller's mistake, refused
/// before anything of it is written wrong (the transaction rolls back).
public struct PlanWithoutJournalRow: Error, CustomStringConvertible {
    public var write: PlannedWrite
    public var description: String { "a plan's \(write) needs the notification's journal row" }
}

/// What carrying out a plan did: how many events were new, and per downstream how many events (or notification bodies)
/// its filter kept from being queued (docs/configuration.md, `downstreams[].filter`).
public struct PlanOutcome: Sendable, Hashable {
    public var newEvents = 0
    public var filtered: [String: Int] = [:]
    /// Per bundle, group members' refund requests kept final, never sent (``ConsumptionState/assigned``).
    public var assignedRefundRequests: [String: Int] = [:]
    public init() {}

    public mutating func add(_ other: PlanOutcome) {
        newEvents += other.newEvents
        filtered.merge(other.filtered, uniquingKeysWith: +)
        assignedRefundRequests.merge(other.assignedRefundRequests, uniquingKeysWith: +)
    }
}
