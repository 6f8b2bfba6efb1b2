/// The metrics of the budget of App Store Server API calls (``AppleAPIBudget``).
extension Metric {
    package static let appleAPI: [Metric] = [
        .appleAPICallsTotal, .appleAPIBudgetWaitsTotal, .appleAPIRateLimitedTotal, .appleAPIPausedSecondsTotal,
        .appleAPIBudgetLeasesTotal, .appleAPIBudgetLedgerFailuresTotal,
    ]

    package static let appleAPICallsTotal = counter(
        "iapgw_apple_api_calls_total",
        "App Store Server API requests the budget let go, by endpoint and environment"
    )
    package static let appleAPIBudgetWaitsTotal = counter(
        "iapgw_apple_api_budget_waits_total",
        "App Store Server API calls that found no turn at once in the budget, by endpoint, priority (request, background) and outcome (granted; expired: none before the call's deadline, budget_exhausted)"
    )
    package static let appleAPIRateLimitedTotal = counter(
        "iapgw_apple_api_rate_limited_total",
        "HTTP 429 answers of the App Store Server API, by endpoint"
    )
    package static let appleAPIPausedSecondsTotal = counter(
        "iapgw_apple_api_paused_seconds_total",
        "Seconds an endpoint of an app was held for every caller by Apple's Retry-After, by endpoint"
    )
    static let appleAPIBudgetLeasesTotal = counter(
        "iapgw_apple_api_budget_leases_total",
        "Leases of turns from the budget every instance on a PostgreSQL store shares, by endpoint and outcome (turns; empty: the shared bucket had none yet)"
    )
    static let appleAPIBudgetLedgerFailuresTotal = counter(
        "iapgw_apple_api_budget_store_failures_total",
        "Leases and pauses of the shared budget the store failed, by endpoint and operation (lease, pause): no call beyond the turns leased already"
    )
}
