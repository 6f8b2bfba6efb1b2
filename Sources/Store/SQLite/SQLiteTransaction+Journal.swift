internal import Canonical
internal import SQLite

extension SQLiteTransaction: JournalRows {
    func journalRow(_ item: JournalItem) throws -> (outcome: JournalOutcome, authority: Generation) {
        let authority = try authority(bundleID: item.bundleID, environment: item.environment)
        return (try insertJournal(item, authority: authority), authority)
    }

    func storeEvent(
        _ event: CanonicalEvent,
        journalID: Int64?,
        path: Generation,
        authoritative: Bool,
        targets: [String],
        now: Int64
    ) throws -> Bool {
        guard let seq = try insertEvent(event, journalID: journalID, path: path, authoritative: authoritative, now: now)
        else { return false }
        if event.originalTransactionID != nil, let env = event.environment {
            try updateState(
                SubscriptionState(path: path, event: event),
                environment: env,
                bundleID: event.bundleID,
                seq: seq,
                now: now
            )
        }
        for name in targets {
            try insertDelivery(downstream: name, eventID: event.id, journalID: nil, now: now)
        }
        return true
    }

    private func insertJournal(_ item: JournalItem, authority: Generation) throws -> JournalOutcome {
        // A V2 body with its header's preset dictionary (its row inserted in this transaction when new).
        let body = try c.dictionaries.pack(try StoredColumn.body.checked(item.body), on: c.raw)
        let inserted = try c.run(
            """
            INSERT INTO journal (notification_key, version, received_at, origin, bundle_id, environment, notification_type,
                                 subtype, secret_name, leaf_serial, body, authority)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(notification_key) DO NOTHING
            """,
            [
                .text(item.key), .text(item.version.rawValue), .integer(item.receivedAt), .text(item.origin.rawValue),
                SQLiteValue(item.bundleID),
                SQLiteValue(item.environment?.rawValue), SQLiteValue(item.notificationType), SQLiteValue(item.subtype),
                SQLiteValue(item.secretName), SQLiteValue(item.leafSerial), .blob(body),
                .text(authority.rawValue),
            ]
        )
        if inserted == 0 {
            return .duplicate(journalID: try journalID(key: item.key) ?? 0)
        }
        return .accepted(journalID: c.lastInsertRowID)
    }

    /// The event's rowid (its arrival order), nil when it was stored already.
    private func insertEvent(
        _ event: CanonicalEvent,
        journalID: Int64?,
        path: Generation,
        authoritative: Bool,
        now: Int64
    ) throws -> Int64? {
        let inserted = try c.run(
            """
            INSERT INTO events (id, journal_id, path, source, kind, reason, bundle_id, environment, original_transaction_id,
                                event_date, authoritative, created_at, json, recovered_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING
            """,
            [
                .text(event.id), SQLiteValue(journalID), .text(path.rawValue), .text(event.source.rawValue),
                .text(event.kind.rawValue),
                SQLiteValue(event.reason?.rawValue), SQLiteValue(event.bundleID),
                SQLiteValue(event.environment?.rawValue),
                SQLiteValue(event.originalTransactionID), .integer(event.eventDate), SQLiteValue(authoritative),
                .integer(now),
                .blob(
                    try c.dictionaries.packJSON(try StoredColumn.event.checked(CanonicalJSON.encode(event)), on: c.raw)
                ),
                SQLiteValue(event.recoveredBy?.rawValue),
            ]
        )
        return inserted > 0 ? c.lastInsertRowID : nil  // the rowid: the arrival order
    }

    private func updateState(
        _ state: SubscriptionState,
        environment: AppStoreEnvironment,
        bundleID: String?,
        seq: Int64,
        now: Int64
    ) throws {
        try c.run(
            """
            INSERT INTO subscription_state (path, environment, original_transaction_id, bundle_id, event_id, event_date,
                                            event_seq, json, updated_at, expires_date, seats)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(path, environment, original_transaction_id) DO UPDATE SET
                bundle_id = excluded.bundle_id, event_id = excluded.event_id, event_date = excluded.event_date,
                event_seq = excluded.event_seq, json = excluded.json, updated_at = excluded.updated_at,
                expires_date = excluded.expires_date, seats = excluded.seats
            WHERE excluded.event_date > subscription_state.event_date
               OR (excluded.event_date = subscription_state.event_date AND excluded.event_seq > subscription_state.event_seq)
            """,
            [
                .text(state.path.rawValue), .text(environment.rawValue), .text(state.originalTransactionID),
                SQLiteValue(bundleID),
                .text(state.eventID), .integer(state.eventDate), .integer(seq),
                .blob(
                    try c.dictionaries.packJSON(try StoredColumn.state.checked(CanonicalJSON.encode(state)), on: c.raw)
                ),
                .integer(now),
                SQLiteValue(state.expiresDate),
                SQLiteValue(state.seats.map(Int64.init)),
            ]
        )
    }
}
