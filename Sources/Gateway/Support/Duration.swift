internal import Canonical
internal import V1Adapter

/// Parses the config's and the CLI's durations: `10d`, `12h`, `30m`, `45s`, `500ms`, or a plain number of seconds.
/// Every value is range-checked: a duration that does not fit in milliseconds is not a duration (nil), never a trap.
public enum DurationText {
    /// Milliseconds, or nil when `text` is not a duration (or too long to represent).
    public static func milliseconds(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [("ms", 1), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            return scaled(text.dropLast(suffix.count), by: factor)
        }
        return scaled(Substring(text), by: 1000)
    }

    /// `digits × factor`, nil unless `digits` is a non-negative decimal integer whose product fits.
    private static func scaled(_ digits: Substring, by factor: Int64) -> Int64? {
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int64(digits) else { return nil }
        let (v, overflow) = n.multipliedReportingOverflow(by: factor)
        return overflow ? nil : v
    }
}

/// Parses the config's sizes: a plain number of bytes, or a number with a unit (`512KiB`, `16MiB`, `1GiB`, and the
/// decimal `kB`, `MB`, `GB`). Range-checked like ``DurationText``.
public enum SizeText {
    public static func bytes(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [
            ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("kB", 1000), ("KB", 1000), ("MB", 1_000_000),
            ("GB", 1_000_000_000), ("B", 1),
        ]
        var number = Substring(text)
        var factor: Int64 = 1
        for (suffix, f) in units where text.hasSuffix(suffix) {
            number = number.dropLast(suffix.count)
            factor = f
            break
        }
        while number.last == " " { number = number.dropLast() }
        guard !number.isEmpty, number.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int64(number) else { return nil }
        let (v, overflow) = n.multipliedReportingOverflow(by: factor)
        return overflow ? nil : v
    }
}

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
