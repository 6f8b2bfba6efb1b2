internal import Canonical

// The claim (`claimDueDeliveries`) differs by database: each store's `*Transaction+Outbox.swift`.
extension SQLTransaction {
    func deliveryPayload(eventID: String, withBody: Bool) throws -> DeliveryPayload? {
        try c.queryOne(.deliveryPayload, [.text(eventID), .bool(withBody)]).flatMap(DeliveryPayload.init(row:))
    }

    func settleDelivery(id: Int64, _ o: DeliveryOutcome) throws {
        try c.run(
            .settleDelivery,
            [
                .text(o.state.rawValue), .int64(Int64(o.attempts)), .int64(o.nextAttemptAt), StoreValue(o.deliveredAt),
                StoreValue(o.status),
                StoreValue(o.error), .int64(id),
            ]
        )
    }

    func deadLetterDeliveries(notTo configured: [String], error: String) throws -> Int {
        try c.run(.deadLetterDeliveries, [.text(error), .texts(configured)])
    }

    func redeliver(_ selection: RedeliverySelection, now time: Int64) throws -> Int {
        switch selection {
        case .eventID(let id): try c.run(.redeliverEvent, [.int64(time), .text(id)])
        case .range(let since, let until): try c.run(.redeliverRange, [.int64(time), .int64(since), .int64(until)])
        case .deadLetters: try c.run(.redeliverDead, [.int64(time)])
        }
    }

    func redeliverPage(
        since: Int64,
        until: Int64,
        after: (createdAt: Int64, id: Int64),
        limit: Int,
        now time: Int64
    ) throws -> (count: Int, last: (createdAt: Int64, id: Int64)?) {
        let range: [StoreValue] = [.int64(since), .int64(until), .int64(after.createdAt), .int64(after.id)]
        let page = try c.query(.redeliveryPage, range + [.limit(limit)])
        guard let last = page.last, let lastAt = last.int64("created_at"), let lastID = last.int64("id") else {
            return (0, nil)
        }
        let n = try c.run(.redeliverPage, [.int64(time)] + range + [.int64(lastAt), .int64(lastID)])
        return (n, page.count < limit ? nil : (lastAt, lastID))
    }

    func redeliverDeadLetters(limit: Int, now time: Int64) throws -> Int {
        try c.run(.redeliverDeadPage, [.int64(time), .limit(limit)])
    }

    func deliveries(state: DeliveryState?, downstream: String?, eventID: String?, limit: Int) throws -> [Delivery] {
        // Pending rows and dead letters (the operators' listing) on their partial indexes, which a statement uses only
        // when it names the state as they do; delivered rows (nearly all of them) and all rows: the table in order.
        let sql: SQL =
            switch state {
            case .pending?: .pendingDeliveryList
            case .dead?: .deadDeliveryList
            case .delivered?: .deliveredDeliveryList
            case nil: .deliveries
            }
        return try c.query(sql, [StoreValue(downstream), StoreValue(eventID), .limit(limit)]).map(Delivery.init(row:))
    }

    func pendingDeliveries() throws -> [PendingDeliveries] {
        try c.query(.pendingDeliveries, []).map(PendingDeliveries.init(row:))
    }

    func deliveryCounts() throws -> [DeliveryState: Int] {
        try stateCounts(c.query(.deliveryCounts, []), as: DeliveryState.self)
    }

    /// Pending and dead rows are counted on the index (few); delivered ones — nearly every row — are the rest of the
    /// newest id, since outbox rows are never deleted.
    func deliveryCountsByNewestID() throws -> [DeliveryState: Int] {
        var counts: [DeliveryState: Int] = [:]
        for (state, sql) in [(DeliveryState.pending, SQL.pendingDeliveryCount), (.dead, .deadDeliveryCount)] {
            let n = try c.queryOne(sql, [])?.int("n") ?? 0
            if n > 0 { counts[state] = n }
        }
        let rows = try c.queryOne(.newestDelivery, [])?.int("n") ?? 0
        let delivered = rows - counts.values.reduce(0, +)
        if delivered > 0 { counts[.delivered] = delivered }
        return counts
    }
}

extension SQL {
    fileprivate static let deliveryPayload = SQL(
        """
        SELECT e.json, e.authoritative, CASE WHEN $2 THEN j.body END AS body,
               \(authoritativeStateColumn)
        FROM events e LEFT JOIN journal j ON j.id = e.journal_id WHERE e.id = $1
        """
    )

    /// A row no longer pending (replayed or dead-lettered meanwhile) is left alone.
    fileprivate static let settleDelivery = SQL { d in
        """
        UPDATE outbox SET state = $1, attempts = $2, next_attempt_at = $3, delivered_at = $4, last_status = $5, last_error = $6\(d.clearClaim)
        WHERE id = $7 AND state = 'pending'
        """
    }

    fileprivate static let deadLetterDeliveries = SQL { d in
        "UPDATE outbox SET state = 'dead', last_error = $1\(d.clearClaim) WHERE state = 'pending' AND \(d.notIn("downstream", 2, "text"))"
    }

    private static func rearm(_ d: Dialect, where condition: String) -> String {
        "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL\(d.clearClaim) WHERE \(condition)"
    }

    fileprivate static let redeliverEvent = SQL { d in
        rearm(d, where: "event_id = $2 OR journal_id = (SELECT journal_id FROM events WHERE id = $2)")
    }
    fileprivate static let redeliverRange = SQL { d in rearm(d, where: "created_at >= $2 AND created_at < $3") }
    fileprivate static let redeliverDead = SQL { d in rearm(d, where: "state = 'dead'") }

    /// A page of the deliveries created in [$1, $2) after the cursor ($3, $4), in creation order (`outbox_created`).
    static let redeliveryPage = SQL(
        """
        SELECT created_at, id FROM outbox
        WHERE created_at >= $1 AND created_at < $2 AND created_at >= $3 AND (created_at > $3 OR id > $4)
        ORDER BY created_at, id LIMIT $5
        """
    )
    /// Re-arms that page: from the cursor ($4, $5) to its last row ($6, $7).
    fileprivate static let redeliverPage = SQL { d in
        rearm(
            d,
            where: """
                created_at >= $2 AND created_at < $3 AND created_at >= $4 AND (created_at > $4 OR id > $5)
                  AND created_at <= $6 AND (created_at < $6 OR id <= $7)
                """
        )
    }
    fileprivate static let redeliverDeadPage = SQL { d in
        rearm(d, where: "id IN (SELECT id FROM outbox WHERE state = 'dead' ORDER BY id LIMIT $2)")
    }

    fileprivate static let deliveryColumns =
        "id, downstream, event_id, journal_id, state, attempts, next_attempt_at, created_at, delivered_at, last_status, last_error"
    /// The rows in `state` (a literal: `nil` for every row), filtered by downstream ($1) and event ($2), in id order.
    /// The pending rows are read from their index and sorted (`+id`: SQLite would otherwise walk the whole table in
    /// id order to find the few pending ones); the dead letters' index is in id order already.
    private static func deliveryList(state: DeliveryState?) -> SQL {
        SQL(
            """
            SELECT \(deliveryColumns) FROM outbox
            WHERE \(state.map { "state = '\($0.rawValue)' AND " } ?? "")($1::text IS NULL OR downstream = $1) AND ($2::text IS NULL OR event_id = $2)
            ORDER BY \(state == .pending ? "+id" : "id") LIMIT $3
            """
        )
    }
    fileprivate static let deliveries = deliveryList(state: nil)
    static let pendingDeliveryList = deliveryList(state: .pending)
    static let deadDeliveryList = deliveryList(state: .dead)
    fileprivate static let deliveredDeliveryList = deliveryList(state: .delivered)

    fileprivate static let pendingDeliveries = SQL(
        "SELECT downstream, COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox WHERE state = 'pending' GROUP BY downstream"
    )

    fileprivate static let deliveryCounts = SQL("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")
    static let pendingDeliveryCount = SQL("SELECT COUNT(*) AS n FROM outbox WHERE state = 'pending'")
    static let deadDeliveryCount = SQL("SELECT COUNT(*) AS n FROM outbox WHERE state = 'dead'")
    fileprivate static let newestDelivery = SQL("SELECT COALESCE(MAX(id), 0) AS n FROM outbox")
}
