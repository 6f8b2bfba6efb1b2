internal import Canonical
public import HTTPClient
import Synchronization
internal import WireJSON

/// `alerts.webhook` (docs/operations.md, "Alerts"): one signed JSON (Standard Webhooks, like a webhook downstream's)
/// per operational event — a delivery dead-lettered; a start that dead-lettered the deliveries of downstreams no
/// longer configured. Sent off the delivery path, each tried a few times with backoff, at most ``maxPending`` waiting
/// (beyond that an alert is dropped and counted): the dead letters themselves, durable in the store and in
/// `iapgw_delivery_dead_total`, stay the record; this is the nudge.
public final class AlertWebhook: Sendable {
    /// One operational event, as the JSON body says it.
    package struct Alert: Encodable, Sendable {
        /// `delivery.dead_lettered`, `deliveries.unconfigured` or `consumption.dead_lettered` (a refund request left
        /// unanswered: Apple refused the answer, or the deadline passed).
        package var type: String
        /// When it happened (ms since the epoch).
        package var at: Int64
        package var downstream: String?
        package var eventID: String?
        package var attempts: Int?
        package var error: String?
        /// `deliveries.unconfigured`: how many were dead-lettered.
        package var count: Int?
        /// `consumption.dead_lettered`: the app and the purchase.
        package var bundleID: String?
        package var transactionID: String?

        package init(
            type: String,
            at: Int64,
            downstream: String? = nil,
            eventID: String? = nil,
            attempts: Int? = nil,
            error: String? = nil,
            count: Int? = nil,
            bundleID: String? = nil,
            transactionID: String? = nil
        ) {
            (self.type, self.at, self.downstream, self.eventID, self.attempts) = (
                type, at, downstream, eventID, attempts
            )
            (self.error, self.count, self.bundleID, self.transactionID) = (error, count, bundleID, transactionID)
        }

        enum CodingKeys: String, CodingKey {
            case type, at, downstream, attempts, error, count
            case eventID = "event_id"
            case bundleID = "bundle_id"
            case transactionID = "transaction_id"
        }
    }

    package static let maxPending = 100
    package static let attempts = 3

    package let url: String
    package let signer: WebhookSigner
    package let transport: any HTTPTransport
    package let now: @Sendable () -> Int64
    package let metrics: Metrics
    /// The wait before the second attempt; it doubles.
    package let retryDelay: Duration
    private let pending = Atomic<Int>(0)
    private let sequence = Atomic<Int64>(0)

    public init(
        url: String,
        signer: WebhookSigner,
        transport: any HTTPTransport,
        now: @escaping @Sendable () -> Int64,
        metrics: Metrics,
        retryDelay: Duration = .seconds(1)
    ) {
        (self.url, self.signer, self.transport, self.now, self.metrics) = (url, signer, transport, now, metrics)
        self.retryDelay = retryDelay
    }

    /// Sends `alert` in the background; returns at once.
    package func send(_ alert: Alert) {
        guard pending.add(1, ordering: .relaxed).newValue <= Self.maxPending else {
            pending.subtract(1, ordering: .relaxed)
            metrics.increment(.alertsTotal, ["outcome": "dropped"])
            return
        }
        // A stable id per alert of this process: the receiver drops the copy a retry sends.
        let id = "alert-\(alert.at)-\(sequence.add(1, ordering: .relaxed).newValue)"
        let body = JSONOutput.encode(alert)
        Task.detached { [self] in
            defer { pending.subtract(1, ordering: .relaxed) }
            var delay = retryDelay
            for attempt in 1...Self.attempts {
                let headers = signer.jsonHeaders(id: id, timestamp: now() / 1000, body: body)
                let request = HTTPRequest(method: .post, url: url, headers: headers, body: body, timeoutMillis: 5_000)
                if let r = try? await transport.send(request), (200..<300).contains(r.status) {
                    metrics.increment(.alertsTotal, ["outcome": "sent"])
                    return
                }
                guard attempt < Self.attempts else { break }
                try? await Task.sleep(for: delay)
                delay *= 2
            }
            metrics.increment(.alertsTotal, ["outcome": "failed"])
        }
    }
}
