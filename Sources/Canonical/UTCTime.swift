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

    /// `YYYY-MM-DD`.
    public var date: String { "\(Self.year(year))-\(Self.two(month))-\(Self.two(day))" }
    /// `HH:MM:SS`.
    public var time: String { "\(Self.two(secondOfDay / 3600)):\(Self.two(secondOfDay / 60 % 60)):\(Self.two(secondOfDay % 60))" }
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    public var iso8601: String { date + "T" + time + "Z" }

    static func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
    static func year(_ y: Int64) -> String {
        guard (0...9999).contains(y) else { return "\(y)" }
        let s = "\(y)"
        return String(repeating: "0", count: 4 - s.count) + s
    }
}
