internal import Canonical

extension SQLTransaction {
    func appleSwitch(bundleID: String, environment: AppStoreEnvironment) throws -> AppleSwitchState? {
        try c.queryOne(.appleSwitch, [.text(bundleID), .text(environment.rawValue)]).map(
            AppleSwitchState.init(row:)
        )
    }

    func appleSwitches() throws -> [AppleSwitchState] {
        try c.query(.appleSwitches, []).map(AppleSwitchState.init(row:))
    }

    func replaceAppleSwitch(_ s: AppleSwitchState, ifMigrationIs expected: String?) throws -> Bool {
        try c.run(
            .replaceAppleSwitch,
            [
                .text(s.bundleID), .text(s.environment.rawValue), StoreValue(s.appID), StoreValue(s.appleVersion),
                StoreValue(s.appleURL),
                StoreValue(s.readAt), StoreValue(s.migrationID), StoreValue(s.target), StoreValue(s.previous),
                StoreValue(s.step?.rawValue),
                StoreValue(s.probeToken), StoreValue(s.who), StoreValue(s.reason), .bool(s.forced),
                StoreValue(s.startedAt),
                StoreValue(s.updatedAt), StoreValue(s.error), StoreValue(expected),
            ]
        ) > 0
    }

    func recordAppleRead(
        bundleID: String,
        environment: AppStoreEnvironment,
        appID: String?,
        version: Generation?,
        url: String?,
        at: Int64
    ) throws {
        try c.run(
            .recordAppleRead,
            [
                .text(bundleID), .text(environment.rawValue), StoreValue(appID), StoreValue(version), StoreValue(url),
                .int64(at),
            ]
        )
    }

    func renewAppleSwitch(
        bundleID: String,
        environment: AppStoreEnvironment,
        migrationID: String,
        at: Int64
    ) throws
        -> Bool
    {
        try c.run(.renewAppleSwitch, [.text(bundleID), .text(environment.rawValue), .text(migrationID), .int64(at)]) > 0
    }

    func logAppleSwitch(_ e: AppleSwitchLogEntry) throws {
        try c.run(
            .logAppleSwitch,
            [
                .int64(e.at), .text(e.bundleID), .text(e.environment.rawValue), .text(e.migrationID),
                .text(e.step.rawValue), .text(e.outcome),
                StoreValue(e.detail),
            ]
        )
    }

    func appleSwitchLog(bundleID: String, environment: AppStoreEnvironment, limit: Int) throws -> [AppleSwitchLogEntry]
    {
        try c.query(.appleSwitchLog, [.text(bundleID), .text(environment.rawValue), .limit(limit)]).map(
            AppleSwitchLogEntry.init(row:)
        )
    }
}

extension SQL {
    fileprivate static let appleSwitch = SQL("SELECT * FROM apple_switches WHERE bundle_id = $1 AND environment = $2")

    fileprivate static let appleSwitches = SQL("SELECT * FROM apple_switches ORDER BY bundle_id, environment")

    /// Replaces the app and environment's record whole, when the migration on record is still `$18` (null: none). An
    /// upsert whose update is conditional: on PostgreSQL a concurrent claim waits for the other's row and then finds
    /// it changed; SQLite runs one writer at a time.
    fileprivate static let replaceAppleSwitch = SQL { d in
        """
        INSERT INTO apple_switches (bundle_id, environment, app_id, apple_version, apple_url, read_at, migration_id, target,
            previous, step, probe_token, who, reason, forced, started_at, updated_at, error)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
        ON CONFLICT (bundle_id, environment) DO UPDATE SET app_id = excluded.app_id, apple_version = excluded.apple_version,
            apple_url = excluded.apple_url, read_at = excluded.read_at, migration_id = excluded.migration_id, target = excluded.target,
            previous = excluded.previous, step = excluded.step, probe_token = excluded.probe_token, who = excluded.who,
            reason = excluded.reason, forced = excluded.forced, started_at = excluded.started_at, updated_at = excluded.updated_at,
            error = excluded.error
        WHERE apple_switches.migration_id \(d.nullSafeEquals) $18::text
        """
    }

    /// Apple's settings alone: a run's own columns are left as they are.
    fileprivate static let recordAppleRead = SQL(
        """
        INSERT INTO apple_switches (bundle_id, environment, app_id, apple_version, apple_url, read_at)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (bundle_id, environment) DO UPDATE SET app_id = excluded.app_id, apple_version = excluded.apple_version,
            apple_url = excluded.apple_url, read_at = excluded.read_at
        """
    )

    fileprivate static let renewAppleSwitch = SQL(
        "UPDATE apple_switches SET updated_at = $4 WHERE bundle_id = $1 AND environment = $2 AND migration_id = $3"
    )

    fileprivate static let logAppleSwitch = SQL(
        "INSERT INTO apple_switch_log (at, bundle_id, environment, migration_id, step, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    )

    fileprivate static let appleSwitchLog = SQL(
        """
        SELECT * FROM (SELECT * FROM apple_switch_log WHERE bundle_id = $1 AND environment = $2 ORDER BY id DESC LIMIT $3) l ORDER BY id
        """
    )
}
