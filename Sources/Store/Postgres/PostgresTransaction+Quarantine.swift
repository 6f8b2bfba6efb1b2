internal import Canonical
internal import Postgres

extension PostgresTransaction: QuarantineRows {
    /// Takes the lane's advisory lock first (``lockOrDefer(_:_:)``): every instance's quarantine insert into the lane
    /// takes it, so the check, the eviction and the insert are one step also for instances writing at once. The usage
    /// it then reads includes what the lock's previous holder committed.
    func laneUsageForUpdate(_ lane: QuarantineRecord.Lane) throws -> (rows: Int64, bytes: Int64) {
        try lockOrDefer(.quarantineLane, lane.rawValue)
        return try laneUsage(lane)
    }

    /// The space the old values leave is erased by `eraseFreedSpace(of: .quarantine)` (`VACUUM FULL quarantine`).
    func rewriteQuarantined(_ r: QuarantineRecord) throws {
        try updateRewritten(r)
    }
}
