/// Calendar dates of millisecond timestamps in UTC (proleptic Gregorian, Howard Hinnant's `civil_from_days`):
/// the one conversion the report, the CLI and the simulator's V1 dates share. No Foundation, no time zones.
public struct UTCTime: Sendable, Hashable {
    public let year: Int64
    public let month: Int64
    public let day: Int64
    /// Seconds into the day.
    public let secondOfDay: Int64

    public init(milliseconds ms: Int64) {
        var days = ms / 86_400_000
        var rest = ms % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        secondOfDay = rest / 1000
    }

    /// Largest year magnitude ``days(year:month:day:)`` counts: milliseconds since the epoch run out at about
    /// ±292 million years, so no caller ever needs more, and within it no step of the computation can overflow.
    public static let maxYearMagnitude: Int64 = 300_000_000

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`, the inverse of
    /// ``init(milliseconds:)``); nil when `month` is not 1…12, `day` not 1…31 (not checked against the month's
    /// length, as Apple's parsers do not either) or the year is beyond ±``maxYearMagnitude``.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64? {
        guard (1...12).contains(month), (1...31).contains(day), (-maxYearMagnitude...maxYearMagnitude).contains(year)
        else {
            return nil
        }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Days in `month` (1…12) of `year`, February 29 in the leap years of the proleptic Gregorian calendar; nil
    /// when `month` is not 1…12. For callers that refuse `31 Feb` (``days(year:month:day:)`` counts it as 3 March).
    public static func daysInMonth(year: Int64, month: Int64) -> Int64? {
        guard (1...12).contains(month) else { return nil }
        if month == 2 { return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28 }
        return [4, 6, 9, 11].contains(month) ? 30 : 31
    }

    /// Milliseconds since the epoch of a UTC date and time of day; nil when a field is out of range (hour 0…23,
    /// minute 0…59, second 0…60 for a leap second) or the instant does not fit `Int64`.
    public static func milliseconds(
        year: Int64,
        month: Int64,
        day: Int64,
        hour: Int64,
        minute: Int64,
        second: Int64
    )
        -> Int64?
    {
        guard let days = days(year: year, month: month, day: day), (0...23).contains(hour), (0...59).contains(minute),
            (0...60).contains(second)
        else { return nil }
        let (daySeconds, o1) = days.multipliedReportingOverflow(by: 86_400)
        let (seconds, o2) = daySeconds.addingReportingOverflow(hour * 3600 + minute * 60 + second)
        let (ms, o3) = seconds.multipliedReportingOverflow(by: 1000)
        return o1 || o2 || o3 ? nil : ms
    }

    /// `YYYY-MM-DD`.
    public var date: String { "\(Self.year(year))-\(Self.two(month))-\(Self.two(day))" }
    /// `HH:MM:SS`.
    public var time: String {
        "\(Self.two(secondOfDay / 3600)):\(Self.two(secondOfDay / 60 % 60)):\(Self.two(secondOfDay % 60))"
    }
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    public var iso8601: String { text(separator: UInt8(ascii: "T"), suffix: "Z") }

    /// `YYYY-MM-DD` `separator` `HH:MM:SS` `suffix`, written in one buffer: dates are rendered by the thousand in a
    /// verifyReceipt answer. A year outside 0…9999 is written as ``date`` writes it.
    public func text(separator: UInt8, suffix: String) -> String {
        guard (0...9999).contains(year) else {
            return date + String(decoding: [separator], as: UTF8.self) + time + suffix
        }
        var suffix = suffix
        return suffix.withUTF8 { tail in
            String(unsafeUninitializedCapacity: 19 + tail.count) { out in
                func digits(_ v: Int64, _ count: Int, at i: Int) {
                    var v = v
                    for k in stride(from: i + count - 1, through: i, by: -1) {
                        out[k] = UInt8(ascii: "0") + UInt8(v % 10)
                        v /= 10
                    }
                }
                digits(year, 4, at: 0)
                out[4] = UInt8(ascii: "-")
                digits(month, 2, at: 5)
                out[7] = UInt8(ascii: "-")
                digits(day, 2, at: 8)
                out[10] = separator
                digits(secondOfDay / 3600, 2, at: 11)
                out[13] = UInt8(ascii: ":")
                digits(secondOfDay / 60 % 60, 2, at: 14)
                out[16] = UInt8(ascii: ":")
                digits(secondOfDay % 60, 2, at: 17)
                for (k, c) in tail.enumerated() { out[19 + k] = c }
                return 19 + tail.count
            }
        }
    }

    static func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
    static func year(_ y: Int64) -> String {
        guard (0...9999).contains(y) else { return "\(y)" }
        let s = "\(y)"
        return String(repeating: "0", count: 4 - s.count) + s
    }
}
