package import ServiceKit

/// The metrics of the consumption responder (Apple's refund requests).
extension Metric {
    package static let refundRequests: [Metric] = [
        .consumptionRequestsTotal, .consumptionAsksTotal, .consumptionSendsTotal, .consumptionDeadTotal,
        .consumptionJobsPending,
    ]

    package static let consumptionRequestsTotal = counter(
        "iapgw_consumption_requests_total",
        "Refund requests settled, by bundle and state (sent, declined, no_consent, unanswered, rejected, gateway_refused, dead, expired)"
    )
    package static let consumptionAsksTotal = counter(
        "iapgw_consumption_asks_total",
        "Asks to the team's service for a refund request's answer, by bundle and outcome"
    )
    package static let consumptionSendsTotal = counter(
        "iapgw_consumption_sends_total",
        "Send Consumption Information calls to Apple, by bundle and outcome (accepted, retry, rejected, gateway_refused)"
    )
    package static let consumptionDeadTotal = counter(
        "iapgw_consumption_dead_total",
        "Refund requests left unanswered against the team's wish (rejected by Apple, refused by the gateway, past the deadline), by bundle and reason: alert on any"
    )
    package static let consumptionJobsPending = gauge(
        "iapgw_consumption_jobs_pending",
        "Refund requests waiting for an answer to be asked or sent"
    )
}
