public import Store

/// What every background worker is built on: the store, metrics and log, and the injected clock and jitter. (Who
/// receives what — the ``Router`` — is the business of the workers that route, each holding it.)
public struct WorkerContext: Sendable {
    public let store: any GatewayStore
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
        metrics: Metrics,
        log: Log,
        now: @escaping @Sendable () -> Int64,
        jitter: @escaping @Sendable () -> Double,
        instance: String = "local",
        leaseMillis: Int64 = 300_000
    ) {
        (self.store, self.metrics, self.log, self.now, self.jitter) = (store, metrics, log, now, jitter)
        (self.instance, self.leaseMillis) = (instance, leaseMillis)
    }
}

/// A worker built on a ``WorkerContext``: its parts read as the worker's own.
package protocol ContextualWorker {
    /// The slices of the store it works on (`any OutboxTransaction & JournalTransaction`, say).
    associatedtype Transaction
    var context: WorkerContext { get }
    /// The store through those slices alone (docs/architecture.md, "The store's interface").
    var store: StoreSlice<Transaction> { get }
}

extension ContextualWorker {
    package var metrics: Metrics { context.metrics }
    package var log: Log { context.log }
    package var now: @Sendable () -> Int64 { context.now }
    package var jitter: @Sendable () -> Double { context.jitter }

    /// Sets the gauge `metric` to the number of pending jobs `count` reads.
    package func gaugePending(as metric: Metric, _ count: @escaping @Sendable (Transaction) throws -> Int) async {
        if let pending = try? await store.read(count) {
            metrics.set(metric, [:], Double(pending))
        }
    }

    /// ``WorkerContext/recordOutcome(_:)`` through the worker's slices.
    package func recordOutcome(_ work: @escaping @Sendable (Transaction) throws -> Void) async {
        await context.recordOutcome(store.narrow(work))
    }
}

extension ContextualWorker where Transaction == any StoreTransaction {
    /// A worker that works on the whole store (a test's) need not say so.
    package var store: StoreSlice<any StoreTransaction> { StoreSlice(context.store) { $0 } }
}
