import HTTPClient
import Testing

/// The one retry policy of the Apple clients and the workers: the documented curve for sane settings, the defaults
/// every caller had, and no trap for any setting (a configured `retry_delay` of years once shifted bits out and came
/// back negative — an immediate retry, every time; a base of `Int64.max` seconds once overflowed `Duration`).
@Suite struct RetryPolicyTests {
    static func policy(base: Duration, cap: Duration, doublings: Int = 64) -> RetryPolicy {
        RetryPolicy(maxAttempts: 1, baseDelay: base, maxDelay: cap, maxDoublings: doublings)
    }

    /// The attempt after which the workers' old `exponent` doublings applied (`exponent + 1`, without overflowing).
    static func attempt(exponent: Int) -> Int { exponent < .max ? exponent + 1 : .max }

    // MARK: The curve

    @Test func doublesFromTheBaseUpToTheCapTimesTheJitterFactor() {
        let p = Self.policy(base: .seconds(1), cap: .seconds(30), doublings: 20)
        let curve = (1...8).map { p.delay(afterAttempt: $0, jitter: 0.5) }
        #expect(curve == [0.75, 1.5, 3, 6, 12, 22.5, 22.5, 22.5].map { Duration.seconds($0) })
        #expect(p.delay(afterAttempt: 2, jitter: 0) == .seconds(1))
        // At most 2^maxDoublings times the base, whatever the attempt (the Apple clients' 2^20, as before).
        #expect(
            Self.policy(base: .nanoseconds(1), cap: .seconds(1), doublings: 20).delay(afterAttempt: 1000, jitter: 0)
                == .nanoseconds(1 << 19)
        )
        #expect(RetryPolicy.appStoreAPIClient.delay(afterAttempt: 1000, jitter: 0) == .seconds(15))
    }

    @Test func aLongBaseDoublesTowardTheCapInsteadOfWrapping() {
        // 100 years shifted left by 30 bits wrapped to a negative delay: an immediate retry, every time.
        let century: Int64 = 3_153_600_000_000
        let longest = Self.policy(base: .milliseconds(century), cap: .milliseconds(Int64.max))
        #expect(longest.delayMillis(afterAttempt: Self.attempt(exponent: 30), jitter: 1) > century)
        let delivery = Self.policy(base: .milliseconds(5_000), cap: .milliseconds(21_600_000))
        #expect(delivery.delayMillis(afterAttempt: Self.attempt(exponent: 3), jitter: 1) == 39_999)  // 40 s × 0.9999995
        // the cap, halved by jitter 0
        #expect(delivery.delayMillis(afterAttempt: Self.attempt(exponent: 40), jitter: 0) == 10_800_000)
    }

    @Test func jitterOutsideZeroToOneIsClamped() {
        #expect(
            RetryPolicy.jitterFactor(0) == 0.5 && RetryPolicy.jitterFactor(-3) == 0.5
                && RetryPolicy.jitterFactor(-.infinity) == 0.5
        )
        #expect(RetryPolicy.jitterFactor(.nan) == 0.75)
        for above in [0.999_999_9, 1, 2, .infinity] {
            #expect(abs(RetryPolicy.jitterFactor(above) - 0.999_999_5) < 1e-12, "\(above)")
        }
    }

    // MARK: No trap

    @Test func noSettingOrAttemptTraps() {
        let extremes: [Duration] = [
            .seconds(Int64.max), .seconds(Int64.min), .zero, .nanoseconds(1), .seconds(-1), .seconds(86_400),
        ]
        for base in extremes {
            for maximum in extremes {
                for doublings in [20, 64] {
                    let p = Self.policy(base: base, cap: maximum, doublings: doublings)
                    for attempt in [Int.min, -1, 0, 1, 2, 21, 64, 1000, Int.max] {
                        for jitter in [-1, 0, 0.5, 0.999_999_9, 1, 2, .nan, .infinity, -.infinity] as [Double] {
                            let d = p.delay(afterAttempt: attempt, jitter: jitter)
                            #expect(d >= .zero && d <= max(maximum, .zero))
                            let ms = p.delayMillis(afterAttempt: attempt, jitter: jitter)
                            #expect(ms >= 0 && ms <= max(RetryPolicy.milliseconds(maximum), 0))
                        }
                    }
                }
            }
        }
    }

    /// The workers' settings in milliseconds: every base, cap, attempt and jitter gives a delay in `0 ... cap`.
    @Test(arguments: [
        (Int64(5_000), Int64(21_600_000)), (Int64(3_153_600_000_000), Int64(3_153_600_000_000)), (Int64.max, Int64.max),
        (0, 0),
        (-5, 1_000), (1_000, -1),
    ])
    func millisecondDelaysStayWithinZeroAndTheCap(_ base: Int64, _ cap: Int64) {
        let p = Self.policy(base: .milliseconds(base), cap: .milliseconds(cap))
        for exponent in [-1, 0, 1, 29, 30, 31, 62, 63, 64, 1_000, .max] {
            for jitter in [0, 0.5, 0.999_999_9, 1, -3, .infinity, .nan] {
                let d = p.delayMillis(afterAttempt: Self.attempt(exponent: exponent), jitter: jitter)
                #expect(
                    d >= 0 && d <= max(0, cap),
                    "base \(base) cap \(cap) exponent \(exponent) jitter \(jitter): \(d)"
                )
            }
        }
    }

    @Test func millisecondsSaturate() {
        #expect(RetryPolicy.milliseconds(.seconds(Int64.max)) == .max)
        #expect(RetryPolicy.milliseconds(.seconds(Int64.min)) == .min)
        #expect(RetryPolicy.milliseconds(.milliseconds(Int64.max)) == .max)
        #expect(RetryPolicy.milliseconds(.milliseconds(1_500)) == 1_500)
        #expect(RetryPolicy.milliseconds(.nanoseconds(1_999_999)) == 1)
    }

    // MARK: Attempts

    @Test func attemptsStopAtMaxAttempts() {
        var p = Self.policy(base: .seconds(1), cap: .seconds(30))
        p.maxAttempts = 3
        #expect((1...4).map(p.allowsRetry(afterAttempt:)) == [true, true, false, false])
        p.maxAttempts = 0  // below 1 counts as 1: no retry after the first attempt
        #expect(!p.allowsRetry(afterAttempt: 1))
    }

    // MARK: Retry-After

    @Test func retryAfterLengthensTheWaitUpToItsLimit() {
        let api = RetryPolicy.appStoreAPIClient  // honours up to 60 s, above its 30 s cap
        #expect(api.delay(afterAttempt: 1, jitter: 0, retryAfter: .seconds(7)) == .seconds(7))
        #expect(api.delay(afterAttempt: 1, jitter: 0, retryAfter: .seconds(45)) == .seconds(45))
        #expect(api.delay(afterAttempt: 1, jitter: 0, retryAfter: .seconds(3600)) == .seconds(60))
        #expect(
            api.delay(afterAttempt: 3, jitter: 0, retryAfter: .zero) == .seconds(2),
            "a shorter wish leaves the backoff"
        )
        #expect(api.delay(afterAttempt: 1, jitter: 0, retryAfter: .seconds(-5)) == .milliseconds(500))

        let delivery = RetryPolicy.deliveryWorker  // honours up to its cap (6 h)
        #expect(delivery.retryAfterLimit == delivery.maxDelay)
        #expect(delivery.delayMillis(afterAttempt: 1, jitter: 0, retryAfterMillis: 60_000) == 60_000)
        #expect(delivery.delayMillis(afterAttempt: 1, jitter: 0, retryAfterMillis: .max) == 21_600_000)
        #expect(delivery.delayMillis(afterAttempt: 1, jitter: 0, retryAfterMillis: .min) == 2_500)
    }

    @Test func retryAfterOfAResponseIsClampedToTheLimit() {
        let huge = HTTPResponse(status: 503, headers: [HTTPHeader("Retry-After", "99999999999999999")])
        #expect(RetryPolicy.deliveryWorker.retryAfterMillis(of: huge) == 21_600_000)
        #expect(RetryPolicy.appStoreAPIClient.retryAfter(of: huge) == .seconds(60))
        let date = HTTPResponse(status: 429, headers: [HTTPHeader("Retry-After", "Sun, 01 Jun 2025 00:01:30 GMT")])
        #expect(RetryPolicy.deliveryWorker.retryAfterMillis(of: date, now: 1_748_736_000_000) == 90_000)
        #expect(RetryPolicy.deliveryWorker.retryAfterMillis(of: date) == nil, "a date needs a clock")
        #expect(RetryPolicy.deliveryWorker.retryAfter(of: HTTPResponse(status: 503)) == nil)
    }

    // MARK: Defaults

    /// Every caller's defaults, as they were before the policy was one type.
    @Test func presetsKeepEveryCallersDefaults() {
        let api = RetryPolicy.appStoreAPIClient
        #expect(
            api.maxAttempts == 4 && api.baseDelay == .seconds(1) && api.maxDelay == .seconds(30)
                && api.maxDoublings == 20
        )
        #expect(api.retryAfterLimit == .seconds(60))
        let v1 = RetryPolicy.verifyReceiptClient
        #expect(
            v1.maxAttempts == 4 && v1.baseDelay == .seconds(1) && v1.maxDelay == .seconds(30) && v1.maxDoublings == 20
        )
        let delivery = RetryPolicy.deliveryWorker
        #expect(
            delivery.maxAttempts == 12 && delivery.baseDelayMillis == 5_000 && delivery.maxDelayMillis == 6 * 3_600_000
        )
        let receipts = RetryPolicy.receiptWorker
        #expect(
            receipts.maxAttempts == 200 && receipts.baseDelayMillis == 60_000 && receipts.maxDelayMillis == 3_600_000
        )
        let compare = RetryPolicy.compareWorker
        #expect(compare.maxAttempts == 50 && compare.baseDelayMillis == 30_000 && compare.maxDelayMillis == 3_600_000)
        for worker in [delivery, receipts, compare] {
            #expect(worker.maxDoublings == 64 && worker.maxRetryAfter == nil)
        }
    }
}
