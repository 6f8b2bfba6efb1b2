internal import Canonical
internal import Postgres

extension PostgresTransaction: JournalRows {
    /// The authority, the key's advisory lock and the journal row in one statement (each statement is a round trip,
    /// and a journal write's latency is their sum). The unique constraint decides, and a key is never left waiting in
    /// a deadlock: the lock comes first (``lockOrDefer(_:_:)``), so when another instance's batch is journaling the
    /// same key this one either waits for that batch's COMMIT — the INSERT then meets the committed row — or, in the
    /// middle of its own batch, runs the journal again in its next one. The INSERT finding the row (`ON CONFLICT DO
    /// NOTHING` returns nothing; the statement's snapshot may predate the row, committed while it waited for the
    /// lock), a second statement — a new snapshot in the writer's READ COMMITTED transaction — reads it: the answer is
    /// accepted or duplicate, never a unique violation.
    func journalRow(_ item: JournalItem) throws -> (outcome: JournalOutcome, authority: Generation) {
        let row = try c.queryOne(
            """
            WITH a AS (
                SELECT COALESCE((SELECT authority FROM authority WHERE bundle_id = $5::text AND environment = $6::text), 'v1') AS authority
            ), l AS (
                SELECT \(Self.lockOrDefer(class: "$12", key: "$1")) AS locked
            ), j AS (
                INSERT INTO journal (notification_key, version, received_at, origin, bundle_id, environment, notification_type,
                                     subtype, secret_name, leaf_serial, body, authority)
                SELECT $1::text, $2::text, $3::bigint, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text,
                       $11::bytea, a.authority
                FROM a, l WHERE l.locked
                ON CONFLICT (notification_key) DO NOTHING RETURNING id
            )
            SELECT l.locked, a.authority, (SELECT id FROM j) AS id FROM a, l
            """,
            [
                .text(item.key), .text(item.version.rawValue), .int64(item.receivedAt), .text(item.origin.rawValue),
                PostgresValue(item.bundleID), PostgresValue(item.environment?.rawValue),
                PostgresValue(item.notificationType),
                PostgresValue(item.subtype), PostgresValue(item.secretName), PostgresValue(item.leafSerial),
                .bytea(try c.packBody(item.body)),
                .int64(LockClass.journalKey.rawValue),
            ]
        )
        try Self.deferUnless(row?.bool("locked"), .journalKey)
        let authority = try row?.nullableGeneration("authority") ?? .v1
        if let id = row?.int64("id") { return (.accepted(journalID: id), authority) }
        guard let id = try journalID(key: item.key) else {
            throw PostgresError(
                code: "XX000",
                message: "journal: the notification key conflicts but its row is not found"
            )
        }
        return (.duplicate(journalID: id), authority)
    }

    /// The event, the subscription's state and the deliveries in one statement: the state and the deliveries are
    /// written only when the event is (`FROM e`), with the `seq` it was given. The upsert locks the state's row and
    /// compares with its latest committed version, so instances writing at once converge on the same state whatever
    /// order they commit in.
    func storeEvent(
        _ event: CanonicalEvent,
        journalID: Int64?,
        path: Generation,
        authoritative: Bool,
        targets: [String],
        now: Int64
    ) throws -> Bool {
        let state =
            event.originalTransactionID != nil && event.environment != nil
            ? SubscriptionState(path: path, event: event) : nil
        let values: [PostgresValue] = [
            .text(event.id), PostgresValue(journalID), .text(path.rawValue), .text(event.source.rawValue),
            .text(event.kind.rawValue),
            PostgresValue(event.reason?.rawValue), PostgresValue(event.bundleID),
            PostgresValue(event.environment?.rawValue),
            PostgresValue(event.originalTransactionID), .int64(event.eventDate), .bool(authoritative), .int64(now),
            .bytea(try c.packJSON(CanonicalJSON.encode(event), as: .event)),
            PostgresValue(event.recoveredBy?.rawValue),
            try state.map { .bytea(try c.packJSON(CanonicalJSON.encode($0), as: .state)) } ?? .null,
            PostgresValue(state?.expiresDate),
            .textArray(targets),
            PostgresValue(state?.seats.map(Int64.init)),
        ]
        return try c.queryOne(
            """
            WITH e AS (
                INSERT INTO events (id, journal_id, path, source, kind, reason, bundle_id, environment, original_transaction_id,
                                    event_date, authoritative, created_at, json, recovered_by)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING RETURNING seq
            ), s AS (
                INSERT INTO subscription_state AS s (path, environment, original_transaction_id, bundle_id, event_id, event_date,
                                                     event_seq, json, updated_at, expires_date, seats)
                SELECT $3::text, $8::text, $9::text, $7::text, $1::text, $10::bigint, e.seq, $15::bytea, $12::bigint, $16::bigint,
                       $18::bigint
                FROM e WHERE $15::bytea IS NOT NULL
                ON CONFLICT (path, environment, original_transaction_id) DO UPDATE SET
                    bundle_id = excluded.bundle_id, event_id = excluded.event_id, event_date = excluded.event_date,
                    event_seq = excluded.event_seq, json = excluded.json, updated_at = excluded.updated_at,
                    expires_date = excluded.expires_date, seats = excluded.seats
                WHERE excluded.event_date > s.event_date OR (excluded.event_date = s.event_date AND excluded.event_seq > s.event_seq)
            ), o AS (
                INSERT INTO outbox (downstream, event_id, next_attempt_at, created_at)
                SELECT t, $1::text, $12::bigint, $12::bigint FROM e, unnest($17::text[]) AS t
                ON CONFLICT DO NOTHING
            )
            SELECT seq FROM e
            """,
            values
        ) != nil
    }
}
