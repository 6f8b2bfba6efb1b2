public import Canonical

/// The receipt path (docs/operations.md, "Moving the receipt path"): the mode per app and environment, the customers' histories and the receipt ledger. One slice of ``StoreTransaction``.
public protocol ReceiptPathTransaction: AppSettingTransaction {
    /// A customer's history as last fetched (nil when never asked).
    func receiptHistory(_ key: ReceiptHistoryKey) throws -> StoredReceiptHistory?
    /// Takes the fetch of a customer's history for `owner` until `until`, unless another owner holds it now or a
    /// history fetched at or after `freshSince` is there (another instance just fetched it): several instances (or
    /// requests) asking about one customer at once make one call to Apple.
    func claimReceiptHistory(
        _ key: ReceiptHistoryKey,
        owner: String,
        until: Int64,
        now: Int64,
        freshSince: Int64
    )
        throws -> Bool
    /// Stores a fetched history, drops its pages and ends the claim (`json` nil: the fetch stopped; the history and
    /// the pages fetched so far stay as they are).
    func settleReceiptHistory(_ key: ReceiptHistoryKey, json: [UInt8]?, fetchedAt: Int64, owner: String) throws
    /// The pages of the customer's history fetched since its stored history, in the order asked.
    func receiptHistoryPages(_ key: ReceiptHistoryKey) throws -> [StoredReceiptHistoryPage]
    /// Keeps one more page for `owner`, and holds its claim until `until` — only while `owner` holds the claim (false:
    /// another owner took the fetch over, nothing was written).
    func addReceiptHistoryPage(
        _ key: ReceiptHistoryKey,
        _ page: StoredReceiptHistoryPage,
        owner: String,
        until: Int64
    )
        throws -> Bool
    /// Drops the customer's pages (they no longer follow from its stored history).
    func dropReceiptHistoryPages(_ key: ReceiptHistoryKey) throws
    /// Counts one call to Apple for the customer unless `limit` calls were counted in the hour that began at the
    /// window's start (an hour ago or later; then a new hour begins with this call): false when over, nothing counted.
    func countReceiptHistoryCall(_ key: ReceiptHistoryKey, now: Int64, limit: Int) throws -> Bool
    /// Drops histories fetched before `before`, and pages asked before it, at most `limit` of each; how many.
    func purgeReceiptHistories(fetchedBefore before: Int64, limit: Int) throws -> Int
    /// The customers the gateway knows for an app and environment, in the store's order of their ids, after `after`
    /// (`""`: from the first), at most `limit` (`receipts prefetch`, docs/commands.md): each distinct original
    /// transaction id of its journaled subscriptions (`subscription_state`, either path) and of the receipts compared
    /// in `shadow` (the receipt ledger), with when its stored history was fetched (nil: none stored). Read on indexes
    /// in id order, so a page costs the same at any size of the store.
    func receiptCustomers(
        bundleID: String,
        environment: AppStoreEnvironment,
        after: String,
        limit: Int
    ) throws
        -> [ReceiptCustomer]
    /// How many customers ``receiptCustomers(bundleID:environment:after:limit:)`` would give from `after` on, all
    /// pages together (reads every id once).
    func receiptCustomerCount(bundleID: String, environment: AppStoreEnvironment, after: String) throws -> Int
    /// Records one subscription's comparison of Apple's verifyReceipt answer with the gateway's.
    func recordReceiptComparison(_ entry: ReceiptLedgerEntry) throws
    /// Receipt ledger rows of a bundle and environment compared in [from, to), oldest first.
    func receiptLedger(
        bundleID: String?,
        environment: AppStoreEnvironment?,
        from: Int64,
        to: Int64
    ) throws
        -> [ReceiptLedgerEntry]
}
