internal import SQLite

extension SQLiteTransaction {
    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueDeliveries(downstream: String, at time: Int64, limit: Int, lease: Lease, payload: PayloadRead) throws -> [DeliveryJob] {
        try c.query(
            """
            SELECT o.id, o.downstream, o.attempts, o.event_id, o.journal_id, o.created_at,
                   e.json, e.authoritative, j.body,
                   \(authoritativeStateColumn)
            FROM outbox o
            LEFT JOIN events e ON ? AND e.id = o.event_id
            LEFT JOIN journal j ON ? AND j.id = e.journal_id
            WHERE o.state = 'pending' AND o.downstream = ? AND o.next_attempt_at <= ? AND o.id NOT IN (SELECT value FROM json_each(?))
            ORDER BY o.next_attempt_at, o.id LIMIT ?
            """,
            [.integer(payload.wantsEvent ? 1 : 0), .integer(payload.wantsBody ? 1 : 0), .text(downstream), .integer(time),
             idList(lease.running), limitValue(limit)]
        ).compactMap { DeliveryJob(row: $0, payload: payload) }
    }

    func deliveryPayload(eventID: String, withBody: Bool) throws -> DeliveryPayload? {
        try c.queryOne(
            """
            SELECT e.json, e.authoritative, CASE WHEN ? THEN j.body END AS body,
                   \(authoritativeStateColumn)
            FROM events e LEFT JOIN journal j ON j.id = e.journal_id WHERE e.id = ?
            """, [.integer(withBody ? 1 : 0), .text(eventID)]
        ).flatMap(DeliveryPayload.init(row:))
    }

    func settleDelivery(id: Int64, _ o: DeliveryOutcome) throws {
        try c.run(
            """
            UPDATE outbox SET state = ?, attempts = ?, next_attempt_at = ?, delivered_at = ?, last_status = ?, last_error = ?
            WHERE id = ? AND state = 'pending'
            """,
            [.text(o.state.rawValue), .integer(Int64(o.attempts)), .integer(o.nextAttemptAt), SQLiteValue(o.deliveredAt), SQLiteValue(o.status),
             SQLiteValue(o.error), .integer(id)])
    }

    func deadLetterDeliveries(notTo configured: [String], error: String) throws -> Int {
        let placeholders = configured.map { _ in "?" }.joined(separator: ", ")
        return try c.run(
            "UPDATE outbox SET state = 'dead', last_error = ? WHERE state = 'pending'"
                + (configured.isEmpty ? "" : " AND downstream NOT IN (\(placeholders))"),
            [.text(error)] + configured.map { .text($0) })
    }

    func redeliver(_ selection: RedeliverySelection, now time: Int64) throws -> Int {
        switch selection {
        case .eventID(let id):
            return try c.run(
                """
                UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL
                WHERE event_id = ? OR journal_id = (SELECT journal_id FROM events WHERE id = ?)
                """, [.integer(time), .text(id), .text(id)])
        case .range(let since, let until):
            return try c.run(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE created_at >= ? AND created_at < ?",
                [.integer(time), .integer(since), .integer(until)])
        case .deadLetters:
            return try c.run(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE state = 'dead'",
                [.integer(time)])
        }
    }

    func deliveries(state: DeliveryState?, downstream: String?, eventID: String?, limit: Int) throws -> [Delivery] {
        let s = SQLiteValue(state?.rawValue)
        return try c.query(
            """
            SELECT id, downstream, event_id, journal_id, state, attempts, next_attempt_at, created_at, delivered_at, last_status, last_error
            FROM outbox WHERE (? IS NULL OR state = ?) AND (? IS NULL OR downstream = ?) AND (? IS NULL OR event_id = ?) ORDER BY id LIMIT ?
            """, [s, s, SQLiteValue(downstream), SQLiteValue(downstream), SQLiteValue(eventID), SQLiteValue(eventID), limitValue(limit)]
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
