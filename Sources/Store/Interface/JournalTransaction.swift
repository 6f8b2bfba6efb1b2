public import Canonical
public import Policy

/// The journal, the events and each subscription's state on each path: what a notification becomes, carried out as the rule planned it (docs/architecture.md, "The rule"). One slice of ``StoreTransaction``.
public protocol JournalTransaction {
    /// Journals `item` with its events, state updates, deliveries and jobs: accepted, or a duplicate of an earlier
    /// notification with the same key. The authority in force now decides which path the events are authoritative on.
    /// With the outcome, what carrying out its plan did (nothing for a duplicate).
    func journalReporting(_ item: JournalItem, routing: Routing, now: Int64) throws -> (JournalOutcome, PlanOutcome)
    /// Stores events (ids already stored are ignored), updates each subscription's state on the event's path (last
    /// write wins on event date, then arrival order) and queues their deliveries, as the rule plans them
    /// (``NotificationPolicy/events(_:authority:routing:)``). `authority`: the authority the events' notification
    /// arrived under (the current one when nil). Returns what it did: how many events were new (an event whose id is
    /// stored already changes nothing), and what filters kept from being queued.
    @discardableResult
    func storeEventsReporting(
        _ events: [CanonicalEvent],
        journalID: Int64?,
        routing: Routing,
        now: Int64,
        authority: Generation?
    ) throws -> PlanOutcome
    /// Carries out a plan of the notification rule in order: its writes, then, when it asks whether the notification
    /// stands alone (``standsAlone(_:bundleID:environment:now:)``), the writes for the answer. `journalID`: the
    /// notification's journal row, which receipt jobs and body deliveries need.
    @discardableResult
    func execute(_ plan: Plan, journalID: Int64?, now: Int64) throws -> PlanOutcome
    /// Journaled notifications, oldest first (bodies included); optionally one row or those with a key.
    func journalEntries(id: Int64?, key: String?, limit: Int) throws -> [JournalEntry]
    /// Whether a notification of `version` is the only notification of its event, so that it must yield an authoritative
    /// event (and a V1 body for the old backend) whatever the authority (docs/architecture.md, "One authoritative event
    /// per notification"). Apple sends each notification in one version: once the gateway has switched Apple for the
    /// app and environment (`migrate`), always. Before that the gateway cannot tell Apple's traffic from the
    /// simulator's paired traffic (each event in both versions), so only while the other version has been silent for
    /// a day. One statement (a round trip on PostgreSQL, on the path of every such notification).
    func standsAlone(
        _ version: Generation,
        bundleID: String,
        environment: AppStoreEnvironment,
        now: Int64
    ) throws -> Bool
    /// Stored events in arrival order: one by id, one subscription's, or all (`limit` newest-last).
    func events(id: String?, originalTransactionID: String?, limit: Int) throws -> [StoredEvent]
    /// A subscription's events dated at or before `through`, newest first (event date, then arrival), at most `limit`:
    /// what was known of it at that moment.
    func subscriptionEvents(originalTransactionID: String, through: Int64, limit: Int) throws -> [StoredEvent]
    /// A subscription's events stored after `createdAfter` (arrival time), newest first (event date, then arrival), at
    /// most `limit`: what the gateway learnt of it since a moment.
    func subscriptionEvents(originalTransactionID: String, createdAfter: Int64, limit: Int) throws -> [StoredEvent]
    /// A subscription's state on each path it has one on.
    func subscriptionStates(originalTransactionID: String) throws -> [StoredSubscriptionState]
    /// A subscription's states and its events (in ``events(id:originalTransactionID:limit:)``'s order) for an
    /// operator: the events read a page at a time until `maxEvents` rows or `maxBytes` of JSON (each row counting
    /// ``SubscriptionHistory/rowBytes`` more), whichever comes first; a value that reads as damaged is a row with its
    /// ``StoredValueDamage``, never left out. On PostgreSQL a value over its column's cap stays in the database.
    func subscriptionHistory(
        originalTransactionID: String,
        maxEvents: Int,
        maxBytes: Int
    ) throws
        -> SubscriptionHistory
    /// Events per source of a bundle and environment created in [since, until).
    func eventCountsBySource(
        bundleID: String,
        environment: AppStoreEnvironment,
        since: Int64,
        until: Int64
    ) throws -> [EventSource: Int]
    /// Rows in the journal and in the events table (counted: proportional to the rows).
    func counts() throws -> (journal: Int, events: Int)
    /// What `/admin/status` shows, read without counting the big tables (``StatusCounts``).
    func statusCounts() throws -> StatusCounts
}

extension JournalTransaction {
    /// ``journalReporting(_:routing:now:)``, the outcome alone.
    public func journal(_ item: JournalItem, routing: Routing, now: Int64) throws -> JournalOutcome {
        try journalReporting(item, routing: routing, now: now).0
    }

    /// ``storeEventsReporting(_:journalID:routing:now:authority:)``; returns how many events were new.
    @discardableResult
    public func storeEvents(
        _ events: [CanonicalEvent],
        journalID: Int64?,
        routing: Routing,
        now: Int64,
        authority: Generation?
    ) throws -> Int {
        try storeEventsReporting(events, journalID: journalID, routing: routing, now: now, authority: authority)
            .newEvents
    }
}
