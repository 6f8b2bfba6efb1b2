/// The claims of background jobs, renewed while they run (several instances on one store). One slice of ``StoreTransaction``.
public protocol JobClaimTransaction {
    /// Extends to `lease.until` the claims `lease.owner` holds on the jobs `ids` of `jobs` — the jobs it is still
    /// running, so that no other instance takes one over while it runs longer than its lease. A job no longer claimed
    /// by the owner (settled, or taken over already) is left alone. A store one process owns records no claims.
    func renewClaims(_ jobs: ClaimedJobs, ids: [Int64], lease: Lease) throws
}
