/// Millisecond arithmetic that cannot trap. Times and delays in the gateway can come from outside (a downstream's
/// `Retry-After`, a date in a body, a duration in the config): where a sum or difference of two of them could
/// overflow, it saturates at the ends of `Int64` instead (docs/threat-model.md, "arithmetic from input").
extension Int64 {
    /// `self + other`, clamped to `Int64.min ... Int64.max`.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, clamped to `Int64.min ... Int64.max`.
    func saturatingSubtract(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }

    /// `|self - other|` without overflow (a `UInt64` holds every distance between two `Int64`s).
    func distance(from other: Int64) -> UInt64 {
        self >= other ? UInt64(bitPattern: self &- other) : UInt64(bitPattern: other &- self)
    }
}
