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
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int64(digits) else {
            return nil
        }
        let (v, overflow) = n.multipliedReportingOverflow(by: factor)
        return overflow ? nil : v
    }
}
