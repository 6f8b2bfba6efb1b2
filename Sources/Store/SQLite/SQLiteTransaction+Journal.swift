internal import SQLite
internal import Canonical

extension SQLiteTransaction {
    func journal(_ item: JournalItem, routing: any DeliveryRouting, now: Int64) throws -> JournalOutcome {
        // The authority in force now decides, once, which path this notification's events are authoritative on.
        let authority = try authority(bundleID: item.bundleID, environment: item.environment)
        let inserted = try c.run(
            """
            INSERT INTO journal (notification_key, version, received_at, origin, bundle_id, environment, notification_type,
                                 subtype, secret_name, leaf_serial, body, authority)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(notification_key) DO NOTHING
            """,
            [.text(item.key), .text(item.version.rawValue), .integer(item.receivedAt), .text(item.origin.rawValue), SQLiteValue(item.bundleID),
             SQLiteValue(item.environment), SQLiteValue(item.notificationType), SQLiteValue(item.subtype),
             SQLiteValue(item.secretName), SQLiteValue(item.leafSerial), .blob(item.body), .text(authority.rawValue)])
        if inserted == 0 {
            let id = try c.queryOne("SELECT id FROM journal WHERE notification_key = ?", [.text(item.key)])?.int64("id") ?? 0
            return .duplicate(journalID: id)
        }
        let journalID = c.lastInsertRowID
        try storeEvents(item.events, journalID: journalID, routing: routing, now: now, authority: authority)
        if item.version == .v2 {
            // Compared bundles: the signed data is the V2 path's snapshot; the V1 path's comes from verifyReceipt.
            for e in item.events where routing.compares(e.bundleID) && e.isSubscription {
                guard let bundle = e.bundleID, let env = e.environment, let otid = e.originalTransactionID else { continue }
                try putSnapshot(OutcomeSnapshot(event: e, source: .v2, observedAt: e.eventDate), path: .v2)
                let key = SubscriptionKey(bundleID: bundle, environment: env, originalTransactionID: otid)
                try enqueueFetch(FetchRequest(subscription: key, fetch: .v1, compare: true), at: now, due: nil)
            }
        }
        if item.needsReceipt {
            try c.run(
                "INSERT INTO receipt_jobs (journal_id, next_attempt_at, updated_at) VALUES (?, ?, ?)",
                [.integer(journalID), .integer(now), .integer(now)])
        }
        if item.version == .v1 {
            for name in routing.passthroughTargets(bundleID: item.bundleID, environment: item.environment) {
                try c.run(
                    "INSERT OR IGNORE INTO outbox (downstream, journal_id, next_attempt_at, created_at) VALUES (?, ?, ?, ?)",
                    [.text(name), .integer(journalID), .integer(now), .integer(now)])
            }
        }
        return .accepted(journalID: journalID)
    }

    func storeEvents(_ events: [CanonicalEvent], journalID: Int64?, routing: any DeliveryRouting, now: Int64, authority: Generation?) throws {
        for event in events {
            let path = event.source.generation
            let authoritative = try (authority ?? self.authority(bundleID: event.bundleID, environment: event.environment)) == path
            let inserted = try c.run(
                """
                INSERT INTO events (id, journal_id, path, source, kind, reason, bundle_id, environment, original_transaction_id,
                                    event_date, authoritative, created_at, json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING
                """,
                [.text(event.id), SQLiteValue(journalID), .text(path.rawValue), .text(event.source.rawValue), .text(event.kind.rawValue),
                 SQLiteValue(event.reason?.rawValue), SQLiteValue(event.bundleID), SQLiteValue(event.environment),
                 SQLiteValue(event.originalTransactionID), .integer(event.eventDate), SQLiteValue(authoritative), .integer(now),
                 .blob(CanonicalJSON.encode(event))])
            guard inserted > 0 else { continue }
            let seq = c.lastInsertRowID
            if let otid = event.originalTransactionID, let env = event.environment {
                try updateState(path: path, environment: env, otid: otid, event: event, seq: seq, now: now)
            }
            for name in routing.eventTargets(bundleID: event.bundleID, environment: event.environment, authoritative: authoritative) {
                try c.run(
                    "INSERT OR IGNORE INTO outbox (downstream, event_id, next_attempt_at, created_at) VALUES (?, ?, ?, ?)",
                    [.text(name), .text(event.id), .integer(now), .integer(now)])
            }
        }
    }

    /// Last write wins on (event_date, arrival order): an older event arriving late never overwrites a newer one.
    private func updateState(path: Generation, environment: AppStoreEnvironment, otid: String, event: CanonicalEvent, seq: Int64,
                             now: Int64) throws {
        let state = SubscriptionState(path: path, event: event)
        try c.run(
            """
            INSERT INTO subscription_state (path, environment, original_transaction_id, bundle_id, event_id, event_date,
                                            event_seq, json, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(path, environment, original_transaction_id) DO UPDATE SET
                bundle_id = excluded.bundle_id, event_id = excluded.event_id, event_date = excluded.event_date,
                event_seq = excluded.event_seq, json = excluded.json, updated_at = excluded.updated_at
            WHERE excluded.event_date > subscription_state.event_date
               OR (excluded.event_date = subscription_state.event_date AND excluded.event_seq > subscription_state.event_seq)
            """,
            [.text(path.rawValue), .text(environment.rawValue), .text(otid), SQLiteValue(event.bundleID), .text(event.id),
             .integer(event.eventDate), .integer(seq), .blob(CanonicalJSON.encode(state)), .integer(now)])
    }

    func journalEntries(id: Int64?, key: String?, limit: Int) throws -> [JournalEntry] {
        try c.query(
            """
            SELECT id, notification_key, version, received_at, origin, bundle_id, environment, secret_name, authority, body FROM journal
            WHERE (? IS NULL OR id = ?) AND (? IS NULL OR notification_key = ?) ORDER BY id LIMIT ?
            """, [SQLiteValue(id), SQLiteValue(id), SQLiteValue(key), SQLiteValue(key), limitValue(limit)]
        ).map(JournalEntry.init(row:))
    }

    func receivesV2(bundleID: String, environment: AppStoreEnvironment, since: Int64) throws -> Bool {
        try c.queryOne(
            "SELECT 1 AS y FROM journal WHERE bundle_id = ? AND environment = ? AND version = 'v2' AND received_at >= ? LIMIT 1",
            [.text(bundleID), .text(environment.rawValue), .integer(since)]) != nil
    }

    func events(id: String?, originalTransactionID: String?, limit: Int) throws -> [StoredEvent] {
        try c.query(
            """
            SELECT json, path, authoritative, journal_id, created_at FROM events
            WHERE (? IS NULL OR id = ?) AND (? IS NULL OR original_transaction_id = ?)
            ORDER BY CASE WHEN ? IS NULL THEN rowid ELSE event_date END, rowid LIMIT ?
            """,
            [SQLiteValue(id), SQLiteValue(id), SQLiteValue(originalTransactionID), SQLiteValue(originalTransactionID),
             SQLiteValue(originalTransactionID), limitValue(limit)]
        ).compactMap(StoredEvent.init(row:))
    }

    func subscriptionStates(originalTransactionID otid: String) throws -> [StoredSubscriptionState] {
        try c.query(
            """
            SELECT s.path, s.environment, s.bundle_id, s.event_id, s.json, s.updated_at,
                   (SELECT authority FROM authority a WHERE a.bundle_id = s.bundle_id AND a.environment = s.environment) AS authority
            FROM subscription_state s WHERE s.original_transaction_id = ? ORDER BY s.environment, s.path
            """, [.text(otid)]
        ).map(StoredSubscriptionState.init(row:))
    }

    func eventCountsBySource(bundleID: String, environment: AppStoreEnvironment, since: Int64, until: Int64) throws -> [EventSource: Int] {
        var counts: [EventSource: Int] = [:]
        for row in try c.query(
            "SELECT source, COUNT(*) AS n FROM events WHERE bundle_id = ? AND environment = ? AND created_at >= ? AND created_at < ? GROUP BY source",
            [.text(bundleID), .text(environment.rawValue), .integer(since), .integer(until)])
        {
            counts[EventSource(rawValue: row.string("source") ?? "")] = row.int("n") ?? 0
        }
        return counts
    }

    func counts() throws -> (journal: Int, events: Int) {
        let journal = try c.queryOne("SELECT COUNT(*) AS n FROM journal")?.int("n") ?? 0
        let events = try c.queryOne("SELECT COUNT(*) AS n FROM events")?.int("n") ?? 0
        return (journal, events)
    }

    // MARK: Retention

    func purgeBodies(olderThan cutoff: Int64, now: Int64) throws -> Int {
        try c.run(
            """
            UPDATE journal SET body = NULL, body_purged_at = ? WHERE body IS NOT NULL AND received_at < ?
              AND id NOT IN (SELECT journal_id FROM receipt_jobs WHERE state = 'pending')
              AND id NOT IN (SELECT journal_id FROM outbox WHERE journal_id IS NOT NULL AND state = 'pending')
            """,
            [.integer(now), .integer(cutoff)])
    }

    func purgeFinishedFetches(olderThan cutoff: Int64) throws -> Int {
        try c.run("DELETE FROM compare_jobs WHERE state IN ('done', 'failed') AND next_attempt_at < ?", [.integer(cutoff)])
    }
}
