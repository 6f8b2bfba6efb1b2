internal import V1Adapter

/// Parses the config's and the CLI's durations: `10d`, `12h`, `30m`, `45s`, `500ms`, or a plain number of seconds.
public enum DurationText {
    /// Milliseconds, or nil when `text` is not a duration.
    public static func milliseconds(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [("ms", 1), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            guard let n = Int64(text.dropLast(suffix.count)), n >= 0 else { return nil }
            let (v, overflow) = n.multipliedReportingOverflow(by: factor)
            return overflow ? nil : v
        }
        guard let n = Int64(text), n >= 0 else { return nil }
        return n * 1000
    }
}

/// The CLI's and admin API's times: ISO-8601 (`2025-06-01T00:00:00Z`, `2025-06-01`) or relative to now (`7d`,
/// `12h` = that long ago), or milliseconds since the epoch.
public enum TimeText {
    /// `YYYY-MM-DD` (UTC) of a time in ms since the epoch.
    public static func day(_ ms: Int64) -> String { String(iso8601(ms).prefix(10)) }

    /// `YYYY-MM-DDTHH:MM:SSZ` (UTC) of a time in ms since the epoch.
    public static func iso8601(_ ms: Int64) -> String {
        var days = ms / 86_400_000
        var rest = ms % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        // civil_from_days (Howard Hinnant)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        let s = rest / 1000
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = y < 1000 ? String(repeating: "0", count: 4 - String(y).count) + String(y) : String(y)
        return "\(year)-\(two(m))-\(two(d))T\(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60))Z"
    }

    public static func milliseconds(_ text: String, now: Int64) -> Int64? {
        if let ago = DurationText.milliseconds(text), text.last?.isLetter == true { return now - ago }
        if let ms = Int64(text), text.count >= 12 { return ms }
        return iso8601(text)
    }

    /// `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ` (also with fractional seconds or a `+HH:MM` offset).
    static func iso8601(_ text: String) -> Int64? {
        let chars = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= chars.count else { return nil }
            var v = 0
            for c in chars[range] {
                guard (48...57).contains(c) else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        guard chars.count >= 10, chars[4] == UInt8(ascii: "-"), chars[7] == UInt8(ascii: "-"),
            let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), (1...12).contains(mo), (1...31).contains(d)
        else { return nil }
        var seconds = AppleDateText.daysFromCivil(y, mo, d) * 86_400
        if chars.count == 10 { return seconds * 1000 }
        guard chars.count >= 20, chars[10] == UInt8(ascii: "T"), let h = number(11..<13), let mi = number(14..<16),
            let s = number(17..<19), h < 24, mi < 60, s < 61
        else { return nil }
        seconds += Int64(h * 3600 + mi * 60 + s)
        var i = 19
        var millis: Int64 = 0
        if chars[i] == UInt8(ascii: ".") {
            i += 1
            var scale: Int64 = 100
            while i < chars.count, (48...57).contains(chars[i]) {
                millis += Int64(chars[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        guard i < chars.count else { return nil }
        if chars[i] == UInt8(ascii: "Z"), i == chars.count - 1 { return seconds * 1000 + millis }
        guard chars.count == i + 6, chars[i] == UInt8(ascii: "+") || chars[i] == UInt8(ascii: "-"), let oh = number((i + 1)..<(i + 3)),
            let om = number((i + 4)..<(i + 6))
        else { return nil }
        let offset = Int64(oh * 3600 + om * 60) * (chars[i] == UInt8(ascii: "+") ? 1 : -1)
        return (seconds - offset) * 1000 + millis
    }
}
