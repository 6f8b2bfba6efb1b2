import Synchronization

/// Deliveries started per second, per downstream (`downstreams[].max_per_second`; docs/configuration.md): a token
/// bucket per downstream holding one second's worth, refilled continuously, so that a receiver back from an outage
/// takes its backlog at the rate it asked for, not at full speed. A delivery waits for its token before it is sent;
/// a downstream without a limit never waits. Time comes from the injected clock; the wait from the injected sleep.
final class RateLimiter: Sendable {
    private struct Bucket {
        let perSecond: Int
        var tokens: Double
        var updatedAt: Int64
    }

    private let buckets: Mutex<[String: Bucket]>
    private let now: @Sendable () -> Int64
    private let sleep: @Sendable (Int64) async -> Void

    /// `limits`: deliveries per second by downstream name (those without a limit left out). A bucket starts full.
    init(
        limits: [String: Int],
        now: @escaping @Sendable () -> Int64,
        sleep: @escaping @Sendable (Int64) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) }
    ) {
        let start = now()
        buckets = Mutex(
            limits.mapValues { Bucket(perSecond: max(1, $0), tokens: Double(max(1, $0)), updatedAt: start) }
        )
        (self.now, self.sleep) = (now, sleep)
    }

    /// Returns true once `downstream` may start one more delivery (at once without a limit); false when the task was
    /// cancelled first (shutdown: the delivery stays due and is made after the restart).
    func acquire(_ downstream: String) async -> Bool {
        while !Task.isCancelled {
            guard let wait = take(downstream) else { return true }
            await sleep(wait)
        }
        return false
    }

    /// Takes a token: nil when one was there (or there is no limit), else how long until the next one (ms, ≥ 1).
    func take(_ downstream: String) -> Int64? {
        let time = now()
        return buckets.withLock { buckets -> Int64? in
            guard var b = buckets[downstream] else { return nil }
            let rate = Double(b.perSecond) / 1000
            b.tokens = min(Double(b.perSecond), b.tokens + Double(max(0, time - b.updatedAt)) * rate)
            b.updatedAt = max(b.updatedAt, time)
            defer { buckets[downstream] = b }
            if b.tokens >= 1 {
                b.tokens -= 1
                return nil
            }
            return max(1, Int64(((1 - b.tokens) / rate).rounded(.up)))
        }
    }
}
