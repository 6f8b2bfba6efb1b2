public import Canonical

/// Which path is authoritative per app and environment, and the cutovers that moved it. One slice of ``StoreTransaction``.
public protocol AuthorityTransaction {
    /// The authoritative generation of a bundle in an environment: V1 when nothing is recorded.
    func authority(bundleID: String?, environment: AppStoreEnvironment?) throws -> Generation
    /// Seeds authority from the config: rows that came from the config follow it; rows set by a cutover are kept.
    /// Returns every recorded authority.
    func seedAuthority(_ wanted: [AuthorityEntry], now: Int64) throws -> [AuthorityEntry]
    /// Every recorded authority, by bundle and environment.
    func authorities() throws -> [AuthorityEntry]
    /// Sets a bundle's authority by a cutover and logs it.
    func recordCutover(_ record: CutoverRecord, to authority: Generation) throws
    /// A bundle's cutovers, oldest first.
    func cutovers(bundleID: String, environment: AppStoreEnvironment) throws -> [CutoverRecord]
    /// When each bundle's paths last produced an event.
    func authorityActivity() throws -> [AuthorityActivity]
}
