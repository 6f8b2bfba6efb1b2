internal import Postgres
internal import Canonical

extension PostgresTransaction {
    func appleSwitch(bundleID: String, environment: AppStoreEnvironment) throws -> AppleSwitchState? {
        try c.queryOne("SELECT * FROM apple_switches WHERE bundle_id = $1 AND environment = $2", [.text(bundleID), .text(environment.rawValue)])
            .flatMap(AppleSwitchState.init(row:))
    }

    func appleSwitches() throws -> [AppleSwitchState] {
        try c.query("SELECT * FROM apple_switches ORDER BY bundle_id, environment").compactMap(AppleSwitchState.init(row:))
    }

    func putAppleSwitch(_ s: AppleSwitchState) throws {
        try c.run(
            """
            INSERT INTO apple_switches (bundle_id, environment, app_id, apple_version, apple_url, read_at, migration_id, target,
                previous, step, probe_token, who, reason, forced, started_at, updated_at, error)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
            ON CONFLICT (bundle_id, environment) DO UPDATE SET app_id = excluded.app_id, apple_version = excluded.apple_version,
                apple_url = excluded.apple_url, read_at = excluded.read_at, migration_id = excluded.migration_id, target = excluded.target,
                previous = excluded.previous, step = excluded.step, probe_token = excluded.probe_token, who = excluded.who,
                reason = excluded.reason, forced = excluded.forced, started_at = excluded.started_at, updated_at = excluded.updated_at,
                error = excluded.error
            """,
            [.text(s.bundleID), .text(s.environment.rawValue), PostgresValue(s.appID), PostgresValue(s.appleVersion?.rawValue),
             PostgresValue(s.appleURL), PostgresValue(s.readAt), PostgresValue(s.migrationID), PostgresValue(s.target?.rawValue),
             PostgresValue(s.previous?.rawValue), PostgresValue(s.step?.rawValue), PostgresValue(s.probeToken), PostgresValue(s.who),
             PostgresValue(s.reason), .bool(s.forced), PostgresValue(s.startedAt), PostgresValue(s.updatedAt), PostgresValue(s.error)])
    }

    func logAppleSwitch(_ e: AppleSwitchLogEntry) throws {
        try c.run(
            "INSERT INTO apple_switch_log (at, bundle_id, environment, migration_id, step, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [.int64(e.at), .text(e.bundleID), .text(e.environment.rawValue), .text(e.migrationID), .text(e.step.rawValue),
             .text(e.outcome), PostgresValue(e.detail)])
    }

    func appleSwitchLog(bundleID: String, environment: AppStoreEnvironment, limit: Int) throws -> [AppleSwitchLogEntry] {
        try c.query(
            """
            SELECT * FROM (SELECT * FROM apple_switch_log WHERE bundle_id = $1 AND environment = $2 ORDER BY id DESC LIMIT $3) l ORDER BY id
            """, [.text(bundleID), .text(environment.rawValue), pgLimit(limit)]
        ).compactMap(AppleSwitchLogEntry.init(row:))
    }
}
