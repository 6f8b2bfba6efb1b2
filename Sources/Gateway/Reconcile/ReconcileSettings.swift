internal import Canonical
package import ServiceKit

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

extension ReconcileSettings: ConfigSection {
    package static let key = "reconcile"
    package static let members: [(path: String, members: Set<String>)] = [
        (
            "",
            [
                "every", "expiring_within", "silent_for", "history_sweep", "history_overlap", "history_lag",
                "history_first_window",
                "requests_per_hour", "alert_after",
            ]
        )
    ]

    /// `reconcile`: the schedules, the history sweep's windows and the request budget.
    package static func parse(_ reconcile: ConfigReader) throws(ConfigError) -> ReconcileSettings {
        var c = ReconcileSettings()
        /// A schedule's period, or nil for `"off"`.
        func period(_ key: String, _ current: Int64?) throws(ConfigError) -> Int64? {
            guard let text = try reconcile.string(key) else { return current }
            return text == "off" ? nil : try reconcile.duration(key, 0, example: "1h, or \"off\"")
        }
        func duration(_ key: String, _ current: Int64) throws(ConfigError) -> Int64 {
            try reconcile.duration(key, current, example: "48h")
        }
        let defaults = c
        c.everyMillis = try period("every", defaults.everyMillis)
        c.historySweepMillis = try period("history_sweep", defaults.historySweepMillis)
        c.expiringWithinMillis = try duration("expiring_within", defaults.expiringWithinMillis)
        c.silentForMillis = try duration("silent_for", defaults.silentForMillis)
        c.historyOverlapMillis = try duration("history_overlap", defaults.historyOverlapMillis)
        c.historyFirstWindowMillis = try duration("history_first_window", defaults.historyFirstWindowMillis)
        if let lag = try reconcile.string("history_lag") {
            // 0s is allowed (the sweep reaches up to now); more than a day would hold back every recovery that long.
            guard let ms = DurationText.milliseconds(lag), ms <= maxHistoryLagMillis else {
                throw ConfigError(
                    field: reconcile.field("history_lag"),
                    "must be a duration from 0s to 1d, such as 10m"
                )
            }
            c.historyLagMillis = ms
        }
        c.requestsPerHour = try reconcile.int("requests_per_hour", 1...1_000_000, defaults.requestsPerHour)
        c.alertAfter = try reconcile.int("alert_after", 1...1_000_000, defaults.alertAfter)
        return c
    }
}
