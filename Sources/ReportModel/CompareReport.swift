public import Store

/// The side-by-side report (docs/architecture.md, "Authority and comparison", `iap-gateway report`, `GET /admin/report`): per bundle and environment,
/// what each generation said, how often the two paths agree, where they do not, and whether the bundle is ready to
/// cut over under the stated rule. Built by `CompareLedger.report` (module Gateway), rendered by `ReportRenderer` (module Reports).
public struct CompareReport: Sendable, Hashable, Codable {
    public var generatedAt: Int64
    /// The window the counts cover (ms since the epoch).
    public var since: Int64
    public var until: Int64
    public var rule: ReadinessRule
    public var bundles: [BundleReport]

    public init(generatedAt: Int64, since: Int64, until: Int64, rule: ReadinessRule, bundles: [BundleReport]) {
        (self.generatedAt, self.since, self.until, self.rule, self.bundles) = (generatedAt, since, until, rule, bundles)
    }

    enum CodingKeys: String, CodingKey {
        case generatedAt = "generated_at"
        case since, until, rule, bundles
    }

    /// `agreements / pairs` as "99.6 %", rounded down to one decimal, so a rate never appears to meet a threshold it
    /// misses (249 of 250 is "99.6 %"); nil when nothing was compared. The verdict's reasons and every rendering of
    /// the report state rates this way.
    public static func percentText(_ agreements: Int, of pairs: Int) -> String? {
        guard pairs > 0 else { return nil }
        let tenths = Int64(agreements) * 1000 / Int64(pairs)  // integer arithmetic: exact, and rounds down
        return "\(tenths / 10).\(tenths % 10) %"
    }
}

/// When a bundle is ready: at least `minimumAgreementRate` agreement over at least `minimumPairs` pairs compared in
/// the last `windowMillis`, and no unexplained one-sided observation in that window.
public struct ReadinessRule: Sendable, Hashable, Codable {
    public var minimumAgreementRate: Double = 0.995
    public var minimumPairs: Int = 200
    public var windowMillis: Int64 = 7 * 86_400_000
    public var allowOneSided: Bool = false

    public init() {}

    /// The agreement threshold as the report states it: `99.5 %` (to the tenth, rounded — `0.995` is not exactly
    /// representable, so rounding down would say 99.4).
    public var thresholdText: String { "\((minimumAgreementRate * 1000).rounded() / 10) %" }

    /// The rule in words, as the report states it.
    public var text: String {
        let days = Double(windowMillis) / 86_400_000
        let dayText = days == days.rounded() ? "\(Int(days)) days" : "\(days) days"
        return "≥ \(thresholdText) agreement over ≥ \(minimumPairs) pairs in the last \(dayText)"
            + (allowOneSided ? "" : ", and no unexplained one-sided observations")
    }

    enum CodingKeys: String, CodingKey {
        case minimumAgreementRate = "minimum_agreement_rate"
        case minimumPairs = "minimum_pairs"
        case windowMillis = "window_ms"
        case allowOneSided = "allow_one_sided"
    }
}

public struct BundleReport: Sendable, Hashable, Codable {
    public var bundleID: String
    public var environment: String
    /// `v1` or `v2`: the generation downstream currently sees as authoritative.
    public var authority: String
    /// Events stored per source (`v1`, `v2`, `v2-api`) in the window.
    public var eventsBySource: [String: Int]
    public var pairs: Int
    public var agreements: Int
    /// agreements / pairs; nil when nothing was compared.
    public var agreementRate: Double?
    /// Field name (`entitlement`, `expires_date`, `product_id`, `auto_renew`, …) → how many pairs disagreed on it.
    public var disagreementsByField: [String: FieldDisagreements]
    public var oneSided: OneSided
    /// Pairs and agreements per UTC day, oldest first: the agreement rate over time.
    public var daily: [DayPoint]
    public var verdict: Verdict
    /// The rule, in words.
    public var rule: String
    /// Why the verdict is not `ready` (empty when it is).
    public var reasons: [String]
    /// Authority changes of this bundle and environment, oldest first.
    public var cutovers: [CutoverRecord]
    /// Events the recovery runs brought in the window, per day and mechanism, oldest first.
    public var recovered: [RecoveredDay]
    /// How each switch of Apple's notification version (`migrate`) ended, oldest first: its authority change is in
    /// ``cutovers`` (`origin: migrate`); a switch Apple was set back from is here alone.
    public var appleSwitches: [AppleSwitchEnd]
    /// The receipt path (docs/operations.md, "Moving the receipt path"): how verifyReceipt is answered, and Apple's
    /// answers compared with the gateway's in `shadow`, with a verdict of their own.
    public var receipts: ReceiptsSection?

    /// Apple's refund requests over the report's window (docs/operations.md, "Refund requests"); nil when the app
    /// does not answer them and none is stored.
    public var refundRequests: RefundRequestsSection?
    /// Group (multiseat) subscriptions (docs/operations.md, "Group subscriptions"); nil when the bundle has none.
    public var groups: GroupsSection?

    /// A bundle's group (multiseat) subscriptions: those whose period runs now and their seats, and the seat events
    /// of the report's window. Seats are V2's alone: none of it is compared with V1.
    public struct GroupsSection: Sendable, Hashable, Codable {
        /// Group subscriptions (their purchasers') whose current period has not ended.
        public var groups: Int
        /// Their seats in their current periods, added up.
        public var seats: Int
        /// Seat events stored in the window: seats added, seats reduced at renewal, seat refunds, unclaims.
        public var seatsAdded: Int
        public var seatsReduced: Int
        public var seatRefunds: Int
        public var unclaims: Int

        public init(groups: Int, seats: Int, seatsAdded: Int, seatsReduced: Int, seatRefunds: Int, unclaims: Int) {
            (self.groups, self.seats, self.seatsAdded, self.seatsReduced, self.seatRefunds, self.unclaims) = (
                groups, seats, seatsAdded, seatsReduced, seatRefunds, unclaims
            )
        }

        enum CodingKeys: String, CodingKey {
            case groups, seats, unclaims
            case seatsAdded = "seats_added"
            case seatsReduced = "seats_reduced"
            case seatRefunds = "seat_refunds"
        }
    }

    /// Apple's refund requests (CONSUMPTION_REQUEST) of a bundle and environment signed in the report's window: how
    /// many were answered in time, with which preference, and what Apple decided after each preference.
    public struct RefundRequestsSection: Sendable, Hashable, Codable {
        public var requests: Int
        /// Sent to Apple before the deadline.
        public var answeredInTime: Int
        /// State (`sent`, `declined`, `no_consent`, `unanswered`, `rejected`, `gateway_refused`, `dead`, `expired`,
        /// `pending`) → requests.
        public var byState: [String: Int]
        /// Who chose the answer sent (`team`, `default`) → requests.
        public var bySource: [String: Int]
        /// The preference sent (`DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`; `none`: an answer without one; `not_sent`:
        /// no answer reached Apple) → Apple's decisions since.
        public var outcomes: [String: Outcome]

        public struct Outcome: Sendable, Hashable, Codable {
            public var requests: Int
            /// REFUND: the refund was granted.
            public var refunded: Int
            /// REFUND_DECLINED.
            public var declined: Int
            /// No decision seen yet.
            public var undecided: Int
            public init(requests: Int = 0, refunded: Int = 0, declined: Int = 0, undecided: Int = 0) {
                (self.requests, self.refunded, self.declined, self.undecided) = (
                    requests, refunded, declined, undecided
                )
            }
        }

        public init(
            requests: Int,
            answeredInTime: Int,
            byState: [String: Int],
            bySource: [String: Int],
            outcomes: [String: Outcome]
        ) {
            (self.requests, self.answeredInTime, self.byState, self.bySource, self.outcomes) = (
                requests, answeredInTime, byState, bySource, outcomes
            )
        }

        enum CodingKeys: String, CodingKey {
            case requests
            case answeredInTime = "answered_in_time"
            case byState = "by_state"
            case bySource = "by_source"
            case outcomes
        }
    }

    /// The receipt comparison of a bundle and environment over the report's window, and its verdict.
    public struct ReceiptsSection: Sendable, Hashable, Codable {
        /// `apple`, `shadow` or `api`: how verifyReceipt is answered now.
        public var mode: String
        public var pairs: Int
        public var agreements: Int
        public var agreementRate: Double?
        /// Field (`status`, `expires_date`, `product_id`, `is_trial`, `cancellation_date`, `auto_renew`,
        /// `in_billing_retry`, `expiration_intent`) → pairs that disagreed on it, with examples.
        public var disagreementsByField: [String: FieldDisagreements]
        /// Subscriptions only Apple's answer listed, or only the gateway's.
        public var appleOnly: Int
        public var gatewayOnly: Int
        public var oneSidedExamples: [String]
        public var daily: [DayPoint]
        public var verdict: Verdict
        public var reasons: [String]

        public init(
            mode: String,
            pairs: Int,
            agreements: Int,
            disagreementsByField: [String: FieldDisagreements],
            appleOnly: Int,
            gatewayOnly: Int,
            oneSidedExamples: [String],
            daily: [DayPoint],
            verdict: Verdict,
            reasons: [String]
        ) {
            (self.mode, self.pairs, self.agreements, self.disagreementsByField) =
                (mode, pairs, agreements, disagreementsByField)
            agreementRate = pairs > 0 ? Double(agreements) / Double(pairs) : nil
            (self.appleOnly, self.gatewayOnly, self.oneSidedExamples, self.daily, self.verdict, self.reasons) =
                (appleOnly, gatewayOnly, oneSidedExamples, daily, verdict, reasons)
        }

        enum CodingKeys: String, CodingKey {
            case mode, pairs, agreements
            case agreementRate = "agreement_rate"
            case disagreementsByField = "disagreements_by_field"
            case appleOnly = "apple_only"
            case gatewayOnly = "gateway_only"
            case oneSidedExamples = "one_sided_examples"
            case daily, verdict, reasons
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(mode, forKey: .mode)
            try c.encode(pairs, forKey: .pairs)
            try c.encode(agreements, forKey: .agreements)
            try c.encode(agreementRate, forKey: .agreementRate)
            try c.encode(disagreementsByField, forKey: .disagreementsByField)
            try c.encode(appleOnly, forKey: .appleOnly)
            try c.encode(gatewayOnly, forKey: .gatewayOnly)
            try c.encode(oneSidedExamples, forKey: .oneSidedExamples)
            try c.encode(daily, forKey: .daily)
            try c.encode(verdict, forKey: .verdict)
            try c.encode(reasons, forKey: .reasons)
        }
    }

    /// A switch of Apple's notification version that ended: `done` (Apple and the authority on the target) or
    /// `reverted` (Apple set back, the authority unchanged), with what the switch said.
    public struct AppleSwitchEnd: Sendable, Hashable, Codable {
        public var at: Int64
        public var outcome: String
        public var detail: String?
        public init(at: Int64, outcome: String, detail: String?) {
            (self.at, self.outcome, self.detail) = (at, outcome, detail)
        }
    }

    public enum Verdict: String, Sendable, Hashable, Codable {
        case ready
        case notReady = "not_ready"
    }

    public struct FieldDisagreements: Sendable, Hashable, Codable {
        public var count: Int
        /// A few original transaction ids, to look at with `iap-gateway subscription`.
        public var examples: [String]
        public init(count: Int, examples: [String]) { (self.count, self.examples) = (count, examples) }
    }

    public struct OneSided: Sendable, Hashable, Codable {
        public var v1Only: Int
        public var v2Only: Int
        public var examples: [String]
        public init(v1Only: Int, v2Only: Int, examples: [String]) {
            (self.v1Only, self.v2Only, self.examples) = (v1Only, v2Only, examples)
        }
        enum CodingKeys: String, CodingKey {
            case v1Only = "v1_only"
            case v2Only = "v2_only"
            case examples
        }
    }

    /// Events recovered on one UTC day by one mechanism (docs/operations.md, "Reconciliation").
    public struct RecoveredDay: Sendable, Hashable, Codable {
        /// `YYYY-MM-DD` (UTC).
        public var day: String
        /// `history` or `reconciliation`.
        public var mechanism: String
        public var count: Int
        public init(day: String, mechanism: String, count: Int) {
            (self.day, self.mechanism, self.count) = (day, mechanism, count)
        }
    }

    public struct DayPoint: Sendable, Hashable, Codable {
        /// `YYYY-MM-DD` (UTC).
        public var day: String
        public var pairs: Int
        public var agreements: Int
        public init(day: String, pairs: Int, agreements: Int) {
            (self.day, self.pairs, self.agreements) = (day, pairs, agreements)
        }
    }

    public init(
        bundleID: String,
        environment: String,
        authority: String,
        eventsBySource: [String: Int],
        pairs: Int,
        agreements: Int,
        disagreementsByField: [String: FieldDisagreements],
        oneSided: OneSided,
        daily: [DayPoint],
        verdict: Verdict,
        rule: String,
        reasons: [String],
        cutovers: [CutoverRecord],
        recovered: [RecoveredDay] = [],
        appleSwitches: [AppleSwitchEnd] = [],
        receipts: ReceiptsSection? = nil,
        refundRequests: RefundRequestsSection? = nil,
        groups: GroupsSection? = nil
    ) {
        self.bundleID = bundleID
        self.environment = environment
        self.authority = authority
        self.eventsBySource = eventsBySource
        self.pairs = pairs
        self.agreements = agreements
        self.agreementRate = pairs > 0 ? Double(agreements) / Double(pairs) : nil
        self.disagreementsByField = disagreementsByField
        self.oneSided = oneSided
        self.daily = daily
        self.verdict = verdict
        self.rule = rule
        self.reasons = reasons
        self.cutovers = cutovers
        self.recovered = recovered
        self.appleSwitches = appleSwitches
        self.receipts = receipts
        self.refundRequests = refundRequests
        self.groups = groups
    }

    enum CodingKeys: String, CodingKey {
        case bundleID = "bundle_id"
        case environment, authority
        case eventsBySource = "events_by_source"
        case pairs, agreements
        case agreementRate = "agreement_rate"
        case disagreementsByField = "disagreements_by_field"
        case oneSided = "one_sided"
        case daily
        case verdict, rule, reasons, cutovers, recovered
        case appleSwitches = "apple_switches"
        case receipts
        case refundRequests = "refund_requests"
        case groups
    }

    // `agreement_rate` is always present (null when nothing was compared).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bundleID, forKey: .bundleID)
        try c.encode(environment, forKey: .environment)
        try c.encode(authority, forKey: .authority)
        try c.encode(eventsBySource, forKey: .eventsBySource)
        try c.encode(pairs, forKey: .pairs)
        try c.encode(agreements, forKey: .agreements)
        try c.encode(agreementRate, forKey: .agreementRate)
        try c.encode(disagreementsByField, forKey: .disagreementsByField)
        try c.encode(oneSided, forKey: .oneSided)
        try c.encode(daily, forKey: .daily)
        try c.encode(verdict, forKey: .verdict)
        try c.encode(rule, forKey: .rule)
        try c.encode(reasons, forKey: .reasons)
        try c.encode(cutovers, forKey: .cutovers)
        try c.encode(recovered, forKey: .recovered)
        try c.encode(appleSwitches, forKey: .appleSwitches)
        try c.encode(receipts, forKey: .receipts)
        try c.encode(refundRequests, forKey: .refundRequests)
        try c.encodeIfPresent(groups, forKey: .groups)
    }
}
