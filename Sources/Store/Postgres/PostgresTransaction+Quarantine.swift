internal import Postgres

extension PostgresTransaction: QuarantineRows {
    /// Takes the lane's advisory lock first (``lockOrDefer(_:_:)``): every instance's quarantine insert into the lane
    /// takes it, so the check, the eviction and the insert are one step also for instances writing at once. The usage
    /// it then reads includes what the lock's previous holder committed.
    func laneUsageForUpdate(_ lane: QuarantineRecord.Lane) throws -> (rows: Int64, bytes: Int64) {
        try lockOrDefer(.quarantineLane, lane.rawValue)
        let usage = try c.queryOne("SELECT rows, bytes FROM quarantine_usage WHERE lane = $1", [.text(lane.rawValue)])
        return (usage?.int64("rows") ?? 0, usage?.int64("bytes") ?? 0)
    }

    func quarantinePage(_ lane: QuarantineRecord.Lane, after id: Int64) throws -> [(id: Int64, size: Int64)] {
        try c.query("SELECT id, size FROM quarantine WHERE lane = $1 AND id > $2 ORDER BY id LIMIT 64", [.text(lane.rawValue), .int64(id)])
            .map { (id: $0.int64("id") ?? id, size: $0.int64("size") ?? 0) }
    }

    func deleteQuarantined(_ lane: QuarantineRecord.Lane, through id: Int64) throws {
        try c.run("DELETE FROM quarantine WHERE lane = $1 AND id <= $2", [.text(lane.rawValue), .int64(id)])
    }

    func insertQuarantined(_ r: QuarantineRecord, size: Int64) throws -> Int64 {
        let row = try c.queryOne(
            """
            INSERT INTO quarantine (lane, received_at, version, code, message, bundle_id, environment, password_fingerprint, body, size, redacted)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, true) RETURNING id
            """,
            [.text(r.lane.rawValue), .int64(r.receivedAt), PostgresValue(r.version), .text(r.code), .text(r.message),
             PostgresValue(r.bundleID), PostgresValue(r.environment), PostgresValue(r.passwordFingerprint), .bytea(r.body), .int64(size)])
        return row?.int64("id") ?? 0
    }

    /// `octet_length` of a stored `bytea` is read from its header, without fetching the value itself.
    func quarantinedID(sameAs r: QuarantineRecord) throws -> Int64? {
        try c.queryOne(
            """
            SELECT id FROM quarantine WHERE lane = $1 AND code = $2 AND bundle_id IS NOT DISTINCT FROM $3 AND octet_length(body) = $4
                AND body = $5 ORDER BY id LIMIT 1
            """,
            [.text(r.lane.rawValue), .text(r.code), PostgresValue(r.bundleID), .int64(Int64(r.body.count)), .bytea(r.body)]
        )?.int64("id")
    }
}

extension PostgresTransaction {
    func unredactedQuarantine(limit: Int) throws -> [QuarantineRecord] {
        try c.query("SELECT * FROM quarantine WHERE NOT redacted ORDER BY id LIMIT $1", [pgLimit(limit)]).map(QuarantineRecord.init(row:))
    }

    func rewriteQuarantined(_ r: QuarantineRecord) throws {
        try c.run(
            "UPDATE quarantine SET body = $1, message = $2, bundle_id = $3, environment = $4, size = $5, redacted = true WHERE id = $6",
            [.bytea(r.body), .text(r.message), PostgresValue(r.bundleID), PostgresValue(r.environment), .int64(r.storedSize), .int64(r.id)])
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
