internal import FoundationEssentials

/// The wall clock, the only one production code reads; everything else receives time as a value.
public enum WallClock {
    @Sendable public static func wallMillis() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
