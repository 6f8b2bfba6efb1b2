public import Canonical

/// The recovery runs (docs/operations.md, "Reconciliation") and the subscriptions they check. One slice of ``StoreTransaction``.
public protocol ReconcileTransaction {
    /// Adds the runs not scheduled yet, each first due at its `firstRunAt`; rows already there keep their schedule.
    func scheduleReconcileRuns(_ runs: [(key: ReconcileRunKey, firstRunAt: Int64)]) throws
    /// Claims the due runs, like every job (several instances: one runs each).
    func claimDueReconcileRuns(at time: Int64, limit: Int, lease: Lease) throws -> [ReconcileRun]
    /// Records what a run did and when it runs next; releases the claim.
    func settleReconcileRun(id: Int64, _ outcome: ReconcileRunOutcome, now: Int64) throws
    /// Moves the runs of an app and environment due before `until` to `until` (Apple asked it to wait).
    func deferReconcileRuns(bundleID: String, environment: AppStoreEnvironment, until: Int64) throws
    /// Every scheduled run.
    func reconcileRuns() throws -> [ReconcileRun]
    /// The subscriptions the reconciliation rule selects, soonest expiry first.
    func reconcileCandidates(_ selection: ReconcileSelection) throws -> [ReconcileCandidate]
    /// Notes that a subscription's path was checked at `time` (it is not selected again before `checkedBefore` passes it).
    func markReconciled(
        path: Generation,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        at time: Int64
    ) throws
    /// Recovered events per app, environment, mechanism and UTC day, created in [since, until).
    func recoveredEventCounts(since: Int64, until: Int64) throws -> [RecoveredCount]
}
