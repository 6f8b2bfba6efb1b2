internal import Canonical

/// `receipts` in the config (docs/configuration.md): how the verifyReceipt endpoint builds its own answers
/// (docs/operations.md, "Moving the receipt path").
public struct ReceiptSettings: Sendable, Hashable {
    /// A customer's history fetched from the App Store Server API answers without asking Apple again for this long;
    /// events journaled since (notifications, reconciliation) are laid over it.
    public var historyMaxAgeMillis: Int64 = 3_600_000
    /// How long one answer may wait for Apple (both calls, every page) before it is answered `21005` (retryable).
    public var fetchTimeoutMillis: Int64 = 10_000
    /// `shadow`: gateway answers built and compared at once, at most; beyond it a request is answered (with Apple's
    /// answer, as always) and its comparison skipped and counted.
    public var shadowConcurrency = 4
    /// Requests answered at once, at most (``ReceiptAdmission``); beyond it a request is answered `21005` with
    /// `is-retryable` at once. Also the number of outgoing transfers the receipt path may run at once for them.
    public var maxInFlight = 64
    /// Requests from one client address answered at once, at most (0: no bound per address).
    public var maxInFlightPerAddress = 32

    public init() {}

    static func parse(_ r: ConfigReader) throws(ConfigError) -> ReceiptSettings {
        var s = ReceiptSettings()
        // `0s` is a setting here (ask Apple for every request), where most durations must be positive.
        if let text = try r.string("history_max_age"), DurationText.milliseconds(text) == 0 {
            s.historyMaxAgeMillis = 0
        } else {
            s.historyMaxAgeMillis = try r.duration("history_max_age", s.historyMaxAgeMillis, example: "1h")
        }
        guard (0...86_400_000).contains(s.historyMaxAgeMillis) else {
            throw ConfigError(field: r.field("history_max_age"), "must be 0s…24h")
        }
        s.fetchTimeoutMillis = try r.duration("fetch_timeout", s.fetchTimeoutMillis, example: "10s")
        guard (1_000...60_000).contains(s.fetchTimeoutMillis) else {
            throw ConfigError(field: r.field("fetch_timeout"), "must be 1s…60s")
        }
        s.shadowConcurrency = try r.int("shadow_concurrency", 0...64, s.shadowConcurrency)
        s.maxInFlight = try r.int("max_in_flight", 1...4_096, s.maxInFlight)
        s.maxInFlightPerAddress = try r.int("max_in_flight_per_address", 0...4_096, s.maxInFlightPerAddress)
        guard s.maxInFlightPerAddress <= s.maxInFlight else {
            throw ConfigError(
                field: r.field("max_in_flight_per_address"),
                "must be at most max_in_flight (0: no bound)"
            )
        }
        return s
    }
}
