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
