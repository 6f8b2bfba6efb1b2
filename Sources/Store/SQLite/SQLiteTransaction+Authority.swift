internal import SQLite
internal import Canonical

extension SQLiteTransaction {
    func authority(bundleID: String?, environment: AppStoreEnvironment?) throws -> Generation {
        guard let bundleID, let environment else { return .v1 }
        return try c.queryOne(
            "SELECT authority FROM authority WHERE bundle_id = ? AND environment = ?", [.text(bundleID), .text(environment.rawValue)]
        )?.generation("authority") ?? .v1
    }

    func seedAuthority(_ wanted: [AuthorityEntry], now: Int64) throws -> [AuthorityEntry] {
        for entry in wanted {
            try c.run(
                """
                INSERT INTO authority (bundle_id, environment, authority, origin, updated_at) VALUES (?, ?, ?, 'config', ?)
                ON CONFLICT(bundle_id, environment) DO UPDATE SET authority = excluded.authority, updated_at = excluded.updated_at
                WHERE authority.origin = 'config'
                """,
                [.text(entry.bundleID), .text(entry.environment.rawValue), .text(entry.authority.rawValue), .integer(now)])
        }
        return try authorities()
    }

    func authorities() throws -> [AuthorityEntry] {
        try c.query("SELECT bundle_id, environment, authority, origin FROM authority ORDER BY bundle_id, environment").map(AuthorityEntry.init(row:))
    }

    func recordCutover(_ record: CutoverRecord, to authority: Generation) throws {
        try c.run(
            """
            INSERT INTO authority (bundle_id, environment, authority, origin, updated_at) VALUES (?, ?, ?, 'cutover', ?)
            ON CONFLICT(bundle_id, environment) DO UPDATE SET authority = excluded.authority, origin = 'cutover', updated_at = excluded.updated_at
            """, [.text(record.bundleID), .text(record.environment), .text(authority.rawValue), .integer(record.at)])
        try c.run(
            """
            INSERT INTO cutover_log (at, bundle_id, environment, from_authority, to_authority, who, reason, verdict, forced, origin)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.integer(record.at), .text(record.bundleID), .text(record.environment), .text(record.from), .text(record.to), .text(record.who),
             SQLiteValue(record.reason), .text(record.verdict), .integer(record.forced ? 1 : 0), .text(record.origin)])
    }

    func cutovers(bundleID: String, environment: AppStoreEnvironment) throws -> [CutoverRecord] {
        try c.query(
            "SELECT * FROM cutover_log WHERE bundle_id = ? AND environment = ? ORDER BY at, id", [.text(bundleID), .text(environment.rawValue)]
        ).map { CutoverRecord(row: $0, bundleID: bundleID, environment: environment) }
    }

    func authorityActivity() throws -> [AuthorityActivity] {
        try c.query(
            """
            SELECT a.bundle_id, a.environment, a.authority,
                   (SELECT MAX(created_at) FROM events e WHERE e.bundle_id = a.bundle_id AND e.environment = a.environment
                        AND e.path = a.authority) AS last_authoritative,
                   (SELECT MAX(created_at) FROM events e WHERE e.bundle_id = a.bundle_id AND e.environment = a.environment
                        AND e.path <> a.authority) AS last_other
            FROM authority a
            """
        ).compactMap(AuthorityActivity.init(row:))
    }
}
