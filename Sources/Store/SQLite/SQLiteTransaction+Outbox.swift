internal import SQLite

extension SQLiteTransaction {
    /// Due rows of one downstream in the order they are due, on `outbox_pending` (the partial index of the pending
    /// rows), with their payload: the claim reads the rows it takes, not the queue.
    static let claimDueDeliveries = """
        SELECT o.id, o.downstream, o.attempts, o.event_id, o.journal_id, o.created_at,
               e.json, e.authoritative, j.body,
               \(authoritativeStateColumn)
        FROM outbox o
        LEFT JOIN events e ON ? AND e.id = o.event_id
        LEFT JOIN journal j ON ? AND j.id = e.journal_id
        WHERE o.state = 'pending' AND o.downstream = ? AND o.next_attempt_at <= ? AND o.id NOT IN (SELECT value FROM json_each(?))
        ORDER BY o.next_attempt_at, o.id LIMIT ?
        """

    // One process owns an SQLite store (`sharedByInstances` is false): the lease is not recorded.
    func claimDueDeliveries(
        downstream: String,
        at time: Int64,
        limit: Int,
        lease: Lease,
        payload: PayloadRead
    ) throws -> [DeliveryJob] {
        try c.query(
            Self.claimDueDeliveries,
            [
                .integer(payload.wantsEvent ? 1 : 0), .integer(payload.wantsBody ? 1 : 0), .text(downstream),
                .integer(time),
                StoreValue.ids(lease.running).sqlite, StoreValue.limit(limit).sqlite,
            ]
        ).map { try DeliveryJob(row: $0, payload: payload) }
    }
}

extension SQLiteTransaction {
    /// With `secure_delete` on, as a quarantine row's rewrite (``rewriteQuarantined(_:)``): the old heads' bytes are
    /// zeroed, not left in free space.
    func markAttemptHeadsRedacted(_ ids: [Int64], rewritten: [Int64: [UInt8]]) throws {
        try c.raw.withSecureDelete { try updateAttemptHeads(ids, rewritten: rewritten) }
    }
}
