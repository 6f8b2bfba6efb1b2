/// Field-by-field comparison of the two paths' outcome snapshots of one subscription (docs/architecture.md, "comparison rule").
///
/// The entitlement of both is recomputed at the later of the two observation times, so two paths observed a few
/// minutes apart around an expiry still compare the same moment. A fact one path does not report at all (V1 receipts
/// have no `is_in_billing_retry_period` before 2019, say) is not held against the other; revocation and grace are
/// compared as present or absent, since their absence is itself a statement (a V2-only refund is a disagreement).
public enum OutcomeComparison {
    /// The fields compared, in report order.
    public static let fields = [
        "entitlement", "expires_date", "product_id", "auto_renew", "auto_renew_product_id", "in_billing_retry",
        "grace_period_expires_date", "revocation_date",
    ]

    /// Dates within this many ms are equal (V1 and V2 carry the same millisecond values; this only absorbs rounding
    /// of seconds-precision sources).
    public static let dateSlackMillis: Int64 = 1_000

    /// The names of the fields on which the two snapshots disagree; empty when they agree.
    public static func disagreements(v1: OutcomeSnapshot, v2: OutcomeSnapshot) -> [String] {
        let at = max(v1.observedAt, v2.observedAt)
        var out: [String] = []
        if entitlement(v1, at: at).state != entitlement(v2, at: at).state { out.append("entitlement") }
        if !sameDate(v1.expiresDate, v2.expiresDate, absentIsValue: false) { out.append("expires_date") }
        if !sameIfBothKnown(v1.productID, v2.productID) { out.append("product_id") }
        if !sameIfBothKnown(v1.autoRenew, v2.autoRenew) { out.append("auto_renew") }
        if !sameIfBothKnown(v1.autoRenewProductID, v2.autoRenewProductID) { out.append("auto_renew_product_id") }
        if !sameIfBothKnown(v1.inBillingRetry, v2.inBillingRetry) { out.append("in_billing_retry") }
        if !sameDate(v1.gracePeriodExpiresDate, v2.gracePeriodExpiresDate, absentIsValue: true) {
            out.append("grace_period_expires_date")
        }
        if !sameDate(v1.revocationDate, v2.revocationDate, absentIsValue: true) { out.append("revocation_date") }
        return out
    }

    static func entitlement(_ s: OutcomeSnapshot, at time: Int64) -> Entitlement {
        Entitlement.compute(
            expiresDate: s.expiresDate,
            revocationDate: s.revocationDate,
            gracePeriodExpiresDate: s.gracePeriodExpiresDate,
            inBillingRetry: s.inBillingRetry,
            at: time
        )
    }

    static func sameIfBothKnown<T: Equatable>(_ a: T?, _ b: T?) -> Bool {
        guard let a, let b else { return true }
        return a == b
    }

    /// With `absentIsValue`, "no date" is a statement (not revoked, not in grace) and must match; otherwise an
    /// absent date is unknown.
    static func sameDate(_ a: Int64?, _ b: Int64?, absentIsValue: Bool) -> Bool {
        switch (a, b) {
        case (let a?, let b?): return a.clampedSubtracting(b).magnitude <= UInt64(max(0, dateSlackMillis))
        case (nil, nil): return true
        default: return !absentIsValue  // one side has a date, the other none: unknown, unless absence is a statement
        }
    }
}

extension OutcomeSnapshot {
    /// The snapshot a canonical event's facts amount to (a V2 notification's signed data, observed at its date).
    public init(event e: CanonicalEvent, source: EventSource, observedAt: Int64) {
        self.init(
            source: source,
            bundleID: e.bundleID,
            environment: e.environment,
            originalTransactionID: e.originalTransactionID ?? "",
            productID: e.productID,
            transactionID: e.transactionID,
            expiresDate: e.expiresDate,
            revocationDate: e.revocationDate,
            gracePeriodExpiresDate: e.gracePeriodExpiresDate,
            autoRenew: e.autoRenew,
            autoRenewProductID: e.autoRenewProductID,
            inBillingRetry: e.inBillingRetry,
            expirationIntent: e.expirationIntent,
            observedAt: observedAt
        )
    }
}
