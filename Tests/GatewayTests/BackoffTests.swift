@testable import Gateway
import Store
import Testing

/// The workers' retry delays for any setting: never negative, never above the cap, never a trap.
@Suite struct BackoffTests {
    @Test(arguments: [
        (Int64(5_000), Int64(21_600_000)), (Int64(3_153_600_000_000), Int64(3_153_600_000_000)), (Int64.max, Int64.max), (0, 0),
        (-5, 1_000), (1_000, -1),
    ])
    func delaysStayWithinZeroAndTheCap(_ base: Int64, _ cap: Int64) {
        for exponent in [-1, 0, 1, 29, 30, 31, 62, 63, 64, 1_000, .max] {
            for jitter in [0, 0.5, 0.999_999_9, 1, -3, .infinity, .nan] {
                let d = Backoff.delay(base: base, cap: cap, exponent: exponent, jitter: jitter)
                #expect(d >= 0 && d <= max(0, cap), "base \(base) cap \(cap) exponent \(exponent) jitter \(jitter): \(d)")
            }
        }
    }

    @Test func aLongBaseDoublesTowardTheCapInsteadOfWrapping() {
        // 100 years shifted left by 30 bits wrapped to a negative delay: an immediate retry, every time.
        let century: Int64 = 3_153_600_000_000
        #expect(Backoff.delay(base: century, cap: .max, exponent: 30, jitter: 1) > century)
        #expect(Backoff.delay(base: 5_000, cap: 21_600_000, exponent: 3, jitter: 1) == 39_999)  // 40 s × 0.9999995
        #expect(Backoff.delay(base: 5_000, cap: 21_600_000, exponent: 40, jitter: 0) == 10_800_000)  // the cap, halved by jitter 0
    }
}
