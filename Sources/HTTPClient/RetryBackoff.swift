/// The wait before another attempt of a retried HTTP call: `base · 2^(attempt−1)` (at most 2^20 times `base`),
/// capped at `maximum`, times a jitter factor in [0.5, 1). The one formula both Apple clients use.
///
/// `base` and `maximum` come from configuration, so they may be anything: a negative one counts as zero, and the
/// doubling stops at the cap instead of multiplying `base` by 2^20 first (which overflows `Duration` for a
/// large enough `base` and traps). `jitter` is meant to be a value in [0, 1); anything else (negative, ≥ 1,
/// NaN, infinite) is clamped into that range. `attempt` below 1 counts as 1.
public enum RetryBackoff {
    public static func delay(attempt: Int, base: Duration, maximum: Duration, jitter: Double) -> Duration {
        let cap = max(maximum, .zero)
        var wait = min(max(base, .zero), cap)
        var doublings = min(max(attempt, 1) - 1, 20)
        while doublings > 0, wait < cap {
            // Doubling a wait above half the cap would pass it (and could overflow): the cap is the answer then.
            wait = wait > cap / 2 ? cap : wait * 2
            doublings -= 1
        }
        let j = jitter.isFinite ? min(max(jitter, 0), 0.999_999) : 0
        return wait * (0.5 + 0.5 * j)
    }
}
