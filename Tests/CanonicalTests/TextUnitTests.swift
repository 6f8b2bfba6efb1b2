import Canonical
import Testing

/// The config's and the CLI's durations (`10d`, `500ms`, plain seconds): range-checked, never a trap.
@Suite struct DurationTextTests {
    @Test func durationsParse() {
        #expect(DurationText.milliseconds("10d") == 864_000_000)
        #expect(DurationText.milliseconds("12h") == 43_200_000)
        #expect(DurationText.milliseconds("30m") == 1_800_000)
        #expect(DurationText.milliseconds("45s") == 45_000)
        #expect(DurationText.milliseconds("500ms") == 500)
        #expect(DurationText.milliseconds("7") == 7000)
        #expect(DurationText.milliseconds("-1d") == nil)
        #expect(DurationText.milliseconds("d") == nil)
        #expect(DurationText.milliseconds("99999999999999999d") == nil)
        // Plain numbers are seconds: one that does not fit in milliseconds is refused, not a trap (it was `n * 1000`).
        #expect(DurationText.milliseconds("100000000000000000") == nil)
        #expect(DurationText.milliseconds("9223372036854775") == 9_223_372_036_854_775_000)
        #expect(
            DurationText.milliseconds("+5") == nil && DurationText.milliseconds("") == nil
                && DurationText.milliseconds("5 s") == nil
        )
    }
}

/// The config's sizes (`16MiB`, `2GB`, plain bytes): range-checked like durations.
@Suite struct SizeTextTests {
    @Test func sizesParse() {
        #expect(SizeText.bytes("16MiB") == Int64(16 * 1_048_576))
        #expect(
            SizeText.bytes("512KiB") == 524_288 && SizeText.bytes("2GB") == 2_000_000_000
                && SizeText.bytes("1024") == 1024
        )
        #expect(SizeText.bytes("8 MiB") == Int64(8 * 1_048_576))
        #expect(
            SizeText.bytes("9999999999999GiB") == nil && SizeText.bytes("-1MiB") == nil && SizeText.bytes("MiB") == nil
        )
    }
}

/// The CLI's and admin API's times: ISO-8601, relative to now, or epoch milliseconds.
@Suite struct TimeTextTests {
    @Test func relativeTimesThatCannotBeRepresentedAreRefused() {
        let now: Int64 = 1_748_736_000_000
        #expect(TimeText.milliseconds("7d", now: now) == now - 7 * 86_400_000)
        #expect(TimeText.milliseconds("106751991168d", now: now) == nil)  // more milliseconds than Int64 holds
        #expect(TimeText.milliseconds("9223372036854775807ms", now: -1) == .min)
        #expect(TimeText.milliseconds("9223372036854775807ms", now: -2) == nil)
        #expect(TimeText.milliseconds("100000000000000000", now: now) == 100_000_000_000_000_000)  // epoch ms, as given
        #expect(TimeText.milliseconds("2025-06-01T00:00:00Z", now: now) == 1_748_736_000_000)
    }

    @Test func iso8601DatesAndTimesRead() {
        let now: Int64 = 1_748_736_000_000
        #expect(TimeText.milliseconds("2025-06-01", now: 0) == now)
        #expect(TimeText.milliseconds("2025-06-01T00:00:01.5Z", now: 0) == now + 1_500)
        #expect(TimeText.milliseconds("2025-06-01T02:00:00+02:00", now: 0) == now)
        #expect(TimeText.milliseconds("1969-12-31T23:59:59Z", now: 0) == -1_000)
        #expect(
            TimeText.milliseconds("2025-13-01", now: 0) == nil
                && TimeText.milliseconds("2025-06-01T24:00:00Z", now: 0) == nil
        )
        #expect(TimeText.milliseconds("2025-06-01T00:00:00", now: 0) == nil, "a time without a zone")
    }

    @Test func timesFormatBack() {
        #expect(TimeText.day(1_748_736_000_000) == "2025-06-01")
        #expect(TimeText.iso8601(1_748_736_000_000 + 3_723_000) == "2025-06-01T01:02:03Z")
        #expect(TimeText.iso8601(-1) == "1969-12-31T23:59:59Z")
    }
}
