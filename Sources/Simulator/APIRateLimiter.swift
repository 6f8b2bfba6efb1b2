internal import Canonical
import Synchronization

/// The fake App Store Server API's rate limit (``SimWorld/apiRateLimit``): a rolling window per app, judged on the
/// fake's clock. Only accepted requests count, so a client that waits as `Retry-After` says gets through.
final class APIRateLimiter: Sendable {
    /// Per app, the times (ms) of the requests accepted within the last window, oldest first.
    private let accepted = Mutex<[String: [Int64]]>([:])

    /// nil when a request of `bundleID` at `now` (ms) is within `limit` (and is counted); otherwise the whole seconds
    /// until the oldest counted request leaves the window, at least 1: the `Retry-After` to answer.
    func admit(_ bundleID: String, limit: SimWorld.APIRateLimit, at now: Int64) -> Int64? {
        // The limit comes from the state file: clamped, so no window overflows the clock's arithmetic.
        let window = max(1, min(limit.windowSeconds, 366 * 86_400)) * 1000
        let allowed = max(0, limit.requests)
        return accepted.withLock { all in
            var times = all[bundleID, default: []].filter { $0 > now.clampedSubtracting(window) }.sorted()
            defer { all[bundleID] = times }
            if times.count < allowed {
                times.append(now)
                return nil
            }
            // The request that must leave the window before one more fits.
            let frees = allowed == 0 || times.count < allowed ? now : times[times.count - allowed]
            let wait = frees.clampedAdding(window).clampedSubtracting(now)
            return max(1, (wait + 999) / 1000)
        }
    }
}
