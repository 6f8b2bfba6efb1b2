/// A quarantine lane's rows as each implementation reads and writes them. How a row joins its lane within the cap —
/// the check, the eviction of the oldest rows, the insert, in the caller's transaction — is decided once, below.
protocol QuarantineRows: StoreTransaction {
    /// The lane's rows and bytes (quarantine_usage), locked against other writers until the transaction ends.
    func laneUsageForUpdate(_ lane: QuarantineRecord.Lane) throws -> (rows: Int64, bytes: Int64)
    /// The lane's next rows after `id`, oldest first, a small page of them: `(id, size)`.
    func quarantinePage(_ lane: QuarantineRecord.Lane, after id: Int64) throws -> [(id: Int64, size: Int64)]
    /// Deletes the lane's rows up to and including `id`.
    func deleteQuarantined(_ lane: QuarantineRecord.Lane, through id: Int64) throws
    /// Inserts the row, counted as `size` bytes; its id.
    func insertQuarantined(_ r: QuarantineRecord, size: Int64) throws -> Int64
    /// The id of a row of `r`'s lane with its body, code and claimed bundle, if there is one. Reads the lane's rows of
    /// that code and bundle, comparing lengths before bodies: bounded by the lane's cap, and only asked for bodies
    /// quarantined `once`.
    func quarantinedID(sameAs r: QuarantineRecord) throws -> Int64?
}

extension QuarantineRows {
    /// Adds a row to its lane within `cap` (with `once`, not when the lane holds the same body already). Runs in the
    /// caller's transaction, after the lane's lock, so the look-up, the check, the eviction and the insert are one step
    /// for concurrent writers.
    func quarantine(_ r: QuarantineRecord, cap: QuarantineCap, once: Bool) throws -> QuarantineOutcome {
        let size = r.storedSize
        guard size <= cap.bytes, cap.rows >= 1 else { return .full }
        var (rows, bytes) = try laneUsageForUpdate(r.lane)
        if once, let id = try quarantinedID(sameAs: r) { return .held(id: id) }
        var evicted = 0
        if rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes {
            guard cap.evictsOldest else { return .full }
            // Oldest first, in small pages, until the new row fits. Evicting before inserting lets SQLite reuse the
            // freed pages for the new body, so a flood does not grow the file.
            var lastID: Int64 = 0
            scan: while true {
                let page = try quarantinePage(r.lane, after: lastID)
                if page.isEmpty { break }
                for row in page {
                    guard rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes else { break scan }
                    lastID = row.id
                    rows -= 1
                    bytes -= row.size
                    evicted += 1
                }
            }
            try deleteQuarantined(r.lane, through: lastID)
        }
        return .stored(id: try insertQuarantined(r, size: size), evicted: evicted)
    }
}
