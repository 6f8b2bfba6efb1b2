/// What reconciliation makes of a subscription whose stored state and Apple's signed state differ
/// (docs/operations.md, "Reconciliation"): the kind of the event that brings the stored state in line, from what
/// changed. Both are compared as ``OutcomeComparison`` compares the two paths, at the moment of the check.
public enum Reconciliation {
    /// nil when the two agree (the check produces nothing); else the kind and reason of the recovered event, from
    /// the most telling change: a revocation or its reversal, a renewal, billing retry or grace, an expiry, a plan
    /// change, an auto-renew switch — in that order — and `other` for a difference none of those names.
    public static func change(
        stored: OutcomeSnapshot,
        apple: OutcomeSnapshot,
        at time: Int64
    ) -> (kind: EventKind, reason: EventReason?)? {
        var stored = stored
        var apple = apple
        (stored.observedAt, apple.observedAt) = (time, time)
        let fields = OutcomeComparison.disagreements(v1: stored, v2: apple)
        guard !fields.isEmpty else { return nil }
        let storedEntitlement = OutcomeComparison.entitlement(stored, at: time).state
        let appleEntitlement = OutcomeComparison.entitlement(apple, at: time).state
        if apple.revocationDate != nil, stored.revocationDate == nil { return (.refund, nil) }
        if apple.revocationDate == nil, stored.revocationDate != nil { return (.refundReversed, nil) }
        if let a = apple.expiresDate, let s = stored.expiresDate, a > s.clampedAdding(OutcomeComparison.dateSlackMillis)
        {
            if apple.productID != nil, stored.productID != nil, apple.productID != stored.productID {
                return (.planChange, .upgrade)
            }
            return (.renewal, apple.inBillingRetry == false && stored.inBillingRetry == true ? .billingRecovery : .auto)
        }
        if appleEntitlement != storedEntitlement {
            switch appleEntitlement {
            case .gracePeriod: return (.renewalFailure, .gracePeriod)
            case .billingRetry: return (.renewalFailure, .billingRetry)
            case .expired where storedEntitlement == .gracePeriod: return (.gracePeriodExpired, nil)
            case .expired:
                return (
                    .expiration,
                    apple.inBillingRetry == true ? .billingRetry : (apple.autoRenew == false ? .voluntary : nil)
                )
            default: break
            }
        }
        if fields.contains("in_billing_retry") || fields.contains("grace_period_expires_date") {
            if apple.gracePeriodExpiresDate != nil { return (.renewalFailure, .gracePeriod) }
            if apple.inBillingRetry == true { return (.renewalFailure, .billingRetry) }
        }
        if fields.contains("product_id") { return (.planChange, .upgrade) }
        if fields.contains("auto_renew_product_id") { return (.planChange, nil) }
        if fields.contains("auto_renew"), let on = apple.autoRenew {
            return (.autoRenewChanged, on ? .enabled : .disabled)
        }
        return (.other, nil)
    }
}
