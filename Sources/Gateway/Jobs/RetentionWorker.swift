internal import ServiceKit
internal import Store

/// Retention, hourly (docs/configuration.md, `raw_body_retention`): raw bodies older than the retention whose work
/// is finished are dropped (their events and delivery history stay), finished comparison fetches older than a week
/// are deleted (bookkeeping only: each outcome is in the ledger), and so are the receipt path's customer histories
/// fetched more than a day ago (a history older than `receipts.history_max_age`, at most a day, is fetched again
/// anyway). Times come from the injected clock.
struct RetentionWorker: Sendable {
    /// How long finished comparison fetches are kept.
    static let finishedFetchRetentionMillis: Int64 = 7 * 86_400_000
    /// How long a customer's history is kept: the longest `receipts.history_max_age`.
    static let receiptHistoryRetentionMillis: Int64 = 86_400_000
    /// Bodies dropped per transaction.
    static let page = 5_000

    /// The slices of the store it works on.
    typealias Transaction = any RetentionTransaction & ReceiptPathTransaction
    let store: StoreSlice<Transaction>
    let log: Log
    let now: @Sendable () -> Int64
    /// `raw_body_retention`.
    let rawBodyRetentionMillis: Int64
    /// Between two passes.
    var interval: Duration = .seconds(3600)

    init(store: any GatewayStore, log: Log, now: @escaping @Sendable () -> Int64, rawBodyRetentionMillis: Int64) {
        self.store = StoreSlice(store) { $0 }
        (self.log, self.now, self.rawBodyRetentionMillis) = (log, now, rawBodyRetentionMillis)
    }

    /// A pass at once, then one every `interval`, until the task is cancelled.
    func run() async {
        while !Task.isCancelled {
            await purge()
            try? await Task.sleep(for: interval)
        }
    }

    /// One pass: how many raw bodies and finished fetches were purged, nil where the store refused the write (the
    /// next pass tries again).
    @discardableResult
    func purge() async -> (bodies: Int?, fetches: Int?) {
        let time = now()
        let cutoff = time - rawBodyRetentionMillis
        // A page at a time, each its own transaction: the writer is never held for long, whatever the backlog.
        var bodies: Int? = 0
        while let done = bodies {
            guard
                let n = try? await store.write({ tx in
                    try tx.purgeBodies(olderThan: cutoff, now: time, limit: Self.page)
                })
            else {
                bodies = done > 0 ? done : nil
                break
            }
            bodies = done + n
            if n < Self.page { break }
        }
        if let bodies, bodies > 0 {
            log.info("raw bodies purged", ["count": .int(Int64(bodies))])
        }
        let week = time - Self.finishedFetchRetentionMillis
        let fetches = try? await store.write { tx in try tx.purgeFinishedFetches(olderThan: week) }
        let day = time - Self.receiptHistoryRetentionMillis
        while let n = try? await store.write({ tx in
            try tx.purgeReceiptHistories(fetchedBefore: day, limit: Self.page)
        }), n == Self.page {}
        return (bodies, fetches)
    }
}

extension RetentionWorker: BackgroundService {}
