internal import Canonical

extension AppleDateText {
    /// Apple's V1 `Etc/GMT` rendering of a time in ms since the epoch: `2025-06-01 00:00:00 Etc/GMT` (milliseconds
    /// dropped, as Apple drops them).
    public static func gmt(_ ms: Int64) -> String {
        let t = UTCTime(milliseconds: ms)
        return t.date + " " + t.time + " Etc/GMT"
    }

    /// Apple's V1 `_pst` rendering: the wall-clock time in Cupertino, daylight saving time included
    /// (``PacificTime``), named by its zone: `2025-05-31 17:00:00 America/Los_Angeles`.
    public static func pst(_ ms: Int64) -> String {
        let t = UTCTime(milliseconds: ms.clampedAdding(PacificTime.offset(at: ms)))
        return t.date + " " + t.time + " America/Los_Angeles"
    }
}
