/// Why a job's last attempt did not succeed, as the store keeps it (`last_error`), the admin API and the commands show
/// it and an alert carries it: a stable snake_case code that alerts and queries can match. The details — an answer's
/// text, a database's message, a name from the config — go to the log or the delivery log, never into the code
/// (docs/operations.md, "What `last_error` says").
public struct OutcomeCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The store could not be read or written: the job is tried again.
    public static let storeUnavailable = OutcomeCode("store_unavailable")
    /// What the job is for is not in the config (any more): it waits for the config.
    public static let notConfigured = OutcomeCode("not_configured")
}
