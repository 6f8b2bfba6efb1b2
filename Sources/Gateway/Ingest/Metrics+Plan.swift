internal import ServiceKit
internal import Store

extension Metrics {
    /// Counts what downstreams' filters kept from being queued when a plan was carried out, and group members' refund
    /// requests it kept final.
    func countFiltered(_ done: PlanOutcome) {
        for (downstream, n) in done.filtered {
            increment(.deliveryFilteredTotal, ["downstream": downstream], by: Double(n))
        }
        for (bundle, n) in done.assignedRefundRequests {
            increment(.consumptionRequestsTotal, ["bundle": bundle, "state": "assigned"], by: Double(n))
        }
    }
}
