internal import Canonical
internal import Policy
internal import Store

/// When the two paths' views of a subscription are compared, and what the ledger records (docs/architecture.md,
/// "comparison rule"): the snapshots must have been observed within `tolerance` of each other, and a disagreement
/// between observations made at different times must survive refetching the older side before it counts.
enum ComparisonRule {
    /// Refetches a disagreement survives before the ledger records it: the older side once, then the other.
    static let maxConfirmations = 2

    /// What ``compareIfReady(_:tolerance:confirms:confirmDelay:at:in:)`` did.
    enum Comparison: String {
        /// A path has no snapshot yet.
        case waiting
        /// The snapshots were observed too far apart: the older side is fetched again first.
        case stale
        /// They disagree but were observed at different times: the older side is fetched again (after `confirmDelay`)
        /// before anything is recorded, since the subscription may have changed between the two observations.
        case unconfirmed
        case agree, disagree
    }

    /// Compares the stored snapshots of both paths when both exist and were observed within `tolerance`; when one is
    /// older, queues a fresh fetch of it instead. A disagreement between observations made at different times is
    /// recorded only once it has survived `maxConfirmations` refetches of the then older side (`confirms` is how many
    /// led here): two observations that straddle a renewal, a billing retry or an expiry are not a disagreement.
    @discardableResult
    static func compareIfReady(
        _ key: SubscriptionKey,
        tolerance: Int64,
        confirms: Int,
        confirmDelay: Int64,
        at time: Int64,
        in tx: any ComparisonTransaction
    ) throws -> Comparison {
        guard let v1 = try tx.snapshot(of: key, path: .v1), let v2 = try tx.snapshot(of: key, path: .v2) else {
            return .waiting
        }
        let older: Generation = v1.observedAt < v2.observedAt ? .v1 : .v2
        if v1.observedAt.clampedSubtracting(v2.observedAt).magnitude > UInt64(max(0, tolerance)) {
            try tx.enqueueFetch(
                FetchRequest(subscription: key, fetch: older, compare: true, confirms: confirms),
                at: time,
                due: nil
            )
            return .stale
        }
        let fields = OutcomeComparison.disagreements(v1: v1, v2: v2)
        if !fields.isEmpty, confirms < maxConfirmations, v1.observedAt != v2.observedAt {
            try tx.enqueueFetch(
                FetchRequest(subscription: key, fetch: older, compare: true, confirms: confirms + 1),
                at: time,
                due: time.clampedAdding(confirmDelay)
            )
            return .unconfirmed
        }
        let outcome: Comparison = fields.isEmpty ? .agree : .disagree
        try tx.recordComparison(
            LedgerEntry(
                subscription: key,
                comparedAt: time,
                outcome: fields.isEmpty ? .agree : .disagree,
                fields: fields,
                v1: v1,
                v2: v2
            )
        )
        return outcome
    }
}
