internal import Canonical
internal import SQLite

extension SQLiteTransaction: QuarantineRows {
    /// One writer at a time: the write transaction is the lock.
    func laneUsageForUpdate(_ lane: QuarantineRecord.Lane) throws -> (rows: Int64, bytes: Int64) {
        try laneUsage(lane)
    }

    /// With `secure_delete` on for the update: SQLite then zeroes the space the old body and text leave behind (in the
    /// row's page and its freed overflow pages) instead of leaving their bytes in free space.
    func rewriteQuarantined(_ r: QuarantineRecord) throws {
        try c.raw.withSecureDelete { try updateRewritten(r) }
    }
}

extension SQLiteConnection {
    /// Runs `body` with `secure_delete` on — SQLite then overwrites with zeros what deleted or rewritten rows leave
    /// behind — and puts the setting back as it was (Debian's SQLite has it on by default; other builds do not).
    func withSecureDelete<T>(_ body: () throws -> T) throws -> T {
        let was = try queryOne("PRAGMA secure_delete")?.int64("secure_delete") ?? 0
        try execute("PRAGMA secure_delete = ON")
        defer { try? execute("PRAGMA secure_delete = \(was == 0 ? "OFF" : "ON")") }
        return try body()
    }
}
