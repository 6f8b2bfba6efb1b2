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
        try c.query(.journalEntries, [StoreValue(id), StoreValue(key), .limit(limit)]).map(JournalEntry.init(row:))
    }

    func receives(
        _ version: Generation,
        bundleID: String,
        environment: AppStoreEnvironment,
        since: Int64
    ) throws -> Bool {
        try c.queryOne(
            .receives,
            [.text(bundleID), .text(environment.rawValue), .text(version.rawValue), .int64(since)]
        ) != nil
    }

    func events(id: String?, originalTransactionID: String?, limit: Int) throws -> [StoredEvent] {
        try c.query(.events, [StoreValue(id), StoreValue(originalTransactionID), .limit(limit)]).compactMap(
            StoredEvent.init(row:)
        )
    }

    func subscriptionStates(originalTransactionID otid: String) throws -> [StoredSubscriptionState] {
        try c.query(.subscriptionStates, [.text(otid)]).map(StoredSubscriptionState.init(row:))
    }

    func eventCountsBySource(
        bundleID: String,
        environment: AppStoreEnvironment,
        since: Int64,
        until: Int64
    ) throws -> [EventSource: Int] {
        // One index range count per source the gateway writes (`events_bundle_source`): bounded by the index, not
        // by reading every event of the window.
        var counts: [EventSource: Int] = [:]
        for source in [EventSource.v1, .v2, .v2API, .v1Receipt] {
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

    fileprivate static let journalEntries = SQL(
        """
        SELECT id, notification_key, version, received_at, origin, bundle_id, environment, secret_name, authority, body FROM journal
        WHERE ($1::bigint IS NULL OR id = $1) AND ($2::text IS NULL OR notification_key = $2) ORDER BY id LIMIT $3
        """
    )

    fileprivate static let receives = SQL(
        "SELECT 1 AS y FROM journal WHERE bundle_id = $1 AND environment = $2 AND version = $3 AND received_at >= $4 LIMIT 1"
    )

    /// All events, or one, in arrival order; a subscription's by event date, then arrival.
    fileprivate static let events = SQL { d in
        """
        SELECT json, path, authoritative, journal_id, created_at FROM events
        WHERE ($1::text IS NULL OR id = $1) AND ($2::text IS NULL OR original_transaction_id = $2)
        ORDER BY CASE WHEN $2::text IS NULL THEN \(d.arrival) ELSE event_date END, \(d.arrival) LIMIT $3
        """
    }

    fileprivate static let subscriptionStates = SQL(
        """
        SELECT s.path, s.environment, s.bundle_id, s.event_id, s.json, s.updated_at,
               (SELECT authority FROM authority a WHERE a.bundle_id = s.bundle_id AND a.environment = s.environment) AS authority
        FROM subscription_state s WHERE s.original_transaction_id = $1 ORDER BY s.environment, s.path
        """
    )

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
