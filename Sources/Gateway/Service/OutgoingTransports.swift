public import HTTPClient

/// The gateway's outgoing transfers, by purpose (docs/architecture.md, "Outgoing transfers"): each purpose has slots
/// of its own over one transport, so a purpose whose peer hangs or floods holds only its own slots, and no purpose
/// can take another's. A request waits for a slot of its purpose at most its own deadline.
public struct OutgoingTransports: Sendable {
    /// Deliveries, one set per downstream (`downstreams[].concurrency` slots each).
    public let deliveries: [String: GatedTransport]
    /// Calls a public request waits for: `/verifyReceipt` forwarded to Apple, and customers' histories from the App
    /// Store Server API, those that go on in the background included (`receipts.max_in_flight` +
    /// `receipts.shadow_concurrency` + `receipts.background_fetches` slots).
    public let receipts: GatedTransport
    /// Background calls to Apple: verifyReceipt for V1 notifications, comparison and recovery fetches, refund answers
    /// sent, App Store Connect (`limits.verify_receipt_concurrency` + `compare.concurrency` + 4 slots).
    public let apple: GatedTransport
    /// Refund requests' asks to the team's service (``askSlots``).
    public let asks: GatedTransport
    /// `alerts.webhook`: one slot, each request cut to ``alertTimeoutMillis``.
    public let alerts: GatedTransport

    public static let askSlots = 4
    public static let alertTimeoutMillis = 5_000

    public init(base: any HTTPTransport, config: GatewayConfig) {
        deliveries = Dictionary(
            config.downstreams.map { ($0.name, GatedTransport(base, slots: $0.concurrency)) },
            uniquingKeysWith: { a, _ in a }
        )
        let r = config.receiptSettings
        receipts = GatedTransport(base, slots: r.maxInFlight + r.shadowConcurrency + r.backgroundFetches)
        apple = GatedTransport(
            base,
            slots: config.limits.verifyReceiptConcurrency + config.compareSettings.concurrency + 4
        )
        asks = GatedTransport(base, slots: Self.askSlots)
        alerts = GatedTransport(base, slots: 1, maxTimeoutMillis: Self.alertTimeoutMillis)
    }

    /// Every purpose's slots together: what the transport under them must let run at once for none to wait on it.
    public var totalSlots: Int {
        deliveries.values.reduce(0) { $0 + $1.slots } + receipts.slots + apple.slots + asks.slots + alerts.slots
    }
}
