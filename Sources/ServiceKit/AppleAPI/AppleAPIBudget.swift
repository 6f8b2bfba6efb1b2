internal import Canonical
import Synchronization
public import V2Adapter

/// The process's one budget of App Store Server API calls (docs/operations.md, "Apple's rate limits"): per app ×
/// endpoint × environment a token bucket filling at Apple's published rate times the margin
/// (``AppleRateLimitSettings``), every client the gateway builds taking its turns from it.
///
/// - A call goes at once when a turn is there and nobody of its priority or higher waits; otherwise it queues, calls
///   for waiting client requests before background work, each in arrival order, and is given its turn when the
///   bucket fills — or fails at once (`budget_exhausted`) when its turn would come after its deadline.
/// - Apple's 429 with a `Retry-After` empties the bucket until Apple's instant, for every caller of that app,
///   endpoint and environment (other endpoints and apps go on).
/// - Time is injected: `now` (ms since the epoch) and `sleep` (ms), so tests move a clock of their own.
public final class AppleAPIBudget: AppStoreAPIBudget {
    package let settings: AppleRateLimitSettings
    package let now: @Sendable () -> Int64
    package let sleep: @Sendable (Int64) async -> Void
    package let metrics: Metrics
    private let state = Mutex(State())

    private struct Waiter {
        var id: Int
        var priority: AppStoreAPICallPriority
        var deadline: Int64
        var continuation: CheckedContinuation<AppStoreAPIBudgetGrant, Never>
    }

    /// One app × endpoint × environment: `tokens` as of `updatedAt` (which a pause may put in the future).
    private struct Bucket {
        var tokens: Double
        var updatedAt: Int64
        /// Turns per millisecond, and the most that may gather.
        var rate: Double
        var burst: Double
        var pausedUntil: Int64 = .min
        /// The latest time the clock was read at: a clock set back moves the bucket's times with it, so that no call
        /// waits for the clock to catch up.
        var lastSeen: Int64
        /// Priority first, then arrival.
        var waiters: [Waiter] = []
        var pumping = false

        mutating func refill(_ time: Int64) {
            if time < lastSeen {
                let back = lastSeen - time
                updatedAt = updatedAt.clampedSubtracting(back)
                if pausedUntil != .min { pausedUntil = pausedUntil.clampedSubtracting(back) }
            }
            lastSeen = time
            guard time > updatedAt else { return }
            tokens = min(burst, tokens + Double(time - updatedAt) * rate)
            updatedAt = time
        }

        /// When the turn of the call with `ahead` calls before it comes (after ``refill(_:)``).
        func turn(after ahead: Int) -> Int64 {
            let needed = Double(ahead + 1) - tokens
            guard needed > 0 else { return updatedAt }
            return updatedAt.clampedAdding(Int64((needed / rate).rounded(.up)))
        }
    }

    private struct State {
        var buckets: [AppStoreAPICall: Bucket] = [:]
        var next = 0
        /// Acquisitions begun and not yet queued, and those of them cancelled meanwhile.
        var pending: Set<Int> = []
        var cancelled: Set<Int> = []
    }

    public init(
        settings: AppleRateLimitSettings,
        now: @escaping @Sendable () -> Int64,
        sleep: @escaping @Sendable (Int64) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) },
        metrics: Metrics = Metrics()
    ) {
        (self.settings, self.now, self.sleep, self.metrics) = (settings, now, sleep, metrics)
    }

    /// Calls waiting for their turn now, for all apps and endpoints (tests wait for them).
    public var waiting: Int { state.withLock { $0.buckets.values.reduce(0) { $0 + $1.waiters.count } } }

    public func acquire(
        _ call: AppStoreAPICall,
        priority: AppStoreAPICallPriority,
        deadline: Int64
    ) async -> AppStoreAPIBudgetGrant {
        let id = state.withLock { s in
            s.next += 1
            s.pending.insert(s.next)
            return s.next
        }
        let grant = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<AppStoreAPIBudgetGrant, Never>) in
                let (answer, startPump) = state.withLock { s -> (AppStoreAPIBudgetGrant?, Bool) in
                    s.pending.remove(id)
                    let time = now()
                    var b = s.buckets[call] ?? newBucket(call, time)
                    b.refill(time)
                    defer { s.buckets[call] = b }
                    if s.cancelled.remove(id) != nil { return (.expired(nextAt: b.turn(after: 0)), false) }
                    let ahead = b.waiters.firstIndex { $0.priority > priority } ?? b.waiters.count
                    if ahead == 0, b.tokens >= 1 {
                        b.tokens -= 1
                        return (.granted, false)
                    }
                    let turn = b.turn(after: ahead)
                    if turn > deadline { return (.expired(nextAt: turn), false) }
                    b.waiters.insert(
                        Waiter(id: id, priority: priority, deadline: deadline, continuation: continuation),
                        at: ahead
                    )
                    defer { b.pumping = true }
                    return (nil, !b.pumping)
                }
                if let answer {
                    if case .expired = answer { count(call, priority, waited: "expired") }
                    continuation.resume(returning: answer)
                }
                if startPump { Task { await self.pump(call) } }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                if s.pending.contains(id) { s.cancelled.insert(id) }
                guard var b = s.buckets[call], let i = b.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                let w = b.waiters.remove(at: i)
                s.buckets[call] = b
                return w
            }
            waiter?.continuation.resume(returning: .expired(nextAt: now()))
        }
        if grant == .granted {
            metrics.increment(
                .appleAPICallsTotal,
                ["endpoint": call.endpoint.rawValue, "environment": call.environment.rawValue]
            )
        }
        return grant
    }

    public func rateLimited(_ call: AppStoreAPICall, until: Int64?) {
        metrics.increment(.appleAPIRateLimitedTotal, ["endpoint": call.endpoint.rawValue])
        guard let until else { return }
        let added = state.withLock { s -> Int64 in
            let time = now()
            var b = s.buckets[call] ?? newBucket(call, time)
            b.refill(time)
            defer { s.buckets[call] = b }
            guard until > max(time, b.pausedUntil) else { return 0 }
            let added = until - max(time, b.pausedUntil)
            // Empty until one turn has gathered exactly at Apple's instant.
            b.tokens = 0
            b.updatedAt = max(b.updatedAt, until.clampedSubtracting(Int64((1 / b.rate).rounded(.up))))
            b.pausedUntil = until
            return added
        }
        if added > 0 {
            metrics.increment(
                .appleAPIPausedSecondsTotal,
                ["endpoint": call.endpoint.rawValue],
                by: Double(added) / 1000
            )
        }
    }

    private func newBucket(_ call: AppStoreAPICall, _ time: Int64) -> Bucket {
        let burst = settings.burst(call.endpoint, call.environment)
        return Bucket(
            tokens: burst,
            updatedAt: time,
            rate: settings.rate(call.endpoint, call.environment) / 1000,
            burst: burst,
            lastSeen: time
        )
    }

    private func count(_ call: AppStoreAPICall, _ priority: AppStoreAPICallPriority, waited outcome: String) {
        metrics.increment(
            .appleAPIBudgetWaitsTotal,
            ["endpoint": call.endpoint.rawValue, "priority": priority.description, "outcome": outcome]
        )
    }

    /// Gives the queued calls of `call`'s bucket their turns as it fills, and fails those whose turn would come after
    /// their deadline; ends when none waits.
    private func pump(_ call: AppStoreAPICall) async {
        while true {
            var granted: [Waiter] = []
            var expired: [(Waiter, Int64)] = []
            let (time, wake) = state.withLock { s -> (Int64, Int64?) in
                let time = now()
                guard var b = s.buckets[call] else { return (time, nil) }
                b.refill(time)
                while b.tokens >= 1, !b.waiters.isEmpty {
                    b.tokens -= 1
                    granted.append(b.waiters.removeFirst())
                }
                var kept: [Waiter] = []
                for w in b.waiters {
                    let turn = b.turn(after: kept.count)
                    if turn > w.deadline { expired.append((w, turn)) } else { kept.append(w) }
                }
                b.waiters = kept
                b.pumping = !kept.isEmpty
                s.buckets[call] = b
                return (time, kept.isEmpty ? nil : b.turn(after: 0))
            }
            for w in granted {
                count(call, w.priority, waited: "granted")
                w.continuation.resume(returning: .granted)
            }
            for (w, turn) in expired {
                count(call, w.priority, waited: "expired")
                w.continuation.resume(returning: .expired(nextAt: turn))
            }
            guard let wake else { return }
            await sleep(max(1, wake - time))
        }
    }
}
