public import Canonical

/// The switch of Apple's notification version (`migrate`): each app and environment's switch, its lease and its log. One slice of ``StoreTransaction``.
public protocol AppleSwitchTransaction {
    /// The switch's record of an app and environment, nil when the gateway never read or switched it.
    func appleSwitch(bundleID: String, environment: AppStoreEnvironment) throws -> AppleSwitchState?
    /// Every app and environment the switch knows, by bundle and environment.
    func appleSwitches() throws -> [AppleSwitchState]
    /// Stores the record whole when the switch on record is still the one `expected` names (its migration id; nil:
    /// none) — the claim, every save and the release of a run — and returns whether it did. False, writing nothing,
    /// when another run took the app and environment since: one statement, so two runs (on one instance or several)
    /// never both hold it.
    func replaceAppleSwitch(_ state: AppleSwitchState, ifMigrationIs expected: String?) throws -> Bool
    /// Records Apple's settings as just read (app id, version, URL, when), leaving the switch on record as it is.
    func recordAppleRead(
        bundleID: String,
        environment: AppStoreEnvironment,
        appID: String?,
        version: Generation?,
        url: String?,
        at: Int64
    ) throws
    /// Renews the lease of the run `migrationID` (its record's `updated_at`); false when that run no longer holds the
    /// record.
    func renewAppleSwitch(
        bundleID: String,
        environment: AppStoreEnvironment,
        migrationID: String,
        at: Int64
    ) throws
        -> Bool
    /// Appends a step to the switch log.
    func logAppleSwitch(_ entry: AppleSwitchLogEntry) throws
    /// The switch log of an app and environment, oldest first, the last `limit` entries.
    func appleSwitchLog(bundleID: String, environment: AppStoreEnvironment, limit: Int) throws -> [AppleSwitchLogEntry]
}
