/// How a failed call or job is tried again: the one retry policy of the gateway, for both Apple clients and the
/// background workers (delivery, verifyReceipt jobs, comparison fetches), with every default in one place (the
/// presets at the bottom).
///
/// - **Attempts**: ``maxAttempts`` in all, the first included (below 1 counts as 1).
/// - **Backoff**: after attempt *n* (1 = the first) the wait is `baseDelay · 2^(n−1)`, at most `maxDoublings`
///   doublings and never above `maxDelay` (the cap), times a jitter factor in [0.5, 1) so retries of many callers do
///   not arrive together.
/// - **Retry-After**: a server's wish (read by ``RetryAfter``) lengthens the wait, never beyond ``retryAfterLimit``.
///
/// Every setting may come from a configuration, so every setting is safe: a negative delay counts as zero, the
/// doubling stops at the cap (instead of multiplying first, which overflows `Duration` or wraps `Int64` for a base
/// of years), an attempt below 1 counts as 1, and a jitter outside [0, 1) is clamped into it (NaN counts as 0.5).
/// No input traps; every wait is within `0 ... max(maxDelay, retryAfterLimit)`.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included; none follows the `maxAttempts`-th (below 1 counts as 1).
    public var maxAttempts: Int
    /// The wait after the first failed attempt (before jitter); it doubles per attempt.
    public var baseDelay: Duration
    /// The cap of the doubling; also the longest `Retry-After` honoured unless ``maxRetryAfter`` is set.
    public var maxDelay: Duration
    /// The longest `Retry-After` honoured; nil: ``maxDelay``.
    public var maxRetryAfter: Duration?
    /// At most this many doublings: the wait before jitter is at most `baseDelay · 2^maxDoublings`, below the cap too.
    public var maxDoublings: Int

    public init(
        maxAttempts: Int,
        baseDelay: Duration,
        maxDelay: Duration,
        maxRetryAfter: Duration? = nil,
        maxDoublings: Int = 64
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.maxDoublings = maxDoublings
    }

    // MARK: Attempts

    /// Whether another attempt may follow attempt `attempt` (1 = the first).
    public func allowsRetry(afterAttempt attempt: Int) -> Bool { attempt < maxAttempts }

    // MARK: Waits

    /// The wait after attempt `attempt` failed: the backoff times the jitter factor of `jitter` (a value in [0, 1)),
    /// or the `retryAfter` the server asked for (clamped to `0 ... retryAfterLimit`) when that is longer.
    public func delay(afterAttempt attempt: Int, jitter: Double, retryAfter: Duration? = nil) -> Duration {
        let wait = backoff(afterAttempt: attempt) * Self.jitterFactor(jitter)
        guard let retryAfter else { return wait }
        return max(wait, min(max(retryAfter, .zero), max(retryAfterLimit, .zero)))
    }

    /// ``delay(afterAttempt:jitter:retryAfter:)`` in whole milliseconds (rounded down), for schedulers that count in
    /// epoch milliseconds (and add it to their clock with a clamped addition).
    public func delayMillis(afterAttempt attempt: Int, jitter: Double, retryAfterMillis: Int64? = nil) -> Int64 {
        let wait = Int64(
            min(Double(Self.milliseconds(backoff(afterAttempt: attempt))) * Self.jitterFactor(jitter), 9.0e18)
        )
        guard let retryAfterMillis else { return wait }
        return max(wait, min(max(retryAfterMillis, 0), max(Self.milliseconds(retryAfterLimit), 0)))
    }

    /// The wait after attempt `attempt` before jitter: `baseDelay · 2^(attempt−1)`, at most `maxDoublings` doublings,
    /// within `0 ... maxDelay`.
    public func backoff(afterAttempt attempt: Int) -> Duration {
        let cap = max(maxDelay, .zero)
        var wait = min(max(baseDelay, .zero), cap)
        var doublings = min(max(attempt, 1) - 1, max(maxDoublings, 0))
        while doublings > 0, wait < cap {
            // Doubling a wait above half the cap would pass it (and could overflow): the cap is the answer then.
            wait = wait > cap / 2 ? cap : wait * 2
            doublings -= 1
        }
        return wait
    }

    /// `0.5 + 0.5 · jitter`, `jitter` clamped to [0, 0.999999] (NaN counts as 0.5): a factor in [0.5, 1).
    public static func jitterFactor(_ jitter: Double) -> Double {
        0.5 + 0.5 * (jitter.isNaN ? 0.5 : min(max(jitter, 0), 0.999_999))
    }

    // MARK: Retry-After

    /// The longest `Retry-After` honoured: ``maxRetryAfter``, or ``maxDelay`` when that is not set.
    public var retryAfterLimit: Duration { maxRetryAfter ?? maxDelay }

    /// `response`'s `Retry-After` within `0 ... retryAfterLimit`; nil when absent or junk. `now` (ms since the epoch)
    /// lets the HTTP-date form count.
    public func retryAfter(of response: HTTPResponse, now: Int64? = nil) -> Duration? {
        response.retryAfter(maximum: retryAfterLimit, now: now)
    }

    /// ``retryAfter(of:now:)`` in whole milliseconds.
    public func retryAfterMillis(of response: HTTPResponse, now: Int64? = nil) -> Int64? {
        response.retryAfterMillis(maximumMillis: Self.milliseconds(retryAfterLimit), now: now)
    }

    // MARK: Milliseconds

    /// ``baseDelay`` in whole milliseconds (saturating).
    public var baseDelayMillis: Int64 { Self.milliseconds(baseDelay) }
    /// ``maxDelay`` in whole milliseconds (saturating).
    public var maxDelayMillis: Int64 { Self.milliseconds(maxDelay) }

    /// `duration` in whole milliseconds, rounded toward zero; beyond `Int64`'s range it saturates instead of trapping.
    public static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (ms, o1) = seconds.multipliedReportingOverflow(by: 1000)
        let (sum, o2) = ms.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return o1 || o2 ? (seconds < 0 ? .min : .max) : sum
    }
}

// MARK: Presets: every default of every retrying caller

extension RetryPolicy {
    /// The App Store Server API client: 4 attempts per call (per page), 1 s doubling to 30 s (at most 2^20 times the
    /// base), and a `Retry-After` honoured up to 60 s (a longer one ends the call).
    public static let appStoreAPIClient = RetryPolicy(
        maxAttempts: 4,
        baseDelay: .seconds(1),
        maxDelay: .seconds(30),
        maxRetryAfter: .seconds(60),
        maxDoublings: 20
    )

    /// The verifyReceipt client: 4 attempts per receipt, 1 s doubling to 30 s (at most 2^20 times the base);
    /// verifyReceipt sends no `Retry-After`.
    public static let verifyReceiptClient = RetryPolicy(
        maxAttempts: 4,
        baseDelay: .seconds(1),
        maxDelay: .seconds(30),
        maxDoublings: 20
    )

    /// Deliveries to a downstream: 12 attempts (a downstream's `max_attempts`), 5 s doubling to 6 h (its
    /// `retry_delay` and `max_retry_delay`); a downstream's `Retry-After` is honoured up to the cap.
    public static let deliveryWorker = RetryPolicy(
        maxAttempts: 12,
        baseDelay: .milliseconds(5_000),
        maxDelay: .milliseconds(21_600_000)
    )

    /// verifyReceipt jobs while Apple is unavailable: 200 attempts, 60 s doubling to 1 h.
    public static let receiptWorker = RetryPolicy(
        maxAttempts: 200,
        baseDelay: .milliseconds(60_000),
        maxDelay: .milliseconds(3_600_000)
    )

    /// Comparison fetches: 50 attempts, 30 s doubling to 1 h.
    public static let compareWorker = RetryPolicy(
        maxAttempts: 50,
        baseDelay: .milliseconds(30_000),
        maxDelay: .milliseconds(3_600_000)
    )
}
