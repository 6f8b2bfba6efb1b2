internal import Postgres

extension PostgresTransaction {
    /// Claims the due rows for `lease` (several instances share the store): rows locked by another instance's claim
    /// in progress are skipped (`FOR UPDATE SKIP LOCKED`), rows claimed by another owner whose lease has not run out
    /// are not due, and the owner's own claims are due to it again at once.
    /// The payloads come from the same statement: the claimed rows joined with their events (and the notification's
    /// body only for `.eventAndBody`).
    func claimDueDeliveries(downstream: String, at time: Int64, limit: Int, lease: Lease, payload: PayloadRead) throws -> [DeliveryJob] {
        try c.query(
            """
            WITH o AS (
                UPDATE outbox SET claimed_by = $1, claimed_until = $2
                WHERE id IN (
                    SELECT id FROM outbox
                    WHERE state = 'pending' AND downstream = $3 AND next_attempt_at <= $4
                      AND (claimed_until IS NULL OR claimed_until <= $4 OR claimed_by = $1) AND NOT (id = ANY ($6::bigint[]))
                    ORDER BY next_attempt_at, id LIMIT $5 FOR UPDATE SKIP LOCKED)
                RETURNING id, downstream, attempts, event_id, journal_id, created_at, next_attempt_at
            )
            SELECT o.*, e.json, e.authoritative, j.body,
                   \(authoritativeStateColumn)
            FROM o
            LEFT JOIN events e ON $7 AND e.id = o.event_id
            LEFT JOIN journal j ON $8 AND j.id = e.journal_id
            """,
            [.text(lease.owner), .int64(lease.until), .text(downstream), .int64(time), pgLimit(limit), .bigintArray(lease.running),
             .bool(payload.wantsEvent), .bool(payload.wantsBody)]
        ).sorted(by: dueFirst("id")).compactMap { DeliveryJob(row: $0, payload: payload) }
    }

    func deliveryPayload(eventID: String, withBody: Bool) throws -> DeliveryPayload? {
        try c.queryOne(
            """
            SELECT e.json, e.authoritative, CASE WHEN $2 THEN j.body END AS body,
                   \(authoritativeStateColumn)
            FROM events e LEFT JOIN journal j ON j.id = e.journal_id WHERE e.id = $1
            """, [.text(eventID), .bool(withBody)]
        ).flatMap(DeliveryPayload.init(row:))
    }

    func settleDelivery(id: Int64, _ o: DeliveryOutcome) throws {
        try c.run(
            """
            UPDATE outbox SET state = $1, attempts = $2, next_attempt_at = $3, delivered_at = $4, last_status = $5, last_error = $6,
                              claimed_by = NULL, claimed_until = NULL
            WHERE id = $7 AND state = 'pending'
            """,
            [.text(o.state.rawValue), .int64(Int64(o.attempts)), .int64(o.nextAttemptAt), PostgresValue(o.deliveredAt),
             PostgresValue(o.status), PostgresValue(o.error), .int64(id)])
    }

    func deadLetterDeliveries(notTo configured: [String], error: String) throws -> Int {
        try c.run(
            """
            UPDATE outbox SET state = 'dead', last_error = $1, claimed_by = NULL, claimed_until = NULL
            WHERE state = 'pending' AND NOT (downstream = ANY ($2::text[]))
            """,
            [.text(error), .textArray(configured)])
    }

    func redeliver(_ selection: RedeliverySelection, now time: Int64) throws -> Int {
        let rearm = "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL, claimed_by = NULL, claimed_until = NULL"
        switch selection {
        case .eventID(let id):
            return try c.run(
                rearm + " WHERE event_id = $2 OR journal_id = (SELECT journal_id FROM events WHERE id = $2)", [.int64(time), .text(id)])
        case .range(let since, let until):
            return try c.run(rearm + " WHERE created_at >= $2 AND created_at < $3", [.int64(time), .int64(since), .int64(until)])
        case .deadLetters:
            return try c.run(rearm + " WHERE state = 'dead'", [.int64(time)])
        }
    }

    func deliveries(state: DeliveryState?, downstream: String?, eventID: String?, limit: Int) throws -> [Delivery] {
        try c.query(
            """
            SELECT id, downstream, event_id, journal_id, state, attempts, next_attempt_at, created_at, delivered_at, last_status, last_error
            FROM outbox WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR downstream = $2) AND ($3::text IS NULL OR event_id = $3)
            ORDER BY id LIMIT $4
            """, [PostgresValue(state?.rawValue), PostgresValue(downstream), PostgresValue(eventID), pgLimit(limit)]
        ).map(Delivery.init(row:))
    }

    func pendingDeliveries() throws -> [PendingDeliveries] {
        try c.query("SELECT downstream, COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox WHERE state = 'pending' GROUP BY downstream")
            .compactMap(PendingDeliveries.init(row:))
    }

    func deliveryCounts() throws -> [DeliveryState: Int] {
        stateCounts(try c.query("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state"), as: DeliveryState.self)
    }
}

/// `RETURNING` gives the claimed rows in no particular order: back into the order they are due in (the SQLite
/// store's `ORDER BY next_attempt_at, <id>`).
func dueFirst(_ id: String) -> (PostgresRow, PostgresRow) -> Bool {
    { a, b in
        let (x, y) = (a.int64("next_attempt_at") ?? 0, b.int64("next_attempt_at") ?? 0)
        return x != y ? x < y : (a.int64(id) ?? 0) < (b.int64(id) ?? 0)
    }
}
