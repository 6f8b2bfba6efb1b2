internal import Canonical
internal import Policy

// The claim (`claimDueConsumptionJobs`) differs by database: each store's `*Transaction+Consumption.swift`.
extension SQLTransaction {
    /// Queues the responder's job for a refund request, unless its event has one (a notification seen again); a group
    /// member's request is kept final at once (``ConsumptionState/assigned``). True when the job is new.
    func insertConsumptionJob(_ r: ConsumptionRequest, journalID: Int64?, now: Int64) throws -> Bool {
        let state: ConsumptionState = r.assigned ? .assigned : .pending
        return try c.run(
            .insertConsumptionJob,
            [
                .text(r.eventID), StoreValue(journalID), .text(r.bundleID), .text(r.environment.rawValue),
                .text(r.transactionID), StoreValue(r.originalTransactionID), StoreValue(r.productType),
                StoreValue(r.reason), .int64(r.requestedAt), .int64(r.deadlineAt), .int64(now),
                .text(state.rawValue), StoreValue(r.assigned ? "assigned_transaction" : nil),
            ]
        ) > 0
    }

    /// Records Apple's decision on the purchase's refund request, the first one seen.
    func recordRefundDecision(_ d: RefundDecision) throws {
        try c.run(
            .recordRefundDecision,
            [
                .text(d.kind.rawValue), .int64(d.at), .text(d.bundleID), .text(d.environment.rawValue),
                .text(d.transactionID),
            ]
        )
    }

    func settleConsumptionJob(_ s: ConsumptionSettlement, now: Int64) throws {
        try c.run(
            .settleConsumptionJob,
            [
                .text(s.state.rawValue), .int64(Int64(s.asks)), .int64(Int64(s.sends)), .int64(s.nextAttemptAt),
                StoreValue(s.answer.map { String(decoding: $0, as: UTF8.self) }), StoreValue(s.answerSource?.rawValue),
                StoreValue(s.refundPreference), StoreValue(s.sentAt), StoreValue(s.appleStatus),
                StoreValue(s.appleErrorCode), StoreValue(s.lastError), .int64(now), .int64(s.id),
            ]
        )
    }

    func consumptionJobs(state: ConsumptionState?, limit: Int) throws -> [ConsumptionJobStatus] {
        // One statement per filter, each on its own index.
        let rows =
            if let state {
                try c.query(.consumptionJobsInState, [.text(state.rawValue), .limit(limit)])
            } else {
                try c.query(.consumptionJobsNewest, [.limit(limit)])
            }
        return try rows.map(ConsumptionJobStatus.init(row:))
    }

    func consumptionJob(eventID: String) throws -> ConsumptionJobStatus? {
        try c.queryOne(.consumptionJobOfEvent, [.text(eventID)]).map(ConsumptionJobStatus.init(row:))
    }

    func pendingConsumptionJobs() throws -> Int {
        try c.queryOne(.pendingConsumptionJobs, [])?.int("n") ?? 0
    }

    func refundRequestCounts(since: Int64, until: Int64) throws -> [RefundRequestCount] {
        try c.query(.refundRequestCounts, [.int64(since), .int64(until)]).map { row in
            RefundRequestCount(
                bundleID: try row.requiredString("bundle_id"),
                environment: try row.environment("environment"),
                state: try row.required("state", as: ConsumptionState.self),
                answerSource: try row.nullableString("answer_source").flatMap(ConsumptionAnswerSource.init(rawValue:)),
                refundPreference: try row.nullableString("refund_preference"),
                inTime: try row.nullableInt("in_time").map { $0 == 1 },
                decision: try row.nullableString("decision"),
                count: try row.requiredInt("n")
            )
        }
    }
}

extension SQL {
    /// What a claim reads of a job.
    static let consumptionJobColumns = """
        id, event_id, bundle_id, environment, transaction_id, original_transaction_id, product_type, reason,
        requested_at, deadline_at, asks, sends, answer, answer_source, last_error, apple_status, apple_error_code
        """

    fileprivate static let statusColumns = """
        id, event_id, bundle_id, environment, transaction_id, reason, requested_at, deadline_at, state, asks, sends,
        next_attempt_at, answer_source, refund_preference, answer, sent_at, apple_status, apple_error_code, last_error,
        decision, decided_at
        """

    fileprivate static let insertConsumptionJob = SQL(
        """
        INSERT INTO consumption_jobs (event_id, journal_id, bundle_id, environment, transaction_id, original_transaction_id,
            product_type, reason, requested_at, deadline_at, next_attempt_at, created_at, updated_at, state, last_error)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $11, $12, $13)
        ON CONFLICT (event_id) DO NOTHING
        """
    )

    fileprivate static let recordRefundDecision = SQL(
        """
        UPDATE consumption_jobs SET decision = $1, decided_at = $2
        WHERE bundle_id = $3 AND environment = $4 AND transaction_id = $5 AND decision IS NULL
        """
    )

    fileprivate static let settleConsumptionJob = SQL { d in
        """
        UPDATE consumption_jobs SET state = $1, asks = $2, sends = $3, next_attempt_at = $4, answer = $5,
            answer_source = $6, refund_preference = $7, sent_at = $8, apple_status = $9, apple_error_code = $10,
            last_error = $11, updated_at = $12\(d.clearClaim)
        WHERE id = $13
        """
    }

    fileprivate static let consumptionJobsNewest = SQL(
        "SELECT \(statusColumns) FROM consumption_jobs ORDER BY id DESC LIMIT $1"
    )
    fileprivate static let consumptionJobsInState = SQL(
        "SELECT \(statusColumns) FROM consumption_jobs WHERE state = $1 ORDER BY id DESC LIMIT $2"
    )
    fileprivate static let consumptionJobOfEvent = SQL(
        "SELECT \(statusColumns) FROM consumption_jobs WHERE event_id = $1"
    )
    fileprivate static let pendingConsumptionJobs = SQL(
        "SELECT COUNT(*) AS n FROM consumption_jobs WHERE state = 'pending'"
    )
    fileprivate static let refundRequestCounts = SQL(
        """
        SELECT bundle_id, environment, state, answer_source, refund_preference,
            CASE WHEN sent_at IS NULL THEN NULL WHEN sent_at <= deadline_at THEN 1 ELSE 0 END AS in_time,
            decision, COUNT(*) AS n
        FROM consumption_jobs WHERE requested_at >= $1 AND requested_at < $2
        GROUP BY bundle_id, environment, state, answer_source, refund_preference, in_time, decision
        ORDER BY bundle_id, environment, state, answer_source, refund_preference, in_time, decision
        """
    )
}

extension ConsumptionJob {
    init(row: some StoreRow) throws {
        self.init(
            id: try row.requiredInt64("id"),
            request: ConsumptionRequest(
                eventID: try row.requiredString("event_id"),
                bundleID: try row.requiredString("bundle_id"),
                environment: try row.environment("environment"),
                transactionID: try row.requiredString("transaction_id"),
                originalTransactionID: try row.nullableString("original_transaction_id"),
                productType: try row.nullableString("product_type"),
                reason: try row.nullableString("reason"),
                requestedAt: try row.requiredInt64("requested_at"),
                deadlineAt: try row.requiredInt64("deadline_at")
            ),
            asks: try row.requiredInt("asks"),
            sends: try row.requiredInt("sends"),
            answer: try row.nullableString("answer").map { Array($0.utf8) },
            answerSource: try row.nullableString("answer_source").flatMap(ConsumptionAnswerSource.init(rawValue:)),
            lastError: try row.nullableString("last_error"),
            appleStatus: try row.nullableInt("apple_status"),
            appleErrorCode: try row.nullableInt64("apple_error_code")
        )
    }
}

extension ConsumptionJobStatus {
    init(row: some StoreRow) throws {
        self.init(
            id: try row.requiredInt64("id"),
            eventID: try row.requiredString("event_id"),
            bundleID: try row.requiredString("bundle_id"),
            environment: try row.environment("environment"),
            transactionID: try row.requiredString("transaction_id"),
            reason: try row.nullableString("reason"),
            requestedAt: try row.requiredInt64("requested_at"),
            deadlineAt: try row.requiredInt64("deadline_at"),
            state: try row.required("state", as: ConsumptionState.self),
            asks: try row.requiredInt("asks"),
            sends: try row.requiredInt("sends"),
            nextAttemptAt: try row.requiredInt64("next_attempt_at"),
            answerSource: try row.nullableString("answer_source").flatMap(ConsumptionAnswerSource.init(rawValue:)),
            refundPreference: try row.nullableString("refund_preference"),
            answer: try row.nullableString("answer"),
            sentAt: try row.nullableInt64("sent_at"),
            appleStatus: try row.nullableInt("apple_status"),
            appleErrorCode: try row.nullableInt64("apple_error_code"),
            lastError: try row.nullableString("last_error"),
            decision: try row.nullableString("decision"),
            decidedAt: try row.nullableInt64("decided_at")
        )
    }
}
