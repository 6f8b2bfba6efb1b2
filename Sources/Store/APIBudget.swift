public import Canonical

/// One bucket of the App Store Server API budget that every instance on a PostgreSQL store shares
/// (docs/operations.md, "Apple's rate limits"): Apple counts calls per app, endpoint and environment.
public struct APIBudgetBucket: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    /// The endpoint in the gateway's words (`transaction_history`, …).
    public var endpoint: String

    public init(bundleID: String, environment: AppStoreEnvironment, endpoint: String) {
        (self.bundleID, self.environment, self.endpoint) = (bundleID, environment, endpoint)
    }
}

/// How a shared bucket fills, in billionths of a turn: whole integers, so the server's arithmetic is exact.
public struct APIBudgetRefill: Sendable, Hashable {
    /// A whole turn, in the bucket's unit.
    public static let turn: Int64 = 1_000_000_000

    /// Billionths of a turn gathering per millisecond (at least 1).
    public var perMilli: Int64
    /// The most that may gather (at least one turn).
    public var capacity: Int64

    /// `perSecond` turns a second, at most `capacity` turns gathered.
    public init(perSecond: Double, capacity: Double) {
        perMilli = max(1, Int64((perSecond * Double(Self.turn) / 1000).rounded(.down)))
        self.capacity = max(Self.turn, Int64((capacity * Double(Self.turn)).rounded(.down)))
    }

    /// Milliseconds for one turn to gather (rounded up).
    public var turnMillis: Int64 { (Self.turn + perMilli - 1) / perMilli }
}

/// What a lease took from a shared bucket.
public struct APIBudgetLease: Sendable, Hashable {
    /// Turns this instance may spend (0…asked).
    public var turns: Int
    /// The earliest time (ms since the epoch) the bucket holds a whole turn again, as far as the store knows.
    public var nextTurnAt: Int64
    /// Apple's `Retry-After` of the last 429 on the bucket (by any instance); 0 when none.
    public var pausedUntil: Int64

    public init(turns: Int, nextTurnAt: Int64, pausedUntil: Int64) {
        (self.turns, self.nextTurnAt, self.pausedUntil) = (turns, nextTurnAt, pausedUntil)
    }

    /// The lease from the bucket's row as the lease left it: `tokens` (billionths) as of `updatedAt`, filling at
    /// `refill`. The next turn gathers after `updatedAt`, and never before the pause ends.
    public init(turns: Int, tokens: Int64, updatedAt: Int64, pausedUntil: Int64, refill: APIBudgetRefill) {
        let missing = max(0, APIBudgetRefill.turn - tokens)
        let gathered = updatedAt.addingReportingOverflow((missing + refill.perMilli - 1) / refill.perMilli)
        let next = gathered.overflow ? Int64.max : gathered.partialValue
        self.init(turns: turns, nextTurnAt: max(next, pausedUntil), pausedUntil: pausedUntil)
    }
}

/// A shared bucket as stored (``APIBudgetTransaction/apiBudget(_:)``).
public struct APIBudgetState: Sendable, Hashable {
    /// Billionths of a turn gathered as of `updatedAt`.
    public var tokens: Int64
    public var updatedAt: Int64
    public var pausedUntil: Int64
    /// Turns leased since the row was made, by every instance.
    public var leased: Int64
}
