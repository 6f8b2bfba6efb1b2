internal import Canonical

// The journal's reads and its retention; its writes (`journalRow`, `storeEvent`) differ by database: each store's
// `*Transaction+Journal.swift`.
extension SQLTransaction {
    func insertDelivery(downstream: String, eventID: String?, journalID: Int64?, now: Int64) throws {
        try c.run(.insertDelivery, [.text(downstream), StoreValue(eventID), StoreValue(journalID), .int64(now)])
    }

    func insertReceiptJob(journalID: Int64, now: Int64) throws {
        try c.run(.insertReceiptJob, [.int64(journalID), .int64(now)])
    }

    /// The id of the journal row with `key`: a duplicate's answer.
    func journalID(key: String) throws -> Int64? {
        try c.queryOne(.journalID, [.text(key)])?.int64("id")
    }

    func journalEntries(id: Int64?, key: String?, limit: Int) throws -> [JournalEntry] {
        // One statement per filter, each on its own index: a `$1 IS NULL OR …` filter would scan the table.
        let rows =
            switch (id, key) {
            case (let id?, let key?): try c.query(.journalEntryByIDAndKey, [.int64(id), .text(key), .limit(limit)])
            case (let id?, nil): try c.query(.journalEntryByID, [.int64(id), .limit(limit)])
            case (nil, let key?): try c.query(.journalEntryByKey, [.text(key), .limit(limit)])
            case (nil, nil): try c.query(.journalEntries, [.limit(limit)])
            }
        return try rows.map(JournalEntry.init(row:))
    }

    func standsAlone(
        _ version: Generation,
        bundleID: String,
        environment: AppStoreEnvironment,
        now: Int64
    ) throws -> Bool {
        let other: Generation = version == .v1 ? .v2 : .v1
        return try c.queryOne(
            .standsAlone,
            [
                .text(bundleID), .text(environment.rawValue), .text(other.rawValue),
                .int64(now.clampedSubtracting(86_400_000)),
            ]
        )?
        .bool("alone") ?? false
    }

    func events(id: String?, originalTransactionID: String?, limit: Int) throws -> [StoredEvent] {
        // One statement per filter, each on its own index: a `$1 IS NULL OR …` filter would scan the table.
        let rows =
            switch (id, originalTransactionID) {
            case (let id?, let otid?): try c.query(.eventByIDOfSubscription, [.text(id), .text(otid), .limit(limit)])
            case (let id?, nil): try c.query(.eventByID, [.text(id), .limit(limit)])
            case (nil, let otid?): try c.query(.subscriptionEvents, [.text(otid), .limit(limit)])
            case (nil, nil): try c.query(.events, [.limit(limit)])
            }
        return try rows.compactMap(StoredEvent.init(row:))
    }

    func subscriptionEvents(originalTransactionID otid: String, through: Int64, limit: Int) throws -> [StoredEvent] {
        try c.query(.subscriptionEventsThrough, [.text(otid), .int64(through), .limit(limit)])
            .compactMap(StoredEvent.init(row:))
    }

    func subscriptionEvents(originalTransactionID otid: String, createdAfter: Int64, limit: Int) throws -> [StoredEvent]
    {
        try c.query(.subscriptionEventsCreatedAfter, [.text(otid), .int64(createdAfter), .limit(limit)])
            .compactMap(StoredEvent.init(row:))
    }

    func subscriptionStates(originalTransactionID otid: String) throws -> [StoredSubscriptionState] {
        try c.query(.subscriptionStates, [.text(otid)]).map(StoredSubscriptionState.init(row:))
    }

    func subscriptionHistory(
        originalTransactionID otid: String,
        maxEvents: Int,
        maxBytes: Int
    ) throws
        -> SubscriptionHistory
    {
        var history = SubscriptionHistory()
        history.states = try subscriptionStates(originalTransactionID: otid)
        history.bytes = history.states.reduce(0) { $0 + $1.json.count + SubscriptionHistory.rowBytes }
        // A page at a time after the last row read (event date, then arrival: `events_subscription`), so that what a
        // page holds before its values are read — compressed on SQLite, capped on PostgreSQL — is bounded too.
        var after = (date: Int64.min, arrival: Int64.min)
        while history.stoppedBy == nil {
            let left = maxEvents - history.events.count
            let page = try c.query(
                .subscriptionHistoryPage,
                [
                    .text(otid), .int64(after.date), .int64(after.arrival),
                    // One row past `maxEvents` tells a history cut short from one that ends there.
                    .limit(left < Self.historyPageRows ? left + 1 : Self.historyPageRows),
                ]
            )
            for row in page {
                guard history.events.count < maxEvents else {
                    history.stoppedBy = .maxEvents
                    break
                }
                let event = try SubscriptionHistory.Row(row: row)
                let bytes = (event.event?.json.count ?? 0) + SubscriptionHistory.rowBytes
                guard history.bytes + bytes <= maxBytes else {
                    history.stoppedBy = .maxBytes
                    break
                }
                history.events.append(event)
                history.bytes += bytes
                after = (row.int64("event_date") ?? .max, row.int64("arrival") ?? .max)
            }
            if page.count < Self.historyPageRows { break }
        }
        return history
    }

    /// Rows of a subscription's history read at once: at most this many values of a column's cap in memory before
    /// the budget is looked at.
    static var historyPageRows: Int { 64 }

    func eventCountsBySource(
        bundleID: String,
        environment: AppStoreEnvironment,
        since: Int64,
        until: Int64
    ) throws -> [EventSource: Int] {
        // One index range count per source the gateway writes (`events_bundle_source`): bounded by the index, not
        // by reading every event of the window.
        var counts: [EventSource: Int] = [:]
        for source in EventSource.written {
            let n =
                try c.queryOne(
                    .eventCountBySource,
                    [
                        .text(bundleID), .text(environment.rawValue), .text(source.rawValue), .int64(since),
                        .int64(until),
                    ]
                )?
                .int("n") ?? 0
            if n > 0 { counts[source] = n }
        }
        return counts
    }

    func statusCounts() throws -> StatusCounts {
        StatusCounts(
            journal: try c.queryOne(.newestJournal, [])?.int("n") ?? 0,
            events: try c.queryOne(.newestEvent, [])?.int("n") ?? 0,
            deliveries: try deliveryCountsByNewestID(),
            exact: dialect == .sqlite
        )
    }

    func counts() throws -> (journal: Int, events: Int) {
        let journal = try c.queryOne(.countJournal, [])?.int("n") ?? 0
        let events = try c.queryOne(.countEvents, [])?.int("n") ?? 0
        return (journal, events)
    }

    // MARK: Retention

    func purgeBodies(olderThan cutoff: Int64, now: Int64) throws -> Int {
        try purgeBodies(olderThan: cutoff, now: now, limit: .max)
    }

    func purgeBodies(olderThan cutoff: Int64, now: Int64, limit: Int) throws -> Int {
        try c.run(.purgeBodies, [.int64(now), .int64(cutoff), .limit(limit)])
    }

    func purgeFinishedFetches(olderThan cutoff: Int64) throws -> Int {
        try c.run(.purgeFinishedFetches, [.int64(cutoff)])
    }
}

extension SQL {
    fileprivate static let insertDelivery = SQL(
        """
        INSERT INTO outbox (downstream, event_id, journal_id, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $4)
        ON CONFLICT DO NOTHING
        """
    )

    fileprivate static let insertReceiptJob = SQL(
        "INSERT INTO receipt_jobs (journal_id, next_attempt_at, updated_at) VALUES ($1, $2, $2)"
    )

    fileprivate static let journalID = SQL("SELECT id FROM journal WHERE notification_key = $1")

    fileprivate static let journalColumns =
        "id, notification_key, version, received_at, origin, bundle_id, environment, secret_name, authority, body"
    fileprivate static let journalEntries = SQL("SELECT \(journalColumns) FROM journal ORDER BY id LIMIT $1")
    static let journalEntryByID = SQL("SELECT \(journalColumns) FROM journal WHERE id = $1 LIMIT $2")
    static let journalEntryByKey = SQL(
        "SELECT \(journalColumns) FROM journal WHERE notification_key = $1 LIMIT $2"
    )
    fileprivate static let journalEntryByIDAndKey = SQL(
        "SELECT \(journalColumns) FROM journal WHERE id = $1 AND notification_key = $2 LIMIT $3"
    )

    /// Switched (a migration on record), or the other version silent since $4: both lookups on their index.
    static let standsAlone = SQL(
        """
        SELECT EXISTS (SELECT 1 FROM apple_switches WHERE bundle_id = $1 AND environment = $2 AND migration_id IS NOT NULL)
            OR NOT EXISTS (SELECT 1 FROM journal WHERE bundle_id = $1 AND environment = $2 AND version = $3 AND received_at >= $4)
            AS alone
        """
    )

    /// An event's columns, its JSON over the cap left in a PostgreSQL database (``Dialect/capped(_:as:_:)``).
    fileprivate static func eventColumns(_ d: Dialect) -> String {
        "\(d.capped("json", as: "json", StoredColumn.event.maxPlainBytes)), path, authoritative, journal_id, created_at"
    }
    /// All events in arrival order.
    fileprivate static let events = SQL { d in
        "SELECT \(eventColumns(d)) FROM events ORDER BY \(d.arrival) LIMIT $1"
    }
    static let eventByID = SQL { d in "SELECT \(eventColumns(d)) FROM events WHERE id = $1 LIMIT $2" }
    fileprivate static let eventByIDOfSubscription = SQL { d in
        "SELECT \(eventColumns(d)) FROM events WHERE id = $1 AND original_transaction_id = $2 LIMIT $3"
    }
    /// A subscription's events by event date, then arrival (index `events_subscription`).
    static let subscriptionEvents = SQL { d in
        """
        SELECT \(eventColumns(d)) FROM events WHERE original_transaction_id = $1 ORDER BY event_date, \(d.arrival) LIMIT $2
        """
    }

    /// A subscription's events up to a date, newest first: the same index, read backwards from the date.
    fileprivate static let subscriptionEventsThrough = SQL { d in
        """
        SELECT \(eventColumns(d)) FROM events WHERE original_transaction_id = $1 AND event_date <= $2
        ORDER BY event_date DESC, \(d.arrival) DESC LIMIT $3
        """
    }

    /// A subscription's events that arrived after a moment, newest first: the same index, the arrival time checked on
    /// each of the subscription's rows (a subscription's events are few; only those that pass are decoded).
    static let subscriptionEventsCreatedAfter = SQL { d in
        """
        SELECT \(eventColumns(d)) FROM events WHERE original_transaction_id = $1 AND created_at > $2
        ORDER BY event_date DESC, \(d.arrival) DESC LIMIT $3
        """
    }

    /// A page of a subscription's events after ($2, $3) (event date, arrival), each value over its cap left in a
    /// PostgreSQL database (``Dialect/capped(_:as:_:)``).
    fileprivate static let subscriptionHistoryPage = SQL { d in
        """
        SELECT id, \(d.capped("json", as: "json", StoredColumn.event.maxPlainBytes)), path, authoritative, journal_id,
               created_at, event_date, \(d.arrival) AS arrival
        FROM events WHERE original_transaction_id = $1 AND (event_date, \(d.arrival)) > ($2::bigint, $3::bigint)
        ORDER BY event_date, \(d.arrival) LIMIT $4
        """
    }

    fileprivate static let subscriptionStates = SQL { d in
        """
        SELECT s.path, s.environment, s.bundle_id, s.event_id, \(d.capped("s.json", as: "json", StoredColumn.state.maxPlainBytes)), s.updated_at,
               (SELECT authority FROM authority a WHERE a.bundle_id = s.bundle_id AND a.environment = s.environment) AS authority
        FROM subscription_state s WHERE s.original_transaction_id = $1 ORDER BY s.environment, s.path
        """
    }

    static let eventCountBySource = SQL(
        """
        SELECT COUNT(*) AS n FROM events
        WHERE bundle_id = $1 AND environment = $2 AND source = $3 AND created_at >= $4 AND created_at < $5
        """
    )

    fileprivate static let countJournal = SQL("SELECT COUNT(*) AS n FROM journal")
    fileprivate static let countEvents = SQL("SELECT COUNT(*) AS n FROM events")
    static let newestJournal = SQL("SELECT COALESCE(MAX(id), 0) AS n FROM journal")
    fileprivate static let newestEvent = SQL { d in "SELECT COALESCE(MAX(\(d.arrival)), 0) AS n FROM events" }

    /// Bodies a pending verifyReceipt job or pass-through delivery still needs are kept.
    static let purgeBodies = SQL(
        """
        UPDATE journal SET body = NULL, body_purged_at = $1 WHERE id IN (
            SELECT id FROM journal WHERE body IS NOT NULL AND received_at < $2
              AND id NOT IN (SELECT journal_id FROM receipt_jobs WHERE state = 'pending')
              AND id NOT IN (SELECT journal_id FROM outbox WHERE journal_id IS NOT NULL AND state = 'pending')
            ORDER BY received_at, id LIMIT $3)
        """
    )

    fileprivate static let purgeFinishedFetches = SQL(
        "DELETE FROM compare_jobs WHERE state IN ('done', 'failed') AND next_attempt_at < $1"
    )
}
