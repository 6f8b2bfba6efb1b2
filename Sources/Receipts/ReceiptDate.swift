internal import Canonical

/// The dates inside an app receipt: IA5Strings in RFC 3339 form, `2023-05-09T23:20:55Z` in Apple's receipts,
/// `2020-07-22T18:33:15+0100` in some Xcode ones (docs/architecture.md, "The receipt reader").
public enum ReceiptDate {
    /// Milliseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)` (a lower-case `t`/`z` too);
    /// nil for any other text, an impossible date (31 February) or time, or an instant beyond `Int64` ms. Fractions
    /// beyond milliseconds are cut, not rounded.
    public static func millis(_ text: some StringProtocol) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.count <= 40 else { return nil }
        func digits(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                v = v * 10 + Int64(b[i] - 0x30)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == 0x2D, let month = digits(5, 2), b[7] == 0x2D, let day = digits(8, 2),
            b[10] == 0x54 || b[10] == 0x74, let hour = digits(11, 2), b[13] == 0x3A, let minute = digits(14, 2),
            b[16] == 0x3A, let second = digits(17, 2)
        else { return nil }
        guard let length = UTCTime.daysInMonth(year: year, month: month), (1...length).contains(day) else {
            return nil
        }
        var p = 19
        var fraction: Int64 = 0
        if p < b.count, b[p] == 0x2E {
            p += 1
            var count = 0
            while p < b.count, (0x30...0x39).contains(b[p]) {
                if count < 3 { fraction = fraction * 10 + Int64(b[p] - 0x30) }
                count += 1
                p += 1
            }
            guard (1...9).contains(count) else { return nil }
            if count < 3 { for _ in count..<3 { fraction *= 10 } }  // .5 is 500 ms
        }
        guard p < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[p] {
        case 0x5A, 0x7A:
            p += 1
        case 0x2B, 0x2D:
            let sign: Int64 = b[p] == 0x2B ? 1 : -1
            guard let h = digits(p + 1, 2), h <= 23 else { return nil }
            p += 3
            if p < b.count, b[p] == 0x3A { p += 1 }
            guard let m = digits(p, 2), m <= 59 else { return nil }
            p += 2
            offsetSeconds = sign * (h * 3600 + m * 60)
        default:
            return nil
        }
        guard p == b.count,
            let local = UTCTime.milliseconds(
                year: year,
                month: month,
                day: day,
                hour: hour,
                minute: minute,
                second: second
            )
        else { return nil }
        // Local time minus its offset; both additions checked (a year near the limit with an offset).
        let (utc, o1) = local.subtractingReportingOverflow(offsetSeconds * 1000)
        let (ms, o2) = utc.addingReportingOverflow(fraction)
        return o1 || o2 ? nil : ms
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` of `ms` (milliseconds dropped), as Apple writes receipt dates.
    public static func text(_ ms: Int64) -> String { UTCTime(milliseconds: ms).iso8601 }
}
