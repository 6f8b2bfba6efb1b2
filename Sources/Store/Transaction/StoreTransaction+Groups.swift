internal import Canonical

// The report's counts of group (multiseat) subscriptions: the same statements on both databases.
extension SQLTransaction {
    func groupCounts(
        bundleID: String,
        environment: AppStoreEnvironment,
        now: Int64,
        since: Int64,
        until: Int64
    ) throws -> GroupCounts {
        var counts = GroupCounts()
        if let row = try c.queryOne(.groupsNow, [.text(bundleID), .text(environment.rawValue), .int64(now)]) {
            counts.groups = row.int("groups") ?? 0
            counts.seats = row.int("seats") ?? 0
        }
        for row in try c.query(
            .seatEvents,
            [.text(bundleID), .text(environment.rawValue), .int64(since), .int64(until)]
        ) {
            let kind = try row.requiredString("kind")
            let key = row.string("reason").map { "\(kind)/\($0)" } ?? kind
            counts.events[key, default: 0] += try row.requiredInt("n")
        }
        return counts
    }
}

extension SQL {
    /// On `subscription_state_groups`: the V2 path's group subscriptions whose period has not ended and that have a seat
    /// left.
    fileprivate static let groupsNow = SQL(
        """
        SELECT COUNT(*) AS groups, COALESCE(SUM(seats), 0) AS seats FROM subscription_state
        WHERE bundle_id = $1 AND environment = $2 AND path = 'v2' AND expires_date > $3 AND seats IS NOT NULL AND seats > 0
        """
    )

    /// On `events_seats`: the seat events stored in a window.
    fileprivate static let seatEvents = SQL(
        """
        SELECT kind, reason, COUNT(*) AS n FROM events
        WHERE bundle_id = $1 AND environment = $2 AND created_at >= $3 AND created_at < $4
          AND kind IN ('seats_changed', 'seats_refunded', 'seats_unclaimed')
        GROUP BY kind, reason
        """
    )
}
