internal import Canonical

extension SQLTransaction {
    func authority(bundleID: String?, environment: AppStoreEnvironment?) throws -> Generation {
        guard let bundleID, let environment else { return AppSettings.authority.fallback }
        return try value(AppSettings.authority, bundleID: bundleID, environment: environment)
    }

    /// Appends to the cutover log (authority changes, and receipt mode changes with `origin` `receipts`).
    func logCutover(_ record: CutoverRecord) throws {
        try c.run(
            .logCutover,
            [
                .int64(record.at), .text(record.bundleID), .text(record.environment), .text(record.from),
                .text(record.to), .text(record.who),
                StoreValue(record.reason), .text(record.verdict), .bool(record.forced), .text(record.origin),
            ]
        )
    }

    func cutovers(bundleID: String, environment: AppStoreEnvironment) throws -> [CutoverRecord] {
        try c.query(.cutovers, [.text(bundleID), .text(environment.rawValue)])
            .map { try CutoverRecord(row: $0, bundleID: bundleID, environment: environment) }
    }

    func authorityActivity() throws -> [AuthorityActivity] {
        try c.query(.authorityActivity, []).map(AuthorityActivity.init(row:))
    }
}

extension SQL {
    fileprivate static let logCutover = SQL(
        """
        INSERT INTO cutover_log (at, bundle_id, environment, from_authority, to_authority, who, reason, verdict, forced, origin)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        """
    )

    fileprivate static let cutovers = SQL(
        "SELECT * FROM cutover_log WHERE bundle_id = $1 AND environment = $2 ORDER BY at, id"
    )

    /// Each app's newest event of each source the gateway writes, `last_0`… in the order of `EventSource.written`
    /// (a source's path is its `generation`; ``AuthorityActivity/init(row:)`` takes each path's newest): one lookup
    /// per source at the end of its range of `events_bundle_source`, never a walk over the app's events.
    static let authorityActivity = SQL(
        "SELECT a.bundle_id, a.environment, a.authority, "
            + EventSource.written.enumerated().map { i, source in
                """
                (SELECT MAX(created_at) FROM events e WHERE e.bundle_id = a.bundle_id AND e.environment = a.environment
                     AND e.source = '\(source.rawValue)') AS last_\(i)
                """
            }
            .joined(separator: ", ") + " FROM authority a"
    )
}
