internal import Canonical
public import ServiceKit

/// `receipts` in the config (docs/configuration.md): how the verifyReceipt endpoint builds its own answers
/// (docs/operations.md, "Moving the receipt path").
public struct ReceiptSettings: Sendable, Hashable, ConfigSection {
    /// A customer's history fetched from the App Store Server API answers without asking Apple again for this long;
    /// events journaled since (notifications, reconciliation) are laid over it.
    public var historyMaxAgeMillis: Int64 = 3_600_000
    /// How long one answer may wait for Apple (both calls, every page) before it is answered `21005` (retryable).
    public var fetchTimeoutMillis: Int64 = 10_000
    /// Past ``historyMaxAgeMillis``, how long an answer waits for its customer's refresh before the stored history
    /// answers; 0 (the default): at once, the refresh going on in the background, behind the requests in Apple's
    /// budget. With ``historyMaxAgeMillis`` 0 (histories not kept for answers) every request waits for its fetch.
    public var staleWaitMillis: Int64 = 0
    /// `shadow`: gateway answers built and compared at once, at most; beyond it a request is answered (with Apple's
    /// answer, as always) and its comparison skipped and counted.
    public var shadowConcurrency = 4
    /// Requests answered at once, at most (``ReceiptAdmission``); beyond it a request is answered `21005` with
    /// `is-retryable` at once. Also the number of outgoing transfers the receipt path may run at once for them.
    public var maxInFlight = 64
    /// Requests from one client address answered at once, at most (0: no bound per address).
    public var maxInFlightPerAddress = 32
    /// Requests waiting for a customer's history from Apple at once, at most (`nil`: half of ``maxInFlight``); beyond
    /// it a request is answered at once — from the stored history when there is one, else `21005` with its customer
    /// queued (``fetchQueue``) — so that requests waiting on Apple's budget never take every place from customers
    /// whose history is stored (docs/operations.md, "The receipt path at scale").
    public var maxWaitingForApple: Int { maxWaitingForAppleSetting ?? maxInFlight / 2 }
    /// `max_waiting_for_apple` as configured.
    public var maxWaitingForAppleSetting: Int?
    /// Fetches that go on after the request that started them was answered `21005` (they were keeping pages when it
    /// gave up), at most, per process; beyond it such a fetch stops, its pages kept for the next request. 0: none.
    public var backgroundFetches = 4
    /// Customers queued for a fetch that no request waits for, at most (docs/operations.md, "The receipt path at
    /// scale"): a customer without a stored history whose request found no turn in Apple's budget, a stale history's
    /// refresh, a shadow comparison skipped; each started as a background place (``backgroundFetches``) frees up.
    /// Beyond it a customer is dropped (counted), and the next request asks again. 0: none queued.
    public var fetchQueue = 10_000
    /// The longest one fetch runs, in the background included (Apple's `Retry-After` pauses count); then it stops,
    /// its pages kept.
    public var backgroundFetchTimeoutMillis: Int64 = 300_000
    /// Calls to Apple for one customer in an hour, at most, shared by the instances of a store; beyond it the request
    /// is answered from the stored history when there is one, else `21005` (retryable), without asking Apple.
    public var customerCallsPerHour = 200

    public init() {}

    package static let key = "receipts"
    package static let members: [(path: String, members: Set<String>)] = [
        (
            "",
            [
                "history_max_age", "fetch_timeout", "shadow_concurrency", "max_in_flight", "max_in_flight_per_address",
                "background_fetches", "background_fetch_timeout", "customer_calls_per_hour", "stale_wait",
                "fetch_queue",
                "max_waiting_for_apple",
            ]
        )
    ]

    package static func parse(_ r: ConfigReader) throws(ConfigError) -> ReceiptSettings {
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
        if let text = try r.string("stale_wait"), DurationText.milliseconds(text) == 0 {
            s.staleWaitMillis = 0
        } else {
            s.staleWaitMillis = try r.duration("stale_wait", s.staleWaitMillis, example: "500ms")
        }
        guard (0...s.fetchTimeoutMillis).contains(s.staleWaitMillis) else {
            throw ConfigError(field: r.field("stale_wait"), "must be 0s…fetch_timeout")
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
        if r.object["max_waiting_for_apple"] != nil {
            s.maxWaitingForAppleSetting = try r.int(
                "max_waiting_for_apple",
                0...Int64(s.maxInFlight),
                s.maxInFlight / 2
            )
        }
        s.backgroundFetches = try r.int("background_fetches", 0...256, s.backgroundFetches)
        s.fetchQueue = try r.int("fetch_queue", 0...1_000_000, s.fetchQueue)
        s.backgroundFetchTimeoutMillis = try r.duration(
            "background_fetch_timeout",
            s.backgroundFetchTimeoutMillis,
            example: "5m"
        )
        guard (s.fetchTimeoutMillis...3_600_000).contains(s.backgroundFetchTimeoutMillis) else {
            throw ConfigError(field: r.field("background_fetch_timeout"), "must be fetch_timeout…1h")
        }
        s.customerCallsPerHour = try r.int("customer_calls_per_hour", 1...100_000, s.customerCallsPerHour)
        return s
    }
}
