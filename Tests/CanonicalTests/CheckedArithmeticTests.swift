import Canonical
import Testing

/// The non-trapping arithmetic every date and duration from outside goes through: exact away from the bounds,
/// clamped at them.
@Suite struct CheckedArithmeticTests {
    @Test func clampedOperationsAreExactAwayFromTheBounds() {
        #expect(Int64(1_748_736_000_000).clampedAdding(300_000) == 1_748_736_300_000)
        #expect(Int64(1_748_736_000_000).clampedSubtracting(864_000_000) == 1_747_872_000_000)
        #expect(Int64(-7).clampedMultiplied(by: 1000) == -7000)
        #expect(Int64(0).clampedSubtracting(.max) == -Int64.max)
    }

    @Test func clampedOperationsStopAtTheBoundsInsteadOfTrapping() {
        #expect(Int64.max.clampedAdding(1) == .max)
        #expect(Int64.min.clampedAdding(-1) == .min)
        #expect(Int64.min.clampedSubtracting(864_000_000) == .min)
        #expect(Int64.max.clampedSubtracting(-300_000) == .max)
        #expect(Int64(99_999_999_999_999_999).clampedMultiplied(by: 1000) == .max)
        #expect(Int64(-99_999_999_999_999_999).clampedMultiplied(by: 1000) == .min)
        #expect(Int64.min.clampedMultiplied(by: -1) == .max)
        #expect(UInt8(3).clampedSubtracting(5) == 0)
    }

    @Test(arguments: [
        (Int64(1_999), Int64(1)), (0, 0), (-1, -1), (-999, -1), (-1000, -1), (-1001, -2),
        (Int64.min, Int64.min / 1000 - 1), (Int64.max, Int64.max / 1000),
    ])
    func flooredQuotientRoundsTowardNegativeInfinity(ms: Int64, seconds: Int64) {
        #expect(ms.flooredQuotient(dividingBy: 1000) == seconds)
    }

    @Test func flooredQuotientHasNoTrappingCase() {
        #expect(Int64.min.flooredQuotient(dividingBy: -1) == .max)
        #expect(Int64(5).flooredQuotient(dividingBy: 0) == 0)
        #expect(Int64(7).flooredQuotient(dividingBy: -2) == -4)
    }
}

/// Civil dates both ways: `days_from_civil` inverts `civil_from_days` everywhere, and refuses (nil) rather than
/// overflows for years no millisecond timestamp can reach.
@Suite struct UTCTimeTests {
    @Test func daysAndMillisecondsOfKnownDates() {
        #expect(UTCTime.days(year: 1970, month: 1, day: 1) == 0)
        #expect(UTCTime.days(year: 2000, month: 3, day: 1) == 11_017)
        #expect(UTCTime.days(year: 1969, month: 12, day: 31) == -1)
        #expect(UTCTime.days(year: 2025, month: 6, day: 1) == 20_240)
        #expect(UTCTime.milliseconds(year: 2025, month: 6, day: 1, hour: 0, minute: 0, second: 0) == 1_748_736_000_000)
        #expect(
            UTCTime.milliseconds(year: 2019, month: 11, day: 24, hour: 17, minute: 42, second: 49) == 1_574_617_369_000
        )
    }

    @Test func monthLengthsFollowTheGregorianLeapYears() {
        #expect(
            (1...12).map { UTCTime.daysInMonth(year: 2025, month: $0) } == [
                31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31,
            ]
        )
        #expect(UTCTime.daysInMonth(year: 2024, month: 2) == 29 && UTCTime.daysInMonth(year: 2000, month: 2) == 29)
        #expect(UTCTime.daysInMonth(year: 1900, month: 2) == 28 && UTCTime.daysInMonth(year: 0, month: 2) == 29)
        #expect(UTCTime.daysInMonth(year: .min, month: 2) == 29 && UTCTime.daysInMonth(year: .max, month: 2) == 28)
        #expect(UTCTime.daysInMonth(year: 2025, month: 0) == nil && UTCTime.daysInMonth(year: 2025, month: 13) == nil)
    }

    @Test func outOfRangeFieldsAndYearsAreRefusedNotOverflowed() {
        #expect(UTCTime.days(year: 99_999_999_999, month: 1, day: 1) == nil)
        #expect(UTCTime.days(year: .max, month: 12, day: 31) == nil)
        #expect(UTCTime.days(year: .min, month: 1, day: 1) == nil)
        #expect(UTCTime.days(year: 2025, month: 13, day: 1) == nil)
        #expect(UTCTime.days(year: 2025, month: 1, day: 0) == nil)
        #expect(UTCTime.milliseconds(year: 2025, month: 1, day: 1, hour: 24, minute: 0, second: 0) == nil)
        // Within the year bound but past what Int64 milliseconds hold (about 292 million years).
        #expect(UTCTime.milliseconds(year: 299_000_000, month: 1, day: 1, hour: 0, minute: 0, second: 0) == nil)
        #expect(UTCTime.milliseconds(year: -299_000_000, month: 1, day: 1, hour: 0, minute: 0, second: 0) == nil)
    }

    @Test(arguments: [Int64.min, Int64.min + 1, -86_400_001, -1, 0, 1, 1_748_736_000_000, Int64.max - 1, Int64.max])
    func everyMillisecondTimestampHasACalendarDateThatMapsBack(ms: Int64) throws {
        let t = UTCTime(milliseconds: ms)
        #expect((1...12).contains(t.month) && (1...31).contains(t.day) && (0..<86_400).contains(t.secondOfDay))
        let days = try #require(UTCTime.days(year: t.year, month: t.month, day: t.day))
        // Back to the same second (milliseconds within the second are not part of the calendar date).
        let seconds = ms.flooredQuotient(dividingBy: 1000)
        #expect(days.clampedMultiplied(by: 86_400).clampedAdding(t.secondOfDay) == seconds)
        #expect(!t.iso8601.isEmpty)
    }
}
