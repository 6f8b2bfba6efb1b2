public import Canonical

/// The settings kept per app and environment (``AppSetting``): read, seeded from the config, listed, moved by a
/// cutover. One slice of ``StoreTransaction``.
public protocol AppSettingTransaction {
    /// The value for a bundle and environment: the setting's fallback when nothing is recorded.
    func value<V>(_ setting: AppSetting<V>, bundleID: String, environment: AppStoreEnvironment) throws -> V
    /// Seeds each bundle and environment from the config: rows that came from the config follow it; rows set by a
    /// cutover are kept. Returns every recorded entry.
    @discardableResult
    func seed<V>(_ setting: AppSetting<V>, _ wanted: [AppSettingEntry<V>], now: Int64) throws -> [AppSettingEntry<V>]
    /// Every recorded entry, by bundle and environment.
    func entries<V>(_ setting: AppSetting<V>) throws -> [AppSettingEntry<V>]
    /// Sets a bundle and environment's value by a cutover and appends `record` to the cutover log (with the setting's
    /// `origin`, when it has one).
    func move<V>(_ setting: AppSetting<V>, _ record: CutoverRecord, to value: V) throws
}

extension AppSettingTransaction {
    /// Seeds the authority from the config; see ``seed(_:_:now:)``.
    @discardableResult
    public func seedAuthority(_ wanted: [AuthorityEntry], now: Int64) throws -> [AuthorityEntry] {
        try seed(AppSettings.authority, wanted, now: now)
    }
    /// Every recorded authority, by bundle and environment.
    public func authorities() throws -> [AuthorityEntry] { try entries(AppSettings.authority) }
    /// Sets a bundle's authority by a cutover and logs it.
    public func recordCutover(_ record: CutoverRecord, to authority: Generation) throws {
        try move(AppSettings.authority, record, to: authority)
    }
    /// How verifyReceipt is answered for a bundle and environment (`apple` when nothing set it).
    public func receiptMode(bundleID: String, environment: AppStoreEnvironment) throws -> ReceiptMode {
        try value(AppSettings.receiptMode, bundleID: bundleID, environment: environment)
    }
    /// Seeds each bundle and environment's receipt mode from the config; see ``seed(_:_:now:)``.
    @discardableResult
    public func seedReceiptModes(_ wanted: [ReceiptModeEntry], now: Int64) throws -> [ReceiptModeEntry] {
        try seed(AppSettings.receiptMode, wanted, now: now)
    }
    /// Every bundle and environment's receipt mode.
    public func receiptModes() throws -> [ReceiptModeEntry] { try entries(AppSettings.receiptMode) }
    /// Moves a bundle and environment's receipt mode and logs it in the cutover log (`origin` `receipts`).
    public func recordReceiptCutover(_ record: CutoverRecord, to mode: ReceiptMode) throws {
        try move(AppSettings.receiptMode, record, to: mode)
    }
}
