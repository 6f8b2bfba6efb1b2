/// Integer arithmetic that cannot trap, for numbers that came from outside: dates Apple (or anyone posting to the
/// gateway) wrote, durations from a config, clocks. Swift's `+`, `-`, `*` trap on overflow, and one reachable trap
/// kills the whole service; these clamp to the type's range instead, so an absurd input yields an absurd but
/// well-defined value that the surrounding checks (a validity window, a freshness bound) then refuse.
///
/// Every value that is not near the type's bounds gives exactly what the trapping operator gives.
extension FixedWidthInteger {
    /// `self + other`, clamped to `Self.min ... Self.max`.
    @inlinable
    public func clampedAdding(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, clamped to `Self.min ... Self.max`.
    @inlinable
    public func clampedSubtracting(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > 0 ? .min : .max
    }

    /// `self * other`, clamped to `Self.min ... Self.max`.
    @inlinable
    public func clampedMultiplied(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) != (other < 0) ? .min : .max
    }

    /// `self / divisor` rounded toward negative infinity (what converting milliseconds before the epoch to whole
    /// seconds needs), without the `(x - (divisor - 1)) / divisor` idiom, which overflows near `Self.min`.
    /// A zero divisor gives 0 and `Self.min / -1` gives `Self.max`: neither traps.
    @inlinable
    public func flooredQuotient(dividingBy divisor: Self) -> Self {
        let (quotient, overflow) = dividedReportingOverflow(by: divisor)
        guard !overflow else { return divisor == 0 ? 0 : .max }
        let remainder = remainderReportingOverflow(dividingBy: divisor).partialValue
        // A non-zero remainder of the other sign means the truncated quotient is one above the floor; it is then
        // above `Self.min`, so subtracting one cannot overflow.
        return remainder != 0 && (remainder < 0) != (divisor < 0) ? quotient - 1 : quotient
    }
}
