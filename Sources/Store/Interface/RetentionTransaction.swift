/// Retention: raw bodies and finished fetches past their time. One slice of ``StoreTransaction``.
public protocol RetentionTransaction {
    /// Drops raw bodies received before `cutoff` whose jobs and pass-through deliveries are finished; their events
    /// and delivery history stay. Returns how many.
    func purgeBodies(olderThan cutoff: Int64, now: Int64) throws -> Int
    /// The same for at most `limit` bodies, oldest first (`journal_unpurged`): a page of the retention pass.
    func purgeBodies(olderThan cutoff: Int64, now: Int64, limit: Int) throws -> Int
    /// Deletes finished fetches last due before `cutoff` (bookkeeping only: each outcome is in the ledger).
    func purgeFinishedFetches(olderThan cutoff: Int64) throws -> Int
}
