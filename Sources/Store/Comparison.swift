public import Canonical

/// The receipt kept for a subscription, as a V1 fetch reads it: what it asks verifyReceipt about.
public struct StoredReceipt: Equatable, Hashable, Sendable {
    public var receipt: String
    /// The name of the shared secret that verified it.
    public var secretName: String
    public var updatedAt: Int64
    public init(receipt: String, secretName: String, updatedAt: Int64) {
        (self.receipt, self.secretName, self.updatedAt) = (receipt, secretName, updatedAt)
    }
}

/// A fetch of one path's view of a subscription (a comparison job).
public struct FetchJob: Sendable, Hashable {
    public var id: Int64
    public var subscription: SubscriptionKey
    /// The path asked: verifyReceipt (v1) or the App Store Server API (v2).
    public var fetch: Generation
    /// When V2 is authoritative for a bundle Apple still sends V1 for: the V1 event the V2 path's answer stands in for.
    public var v1EventID: String?
    public var authority: Generation?
    /// The bundle is compared: the answer becomes a snapshot and, with the other path's, a ledger row.
    public var compare: Bool
    public var attempts: Int
    public var createdAt: Int64
    /// Refetches made to confirm a disagreement before this one.
    public var confirms: Int
    public var state: JobState
    public var nextAttemptAt: Int64
    public var lastError: String?

    public var bundleID: String { subscription.bundleID }
    public var environment: AppStoreEnvironment { subscription.environment }
    public var originalTransactionID: String { subscription.originalTransactionID }
}

/// One row of the comparison ledger.
public struct LedgerEntry: Sendable, Hashable {
    public var subscription: SubscriptionKey
    public var comparedAt: Int64
    public var outcome: CompareOutcome
    /// The fields that disagreed (empty when they agree, and for one-sided rows).
    public var fields: [String]
    public var v1: OutcomeSnapshot?
    public var v2: OutcomeSnapshot?
    public init(
        subscription: SubscriptionKey,
        comparedAt: Int64,
        outcome: CompareOutcome,
        fields: [String],
        v1: OutcomeSnapshot?,
        v2: OutcomeSnapshot?
    ) {
        (self.subscription, self.comparedAt, self.outcome, self.fields, self.v1, self.v2) = (
            subscription, comparedAt, outcome, fields, v1, v2
        )
    }
}

/// One authority change, as the cutover log keeps it.
public struct CutoverRecord: Sendable, Hashable, Codable {
    public var at: Int64
    public var bundleID: String
    public var environment: String
    public var from: String
    public var to: String
    /// The admin token's name or the OS user.
    public var who: String
    public var reason: String?
    /// The verdict when it happened, and whether it was forced past a `not_ready` one.
    public var verdict: String
    public var forced: Bool
    /// `cutover` (the gateway's authority alone) or `migrate` (the last step of switching Apple's version).
    public var origin: String

    public init(
        at: Int64,
        bundleID: String,
        environment: String,
        from: String,
        to: String,
        who: String,
        reason: String?,
        verdict: String,
        forced: Bool,
        origin: String = "cutover"
    ) {
        (
            self.at, self.bundleID, self.environment, self.from, self.to, self.who, self.reason, self.verdict,
            self.forced, self.origin
        ) =
            (at, bundleID, environment, from, to, who, reason, verdict, forced, origin)
    }

    enum CodingKeys: String, CodingKey {
        case at
        case bundleID = "bundle_id"
        case environment, from, to, who, reason, verdict, forced, origin
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(at, forKey: .at)
        try c.encode(bundleID, forKey: .bundleID)
        try c.encode(environment, forKey: .environment)
        try c.encode(from, forKey: .from)
        try c.encode(to, forKey: .to)
        try c.encode(who, forKey: .who)
        try c.encode(reason, forKey: .reason)
        try c.encode(verdict, forKey: .verdict)
        try c.encode(forced, forKey: .forced)
        try c.encode(origin, forKey: .origin)
    }
}

/// A bundle's ledger over a time range, counted in the store (index range counts: nothing proportional to the
/// number of pairs is held in memory).
public struct LedgerTally: Sendable, Hashable {
    /// Rows per outcome.
    public var outcomes: [CompareOutcome: Int] = [:]
    /// Agreements and disagreements per UTC day (the day's first millisecond), oldest first; days without a pair are
    /// left out.
    public var daily: [Day] = []
    /// Disagreements per set of disagreeing fields (`fields` as the ledger stores it: comma-separated).
    public var fieldSets: [String: Int] = [:]

    public struct Day: Sendable, Hashable {
        public var start: Int64
        public var agreements: Int
        public var disagreements: Int
        public init(start: Int64, agreements: Int, disagreements: Int) {
            (self.start, self.agreements, self.disagreements) = (start, agreements, disagreements)
        }
    }

    public init() {}
}

/// One ledger row as the report's examples read it, and the place a page of them stops.
public struct LedgerExample: Sendable, Hashable {
    public var id: Int64
    public var comparedAt: Int64
    public var originalTransactionID: String
    /// The disagreeing fields (empty for agreements and one-sided rows).
    public var fields: [String]
    public init(id: Int64, comparedAt: Int64, originalTransactionID: String, fields: [String]) {
        (self.id, self.comparedAt, self.originalTransactionID, self.fields) = (
            id, comparedAt, originalTransactionID, fields
        )
    }
}
