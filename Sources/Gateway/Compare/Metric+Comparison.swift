internal import ServiceKit

/// The metrics of the comparison of the two paths and of the authority.
extension Metric {
    static let comparison: [Metric] = [
        .compareFetchesTotal, .compareFetchFailuresTotal, .compareComparisonsTotal, .compareOneSidedTotal,
        .compareJobsPending, .authoritySilent,
    ]

    static let compareFetchesTotal = counter(
        "iapgw_compare_fetches_total",
        "Fetches of one path's view for a comparison, by path"
    )
    static let compareFetchFailuresTotal = counter(
        "iapgw_compare_fetch_failures_total",
        "Failed comparison fetches, by path and code"
    )
    static let compareComparisonsTotal = counter(
        "iapgw_compare_comparisons_total",
        "Comparisons, by result: agree, disagree, unconfirmed (refetching to confirm), stale (refetching the older side)"
    )
    static let compareOneSidedTotal = counter(
        "iapgw_compare_one_sided_total",
        "Subscriptions one path did not know after the grace window, by side"
    )
    static let compareJobsPending = gauge("iapgw_compare_jobs_pending", "Comparison fetches waiting")
    static let authoritySilent = gauge(
        "iapgw_authority_silent",
        "1 while the authoritative path is silent and the other is not"
    )
}
