public import Canonical

/// One write or queue entry of a plan (``Plan``), in the order the store makes them.
public enum PlannedWrite: Sendable, Hashable {
    /// The event, unless its id is stored: on `path`, authoritative or not; the subscription's state on `path` unless
    /// the state holds a later event (event date, then arrival); its deliveries queued to `targets`. `filteredOut`:
    /// the downstreams that would take it but for their filter (counted when the event is new).
    case event(CanonicalEvent, path: Generation, authoritative: Bool, targets: [String], filteredOut: [String] = [])
    /// A path's view of a subscription, for the comparison.
    case snapshot(OutcomeSnapshot, path: Generation)
    /// A fetch of a path's view of a subscription.
    case fetch(FetchRequest)
    /// The receipt job of the notification's journal row: verifyReceipt for a V1 body, the V1 path's event of a V2
    /// notification.
    case receiptJob
    /// A delivery of the notification's journaled body to a pass-through downstream.
    case bodyDelivery(downstream: String)
    /// A pass-through downstream that would take the notification's body but for its filter: nothing queued, counted.
    case bodyFilteredOut(downstream: String)
    /// The consumption responder's job for a refund request, unless the request's event has one.
    case consumptionJob(ConsumptionRequest)
    /// Apple's decision on a purchase's refund request, recorded on the request (when there is one, undecided).
    case refundDecision(RefundDecision)
}

/// Whether a notification is the only notification of its event — Apple sends no other version of it — asked of the
/// store, which answers from the journal and the Apple switch (docs/architecture.md, "One authoritative event per
/// notification").
public struct StandsAloneQuestion: Sendable, Hashable {
    /// The version of the notification asked about.
    public var version: Generation
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public init(version: Generation, bundleID: String, environment: AppStoreEnvironment) {
        (self.version, self.bundleID, self.environment) = (version, bundleID, environment)
    }
}

/// What a step of the notification pipeline writes and queues, as a value: computed by ``NotificationPolicy`` from
/// facts alone, carried out by the store in one transaction, in order — `writes`, then, when there is a question,
/// `ifAlone` or `ifNotAlone` by the store's answer to it.
public struct Plan: Sendable, Hashable {
    public var writes: [PlannedWrite]
    public var question: StandsAloneQuestion?
    public var ifAlone: [PlannedWrite]
    public var ifNotAlone: [PlannedWrite]

    public init(
        writes: [PlannedWrite] = [],
        question: StandsAloneQuestion? = nil,
        ifAlone: [PlannedWrite] = [],
        ifNotAlone: [PlannedWrite] = []
    ) {
        (self.writes, self.question, self.ifAlone, self.ifNotAlone) = (writes, question, ifAlone, ifNotAlone)
    }

    /// Every write, given the answer to the question (ignored when there is none).
    public func writes(alone: Bool) -> [PlannedWrite] {
        guard question != nil else { return writes }
        return writes + (alone ? ifAlone : ifNotAlone)
    }
}
