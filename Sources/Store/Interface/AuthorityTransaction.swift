public import Canonical

/// Which path is authoritative per app and environment, and the cutovers that moved it. One slice of ``StoreTransaction``.
public protocol AuthorityTransaction: AppSettingTransaction {
    /// The authoritative generation of a bundle in an environment: V1 when nothing is recorded.
    func authority(bundleID: String?, environment: AppStoreEnvironment?) throws -> Generation
    /// A bundle's cutovers, oldest first.
    func cutovers(bundleID: String, environment: AppStoreEnvironment) throws -> [CutoverRecord]
    /// When each bundle's paths last produced an event.
    func authorityActivity() throws -> [AuthorityActivity]
}
