/// The CLI's and admin API's times: ISO-8601 (`2025-06-01T00:00:00Z`, `2025-06-01`) or relative to now (`7d`,
/// `12h` = that long ago), or milliseconds since the epoch.
public enum TimeText {
    /// `YYYY-MM-DD` (UTC) of a time in ms since the epoch.
    public static func day(_ ms: Int64) -> String { UTCTime(milliseconds: ms).date }

    /// `YYYY-MM-DDTHH:MM:SSZ` (UTC) of a time in ms since the epoch.
    public static func iso8601(_ ms: Int64) -> String { UTCTime(milliseconds: ms).iso8601 }

    /// Milliseconds since the epoch, or nil when `text` is none of these forms or names a time that cannot be
    /// represented (a relative time further back than the epoch range allows is refused, never a trap).
    public static func milliseconds(_ text: String, now: Int64) -> Int64? {
        if let ago = DurationText.milliseconds(text), text.last?.isLetter == true {
            let (t, overflow) = now.subtractingReportingOverflow(ago)
            return overflow ? nil : t
        }
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
            let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), (1...12).contains(mo),
            (1...31).contains(d),
            let days = UTCTime.days(year: Int64(y), month: Int64(mo), day: Int64(d))  // years 0…9999: never nil
        else { return nil }
        var seconds = days * 86_400
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
        guard chars.count == i + 6, chars[i] == UInt8(ascii: "+") || chars[i] == UInt8(ascii: "-"),
            let oh = number((i + 1)..<(i + 3)),
            let om = number((i + 4)..<(i + 6))
        else { return nil }
        let offset = Int64(oh * 3600 + om * 60) * (chars[i] == UInt8(ascii: "+") ? 1 : -1)
        return (seconds - offset) * 1000 + millis
    }
}
