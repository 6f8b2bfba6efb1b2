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
        var rows = usage?.int64("rows") ?? 0
        var bytes = usage?.int64("bytes") ?? 0
        var evicted = 0
        if rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes {
            guard cap.evictsOldest else { return .full }
            // Oldest first, in small pages, until the new row fits. Evicting before inserting lets SQLite reuse the
            // freed pages for the new body, so a flood does not grow the file.
            var lastID: Int64 = 0
            scan: while true {
                let page = try c.query(
                    "SELECT id, size FROM quarantine WHERE lane = ? AND id > ? ORDER BY id LIMIT 64", [lane, .integer(lastID)])
                if page.isEmpty { break }
                for row in page {
                    guard rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes else { break scan }
                    lastID = row.int64("id") ?? lastID
                    rows -= 1
                    bytes -= row.int64("size") ?? 0
                    evicted += 1
                }
            }
            try c.run("DELETE FROM quarantine WHERE lane = ? AND id <= ?", [lane, .integer(lastID)])
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
        return rows.map { row in
            var r = QuarantineRecord(
                lane: QuarantineRecord.Lane(rawValue: row.string("lane") ?? "") ?? .untrusted, receivedAt: row.int64("received_at") ?? 0,
                version: row.generation("version"), code: row.string("code") ?? "", message: row.string("message") ?? "",
                bundleID: row.string("bundle_id"), environment: row.string("environment"),
                passwordFingerprint: row.string("password_fingerprint"), body: row.blob("body") ?? [])
            r.id = row.int64("id") ?? 0
            r.replayAttempts = row.int("replay_attempts") ?? 0
            r.replayStartedAt = row.int64("replay_started_at")
            r.lastReplayAt = row.int64("last_replay_at")
            r.lastReplayCode = row.string("last_replay_code")
            return r
        }
    }

    /// Each lane's rows and bytes.
    func quarantineUsage() throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
        var usage: [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] = [:]
        for row in try c.query("SELECT lane, rows, bytes FROM quarantine_usage") {
            guard let lane = row.string("lane").flatMap(QuarantineRecord.Lane.init(rawValue:)) else { continue }
            usage[lane] = (row.int64("rows") ?? 0, row.int64("bytes") ?? 0)
        }
        return usage
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
