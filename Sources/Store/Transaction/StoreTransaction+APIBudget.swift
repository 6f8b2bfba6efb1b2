internal import Canonical

extension SQLTransaction {
    func leaseAPIBudget(
        _ bucket: APIBudgetBucket,
        turns: Int,
        refill: APIBudgetRefill,
        at time: Int64
    ) throws -> APIBudgetLease {
        try requireShared()
        let row = try c.queryOne(
            .leaseAPIBudget,
            key(bucket) + [
                .int64(time), .int64(Int64(max(0, turns))), .int64(refill.perMilli), .int64(refill.capacity),
            ]
        )
        guard let row else { throw StoreFailure(description: "the budget's lease returned no row") }
        return APIBudgetLease(
            turns: try row.requiredInt("last_lease"),
            tokens: try row.requiredInt64("tokens"),
            updatedAt: try row.requiredInt64("updated_at"),
            pausedUntil: try row.requiredInt64("paused_until"),
            refill: refill
        )
    }

    func pauseAPIBudget(_ bucket: APIBudgetBucket, until: Int64, refill: APIBudgetRefill) throws {
        try requireShared()
        try c.run(.pauseAPIBudget, key(bucket) + [.int64(until), .int64(refill.turnMillis)])
    }

    func apiBudget(_ bucket: APIBudgetBucket) throws -> APIBudgetState? {
        try requireShared()
        return try c.queryOne(.apiBudget, key(bucket)).map { row in
            APIBudgetState(
                tokens: try row.requiredInt64("tokens"),
                updatedAt: try row.requiredInt64("updated_at"),
                pausedUntil: try row.requiredInt64("paused_until"),
                leased: try row.requiredInt64("leased")
            )
        }
    }

    private func key(_ b: APIBudgetBucket) -> [StoreValue] {
        [.text(b.bundleID), .text(b.environment.rawValue), .text(b.endpoint)]
    }

    /// The table is PostgreSQL's only (``StoreSchema``): one process owns an SQLite store and budgets in memory.
    private func requireShared() throws {
        guard dialect == .postgres else {
            throw StoreFailure(description: "the shared App Store Server API budget needs a PostgreSQL store")
        }
    }
}

extension SQL {
    /// What the bucket holds at `$4` (billionths of a turn): none while Apple's pause lasts, else its tokens plus what
    /// gathered since its time at `$6` a millisecond, at most `$7`. A time before the bucket's (another instance's
    /// clock ahead, a pause's first turn to come) adds nothing; an hour fills any bucket and bounds the product.
    private static let available = """
        CASE WHEN b.paused_until > $4::bigint THEN 0
            ELSE LEAST($7::bigint, b.tokens + LEAST(GREATEST($4::bigint - b.updated_at, 0), 3600000) * $6::bigint) END
        """

    /// Takes min(`$5`, whole turns available) in one statement: the row's lock orders instances, every expression of
    /// the update reads the row as it was. A bucket met for the first time starts full; a paused one keeps its time
    /// (its first turn gathers at Apple's instant).
    fileprivate static let leaseAPIBudget = SQL(
        """
        INSERT INTO api_budget AS b (bundle_id, environment, endpoint, tokens, updated_at, paused_until, last_lease, leased)
        VALUES ($1, $2, $3, $7::bigint - LEAST($5::bigint, $7::bigint / 1000000000) * 1000000000, $4, 0,
            LEAST($5::bigint, $7::bigint / 1000000000), LEAST($5::bigint, $7::bigint / 1000000000))
        ON CONFLICT (bundle_id, environment, endpoint) DO UPDATE SET
            last_lease = LEAST($5::bigint, (\(available)) / 1000000000),
            tokens = (\(available)) - LEAST($5::bigint, (\(available)) / 1000000000) * 1000000000,
            leased = b.leased + LEAST($5::bigint, (\(available)) / 1000000000),
            updated_at = CASE WHEN b.paused_until > $4::bigint THEN b.updated_at ELSE GREATEST(b.updated_at, $4::bigint) END
        RETURNING last_lease, tokens, updated_at, paused_until
        """
    )

    /// Empty until Apple's `$4`, where exactly one turn has gathered (`$5`: the milliseconds of a turn).
    fileprivate static let pauseAPIBudget = SQL(
        """
        INSERT INTO api_budget AS b (bundle_id, environment, endpoint, tokens, updated_at, paused_until, last_lease, leased)
        VALUES ($1, $2, $3, 0, $4::bigint - $5::bigint, $4, 0, 0)
        ON CONFLICT (bundle_id, environment, endpoint) DO UPDATE SET tokens = 0,
            updated_at = GREATEST(b.updated_at, $4::bigint - $5::bigint), paused_until = GREATEST(b.paused_until, $4::bigint)
        """
    )

    fileprivate static let apiBudget = SQL(
        "SELECT tokens, updated_at, paused_until, leased FROM api_budget WHERE bundle_id = $1 AND environment = $2 AND endpoint = $3"
    )
}
