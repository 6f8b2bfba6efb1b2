internal import Canonical

/// `Retry-After` (RFC 9110 §10.2.3) read as what it is: a wish of whoever answered — Apple, a webhook receiver,
/// anything in between — never trusted. The one parser every client of this module uses, so no caller multiplies a
/// header's digits by 1000 itself.
///
/// - **delta-seconds** (`120`): one or more ASCII digits, any number of them. A value too large for `Int64`
///   seconds saturates instead of overflowing; either way the delay is then clamped to the caller's `maximum`.
/// - **HTTP-date** (`Sun, 06 Nov 1994 08:49:37 GMT`, and the two obsolete forms RFC 9110 §5.6.7 requires
///   recipients to accept: `Sunday, 06-Nov-94 08:49:37 GMT` and `Sun Nov  6 08:49:37 1994`): the delay until that
///   instant as seen from the caller's `now`, zero when it has passed, clamped to `maximum`. Without a `now` the
///   date form is ignored (nil): a delay cannot be derived without a clock.
/// - Leading and trailing spaces and tabs are allowed (optional whitespace around a field value); anything else —
///   signs, fractions, units, a second value, an impossible date (`31 Feb`), a weekday that is not one — is junk,
///   read as nil (no wish expressed), so the caller's own backoff applies.
///
/// - **Apple's App Store Server API** sends a UNIX time in milliseconds (`1753920001000`, its "Identifying rate
///   limits" page). With `epochMilliseconds`, digits worth 10^11 or more are read as that instant (no delta-seconds a
///   server means is 3,000 years), smaller ones still as delta-seconds (a proxy in front may send those); the delay is
///   then until that instant from `now`, as for an HTTP-date.
///
/// A negative `maximum` counts as zero. The result is never negative and never above `maximum`.
public enum RetryAfter {
    /// From this many, digits read with `epochMilliseconds` are an instant in milliseconds (1973-03-03).
    public static let epochMillisecondsFrom: Int64 = 100_000_000_000

    /// The delay `value` asks for, within `0 ... maximum`; nil when `value` is not a `Retry-After` value (or is a
    /// date and no `now` was given). `now` is milliseconds since the epoch.
    public static func delay(
        _ value: String,
        maximum: Duration,
        now: Int64? = nil,
        epochMilliseconds: Bool = false
    ) -> Duration? {
        let ceiling = max(maximum, .zero)
        switch parse(value, now: now, epochMilliseconds: epochMilliseconds) {
        case .seconds(let s)?: return min(.seconds(s), ceiling)
        case .until(let ms)?: return min(.milliseconds(max(0, difference(ms, now ?? 0))), ceiling)
        case nil: return nil
        }
    }

    /// The delay `value` asks for in whole milliseconds, within `0 ... maximumMillis` (what schedulers counting in
    /// epoch milliseconds add to their clock — with their own clamped addition).
    public static func milliseconds(_ value: String, maximumMillis: Int64, now: Int64? = nil) -> Int64? {
        let ceiling = max(maximumMillis, 0)
        switch parse(value, now: now) {
        case .seconds(let s)?:
            let (ms, overflow) = s.multipliedReportingOverflow(by: 1000)
            return min(overflow ? .max : ms, ceiling)
        case .until(let ms)?: return min(max(0, difference(ms, now ?? 0)), ceiling)
        case nil: return nil
        }
    }

    enum Parsed: Equatable {
        /// delta-seconds, saturated at `Int64.max`.
        case seconds(Int64)
        /// An HTTP-date, in milliseconds since the epoch.
        case until(Int64)
    }

    static func parse(_ value: String, now: Int64?, epochMilliseconds: Bool = false) -> Parsed? {
        var bytes = Array(value.utf8)[...]
        while let f = bytes.first, f == 0x20 || f == 0x09 { bytes.removeFirst() }
        while let l = bytes.last, l == 0x20 || l == 0x09 { bytes.removeLast() }
        guard let first = bytes.first else { return nil }
        if isDigit(first) {
            var seconds: Int64 = 0
            for b in bytes {
                guard isDigit(b) else { return nil }
                let (times10, o1) = seconds.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int64(b - 0x30))
                seconds = o1 || o2 ? .max : sum  // once saturated, stays saturated: every later digit overflows again
            }
            if epochMilliseconds, seconds >= epochMillisecondsFrom {
                guard now != nil else { return nil }  // an instant needs a clock, as a date does
                return .until(seconds)
            }
            return .seconds(seconds)
        }
        guard let now, let ms = httpDate(Array(bytes), now: now) else { return nil }
        return .until(ms)
    }

    /// `a - b`, clamped to `Int64`'s range.
    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (d, overflow) = a.subtractingReportingOverflow(b)
        guard overflow else { return d }
        return b > 0 ? .min : .max
    }

    // MARK: HTTP-date (RFC 9110 §5.6.7)

    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].map {
        Array($0.utf8)
    }
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map
    { Array($0.utf8) }

    /// Milliseconds since the epoch of an IMF-fixdate, rfc850-date or asctime-date; nil for anything else.
    static func httpDate(_ b: [UInt8], now: Int64) -> Int64? {
        func digits(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= b.count else { return nil }
            var v: Int64 = 0
            for i in range {
                guard isDigit(b[i]) else { return nil }
                v = v * 10 + Int64(b[i] - 0x30)  // at most 4 digits: cannot overflow
            }
            return v
        }
        func month(at i: Int) -> Int64? {
            guard i + 3 <= b.count, let m = months.firstIndex(where: { $0[...] == b[i..<(i + 3)] }) else { return nil }
            return Int64(m + 1)
        }
        func time(at i: Int) -> (Int64, Int64, Int64)? {
            guard i + 8 <= b.count, b[i + 2] == UInt8(ascii: ":"), b[i + 5] == UInt8(ascii: ":"),
                let h = digits(i..<(i + 2)), let m = digits((i + 3)..<(i + 5)), let s = digits((i + 6)..<(i + 8))
            else { return nil }
            return (h, m, s)
        }
        let gmt = Array(" GMT".utf8)

        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" (exactly 29 bytes).
        if b.count == 29, shortDays.contains(where: { $0[...] == b[0..<3] }), b[3] == UInt8(ascii: ","), b[4] == 0x20,
            let day = digits(5..<7), b[7] == 0x20, let mon = month(at: 8), b[11] == 0x20, let year = digits(12..<16),
            b[16] == 0x20, let (h, m, s) = time(at: 17), b[25...] == gmt[...]
        {
            return instant(year, mon, day, h, m, s)
        }
        // asctime-date: "Sun Nov  6 08:49:37 1994" (exactly 24 bytes; a one-digit day is padded with a space).
        if b.count == 24, shortDays.contains(where: { $0[...] == b[0..<3] }), b[3] == 0x20, let mon = month(at: 4),
            b[7] == 0x20, let day = b[8] == 0x20 ? digits(9..<10) : digits(8..<10), b[10] == 0x20,
            let (h, m, s) = time(at: 11), b[19] == 0x20, let year = digits(20..<24)
        {
            return instant(year, mon, day, h, m, s)
        }
        // rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT".
        if let name = longDays.first(where: { b.count == $0.count + 24 && b[0..<$0.count] == $0[...] }) {
            let i = name.count
            guard b[i] == UInt8(ascii: ","), b[i + 1] == 0x20, let day = digits((i + 2)..<(i + 4)),
                b[i + 4] == UInt8(ascii: "-"),
                let mon = month(at: i + 5), b[i + 8] == UInt8(ascii: "-"), let yy = digits((i + 9)..<(i + 11)),
                b[i + 11] == 0x20,
                let (h, m, s) = time(at: i + 12), b[(i + 20)...] == gmt[...]
            else { return nil }
            // RFC 9110: a two-digit year more than 50 years in the future means the most recent past year with those
            // digits. Among the four-digit years ending in `yy`, the latest that is not beyond now + 50 years.
            let fiftyYears: Int64 = 50 * 31_556_952_000  // Gregorian average year
            let horizon = now.addingReportingOverflow(fiftyYears).overflow ? Int64.max : now + fiftyYears
            var best: Int64?
            for century in stride(from: Int64(9900), through: 0, by: -100) {
                // 29-Feb-00 exists in some centuries only: a candidate that is no date is skipped.
                guard let t = instant(century + yy, mon, day, h, m, s) else { continue }
                if t <= horizon {
                    best = t
                    break
                }
                best = t  // every candidate is beyond the horizon: the earliest one
            }
            return best
        }
        return nil
    }

    /// UTC milliseconds of a four-digit-year date and time; nil when a field is out of range (`31 Feb` included).
    /// The calendar is Canonical's `UTCTime`, the gateway's one days-from-civil.
    static func instant(
        _ year: Int64,
        _ month: Int64,
        _ day: Int64,
        _ hour: Int64,
        _ minute: Int64,
        _ second: Int64
    ) -> Int64? {
        guard (0...9999).contains(year), let length = UTCTime.daysInMonth(year: year, month: month),
            (1...length).contains(day)
        else { return nil }
        return UTCTime.milliseconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}

extension HTTPResponse {
    /// This response's `Retry-After`, read by ``RetryAfter/delay(_:maximum:now:)``: nil when absent or junk,
    /// otherwise within `0 ... maximum`. `now` (ms since the epoch) lets the HTTP-date form count.
    /// With `epochMilliseconds`, Apple's App Store Server API form (a UNIX time in milliseconds) is read too.
    public func retryAfter(maximum: Duration, now: Int64? = nil, epochMilliseconds: Bool = false) -> Duration? {
        header("Retry-After").flatMap {
            RetryAfter.delay($0, maximum: maximum, now: now, epochMilliseconds: epochMilliseconds)
        }
    }

    /// This response's `Retry-After` in milliseconds within `0 ... maximumMillis`, by
    /// ``RetryAfter/milliseconds(_:maximumMillis:now:)``.
    public func retryAfterMillis(maximumMillis: Int64, now: Int64? = nil) -> Int64? {
        header("Retry-After").flatMap { RetryAfter.milliseconds($0, maximumMillis: maximumMillis, now: now) }
    }
}
