public import Canonical

/// Where one switch of Apple's notification version (`iap-gateway migrate`, docs/operations.md, "Migrating a bundle")
/// stands. Each step is stored before it acts, so a run that dies in the middle is resumed or reverted by the next.
public struct AppleSwitchStep: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// A run holds the app and environment (taken in one write before any call to Apple) and reads what Apple has;
    /// nothing changed yet.
    public static let starting = Self(rawValue: "starting")
    /// The checks passed and Apple's version was recorded; nothing changed yet.
    public static let preflight = Self(rawValue: "preflight")
    /// Apple is being set to the target version (a run found here does not know whether Apple took it: it reads).
    public static let patching = Self(rawValue: "patching")
    /// Apple is set to the target; the gateway waits for proof that Apple sends it.
    public static let probing = Self(rawValue: "probing")
    /// The proof came; the gateway's authority is being moved.
    public static let authority = Self(rawValue: "authority")
    /// Apple is being set back to the version it had before the switch.
    public static let reverting = Self(rawValue: "reverting")
    /// Finished: Apple and the gateway's authority are on the target.
    public static let done = Self(rawValue: "done")
    /// Finished: Apple is back on its earlier version, the authority unchanged.
    public static let reverted = Self(rawValue: "reverted")

    /// Whether the switch is over (nothing to resume, nobody holds the record).
    public var isFinished: Bool { self == .done || self == .reverted }
    /// Whether a run that stopped here changed nothing yet: the next run starts afresh instead of resuming it.
    public var changedNothing: Bool { self == .starting || self == .preflight }
}

/// One app and environment as the switch knows it: Apple's notification settings as last read (or set) through the
/// App Store Connect API, and the switch in progress or last finished there.
public struct AppleSwitchState: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    /// App Store Connect's id of the app.
    public var appID: String?
    /// Apple's version and URL for this environment when last read (or set), and when.
    public var appleVersion: Generation?
    public var appleURL: String?
    public var readAt: Int64?
    /// The switch: its id, the version it moves Apple to, the version Apple had before it (what a revert restores),
    /// the step it reached, the test notification it waits for.
    public var migrationID: String?
    public var target: Generation?
    public var previous: Generation?
    public var step: AppleSwitchStep?
    public var probeToken: String?
    public var who: String?
    public var reason: String?
    public var forced = false
    public var startedAt: Int64?
    public var updatedAt: Int64?
    /// Why the last switch ended reverted, or the last failure of one in progress.
    public var error: String?

    public init(bundleID: String, environment: AppStoreEnvironment) {
        (self.bundleID, self.environment) = (bundleID, environment)
    }
}

/// One step of a switch, as it happened: what `migrate` prints, kept for the report and the status.
public struct AppleSwitchLogEntry: Sendable, Hashable {
    public var at: Int64
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var migrationID: String
    public var step: AppleSwitchStep
    /// `ok`, `failed`, `refused`.
    public var outcome: String
    public var detail: String?

    public init(
        at: Int64,
        bundleID: String,
        environment: AppStoreEnvironment,
        migrationID: String,
        step: AppleSwitchStep,
        outcome: String,
        detail: String?
    ) {
        (self.at, self.bundleID, self.environment, self.migrationID, self.step, self.outcome, self.detail) =
            (at, bundleID, environment, migrationID, step, outcome, detail)
    }
}
