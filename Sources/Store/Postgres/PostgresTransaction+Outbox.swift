internal import Postgres
internal import Rows

extension PostgresTransaction {
    /// Claims the due rows for `lease` (several instances share the store): rows locked by another instance's claim
    /// in progress are skipped (`FOR UPDATE SKIP LOCKED`), rows claimed by another owner whose lease has not run out
    /// are not due, and the owner's own claims are due to it again at once.
    /// The payloads come from the same statement: the claimed rows joined with their events (and the notification's
    /// body only for `.eventAndBody`).
    func claimDueDeliveries(
        downstream: String,
        at time: Int64,
        limit: Int,
        lease: Lease,
        payload: PayloadRead
    ) throws -> [DeliveryJob] {
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
            [
                .text(lease.owner), .int64(lease.until), .text(downstream), .int64(time),
                StoreValue.limit(limit).postgres, .bigintArray(lease.running),
                .bool(payload.wantsEvent), .bool(payload.wantsBody),
            ]
        ).sorted(by: dueFirst("id")).map { try DeliveryJob(row: $0, payload: payload) }
    }
}

/// `RETURNING` gives the claimed rows in no particular order: back into the order they are due in (the SQLite
/// store's `ORDER BY next_attempt_at, <id>`).
func dueFirst<Row: ResultRow>(_ id: String) -> (Row, Row) -> Bool {
    { a, b in
        let (x, y) = (a.int64("next_attempt_at") ?? 0, b.int64("next_attempt_at") ?? 0)
        return x != y ? x < y : (a.int64(id) ?? 0) < (b.int64(id) ?? 0)
    }
}

extension PostgresTransaction {
    /// The space the old heads leave is erased by `eraseFreedSpace(of: .deliveryAttempts)` (`VACUUM FULL
    /// delivery_attempts`).
    func markAttemptHeadsRedacted(_ ids: [Int64], rewritten: [Int64: [UInt8]]) throws {
        try updateAttemptHeads(ids, rewritten: rewritten)
    }
}
