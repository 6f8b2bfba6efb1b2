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
        guard !number.isEmpty, number.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int64(number) else {
            return nil
        }
        let (v, overflow) = n.multipliedReportingOverflow(by: factor)
        return overflow ? nil : v
    }
}
