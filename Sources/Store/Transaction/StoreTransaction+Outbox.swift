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
        guard let attempt = o.attempt else { return }
        // The log: the attempt, then the oldest beyond the newest `keptPerDelivery` removed, in the outcome's
        // transaction. The attempt happened whatever became of the row meanwhile, so it is logged either way.
        try c.run(
            .logAttempt,
            [
                .int64(id), .int64(Int64(o.attempts)), .int64(attempt.startedAt), .int64(attempt.latencyMillis),
                StoreValue(o.status), StoreValue(o.error), .bytes(attempt.responseHead),
            ]
        )
        try c.run(.trimAttempts, [.int64(id), .int64(Int64(DeliveryAttempt.keptPerDelivery))])
    }

    func unredactedAttemptHeads(limit: Int) throws -> [(id: Int64, head: [UInt8])] {
        try c.query(.unredactedAttemptHeads, [.limit(limit)]).map { row in
            (try row.requiredInt64("id"), try row.nullableBytes("response_head") ?? [])
        }
    }

    /// The update of ``OutboxTransaction/markAttemptHeadsRedacted(_:rewritten:)``: each head that changed, then the
    /// mark of every row in one statement.
    func updateAttemptHeads(_ ids: [Int64], rewritten: [Int64: [UInt8]]) throws {
        for (id, head) in rewritten.sorted(by: { $0.key < $1.key }) {
            try c.run(.rewriteAttemptHead, [.bytes(head), .int64(id)])
        }
        guard !ids.isEmpty else { return }
        try c.run(.markAttemptsRedacted, [.ids(ids)])
    }

    func redeliver(eventID: String, downstream: String, now time: Int64) throws -> Int {
        try c.run(.redeliverEventTo, [.int64(time), .text(eventID), .text(downstream)])
    }

    func deliveryLog(eventID: String) throws -> [DeliveryLogEntry]? {
        guard let event = try c.queryOne(.eventJournal, [.text(eventID)]) else { return nil }
        let journalID = try event.nullableInt64("journal_id")
        return try c.query(.eventDeliveries, [.text(eventID), StoreValue(journalID)]).map { row in
            let delivery = try Delivery(row: row)
            let attempts = try c.query(
                .deliveryAttempts,
                [.int64(delivery.id), .limit(DeliveryAttempt.keptPerDelivery)]
            ).compactMap(LoggedAttempt.init(row:))
            return DeliveryLogEntry(delivery: delivery, attempts: attempts)
        }
    }

    func deliveryPage(
        downstream: String,
        state: DeliveryState,
        after cursor: DeliveryCursor,
        limit: Int
    ) throws -> [DeliveryLogEntry] {
        try c.query(
            state == .delivered ? .deliveredPage : .undeliveredPage,
            [.text(downstream), .text(state.rawValue), .int64(cursor.createdAt), .int64(cursor.id), .limit(limit)]
        ).map { row in
            DeliveryLogEntry(delivery: try Delivery(row: row), attempts: try LoggedAttempt(row: row).map { [$0] } ?? [])
        }
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

    /// An attempt logged ($7: the answer's head, capped and redacted by ``DeliveryAttempt``), marked a replay when an
    /// operator re-armed the row since it was queued.
    fileprivate static let logAttempt = SQL { d in
        """
        INSERT INTO delivery_attempts (outbox_id, attempt, started_at, latency_ms, status, error, response_head, replay, redacted)
        VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE((SELECT replayed_at IS NOT NULL FROM outbox WHERE id = $1), \(d.false)), true)
        """
    }
    /// Attempts logged before heads were redacted whose head could hold a secret, oldest first, on
    /// `delivery_attempts_unredacted`.
    fileprivate static let unredactedAttemptHeads = SQL { d in
        "SELECT id, response_head FROM delivery_attempts WHERE \(d.unredactedHead) ORDER BY id LIMIT $1"
    }
    fileprivate static let rewriteAttemptHead = SQL(
        "UPDATE delivery_attempts SET response_head = $1, redacted = true WHERE id = $2"
    )
    fileprivate static let markAttemptsRedacted = SQL { d in
        "UPDATE delivery_attempts SET redacted = true WHERE \(d.isIn("id", 1, "bigint"))"
    }
    /// The delivery's attempts older than its newest $2, on `delivery_attempts_outbox`.
    fileprivate static let trimAttempts = SQL(
        """
        DELETE FROM delivery_attempts WHERE outbox_id = $1
          AND id <= (SELECT id FROM delivery_attempts WHERE outbox_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)
        """
    )

    /// A re-arm is an operator's replay: `replayed_at` marks the attempts that follow it in the log.
    private static func rearm(_ d: Dialect, where condition: String) -> String {
        "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL, replayed_at = $1\(d.clearClaim) WHERE \(condition)"
    }

    fileprivate static let redeliverEvent = SQL { d in
        rearm(d, where: "event_id = $2 OR journal_id = (SELECT journal_id FROM events WHERE id = $2)")
    }
    /// The event's delivery to one downstream ($3), on the outbox's unique (downstream, event_id) and
    /// (downstream, journal_id) indexes.
    fileprivate static let redeliverEventTo = SQL { d in
        rearm(
            d,
            where: "downstream = $3 AND (event_id = $2 OR journal_id = (SELECT journal_id FROM events WHERE id = $2))"
        )
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
    fileprivate static let eventJournal = SQL("SELECT journal_id FROM events WHERE id = $1")

    /// The delivery's logged attempts, newest first, on `delivery_attempts_outbox`.
    fileprivate static let deliveryAttempts = SQL(
        "SELECT \(attemptColumns(of: "delivery_attempts")) FROM delivery_attempts WHERE outbox_id = $1 ORDER BY id DESC LIMIT $2"
    )
    /// A logged attempt's columns, named as ``LoggedAttempt/init(row:)`` reads them beside an outbox row's.
    private static func attemptColumns(of table: String) -> String {
        ["attempt", "started_at", "latency_ms", "status", "error", "response_head", "replay"]
            .map { "\(table).\($0) AS a_\($0)" }.joined(separator: ", ")
    }
    private static let outboxColumns = deliveryColumns.split(separator: ", ").map { "o.\($0)" }.joined(separator: ", ")

    /// The deliveries of event $1 and of its journal row $2. The outbox has no index of its own by event: its unique
    /// indexes (downstream, event_id) and (downstream, journal_id) are read once per downstream that has deliveries,
    /// the names walked on the same indexes one after the next (each a lookup, whatever the outbox holds).
    static let eventDeliveries = SQL(
        """
        WITH RECURSIVE names(downstream) AS (
            SELECT MIN(downstream) FROM outbox
            UNION ALL
            SELECT (SELECT MIN(n.downstream) FROM outbox n WHERE n.downstream > names.downstream) FROM names
            WHERE names.downstream IS NOT NULL
        )
        SELECT \(outboxColumns) FROM names JOIN outbox o ON o.downstream = names.downstream AND o.event_id = $1
        UNION ALL
        SELECT \(outboxColumns) FROM names JOIN outbox o ON o.downstream = names.downstream AND o.journal_id = $2
        ORDER BY id
        """
    )

    /// A page of one downstream's ($1) deliveries in state $2 after the cursor ($3, $4) in creation order, each with
    /// its newest attempt, on the partial index `states` names as it is written (so that the planner uses it): the
    /// index answers in order, reading the page's rows alone (and, for pending rows, the dead letters among them).
    private static func deliveryPage(states: String) -> SQL {
        SQL(
            """
            SELECT \(outboxColumns), \(attemptColumns(of: "a"))
            FROM outbox o
            LEFT JOIN delivery_attempts a ON a.id = (SELECT MAX(x.id) FROM delivery_attempts x WHERE x.outbox_id = o.id)
            WHERE \(states) AND o.state = $2 AND o.downstream = $1 AND o.created_at >= $3 AND (o.created_at > $3 OR o.id > $4)
            ORDER BY o.created_at, o.id LIMIT $5
            """
        )
    }
    /// On `outbox_delivered_created`.
    static let deliveredPage = deliveryPage(states: "o.state = 'delivered'")
    /// On `outbox_undelivered_created`.
    static let undeliveredPage = deliveryPage(states: "o.state <> 'delivered'")

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
