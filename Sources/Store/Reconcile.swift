public import Canonical

/// What one scheduled recovery run does for one app and environment (docs/operations.md, "Reconciliation").
public enum ReconcileKind: String, Sendable, Hashable, CaseIterable {
    /// Get All Subscription Statuses for the V2 path's silent subscriptions near their expiry.
    case subscriptions
    /// verifyReceipt of the latest stored receipt for the V1 path's silent subscriptions near their expiry.
    case receipts
    /// Get Notification History over the recent window.
    case history

    /// The recovery mechanism its events carry in `recovered_by`.
    public var mechanism: RecoveryMechanism { self == .history ? .history : .reconciliation }
    /// The path whose stored states a reconciliation run checks (nil for the history sweep).
    public var path: Generation? {
        switch self {
        case .subscriptions: .v2
        case .receipts: .v1
        case .history: nil
        }
    }
}

/// One app, environment and kind of recovery run.
public struct ReconcileRunKey: Sendable, Hashable, CustomStringConvertible {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var kind: ReconcileKind
    public init(bundleID: String, environment: AppStoreEnvironment, kind: ReconcileKind) {
        (self.bundleID, self.environment, self.kind) = (bundleID, environment, kind)
    }
    public var description: String { "\(kind.rawValue) \(bundleID) \(environment.rawValue)" }
}

/// A scheduled recovery run, as claimed or looked at.
public struct ReconcileRun: Sendable, Hashable {
    public var id: Int64
    public var key: ReconcileRunKey
    public var nextRunAt: Int64
    /// The history sweep: the end of the last window swept (the next window starts an overlap before it).
    public var watermark: Int64?
    /// Consecutive failed runs (reset by a run that completes).
    public var attempts: Int
    public var lastRunAt: Int64?
    public var lastError: String?
    /// Totals over every run: subscriptions or notifications checked, events recovered, Apple calls made.
    public var checked: Int64
    public var recovered: Int64
    public var calls: Int64
}

/// What one run did, recorded on its row.
public struct ReconcileRunOutcome: Sendable, Hashable {
    public var nextRunAt: Int64
    public var watermark: Int64?
    public var attempts: Int
    public var error: String?
    public var checked: Int
    public var recovered: Int
    public var calls: Int
    public init(
        nextRunAt: Int64,
        watermark: Int64?,
        attempts: Int,
        error: String?,
        checked: Int,
        recovered: Int,
        calls: Int
    ) {
        (self.nextRunAt, self.watermark, self.attempts, self.error) = (nextRunAt, watermark, attempts, error)
        (self.checked, self.recovered, self.calls) = (checked, recovered, calls)
    }
}

/// The reconciliation rule's selection, for one app, environment and path: subscriptions whose stored expiry falls in
/// [`expiresFrom`, `expiresUntil`], whose state nothing changed since `silentSince`, and that were not checked since
/// `checkedBefore`.
public struct ReconcileSelection: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var path: Generation
    public var expiresFrom: Int64
    public var expiresUntil: Int64
    public var silentSince: Int64
    public var checkedBefore: Int64
    public var limit: Int
    public init(
        bundleID: String,
        environment: AppStoreEnvironment,
        path: Generation,
        expiresFrom: Int64,
        expiresUntil: Int64,
        silentSince: Int64,
        checkedBefore: Int64,
        limit: Int
    ) {
        (self.bundleID, self.environment, self.path) = (bundleID, environment, path)
        (self.expiresFrom, self.expiresUntil, self.silentSince, self.checkedBefore, self.limit) =
            (expiresFrom, expiresUntil, silentSince, checkedBefore, limit)
    }
}

/// A subscription the rule selected: its stored state's event.
public struct ReconcileCandidate: Sendable, Hashable {
    public var originalTransactionID: String
    public var eventID: String
    public var expiresDate: Int64?
}

/// Recovered events of one app, environment and mechanism on one UTC day.
public struct RecoveredCount: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var mechanism: RecoveryMechanism
    /// The day's start (ms since the epoch, UTC).
    public var day: Int64
    public var count: Int
}
