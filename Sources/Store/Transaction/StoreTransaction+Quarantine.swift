internal import Canonical

// How a lane's usage is locked (`laneUsageForUpdate`) and how a rewrite leaves nothing behind (`rewriteQuarantined`)
// differ by database: each store's `*Transaction+Quarantine.swift`.
extension SQLTransaction {
    /// The lane's rows and bytes (quarantine_usage).
    func laneUsage(_ lane: QuarantineRecord.Lane) throws -> (rows: Int64, bytes: Int64) {
        let usage = try c.queryOne(.laneUsage, [.text(lane.rawValue)])
        return (usage?.int64("rows") ?? 0, usage?.int64("bytes") ?? 0)
    }

    func quarantinePage(_ lane: QuarantineRecord.Lane, after id: Int64) throws -> [(id: Int64, size: Int64)] {
        try c.query(.quarantinePage, [.text(lane.rawValue), .int64(id)]).map {
            (id: $0.int64("id") ?? id, size: $0.int64("size") ?? 0)
        }
    }

    func deleteQuarantined(_ lane: QuarantineRecord.Lane, through id: Int64) throws {
        try c.run(.deleteQuarantined, [.text(lane.rawValue), .int64(id)])
    }

    func insertQuarantined(_ r: QuarantineRecord, size: Int64) throws -> Int64 {
        try c.queryOne(
            .insertQuarantined,
            [
                .text(r.lane.rawValue), .int64(r.receivedAt), StoreValue(r.version), .text(r.code), .text(r.message),
                StoreValue(r.bundleID),
                StoreValue(r.environment), StoreValue(r.passwordFingerprint), .bytes(r.body), .int64(size),
            ]
        )?.int64("id") ?? 0
    }

    func quarantinedID(sameAs r: QuarantineRecord) throws -> Int64? {
        try c.queryOne(
            .quarantinedID,
            [
                .text(r.lane.rawValue), .text(r.code), StoreValue(r.bundleID), .int64(Int64(r.body.count)),
                .bytes(r.body),
            ]
        )?
        .int64("id")
    }

    func quarantined(lane: QuarantineRecord.Lane?, id: Int64?, limit: Int) throws -> [QuarantineRecord] {
        try c.query(.quarantined, [StoreValue(lane?.rawValue), StoreValue(id), .limit(limit)]).map(
            QuarantineRecord.init(row:)
        )
    }

    func quarantineUsage() throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
        try Store.quarantineUsage(c.query(.quarantineUsage, []))
    }

    func removeQuarantined(id: Int64) throws {
        try c.run(.removeQuarantined, [.int64(id)])
    }

    /// Committed before the replay runs (see migration 5).
    func beginReplay(id: Int64, now: Int64) throws {
        try c.run(.beginReplay, [.int64(now), .int64(id)])
    }

    func finishReplay(id: Int64, code: String, now: Int64) throws {
        try c.run(.finishReplay, [.int64(now), .text(code), .int64(id)])
    }

    func unredactedQuarantine(limit: Int) throws -> [QuarantineRecord] {
        try c.query(.unredactedQuarantine, [.limit(limit)]).map(QuarantineRecord.init(row:))
    }

    /// The update of ``StoreTransaction/rewriteQuarantined(_:)``.
    func updateRewritten(_ r: QuarantineRecord) throws {
        try c.run(
            .rewriteQuarantined,
            [
                .bytes(r.body), .text(r.message), StoreValue(r.bundleID), StoreValue(r.environment),
                .int64(r.storedSize),
                .int64(r.id),
            ]
        )
    }
}

extension SQL {
    fileprivate static let laneUsage = SQL("SELECT rows, bytes FROM quarantine_usage WHERE lane = $1")

    fileprivate static let quarantinePage = SQL(
        "SELECT id, size FROM quarantine WHERE lane = $1 AND id > $2 ORDER BY id LIMIT 64"
    )

    fileprivate static let deleteQuarantined = SQL("DELETE FROM quarantine WHERE lane = $1 AND id <= $2")

    fileprivate static let insertQuarantined = SQL(
        """
        INSERT INTO quarantine (lane, received_at, version, code, message, bundle_id, environment, password_fingerprint, body, size, redacted)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, true) RETURNING id
        """
    )

    /// Rows of another length are passed over without reading their body.
    fileprivate static let quarantinedID = SQL { d in
        """
        SELECT id FROM quarantine WHERE lane = $1 AND code = $2 AND bundle_id \(d.nullSafeEquals) $3 AND \(d.byteLength("body")) = $4
            AND body = $5 ORDER BY id LIMIT 1
        """
    }

    fileprivate static let quarantined = SQL(
        "SELECT * FROM quarantine WHERE ($1::text IS NULL OR lane = $1) AND ($2::bigint IS NULL OR id = $2) ORDER BY id LIMIT $3"
    )

    fileprivate static let quarantineUsage = SQL("SELECT lane, rows, bytes FROM quarantine_usage")

    fileprivate static let removeQuarantined = SQL("DELETE FROM quarantine WHERE id = $1")

    fileprivate static let beginReplay = SQL(
        "UPDATE quarantine SET replay_started_at = $1, replay_attempts = replay_attempts + 1 WHERE id = $2"
    )

    fileprivate static let finishReplay = SQL(
        "UPDATE quarantine SET replay_started_at = NULL, last_replay_at = $1, last_replay_code = $2 WHERE id = $3"
    )

    fileprivate static let unredactedQuarantine = SQL { d in
        "SELECT * FROM quarantine WHERE \(d.unredacted) ORDER BY id LIMIT $1"
    }

    fileprivate static let rewriteQuarantined = SQL(
        "UPDATE quarantine SET body = $1, message = $2, bundle_id = $3, environment = $4, size = $5, redacted = true WHERE id = $6"
    )
}
