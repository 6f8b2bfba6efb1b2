/// Which steps of a played lifecycle never reach the gateway: lossy traffic between the simulated App Store and the
/// gateway. A step is dropped when it falls in the outage (a range of step numbers) or when its draw — a pure function
/// of the seed, the lifecycle's name and the step's index — falls under `fraction`. The same plan drops the same steps
/// on every run and every machine, so `simulate lifecycle --drop/--seed/--outage` and an in-process test that asks
/// ``reason(forEmissionAt:of:)`` agree on what was lost.
///
/// Dropping withholds every body of the step (its V2 notification and its V1 notifications); the simulated App Store
/// still records the step (the subscription as it now is, the V2 notification with a failed send attempt in Get
/// Notification History), as Apple does when a notification cannot be delivered.
public struct DropPlan: Sendable, Hashable {
    /// Why a step was dropped, and the `sendAttemptResult` Apple's notification history shows for it.
    public enum Reason: String, Sendable, Hashable {
        /// Lost at random (``DropPlan/fraction``): Apple's send timed out.
        case random
        /// Within ``DropPlan/outage``: nothing answered Apple.
        case outage

        public var sendAttemptResult: String {
            switch self {
            case .random: "TIMED_OUT"
            case .outage: "NO_RESPONSE"
            }
        }
    }

    /// The share of steps dropped at random, 0…1.
    public let fraction: Double
    public let seed: UInt64
    /// Step numbers (1 = a lifecycle's first step, as `simulate lifecycle` prints them) during which the gateway is
    /// unreachable.
    public let outage: ClosedRange<Int>?

    /// A plan; `fraction` outside 0…1 (or not a number) and an outage starting before step 1 are refused
    /// (`bad_argument`).
    public init(fraction: Double = 0, seed: UInt64 = 0, outage: ClosedRange<Int>? = nil) throws {
        guard fraction.isFinite, (0...1).contains(fraction) else {
            throw SimulatorError("bad_argument", "the dropped fraction must be from 0 to 1")
        }
        guard (outage?.lowerBound ?? 1) >= 1 else { throw SimulatorError("bad_argument", "steps are numbered from 1") }
        (self.fraction, self.seed, self.outage) = (fraction, seed, outage)
    }

    /// Why the step at `index` (0-based, in ``Lifecycle/Plan/emissions`` order) of the lifecycle named `lifecycle` is
    /// dropped; nil when it is sent. The outage wins over the draw.
    public func reason(forEmissionAt index: Int, of lifecycle: String) -> Reason? {
        if let outage, outage.contains(index + 1) { return .outage }
        return fraction > 0 && draw(index, lifecycle) < fraction ? .random : nil
    }

    public func drops(emissionAt index: Int, of lifecycle: String) -> Bool {
        reason(forEmissionAt: index, of: lifecycle) != nil
    }

    /// A uniform number in [0, 1) for the step: SplitMix64 over the seed, the name (FNV-1a) and the index.
    func draw(_ index: Int, _ lifecycle: String) -> Double {
        var name: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in lifecycle.utf8 { name = (name ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        var x = seed ^ name ^ (UInt64(truncatingIfNeeded: index) &* 0x9e37_79b9_7f4a_7c15)
        x = (x ^ (x >> 30)) &* 0xbf58_476d_1ce4_e5b9
        x = (x ^ (x >> 27)) &* 0x94d0_49bb_1331_11eb
        x ^= x >> 31
        return Double(x >> 11) * 0x1p-53
    }
}
