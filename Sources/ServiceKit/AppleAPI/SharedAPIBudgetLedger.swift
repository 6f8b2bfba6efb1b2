public import Store
import Synchronization

/// Where the instances on one store keep the budget of App Store Server API calls they share (``AppleAPIBudget``,
/// docs/operations.md, "Apple's rate limits"): the PostgreSQL store's `api_budget` (``StoreAPIBudgetLedger``), or a
/// test's own.
public protocol SharedAPIBudgetLedger: Sendable {
    /// Takes up to `turns` turns of `bucket` as of `time` (``APIBudgetTransaction/leaseAPIBudget(_:turns:refill:at:)``).
    func lease(
        _ bucket: APIBudgetBucket,
        turns: Int,
        refill: APIBudgetRefill,
        at time: Int64
    ) async throws
        -> APIBudgetLease
    /// Apple's 429: `bucket` gives no turn before `until`, to any instance.
    func pause(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) async throws
}

/// The ledger in the store's `api_budget` table: one statement per lease or pause, outside the journal's group commit
/// (``GatewayStore/writeStatement(_:)``). A statement that has not answered within ``timeoutMillis`` fails
/// (``Timeout``) — a store that hangs (a network gone mid-statement) must not hold calls past their deadlines — and its
/// answer, if it comes, is dropped: turns it took are lost, never spent twice.
public struct StoreAPIBudgetLedger: SharedAPIBudgetLedger {
    let store: StoreSlice<any APIBudgetTransaction>
    /// How long a lease or a pause may take, in real time (as a transfer's timeout): the I/O's bound, beside the
    /// budget's own clock.
    public let timeoutMillis: Int64

    /// A statement of the ledger that did not answer in time.
    public struct Timeout: Error, CustomStringConvertible {
        public var description: String { "the store did not answer the shared budget's statement in time" }
    }

    public init(store: any GatewayStore, timeoutMillis: Int64 = 3_000) {
        self.store = StoreSlice(store) { $0 }
        self.timeoutMillis = max(1, timeoutMillis)
    }

    /// The ledger of a store several instances share (PostgreSQL), nil for one a process owns (SQLite: its budget
    /// stays in memory).
    public static func of(_ store: any GatewayStore) -> StoreAPIBudgetLedger? {
        store.sharedByInstances ? StoreAPIBudgetLedger(store: store) : nil
    }

    public func lease(
        _ bucket: APIBudgetBucket,
        turns: Int,
        refill: APIBudgetRefill,
        at time: Int64
    ) async throws
        -> APIBudgetLease
    {
        let store = self.store
        return try await Self.within(timeoutMillis) {
            try await store.store.writeStatement(
                store.narrow { tx in try tx.leaseAPIBudget(bucket, turns: turns, refill: refill, at: time) }
            )
        }
    }

    public func pause(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) async throws {
        let store = self.store
        try await Self.within(timeoutMillis) {
            try await store.store.writeStatement(
                store.narrow { tx in try tx.pauseAPIBudget(bucket, until: until, refill: refill) }
            )
        }
    }

    /// The bucket as stored (what an operator or a test looks at).
    public func state(_ bucket: APIBudgetBucket) async throws -> APIBudgetState? {
        try await store.readStatement { tx in try tx.apiBudget(bucket) }
    }

    /// `body`'s answer, or ``Timeout`` when `millis` pass first (`body` goes on; its answer is dropped).
    static func within<T: Sendable>(
        _ millis: Int64,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let answer = Answer<T>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.waiting(continuation)
            let timer = Task {
                try await Task.sleep(for: .milliseconds(millis))
                answer.give(.failure(Timeout()))
            }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                timer.cancel()
                answer.give(result)
            }
        }
    }

    /// The first of two answers.
    private final class Answer<T: Sendable>: Sendable {
        private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

        func waiting(_ c: CheckedContinuation<T, any Error>) { continuation.withLock { $0 = c } }

        func give(_ result: Result<T, any Error>) {
            let first = continuation.withLock { c in
                let taken = c
                c = nil
                return taken
            }
            first?.resume(with: result)
        }
    }
}
