public import Canonical
public import Policy

/// Where a refund request's answer stands (docs/operations.md, "Refund requests"). `pending` is the only state a job
/// leaves; every other is final.
public enum ConsumptionState: String, Sendable, Hashable, CaseIterable, Codable {
    /// To ask the team's service, or to send the answer to Apple, at `next_attempt_at`.
    case pending
    /// Apple took the answer (202).
    case sent
    /// The team's service said not to answer (204).
    case declined
    /// The answer chosen says the customer did not consent: nothing is sent (Apple takes nothing without consent).
    case noConsent = "no_consent"
    /// The team's service gave no usable answer in time and the app has no `default`: nothing is sent.
    case unanswered
    /// Apple refused the answer for good (400, 404): a dead letter.
    case rejected
    /// The gateway refused to send the answer chosen — it breaks Apple's rules for the purchase's product, or the
    /// App Store Server API client could not make the request — so nothing reached Apple: a dead letter, the
    /// gateway's refusal and never Apple's (`last_error` says which rule).
    case gatewayRefused = "gateway_refused"
    /// The purchase is a group member's (`ASSIGNED`), for which Apple takes no consumption information: kept as it
    /// came, never asked or sent (`last_error` `assigned_transaction`).
    case assigned
    /// The deadline passed while the answer could not be sent (Apple unavailable, rate limited): a dead letter.
    case dead
    /// The deadline had passed before the gateway could start (a request recovered late, a gateway down for hours).
    case expired
}

/// Who chose the answer sent.
public enum ConsumptionAnswerSource: String, Sendable, Hashable, CaseIterable, Codable {
    /// The team's service (`consumption.ask_url`).
    case team
    /// The app's `consumption.default`.
    case `default`
}

/// A refund request whose answer is due: the request, and what was decided so far.
public struct ConsumptionJob: Sendable, Hashable {
    public var id: Int64
    public var request: ConsumptionRequest
    /// Requests made to the team's service so far.
    public var asks: Int
    /// Sends to Apple so far.
    public var sends: Int
    /// The answer chosen (Send Consumption Information's body, JSON), once chosen: it is kept so that a retry sends
    /// the same answer without asking again.
    public var answer: [UInt8]?
    public var answerSource: ConsumptionAnswerSource?
    /// The last attempt's failure and Apple's answer to it, kept when the deadline ends the job.
    public var lastError: String?
    public var appleStatus: Int?
    public var appleErrorCode: Int64?

    public init(
        id: Int64,
        request: ConsumptionRequest,
        asks: Int,
        sends: Int,
        answer: [UInt8]?,
        answerSource: ConsumptionAnswerSource?,
        lastError: String? = nil,
        appleStatus: Int? = nil,
        appleErrorCode: Int64? = nil
    ) {
        (self.id, self.request, self.asks, self.sends, self.answer, self.answerSource) = (
            id, request, asks, sends, answer, answerSource
        )
        (self.lastError, self.appleStatus, self.appleErrorCode) = (lastError, appleStatus, appleErrorCode)
    }
}

/// An attempt's outcome, written over the job's row.
public struct ConsumptionSettlement: Sendable, Hashable {
    public var id: Int64
    public var state: ConsumptionState
    public var asks: Int
    public var sends: Int
    /// When a pending job is due again.
    public var nextAttemptAt: Int64
    public var answer: [UInt8]?
    public var answerSource: ConsumptionAnswerSource?
    /// The answer's `refundPreference` (`DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`), for the report.
    public var refundPreference: String?
    /// When Apple took the answer.
    public var sentAt: Int64?
    /// Apple's HTTP status and `errorCode` of the last send.
    public var appleStatus: Int?
    public var appleErrorCode: Int64?
    /// The last failure's stable code (`ask_timeout`, `apple_unavailable`, …), nil once sent.
    public var lastError: String?

    public init(
        id: Int64,
        state: ConsumptionState,
        asks: Int,
        sends: Int,
        nextAttemptAt: Int64,
        answer: [UInt8]? = nil,
        answerSource: ConsumptionAnswerSource? = nil,
        refundPreference: String? = nil,
        sentAt: Int64? = nil,
        appleStatus: Int? = nil,
        appleErrorCode: Int64? = nil,
        lastError: String? = nil
    ) {
        (self.id, self.state, self.asks, self.sends, self.nextAttemptAt) = (id, state, asks, sends, nextAttemptAt)
        (self.answer, self.answerSource, self.refundPreference) = (answer, answerSource, refundPreference)
        (self.sentAt, self.appleStatus, self.appleErrorCode, self.lastError) = (
            sentAt, appleStatus, appleErrorCode, lastError
        )
    }
}

/// A refund request as an operator (or a test) looks at it.
public struct ConsumptionJobStatus: Sendable, Hashable, Codable {
    public var id: Int64
    public var eventID: String
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var transactionID: String
    public var reason: String?
    public var requestedAt: Int64
    public var deadlineAt: Int64
    public var state: ConsumptionState
    public var asks: Int
    public var sends: Int
    public var nextAttemptAt: Int64
    public var answerSource: ConsumptionAnswerSource?
    public var refundPreference: String?
    /// The answer sent (or to be sent), as JSON text.
    public var answer: String?
    public var sentAt: Int64?
    public var appleStatus: Int?
    public var appleErrorCode: Int64?
    public var lastError: String?
    /// Apple's decision seen since: `refund` or `refund_declined`.
    public var decision: String?
    public var decidedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id, reason, state, asks, sends, answer, decision
        case eventID = "event_id"
        case bundleID = "bundle_id"
        case environment
        case transactionID = "transaction_id"
        case requestedAt = "requested_at"
        case deadlineAt = "deadline_at"
        case nextAttemptAt = "next_attempt_at"
        case answerSource = "answer_source"
        case refundPreference = "refund_preference"
        case sentAt = "sent_at"
        case appleStatus = "apple_status"
        case appleErrorCode = "apple_error_code"
        case lastError = "last_error"
        case decidedAt = "decided_at"
    }
}

/// The refund requests of a window, counted (the report's "refund requests" section): one row per combination of
/// state, answer source, preference sent, whether Apple took it before the deadline, and Apple's decision since.
public struct RefundRequestCount: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var state: ConsumptionState
    public var answerSource: ConsumptionAnswerSource?
    public var refundPreference: String?
    /// Sent before the deadline (nil: not sent).
    public var inTime: Bool?
    public var decision: String?
    public var count: Int

    public init(
        bundleID: String,
        environment: AppStoreEnvironment,
        state: ConsumptionState,
        answerSource: ConsumptionAnswerSource?,
        refundPreference: String?,
        inTime: Bool?,
        decision: String?,
        count: Int
    ) {
        (self.bundleID, self.environment, self.state, self.answerSource, self.refundPreference) = (
            bundleID, environment, state, answerSource, refundPreference
        )
        (self.inTime, self.decision, self.count) = (inTime, decision, count)
    }
}
