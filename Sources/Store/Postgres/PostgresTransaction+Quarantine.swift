internal import Postgres

extension PostgresTransaction {
    /// Adds a row to its lane within `cap`. The lane's quarantine_usage row is locked first (`FOR UPDATE`, created
    /// when missing), so the check, the eviction and the insert are one step also for instances writing at once.
    func quarantine(_ r: QuarantineRecord, cap: QuarantineCap) throws -> QuarantineOutcome {
        let size = r.storedSize
        guard size <= cap.bytes, cap.rows >= 1 else { return .full }
        let lane = PostgresValue.text(r.lane.rawValue)
        try c.run("INSERT INTO quarantine_usage (lane, rows, bytes) VALUES ($1, 0, 0) ON CONFLICT (lane) DO NOTHING", [lane])
        let usage = try c.queryOne("SELECT rows, bytes FROM quarantine_usage WHERE lane = $1 FOR UPDATE", [lane])
        let rows = usage?.int64("rows") ?? 0
        let bytes = usage?.int64("bytes") ?? 0
        var evicted = 0
        if rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes {
            guard cap.evictsOldest else { return .full }
            // Oldest first, in small pages, until the new row fits.
            let eviction = try quarantineEviction(rows: rows, bytes: bytes, adding: size, cap: cap) { after in
                try c.query("SELECT id, size FROM quarantine WHERE lane = $1 AND id > $2 ORDER BY id LIMIT 64", [lane, .int64(after)])
                    .map { (id: $0.int64("id") ?? after, size: $0.int64("size") ?? 0) }
            }
            try c.run("DELETE FROM quarantine WHERE lane = $1 AND id <= $2", [lane, .int64(eviction.lastID)])
            evicted = eviction.evicted
        }
        let id = try c.queryOne(
            """
            INSERT INTO quarantine (lane, received_at, version, code, message, bundle_id, environment, password_fingerprint, body, size)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id
            """,
            [lane, .int64(r.receivedAt), PostgresValue(r.version), .text(r.code), .text(r.message), PostgresValue(r.bundleID),
             PostgresValue(r.environment), PostgresValue(r.passwordFingerprint), .bytea(r.body), .int64(size)])?.int64("id")
        return .stored(id: id ?? 0, evicted: evicted)
    }

    func quarantined(lane: QuarantineRecord.Lane?, id: Int64?, limit: Int) throws -> [QuarantineRecord] {
        try c.query(
            "SELECT * FROM quarantine WHERE ($1::text IS NULL OR lane = $1) AND ($2::bigint IS NULL OR id = $2) ORDER BY id LIMIT $3",
            [PostgresValue(lane?.rawValue), PostgresValue(id), pgLimit(limit)]
        ).map(QuarantineRecord.init(row:))
    }

    func quarantineUsage() throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
        Store.quarantineUsage(try c.query("SELECT lane, rows, bytes FROM quarantine_usage"))
    }

    func removeQuarantined(id: Int64) throws {
        try c.run("DELETE FROM quarantine WHERE id = $1", [.int64(id)])
    }

    func beginReplay(id: Int64, now: Int64) throws {
        try c.run("UPDATE quarantine SET replay_started_at = $1, replay_attempts = replay_attempts + 1 WHERE id = $2", [.int64(now), .int64(id)])
    }

    func finishReplay(id: Int64, code: String, now: Int64) throws {
        try c.run(
            "UPDATE quarantine SET replay_started_at = NULL, last_replay_at = $1, last_replay_code = $2 WHERE id = $3",
            [.int64(now), .text(code), .int64(id)])
    }
}
