public import Canonical

/// A setting per app and environment that the config seeds and a cutover moves — which generation is authoritative,
/// how verifyReceipt is answered — kept in a table of its own with the same five columns (`bundle_id`, `environment`,
/// the value, `origin`, `updated_at`): a row the config seeded follows the config; a row a cutover set is kept until
/// the next cutover (docs/architecture.md, "Authority and comparison"). A third setting is one such table in a schema
/// step and one `static let` in ``AppSettings``.
public struct AppSetting<Value: RawRepresentable & Hashable & Sendable>: Sendable where Value.RawValue == String {
    /// `authority`, `receipts`: how logs and `/admin/status` name it.
    public let name: String
    /// The value of an app and environment without a row.
    public let fallback: Value
    /// The cutover log's `origin` of a move (nil: the record's own, `cutover` or `migrate`).
    public let logOrigin: String?
    let select: SQL
    let seed: SQL
    let list: SQL
    let move: SQL

    init(name: String, table: String, column: String, fallback: Value, logOrigin: String?) {
        (self.name, self.fallback, self.logOrigin) = (name, fallback, logOrigin)
        select = SQL("SELECT \(column) AS value FROM \(table) WHERE bundle_id = $1 AND environment = $2")
        // Rows set by a cutover are kept.
        seed = SQL(
            """
            INSERT INTO \(table) AS s (bundle_id, environment, \(column), origin, updated_at) VALUES ($1, $2, $3, 'config', $4)
            ON CONFLICT (bundle_id, environment) DO UPDATE SET \(column) = excluded.\(column), updated_at = excluded.updated_at
            WHERE s.origin = 'config'
            """
        )
        list = SQL(
            "SELECT bundle_id, environment, \(column) AS value, origin FROM \(table) ORDER BY bundle_id, environment"
        )
        move = SQL(
            """
            INSERT INTO \(table) (bundle_id, environment, \(column), origin, updated_at) VALUES ($1, $2, $3, 'cutover', $4)
            ON CONFLICT (bundle_id, environment) DO UPDATE SET \(column) = excluded.\(column), origin = 'cutover', updated_at = excluded.updated_at
            """
        )
    }
}

/// The settings the store keeps per app and environment.
public enum AppSettings {
    /// Which generation is authoritative (table `authority`); V1 when nothing is recorded.
    public static let authority = AppSetting<Generation>(
        name: "authority",
        table: "authority",
        column: "authority",
        fallback: .v1,
        logOrigin: nil
    )
    /// How verifyReceipt is answered (table `receipt_modes`); Apple's answer when nothing is recorded. Its moves are
    /// logged with `origin` `receipts`.
    public static let receiptMode = AppSetting<ReceiptMode>(
        name: "receipts",
        table: "receipt_modes",
        column: "mode",
        fallback: .apple,
        logOrigin: "receipts"
    )
}

/// Who set a row: the config (it follows the config) or a cutover (kept until the next one).
public enum SettingOrigin: String, Sendable, Hashable, CaseIterable {
    case config, cutover
}

public typealias AuthorityOrigin = SettingOrigin

/// One app and environment's value of a setting.
public struct AppSettingEntry<Value: RawRepresentable & Hashable & Sendable>: Sendable, Hashable
where Value.RawValue == String {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var value: Value
    public var origin: SettingOrigin
    public init(bundleID: String, environment: AppStoreEnvironment, value: Value, origin: SettingOrigin) {
        (self.bundleID, self.environment, self.value, self.origin) = (bundleID, environment, value, origin)
    }
}

/// A bundle's authority in one environment.
public typealias AuthorityEntry = AppSettingEntry<Generation>
/// A bundle's receipt mode in one environment.
public typealias ReceiptModeEntry = AppSettingEntry<ReceiptMode>

extension AppSettingEntry where Value == Generation {
    public init(bundleID: String, environment: AppStoreEnvironment, authority: Generation, origin: SettingOrigin) {
        self.init(bundleID: bundleID, environment: environment, value: authority, origin: origin)
    }
    public var authority: Generation {
        get { value }
        set { value = newValue }
    }
}

extension AppSettingEntry where Value == ReceiptMode {
    public init(bundleID: String, environment: AppStoreEnvironment, mode: ReceiptMode, origin: SettingOrigin) {
        self.init(bundleID: bundleID, environment: environment, value: mode, origin: origin)
    }
    public var mode: ReceiptMode {
        get { value }
        set { value = newValue }
    }
}
