/// `reconcile` in the config (docs/configuration.md): when and how much the gateway asks Apple for what its
/// notifications did not bring (docs/operations.md, "Reconciliation"). Both mechanisms are on by default for the
/// apps that have the credentials they need.
public struct ReconcileSettings: Sendable, Hashable {
    /// How often each app's silent subscriptions near their expiry are checked; nil (`"off"`): never.
    public var everyMillis: Int64? = 3_600_000
    /// A subscription is checked when its stored expiry lies within this much of now (either side: one that just
    /// expired may have renewed unseen).
    public var expiringWithinMillis: Int64 = 48 * 3_600_000
    /// …and nothing changed its stored state for this long; it is then not checked again for as long.
    public var silentForMillis: Int64 = 24 * 3_600_000
    /// How often each app's notification history is swept; nil (`"off"`): never.
    public var historySweepMillis: Int64? = 3_600_000
    /// Each sweep starts this long before the previous one ended: notifications Apple lists late are still seen.
    public var historyOverlapMillis: Int64 = 3_600_000
    /// A sweep's window ends this long before now (`reconcile.history_lag`): a notification Apple is delivering right
    /// now arrives live rather than being taken from the history first (and counted as missed). 0 to
    /// ``maxHistoryLagMillis`` (docs/configuration.md says why 10 minutes).
    public var historyLagMillis: Int64 = 10 * 60_000
    /// The first sweep of an app looks back this far.
    public var historyFirstWindowMillis: Int64 = 24 * 3_600_000
    /// Apple requests per app and hour, across instances (each run spends at most its share of the hour).
    public var requestsPerHour = 1_000
    /// An app whose runs recovered at least this many events over the last day raises the silence alert.
    public var alertAfter = 3
    public init() {}

    /// The longest `history_lag`: a day. Every notification the sweep recovers comes back at least this late.
    public static let maxHistoryLagMillis: Int64 = 86_400_000

    /// The most Apple requests one run of `periodMillis` may make.
    func budget(periodMillis: Int64) -> Int {
        let share = Double(requestsPerHour) * Double(periodMillis) / 3_600_000
        return max(1, min(Int(share.rounded(.down)), 1_000_000))
    }
}
