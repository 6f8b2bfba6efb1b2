internal import SQLite
internal import Canonical

extension SQLiteTransaction {
    /// Adds a row to its lane within `cap`. Runs in the caller's transaction, so the check, the eviction and the
    /// insert are one step for concurrent writers.
    func quarantine(_ r: QuarantineRecord, cap: QuarantineCap) throws -> QuarantineOutcome {
        let size = r.storedSize
        guard size <= cap.bytes, cap.rows >= 1 else { return .full }
        let lane = SQLiteValue.text(r.lane.rawValue)
        let usage = try c.queryOne("SELECT rows, bytes FROM quarantine_usage WHERE lane = ?", [lane])
        let rows = usage?.int64("rows") ?? 0
        let bytes = usage?.int64("bytes") ?? 0
        var evicted = 0
        if rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes {
            guard cap.evictsOldest else { return .full }
            // Oldest first, in small pages, until the new row fits. Evicting before inserting lets SQLite reuse the
            // freed pages for the new body, so a flood does not grow the file.
            let eviction = try quarantineEviction(rows: rows, bytes: bytes, adding: size, cap: cap) { after in
                try c.query("SELECT id, size FROM quarantine WHERE lane = ? AND id > ? ORDER BY id LIMIT 64", [lane, .integer(after)])
                    .map { (id: $0.int64("id") ?? after, size: $0.int64("size") ?? 0) }
            }
            try c.run("DELETE FROM quarantine WHERE lane = ? AND id <= ?", [lane, .integer(eviction.lastID)])
            evicted = eviction.evicted
        }
        try c.run(
            """
            INSERT INTO quarantine (lane, received_at, version, code, message, bundle_id, environment, password_fingerprint, body, size)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [lane, .integer(r.receivedAt), SQLiteValue(r.version), .text(r.code), .text(r.message), SQLiteValue(r.bundleID),
             SQLiteValue(r.environment), SQLiteValue(r.passwordFingerprint), .blob(r.body), .integer(size)])
        return .stored(id: c.lastInsertRowID, evicted: evicted)
    }

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
}
