/// Another transport with slots of its own: at most `slots` of its requests run at once, whatever the others do. The
/// gateway gives each purpose one (each downstream's deliveries, the calls its public requests make, the background
/// calls to Apple, alerts), so that a purpose whose peer hangs holds only its own slots (docs/architecture.md,
/// "Outgoing transfers").
///
/// A request waits for a slot at most its own ``HTTPRequest/timeoutMillis``, and what it waited is taken off the time
/// its transfer may take: the whole call stays within the request's deadline. A request that found no slot in time
/// fails with `timeout`, without reaching the transport. `maxTimeoutMillis` caps every request's deadline (alerts:
/// a short one, whatever their sender asks).
public struct GatedTransport: HTTPTransport {
    let base: any HTTPTransport
    private let gate: TransferGate
    /// The slots of this purpose.
    public let slots: Int
    /// The longest any request through here may take (nil: each request's own).
    public let maxTimeoutMillis: Int?

    /// - Parameters:
    ///   - base: The transport that runs the transfers; its own limit, if any, must leave room for every purpose.
    ///   - slots: How many requests may run at once (values below 1 mean 1).
    ///   - maxTimeoutMillis: A cap on each request's whole-request and connect deadlines.
    public init(_ base: any HTTPTransport, slots: Int, maxTimeoutMillis: Int? = nil) {
        self.base = base
        self.slots = max(1, slots)
        self.maxTimeoutMillis = maxTimeoutMillis.map { max(1, $0) }
        gate = TransferGate(limit: self.slots)
    }

    /// Slots free now.
    public var availableSlots: Int { gate.available }

    public func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        var request = request
        if let cap = maxTimeoutMillis {
            request.timeoutMillis = min(request.timeoutMillis, cap)
            request.connectTimeoutMillis = min(request.connectTimeoutMillis, cap)
        }
        let clock = ContinuousClock()
        let started = clock.now
        guard await gate.acquire(timeout: .milliseconds(max(1, request.timeoutMillis))) else {
            throw HTTPClientError(
                .timeout,
                "no free transfer slot (\(slots) in use) within \(request.timeoutMillis) ms"
                    + CurlTransport.context(request)
            )
        }
        defer { gate.release() }
        let waited = clock.now - started
        let waitedMillis = Int(waited.components.seconds * 1000 + waited.components.attoseconds / 1_000_000_000_000_000)
        request.timeoutMillis = max(1, request.timeoutMillis - waitedMillis)
        request.connectTimeoutMillis = min(request.connectTimeoutMillis, request.timeoutMillis)
        return try await base.send(request)
    }
}
