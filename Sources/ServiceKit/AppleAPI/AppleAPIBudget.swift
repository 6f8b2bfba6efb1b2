internal import Canonical
internal import Store
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
/// - With a ``SharedAPIBudgetLedger`` (a PostgreSQL store: several instances), the buckets are the ledger's, one for
///   every instance: the instance leases a few turns at a time (``AppleRateLimitSettings/leaseTurns(_:_:)``, spent
///   within ``AppleRateLimitSettings/leaseMillis`` or dropped) and hands them out through the same queue. A 429 pauses
///   the ledger's bucket, so every instance pauses; a ledger that cannot be reached gives no turn: only turns leased
///   already are spent, and waiting calls fail at their deadline.
/// - Time is injected: `now` (ms since the epoch) and `sleep` (ms), so tests move a clock of their own.
public final class AppleAPIBudget: AppStoreAPIBudget {
    package let settings: AppleRateLimitSettings
    package let now: @Sendable () -> Int64
    package let sleep: @Sendable (Int64) async -> Void
    package let metrics: Metrics
    package let ledger: (any SharedAPIBudgetLedger)?
    package let log: Log?
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
        /// The ledger's bucket, when the budget is shared: then `tokens` are turns leased from it, not gathered here.
        var shared: SharedBucket?

        mutating func refill(_ time: Int64) {
            if time < lastSeen {
                let back = lastSeen - time
                updatedAt = updatedAt.clampedSubtracting(back)
                if pausedUntil != .min { pausedUntil = pausedUntil.clampedSubtracting(back) }
                shared?.moveBack(back)
            }
            lastSeen = time
            if let shared {
                if time >= shared.leaseUntil { tokens = 0 }
                return
            }
            guard time > updatedAt else { return }
            tokens = min(burst, tokens + Double(time - updatedAt) * rate)
            updatedAt = time
        }

        /// When the turn of the call with `ahead` calls before it comes (after ``refill(_:)``). Shared: the earliest it
        /// could, were this instance alone on the ledger's bucket.
        func turn(after ahead: Int) -> Int64 {
            let needed = Double(ahead + 1) - tokens
            if let shared {
                guard needed > 0 else { return lastSeen }
                let from = max(lastSeen, shared.nextLeaseAt, pausedUntil)
                return from.clampedAdding(Int64(((needed - 1) / rate).rounded(.up)))
            }
            guard needed > 0 else { return updatedAt }
            return updatedAt.clampedAdding(Int64((needed / rate).rounded(.up)))
        }
    }

    /// This instance's side of a bucket of the ledger.
    private struct SharedBucket {
        var bucket: APIBudgetBucket
        var refill: APIBudgetRefill
        /// Most turns one lease takes.
        var batch: Int
        /// The turns leased are spent by then or dropped: whatever the instances hold, no interval holds more than
        /// the ledger's bucket gave over it and ``AppleRateLimitSettings/leaseMillis`` before it.
        var leaseUntil: Int64 = .min
        /// No lease before then: the ledger's bucket is empty until its next turn, or the ledger failed.
        var nextLeaseAt: Int64 = .min
        /// Since when the ledger fails (nil: it answers).
        var failingSince: Int64?

        mutating func moveBack(_ back: Int64) {
            if leaseUntil != .min { leaseUntil = leaseUntil.clampedSubtracting(back) }
            if nextLeaseAt != .min { nextLeaseAt = nextLeaseAt.clampedSubtracting(back) }
        }
    }

    /// What the shared pump does next.
    private enum SharedStep {
        case done
        case sleep(until: Int64)
        case lease(turns: Int, bucket: APIBudgetBucket, refill: APIBudgetRefill)
    }

    private struct State {
        var buckets: [AppStoreAPICall: Bucket] = [:]
        var next = 0
        /// Acquisitions begun and not yet queued, and those of them cancelled meanwhile.
        var pending: Set<Int> = []
        var cancelled: Set<Int> = []
    }

    /// - Parameters:
    ///   - ledger: the buckets every instance on the store shares (nil: this process's own, in memory).
    ///   - log: where a ledger that cannot be reached, and its return, are told.
    public init(
        settings: AppleRateLimitSettings,
        now: @escaping @Sendable () -> Int64,
        sleep: @escaping @Sendable (Int64) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) },
        metrics: Metrics = Metrics(),
        ledger: (any SharedAPIBudgetLedger)? = nil,
        log: Log? = nil
    ) {
        (self.settings, self.now, self.sleep, self.metrics) = (settings, now, sleep, metrics)
        (self.ledger, self.log) = (ledger, log)
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
            if var shared = b.shared {
                shared.nextLeaseAt = max(shared.nextLeaseAt, until)
                b.shared = shared
            }
            return added
        }
        if added > 0 {
            metrics.increment(
                .appleAPIPausedSecondsTotal,
                ["endpoint": call.endpoint.rawValue],
                by: Double(added) / 1000
            )
        }
        // Every instance pauses: the ledger's bucket holds Apple's instant (a later one on record stays).
        if let ledger {
            let (bucket, refill) = (sharedBucket(call), sharedRefill(call))
            Task {
                do {
                    try await ledger.pause(bucket, until: until, refill: refill)
                } catch {
                    metrics.increment(
                        .appleAPIBudgetLedgerFailuresTotal,
                        ["endpoint": call.endpoint.rawValue, "operation": "pause"]
                    )
                    log?.warn(
                        "the shared budget of App Store Server API calls could not record Apple's 429: the other instances learn of it from their own",
                        [
                            "bundle": .string(call.bundleID), "endpoint": .string(call.endpoint.rawValue),
                            "error": .string("\(error)"),
                        ]
                    )
                }
            }
        }
    }

    private func newBucket(_ call: AppStoreAPICall, _ time: Int64) -> Bucket {
        let burst = settings.burst(call.endpoint, call.environment)
        guard ledger != nil else {
            return Bucket(
                tokens: burst,
                updatedAt: time,
                rate: settings.rate(call.endpoint, call.environment) / 1000,
                burst: burst,
                lastSeen: time
            )
        }
        return Bucket(
            tokens: 0,
            updatedAt: time,
            rate: settings.rate(call.endpoint, call.environment) / 1000,
            burst: burst,
            lastSeen: time,
            shared: SharedBucket(
                bucket: sharedBucket(call),
                refill: sharedRefill(call),
                batch: settings.leaseTurns(call.endpoint, call.environment)
            )
        )
    }

    private func sharedBucket(_ call: AppStoreAPICall) -> APIBudgetBucket {
        APIBudgetBucket(bundleID: call.bundleID, environment: call.environment, endpoint: call.endpoint.rawValue)
    }

    private func sharedRefill(_ call: AppStoreAPICall) -> APIBudgetRefill {
        APIBudgetRefill(
            perSecond: settings.rate(call.endpoint, call.environment),
            capacity: settings.sharedBurst(call.endpoint, call.environment)
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
        if let ledger { return await pumpShared(call, ledger) }
        while true {
            var granted: [Waiter] = []
            var expired: [(Waiter, Int64)] = []
            let (time, wake) = state.withLock { s -> (Int64, Int64?) in
                let time = now()
                guard var b = s.buckets[call] else { return (time, nil) }
                b.refill(time)
                granted = Self.give(&b)
                expired = Self.expireLate(&b)
                s.buckets[call] = b
                return (time, b.waiters.isEmpty ? nil : b.turn(after: 0))
            }
            resume(call, granted: granted, expired: expired)
            guard let wake else { return }
            await sleep(max(1, wake - time))
        }
    }
}

extension AppleAPIBudget {
    /// How long a ledger that failed is left alone before the next lease.
    public static let ledgerRetryMillis: Int64 = 1_000

    /// ``pump(_:)`` for a shared bucket: leases turns from the ledger while calls wait (as many as wait, at most a
    /// batch), gives them out in the queue's order at once, sleeps until the ledger's next turn when it had none, and
    /// fails the calls whose turn could not come before their deadline.
    private func pumpShared(_ call: AppStoreAPICall, _ ledger: any SharedAPIBudgetLedger) async {
        while true {
            var expired: [(Waiter, Int64)] = []
            var granted: [Waiter] = []
            let (time, step) = state.withLock { s -> (Int64, SharedStep) in
                let time = now()
                guard var b = s.buckets[call], let shared = b.shared else { return (time, .done) }
                defer { s.buckets[call] = b }
                b.refill(time)
                granted = Self.give(&b)
                expired = Self.expireLate(&b)
                guard !b.waiters.isEmpty else { return (time, .done) }
                let ready = max(shared.nextLeaseAt, b.pausedUntil)
                guard time >= ready else { return (time, .sleep(until: ready)) }
                return (
                    time,
                    .lease(turns: min(shared.batch, b.waiters.count), bucket: shared.bucket, refill: shared.refill)
                )
            }
            resume(call, granted: granted, expired: expired)
            switch step {
            case .done:
                return
            case .sleep(let wake):
                await sleep(max(1, wake - time))
            case .lease(let turns, let bucket, let refill):
                let lease: Result<APIBudgetLease, any Error>
                do {
                    lease = .success(try await ledger.lease(bucket, turns: turns, refill: refill, at: time))
                } catch {
                    lease = .failure(error)
                }
                record(lease, of: call, asked: turns, at: time)
            }
        }
    }

    /// Takes a lease's turns (valid ``AppleRateLimitSettings/leaseMillis`` from `time`, when it was asked for) and
    /// hands them to the waiting calls at once, or notes the ledger's failure.
    private func record(
        _ lease: Result<APIBudgetLease, any Error>,
        of call: AppStoreAPICall,
        asked: Int,
        at time: Int64
    ) {
        let endpoint = call.endpoint.rawValue
        var granted: [Waiter] = []
        let (failedFirst, recoveredAfter) = state.withLock { s -> (Bool, Int64?) in
            guard var b = s.buckets[call], var shared = b.shared else { return (false, nil) }
            defer {
                b.shared = shared
                s.buckets[call] = b
            }
            switch lease {
            case .success(let l):
                let recovered = shared.failingSince.map { max(0, now() - $0) }
                shared.failingSince = nil
                b.tokens += Double(l.turns)
                shared.leaseUntil = time.clampedAdding(AppleRateLimitSettings.leaseMillis)
                shared.nextLeaseAt = l.turns < asked ? l.nextTurnAt : time
                if l.pausedUntil > time { b.pausedUntil = max(b.pausedUntil, l.pausedUntil) }
                b.shared = shared
                granted = Self.give(&b)
                return (false, recovered)
            case .failure:
                let first = shared.failingSince == nil
                if first { shared.failingSince = time }
                shared.nextLeaseAt = time.clampedAdding(Self.ledgerRetryMillis)
                return (first, nil)
            }
        }
        resume(call, granted: granted, expired: [])
        switch lease {
        case .success(let l):
            metrics.increment(
                .appleAPIBudgetLeasesTotal,
                ["endpoint": endpoint, "outcome": l.turns > 0 ? "turns" : "empty"]
            )
            if let recoveredAfter {
                log?.info(
                    "the shared budget of App Store Server API calls answers again",
                    ["endpoint": .string(endpoint), "failed_ms": .int(recoveredAfter)]
                )
            }
        case .failure(let error):
            metrics.increment(.appleAPIBudgetLedgerFailuresTotal, ["endpoint": endpoint, "operation": "lease"])
            if failedFirst {
                log?.warn(
                    "the shared budget of App Store Server API calls cannot be reached: no call to Apple beyond the turns leased already until it answers",
                    ["bundle": .string(call.bundleID), "endpoint": .string(endpoint), "error": .string("\(error)")]
                )
            }
        }
    }

    /// Hands the bucket's whole turns to the calls waiting, in the queue's order.
    private static func give(_ b: inout Bucket) -> [Waiter] {
        var granted: [Waiter] = []
        while b.tokens >= 1, !b.waiters.isEmpty {
            b.tokens -= 1
            granted.append(b.waiters.removeFirst())
        }
        return granted
    }

    /// Takes out the queued calls whose turn would come after their deadline, with the turn each would have had; the
    /// bucket keeps pumping while any call is left.
    private static func expireLate(_ b: inout Bucket) -> [(Waiter, Int64)] {
        var kept: [Waiter] = []
        var expired: [(Waiter, Int64)] = []
        for w in b.waiters {
            let turn = b.turn(after: kept.count)
            if turn > w.deadline { expired.append((w, turn)) } else { kept.append(w) }
        }
        b.waiters = kept
        b.pumping = !kept.isEmpty
        return expired
    }

    private func resume(_ call: AppStoreAPICall, granted: [Waiter], expired: [(Waiter, Int64)]) {
        for w in granted {
            count(call, w.priority, waited: "granted")
            w.continuation.resume(returning: .granted)
        }
        for (w, turn) in expired {
            count(call, w.priority, waited: "expired")
            w.continuation.resume(returning: .expired(nextAt: turn))
        }
    }
}
