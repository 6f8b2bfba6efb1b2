internal import SQLite
internal import Canonical

extension SQLiteTransaction {
    func appleSwitch(bundleID: String, environment: AppStoreEnvironment) throws -> AppleSwitchState? {
        try c.queryOne("SELECT * FROM apple_switches WHERE bundle_id = ? AND environment = ?", [.text(bundleID), .text(environment.rawValue)])
            .flatMap(AppleSwitchState.init(row:))
    }

    func appleSwitches() throws -> [AppleSwitchState] {
        try c.query("SELECT * FROM apple_switches ORDER BY bundle_id, environment").compactMap(AppleSwitchState.init(row:))
    }

    func putAppleSwitch(_ s: AppleSwitchState) throws {
        try c.run(
            """
            INSERT OR REPLACE INTO apple_switches (bundle_id, environment, app_id, apple_version, apple_url, read_at, migration_id, target,
                previous, step, probe_token, who, reason, forced, started_at, updated_at, error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(s.bundleID), .text(s.environment.rawValue), SQLiteValue(s.appID), SQLiteValue(s.appleVersion?.rawValue),
             SQLiteValue(s.appleURL), SQLiteValue(s.readAt), SQLiteValue(s.migrationID), SQLiteValue(s.target?.rawValue),
             SQLiteValue(s.previous?.rawValue), SQLiteValue(s.step?.rawValue), SQLiteValue(s.probeToken), SQLiteValue(s.who),
             SQLiteValue(s.reason), .integer(s.forced ? 1 : 0), SQLiteValue(s.startedAt), SQLiteValue(s.updatedAt), SQLiteValue(s.error)])
    }

    func logAppleSwitch(_ e: AppleSwitchLogEntry) throws {
        try c.run(
            "INSERT INTO apple_switch_log (at, bundle_id, environment, migration_id, step, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.integer(e.at), .text(e.bundleID), .text(e.environment.rawValue), .text(e.migrationID), .text(e.step.rawValue),
             .text(e.outcome), SQLiteValue(e.detail)])
    }

    func appleSwitchLog(bundleID: String, environment: AppStoreEnvironment, limit: Int) throws -> [AppleSwitchLogEntry] {
        try c.query(
            """
            SELECT * FROM (SELECT * FROM apple_switch_log WHERE bundle_id = ? AND environment = ? ORDER BY id DESC LIMIT ?) ORDER BY id
            """, [.text(bundleID), .text(environment.rawValue), .integer(Int64(max(0, limit)))]
        ).compactMap(AppleSwitchLogEntry.init(row:))
    }
}
