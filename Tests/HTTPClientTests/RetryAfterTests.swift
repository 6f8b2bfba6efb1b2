import HTTPClient
import Testing

/// `Retry-After` comes from whoever answered: every value, however hostile, reads as nil or a delay within
/// `0 ... maximum`, never a trap. Before this parser the gateway's delivery worker computed `Int64(value) * 1000`
/// and a receiver answering `Retry-After: 99999999999999999` killed the process.
@Suite struct RetryAfterTests {
    static let minute: Duration = .seconds(60)
    static let day: Duration = .seconds(86_400)
    /// 2025-06-01T00:00:00Z in ms.
    static let now: Int64 = 1_748_736_000_000
    static let sixHoursMillis: Int64 = 6 * 3_600_000

    static let hostileDeltaSeconds: [(String, Duration?)] = [
        ("99999999999999999", day),
        ("9223372036854775807", day),
        ("9223372036854775808", day),
        ("18446744073709551616", day),
        (String(repeating: "9", count: 10_000), day),
        ("00000000000000000000000000000000000000000120", .seconds(120)),
        ("0", .zero),
        ("120", .seconds(120)),
        (" \t120 \t", .seconds(120)),
        ("86400", day),
        ("86401", day),
        ("+120", nil), ("-1", nil), ("-9223372036854775808", nil), ("1.5", nil), ("1e3", nil), ("120s", nil),
        ("1 2", nil), ("120, 60", nil), ("", nil), ("   ", nil), ("\u{661}\u{662}\u{660}", nil), ("0x10", nil),
        ("120\r\n", nil), ("NaN", nil), ("Infinity", nil), ("٫", nil),
    ]

    @Test(arguments: hostileDeltaSeconds)
    func deltaSecondsOfAnyLengthAreClampedAndJunkIsNil(_ value: String, _ expected: Duration?) {
        #expect(RetryAfter.delay(value, maximum: Self.day) == expected, "\(value.prefix(30))")
        #expect(RetryAfter.delay(value, maximum: Self.day, now: Self.now) == expected, "\(value.prefix(30))")
        let ms = RetryAfter.milliseconds(value, maximumMillis: 86_400_000)
        #expect(ms == expected.map { $0.components.seconds * 1000 }, "\(value.prefix(30))")
    }

    /// Apple's App Store Server API form: a UNIX time in milliseconds, read only when the caller says so; smaller
    /// digits stay delta-seconds, junk stays nil, and an instant needs a clock.
    @Test func applesEpochMillisecondsAreAnInstantWhenAsked() {
        let at = String(Self.now + 2_500)
        #expect(RetryAfter.delay(at, maximum: Self.day, now: Self.now, epochMilliseconds: true) == .milliseconds(2_500))
        #expect(RetryAfter.delay(at, maximum: Self.day, now: Self.now) == Self.day, "without it: seconds, clamped")
        #expect(
            RetryAfter.delay(String(Self.now - 1), maximum: Self.day, now: Self.now, epochMilliseconds: true) == .zero
        )
        #expect(RetryAfter.delay(at, maximum: Self.day, epochMilliseconds: true) == nil, "no clock")
        #expect(RetryAfter.delay("120", maximum: Self.day, now: Self.now, epochMilliseconds: true) == .seconds(120))
        #expect(
            RetryAfter.delay("99999999999", maximum: Self.day, now: Self.now, epochMilliseconds: true) == Self.day,
            "below 10^11: seconds"
        )
        #expect(
            RetryAfter.delay(
                String(repeating: "9", count: 500),
                maximum: Self.day,
                now: Self.now,
                epochMilliseconds: true
            )
                == Self.day
        )
        #expect(RetryAfter.delay("-1", maximum: Self.day, now: Self.now, epochMilliseconds: true) == nil)
        let inAnHour = String(Self.now + 3_600_000)
        #expect(RetryAfter.delay(inAnHour, maximum: Self.minute, now: Self.now, epochMilliseconds: true) == Self.minute)
    }

    @Test func millisecondsSaturateAtEveryMaximum() {
        for value in ["99999999999999999", "9223372036854775", "9223372036854776", String(repeating: "7", count: 500)] {
            #expect(RetryAfter.milliseconds(value, maximumMillis: .max) == .max || value == "9223372036854775")
            #expect(RetryAfter.milliseconds(value, maximumMillis: Self.sixHoursMillis) == Self.sixHoursMillis)
        }
        #expect(RetryAfter.milliseconds("9223372036854775", maximumMillis: .max) == 9_223_372_036_854_775_000)
        #expect(
            RetryAfter.delay(String(repeating: "9", count: 40), maximum: .seconds(Int64.max)) == .seconds(Int64.max)
        )
    }

    @Test func aNegativeMaximumMeansNoWait() {
        #expect(RetryAfter.delay("120", maximum: .seconds(-5)) == .zero)
        #expect(RetryAfter.milliseconds("120", maximumMillis: .min) == 0)
        #expect(RetryAfter.delay("junk", maximum: .seconds(-5)) == nil)
    }

    // MARK: HTTP-date

    @Test func allThreeHTTPDateFormsCountFromNow() {
        // 2025-06-01T00:01:30Z, 90 s after `now`, in IMF-fixdate, rfc850 and asctime.
        for value in ["Sun, 01 Jun 2025 00:01:30 GMT", "Sunday, 01-Jun-25 00:01:30 GMT", "Sun Jun  1 00:01:30 2025"] {
            #expect(RetryAfter.delay(value, maximum: Self.day, now: Self.now) == .seconds(90), "\(value)")
            #expect(RetryAfter.milliseconds(value, maximumMillis: 86_400_000, now: Self.now) == 90_000, "\(value)")
            // Without a clock a date cannot become a delay.
            #expect(RetryAfter.delay(value, maximum: Self.day) == nil)
        }
        #expect(RetryAfter.delay("Sun, 01 Jun 2025 00:01:30 GMT", maximum: Self.minute, now: Self.now) == Self.minute)
        #expect(
            RetryAfter.delay("Sun, 06 Nov 1994 08:49:37 GMT", maximum: Self.day, now: Self.now) == .zero,
            "a past date: no wait"
        )
        #expect(RetryAfter.delay("Sun, 01 Jun 2025 00:00:00 GMT", maximum: Self.day, now: Self.now + 500) == .zero)
        #expect(
            RetryAfter.delay("Sun, 01 Jun 2025 00:00:01 GMT", maximum: Self.day, now: Self.now + 500)
                == .milliseconds(500)
        )
    }

    @Test func twoDigitYearsMoreThanFiftyYearsAheadMeanThePast() {
        // From 2025: "70" is 2070 (45 years ahead), "80" would be 2080 (55 years ahead) and so is 1980.
        #expect(
            RetryAfter.delay("Thursday, 01-Jan-70 00:00:00 GMT", maximum: .seconds(Int64.max), now: Self.now)
                == .milliseconds(3_155_760_000_000 - Self.now)
        )
        #expect(
            RetryAfter.delay("Tuesday, 01-Jan-80 00:00:00 GMT", maximum: .seconds(Int64.max), now: Self.now) == .zero
        )
        // 29 February exists in 2000 but not in 2100 or 1900: the candidate that is no date is skipped.
        #expect(RetryAfter.delay("Tuesday, 29-Feb-00 00:00:00 GMT", maximum: Self.day, now: Self.now) == .zero)
    }

    @Test func datesAtTheEndsOfTimeAndOfTheClockAreClamped() {
        let far = "Fri, 31 Dec 9999 23:59:59 GMT"
        #expect(RetryAfter.delay(far, maximum: Self.day, now: .min) == Self.day)
        #expect(RetryAfter.milliseconds(far, maximumMillis: .max, now: .min) == .max)
        #expect(RetryAfter.delay(far, maximum: Self.day, now: .max) == .zero)
        #expect(RetryAfter.delay("Mon, 01 Jan 0000 00:00:00 GMT", maximum: Self.day, now: .max) == .zero)
        #expect(RetryAfter.delay("Sunday, 01-Jan-00 00:00:00 GMT", maximum: Self.day, now: .min) != nil)
        #expect(RetryAfter.delay("Sunday, 01-Jan-00 00:00:00 GMT", maximum: Self.day, now: .max) == .zero)
    }

    @Test(arguments: [
        "Sun, 31 Feb 2025 00:00:00 GMT", "Sun, 29 Feb 2025 00:00:00 GMT", "Sun, 01 Jun 2025 24:00:00 GMT",
        "Sun, 01 Jun 2025 00:60:00 GMT", "Sun, 01 Jun 2025 00:00:00 UTC", "Sun, 01 Jun 2025 00:00:00 gmt",
        "sun, 01 Jun 2025 00:00:00 GMT", "Xyz, 01 Jun 2025 00:00:00 GMT", "Sun, 01 June 2025 00:00:00 GMT",
        "Sun, 1 Jun 2025 00:00:00 GMT", "Sun, 01 Jun 25 00:00:00 GMT", "Sun, 01 Jun 2025 00:00:00 GMT ",
        "Sun, 01 Jun 2025 00:00:00 GMT+1", "Sun, 01 Jun -025 00:00:00 GMT", "Sun, 01 Jun 2025 0a:00:00 GMT",
        "Sunday, 01-Jun-2025 00:01:30 GMT", "Sundae, 01-Jun-25 00:01:30 GMT", "Sun Jun 1 00:01:30 2025",
        "Sun Jun  1 00:01:30 99999", "Sun, 01 Jun 2025", "GMT", ",",
    ])
    func malformedDatesAreJunk(_ value: String) {
        // The trailing-space case is trimmed whitespace, which is allowed: it is the one valid entry here.
        let expected: Duration? = value.hasSuffix("GMT ") ? .seconds(0) : nil
        #expect(RetryAfter.delay(value, maximum: Self.day, now: Self.now + 86_400_000) == expected, "\(value)")
    }

    @Test func theResponseHelperReadsTheHeaderCaseInsensitively() {
        let r = HTTPResponse(status: 429, headers: [HTTPHeader("retry-after", "99999999999999999")])
        #expect(r.retryAfter(maximum: Self.minute) == Self.minute)
        #expect(r.retryAfterMillis(maximumMillis: Self.sixHoursMillis) == Self.sixHoursMillis)
        #expect(HTTPResponse(status: 503).retryAfter(maximum: Self.minute) == nil)
        #expect(
            HTTPResponse(status: 503, headers: [HTTPHeader("Retry-After", "soon")]).retryAfterMillis(
                maximumMillis: 1000
            ) == nil
        )
    }
}
