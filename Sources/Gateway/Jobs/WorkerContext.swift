public import Store

/// What every background worker is built on: the store, who receives what, metrics and log, and the injected clock
/// and jitter.
public struct WorkerContext: Sendable {
    public let store: any GatewayStore
    public let router: Router
    public let metrics: Metrics
    public let log: Log
    public let now: @Sendable () -> Int64
    public let jitter: @Sendable () -> Double
    /// This instance's name in job claims (see ``Lease``).
    public let instance: String
    /// How long a claimed job stays this instance's before another may take it over: longer than any job runs.
    public let leaseMillis: Int64

    public init(
        store: any GatewayStore,
        router: Router,
        metrics: Metrics,
        log: Log,
        now: @escaping @Sendable () -> Int64,
        jitter: @escaping @Sendable () -> Double,
        instance: String = "local",
        leaseMillis: Int64 = 300_000
    ) {
        (self.store, self.router, self.metrics, self.log, self.now, self.jitter) = (
            store, router, metrics, log, now, jitter
        )
        (self.instance, self.leaseMillis) = (instance, leaseMillis)
    }

    /// Runs `body` on a read transaction, on a dispatch thread, never on Swift's cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.read(body)
    }

    /// Sets the gauge `metric` to the number of pending jobs `count` reads.
    func gaugePending(
        as metric: Metric,
        _ count: @escaping @Sendable (any StoreTransaction) throws -> Int
    ) async {
        if let pending = try? await read(count) {
            metrics.set(metric, [:], Double(pending))
        }
    }
}

/// A worker built on a ``WorkerContext``: its parts read as the worker's own.
protocol ContextualWorker {
    var context: WorkerContext { get }
}

extension ContextualWorker {
    var store: any GatewayStore { context.store }
    var router: Router { context.router }
    var metrics: Metrics { context.metrics }
    var log: Log { context.log }
    var now: @Sendable () -> Int64 { context.now }
    var jitter: @Sendable () -> Double { context.jitter }
}
