/// Apple's V1 text dates (verifyReceipt answers, V1 notifications): `2019-11-24 17:42:49 Etc/GMT` (also `… GMT`,
/// `…Z`). Only UTC forms are read; the `_pst` renderings are only written. Here in `Canonical` so that every module
/// that renders Apple's date triplets (`x`, `x_ms`, `x_pst`) — the V1 adapter, the receipt reader — shares one copy.
public enum AppleDateText {
    /// Milliseconds since the epoch, or nil for text that is not such a date — including dates whose milliseconds
    /// do not fit `Int64` (`99999999999-01-01 …`): the conversion is ``UTCTime/milliseconds(year:month:day:hour:minute:second:)``,
    /// which refuses rather than overflows.
    public static func millis(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count >= 2 else { return nil }
        if parts.count == 3 {
            guard parts[2] == "Etc/GMT" || parts[2] == "GMT" || parts[2] == "UTC" else { return nil }
        }
        let d = parts[0].split(separator: "-").compactMap { Int64($0) }
        let t = parts[1].split(separator: ":").compactMap { Int64($0) }
        guard d.count == 3, t.count == 3 else { return nil }
        return UTCTime.milliseconds(year: d[0], month: d[1], day: d[2], hour: t[0], minute: t[1], second: t[2])
    }

    /// Apple's V1 `Etc/GMT` rendering of a time in ms since the epoch: `2025-06-01 00:00:00 Etc/GMT` (milliseconds
    /// dropped, as Apple drops them).
    public static func gmt(_ ms: Int64) -> String {
        UTCTime(milliseconds: ms).text(separator: UInt8(ascii: " "), suffix: " Etc/GMT")
    }

    /// Apple's V1 `_pst` rendering: the wall-clock time in Cupertino, daylight saving time included
    /// (``PacificTime``), named by its zone: `2025-05-31 17:00:00 America/Los_Angeles`.
    public static func pst(_ ms: Int64) -> String {
        UTCTime(milliseconds: ms.clampedAdding(PacificTime.offset(at: ms)))
            .text(separator: UInt8(ascii: " "), suffix: " America/Los_Angeles")
    }
}
