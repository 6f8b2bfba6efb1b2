/// The subscription's access state after an event, computed from dates and flags — never from the notification
/// type, so a mislabelled or surprising notification cannot grant or remove access on its own.
public struct Entitlement: Sendable, Hashable, Codable {
    public struct State: WireString {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Paid (or trial) period running: access until `until` (nil for a purchase that never expires).
        public static let active = Self(rawValue: "active")
        /// Renewal failed, Apple's billing grace period runs: access until `until` (the grace end).
        public static let gracePeriod = Self(rawValue: "grace_period")
        /// Renewal failed, no grace left, Apple still retrying: no access, may recover.
        public static let billingRetry = Self(rawValue: "billing_retry")
        /// Ended: no access.
        public static let expired = Self(rawValue: "expired")
        /// Refunded or revoked (family sharing): no access.
        public static let revoked = Self(rawValue: "revoked")
    }

    public var state: State
    /// Milliseconds since the epoch at which the current access ends; nil when there is no access or no end.
    public var until: Int64?

    public init(state: State, until: Int64?) {
        (self.state, self.until) = (state, until)
    }

    /// The state at `time` (ms) from the facts Apple signed or answered:
    /// 1. a revocation date → `revoked` (a refund or family revocation removes access whatever the dates say);
    /// 2. no expiry date → `active` with no end (non-consumables, consumables, lifetime purchases);
    /// 3. expiry after `time` → `active` until the expiry;
    /// 4. grace period ending after `time` → `grace_period` until the grace end;
    /// 5. Apple still retrying billing → `billing_retry`;
    /// 6. otherwise → `expired`.
    public static func compute(
        expiresDate: Int64?,
        revocationDate: Int64?,
        gracePeriodExpiresDate: Int64?,
        inBillingRetry: Bool?,
        at time: Int64
    ) -> Entitlement {
        if revocationDate != nil { return Entitlement(state: .revoked, until: nil) }
        guard let expiresDate else { return Entitlement(state: .active, until: nil) }
        if expiresDate > time { return Entitlement(state: .active, until: expiresDate) }
        if let grace = gracePeriodExpiresDate, grace > time { return Entitlement(state: .gracePeriod, until: grace) }
        if inBillingRetry == true { return Entitlement(state: .billingRetry, until: nil) }
        return Entitlement(state: .expired, until: nil)
    }

    /// What this entitlement becomes at a later `time` if nothing else happens: a period that has ended is
    /// `expired`, a grace period that has ended leaves Apple retrying (`billing_retry`); the rest stays as it is.
    public func projected(at time: Int64) -> Entitlement {
        guard let until, until <= time else { return self }
        switch state {
        case .active: return Entitlement(state: .expired, until: nil)
        case .gracePeriod: return Entitlement(state: .billingRetry, until: nil)
        default: return self
        }
    }

    /// True when the state grants access.
    public var grantsAccess: Bool { state == .active || state == .gracePeriod }

    // Always encode `until`, as null when absent: consumers see one stable shape.
    private enum CodingKeys: String, CodingKey { case state, until }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(state, forKey: .state)
        try c.encode(until, forKey: .until)
    }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        state = try c.decode(State.self, forKey: .state)
        until = try c.decodeIfPresent(Int64.self, forKey: .until)
    }
}
