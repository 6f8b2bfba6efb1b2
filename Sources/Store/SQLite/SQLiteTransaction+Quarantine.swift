internal import SQLite
internal import Canonical

extension SQLiteTransaction: QuarantineRows {
    /// One writer at a time: the write transaction is the lock.
    func laneUsageForUpdate(_ lane: QuarantineRecord.Lane) throws -> (rows: Int64, bytes: Int64) {
        let usage = try c.queryOne("SELECT rows, bytes FROM quarantine_usage WHERE lane = ?", [.text(lane.rawValue)])
        return (usage?.int64("rows") ?? 0, usage?.int64("bytes") ?? 0)
    }

    func quarantinePage(_ lane: QuarantineRecord.Lane, after id: Int64) throws -> [(id: Int64, size: Int64)] {
        try c.query("SELECT id, size FROM quarantine WHERE lane = ? AND id > ? ORDER BY id LIMIT 64", [.text(lane.rawValue), .integer(id)])
            .map { (id: $0.int64("id") ?? id, size: $0.int64("size") ?? 0) }
    }

    func deleteQuarantined(_ lane: QuarantineRecord.Lane, through id: Int64) throws {
        try c.run("DELETE FROM quarantine WHERE lane = ? AND id <= ?", [.text(lane.rawValue), .integer(id)])
    }

    func insertQuarantined(_ r: QuarantineRecord, size: Int64) throws -> Int64 {
        try c.run(
            """
            INSERT INTO quarantine (lane, received_at, version, code, message, bundle_id, environment, password_fingerprint, body, size, redacted)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
            """,
            [.text(r.lane.rawValue), .integer(r.receivedAt), SQLiteValue(r.version), .text(r.code), .text(r.message), SQLiteValue(r.bundleID),
             SQLiteValue(r.environment), SQLiteValue(r.passwordFingerprint), .blob(r.body), .integer(size)])
        return c.lastInsertRowID
    }

    /// `length(body)` comes from the row's header, so rows of another length are passed over without reading their body.
    func quarantinedID(sameAs r: QuarantineRecord) throws -> Int64? {
        try c.queryOne(
            "SELECT id FROM quarantine WHERE lane = ? AND code = ? AND bundle_id IS ? AND length(body) = ? AND body = ? ORDER BY id LIMIT 1",
            [.text(r.lane.rawValue), .text(r.code), SQLiteValue(r.bundleID), .integer(Int64(r.body.count)), .blob(r.body)]
        )?.int64("id")
    }
}

extension SQLiteTransaction {
    /// Quarantined rows, oldest first: of one lane, or one row, or all.
    func quarantined(lane: QuarantineRecord.Lane?, id: Int64?, limit: Int) throws
        -> [QuarantineRecord]
    {
        let rows = try c.query(
            "SELECT * FROM quarantine WHERE (? IS NULL OR lane = ?) AND (? IS NULL OR id = ?) ORDER BY id LIMIT ?",
            [SQLiteValue(lane?.rawValue), SQLiteValue(lane?.rawValue), SQLiteValue(id), SQLiteValue(id),
             .integer(Int64(max(0, limit)))])
        return rows.map(QuarantineRecord.init(row:))
    }

    /// Each lane's rows and bytes.
    func quarantineUsage() throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
        Store.quarantineUsage(try c.query("SELECT lane, rows, bytes FROM quarantine_usage"))
    }

    func removeQuarantined(id: Int64) throws {
        try c.run("DELETE FROM quarantine WHERE id = ?", [.integer(id)])
    }

    /// Marks a row as being replayed now (committed before the replay runs: see migration 5).
    func beginReplay(id: Int64, now: Int64) throws {
        try c.run(
            "UPDATE quarantine SET replay_started_at = ?, replay_attempts = replay_attempts + 1 WHERE id = ?",
            [.integer(now), .integer(id)])
    }

    /// Records a replay that did not journal the row: the row stays, with its outcome.
    func finishReplay(id: Int64, code: String, now: Int64) throws {
        try c.run(
            "UPDATE quarantine SET replay_started_at = NULL, last_replay_at = ?, last_replay_code = ? WHERE id = ?",
            [.integer(now), .text(code), .integer(id)])
    }

    func unredactedQuarantine(limit: Int) throws -> [QuarantineRecord] {
        try c.query("SELECT * FROM quarantine WHERE redacted = 0 ORDER BY id LIMIT ?", [.integer(Int64(max(0, limit)))])
            .map(QuarantineRecord.init(row:))
    }

    /// With `secure_delete` on for the update: SQLite then zeroes the space the old body and text leave behind (in the
    /// row's page and its freed overflow pages) instead of leaving their bytes in free space.
    func rewriteQuarantined(_ r: QuarantineRecord) throws {
        try c.withSecureDelete {
            _ = try c.run(
                "UPDATE quarantine SET body = ?, message = ?, bundle_id = ?, environment = ?, size = ?, redacted = 1 WHERE id = ?",
                [.blob(r.body), .text(r.message), SQLiteValue(r.bundleID), SQLiteValue(r.environment), .integer(r.storedSize),
                 .integer(r.id)])
        }
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
