/// America/Los_Angeles, the zone of Apple's V1 `_pst` dates: UTC−8 (PST), UTC−7 (PDT) while daylight saving time
/// runs. Pure arithmetic on the United States rules as the tz database records them for this zone since 1967 — no
/// time-zone files, no Foundation:
///
/// | years | PDT starts, 02:00 PST | PDT ends, 02:00 PDT |
/// |---|---|---|
/// | 2007 on | second Sunday of March | first Sunday of November |
/// | 1987–2006 | first Sunday of April | last Sunday of October |
/// | 1976–1986, 1967–1973 | last Sunday of April | last Sunday of October |
/// | 1975 | 23 February | last Sunday of October |
/// | 1974 | 6 January | last Sunday of October |
///
/// Before 1967 every instant is given standard time (California's own earlier rules are left out: no App Store date is
/// that old), and the 2007 rule runs on for every later year, as the tz database has it.
public enum PacificTime {
    /// PST: UTC−8 h, in milliseconds.
    public static let standardOffset: Int64 = -8 * 3_600_000
    /// PDT: UTC−7 h, in milliseconds.
    public static let daylightOffset: Int64 = -7 * 3_600_000

    /// The zone's offset from UTC (ms) at the instant `ms`.
    public static func offset(at ms: Int64) -> Int64 { isDaylightTime(at: ms) ? daylightOffset : standardOffset }

    /// True when daylight saving time runs at the instant `ms`: from the start instant (inclusive) to the end instant
    /// (exclusive) of its year's ``daylightPeriod(year:)``. A period never crosses a UTC new year, so the instant's UTC
    /// year picks it.
    public static func isDaylightTime(at ms: Int64) -> Bool {
        guard let period = daylightPeriod(year: UTCTime(milliseconds: ms).year) else { return false }
        return period.start <= ms && ms < period.end
    }

    /// The UTC instants (ms) at which daylight saving time starts and ends in `year`; nil for a year without it
    /// (before 1967) or whose instants do not fit `Int64`. It starts at 02:00 PST (10:00 UTC) and ends at 02:00 PDT
    /// (09:00 UTC).
    public static func daylightPeriod(year: Int64) -> (start: Int64, end: Int64)? {
        guard year >= 1967 else { return nil }
        let start: (month: Int64, day: Int64)
        switch year {
        case 2007...: start = (3, sunday(2, ofMonth: 3, year: year))
        case 1987...2006: start = (4, sunday(1, ofMonth: 4, year: year))
        case 1976...1986: start = (4, lastSunday(ofMonth: 4, year: year))
        case 1975: start = (2, 23)
        case 1974: start = (1, 6)
        default: start = (4, lastSunday(ofMonth: 4, year: year))
        }
        let end: (month: Int64, day: Int64) =
            year >= 2007 ? (11, sunday(1, ofMonth: 11, year: year)) : (10, lastSunday(ofMonth: 10, year: year))
        guard start.day > 0, end.day > 0,
            let from = UTCTime.milliseconds(
                year: year,
                month: start.month,
                day: start.day,
                hour: 10,
                minute: 0,
                second: 0
            ),
            let to = UTCTime.milliseconds(year: year, month: end.month, day: end.day, hour: 9, minute: 0, second: 0)
        else { return nil }
        return (from, to)
    }

    /// 0 = Sunday … 6 = Saturday, for days since 1970-01-01 (a Thursday).
    static func weekday(_ days: Int64) -> Int64 { ((days + 4) % 7 + 7) % 7 }

    /// Day of the month of the `n`th Sunday of `month`; 0 when the date cannot be counted.
    static func sunday(_ n: Int64, ofMonth month: Int64, year: Int64) -> Int64 {
        guard let first = UTCTime.days(year: year, month: month, day: 1) else { return 0 }
        return 1 + (7 - weekday(first)) % 7 + 7 * (n - 1)
    }

    /// Day of the month of the last Sunday of `month`; 0 when the date cannot be counted.
    static func lastSunday(ofMonth month: Int64, year: Int64) -> Int64 {
        guard let length = UTCTime.daysInMonth(year: year, month: month),
            let last = UTCTime.days(year: year, month: month, day: length)
        else { return 0 }
        return length - weekday(last)
    }
}
