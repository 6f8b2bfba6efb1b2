import Simulator
import Testing

/// ``DropPlan``: which emissions are withheld — the same for the same seed everywhere, about the asked fraction,
/// every step of the outage, and arguments out of range refused.
@Suite struct DropPlanTests {
    static func dropped(_ plan: DropPlan, _ lifecycle: String = "auto-renew", count: Int = 10_000) -> [Int] {
        (0..<count).filter { plan.drops(emissionAt: $0, of: lifecycle) }
    }

    @Test func theSamePlanDropsTheSameStepsEveryTime() throws {
        let a = try DropPlan(fraction: 0.3, seed: 42)
        let b = try DropPlan(fraction: 0.3, seed: 42)
        #expect(Self.dropped(a) == Self.dropped(b))
        #expect(Self.dropped(a) != Self.dropped(try DropPlan(fraction: 0.3, seed: 43)), "another seed, other steps")
        #expect(Self.dropped(a) != Self.dropped(a, "refund"), "each lifecycle draws its own steps")
    }

    /// A pinned vector: the draw is our own arithmetic (SplitMix64, FNV-1a), not `Hasher`, so these steps are the
    /// ones dropped on every machine and every run, and `simulate lifecycle --drop 0.5 --seed 7` drops them too.
    @Test func theDrawIsPinned() throws {
        let plan = try DropPlan(fraction: 0.5, seed: 7)
        #expect(Self.dropped(plan, "auto-renew", count: 16) == [2, 3, 5, 6, 11, 13])
        #expect(Self.dropped(plan, "refund", count: 16) == [1, 2, 3, 9, 10, 12, 14, 15])
    }

    @Test(arguments: [0.05, 0.3, 0.5, 0.9])
    func aboutTheAskedFractionIsDropped(fraction: Double) throws {
        for seed: UInt64 in [0, 1, 0xdead_beef] {
            let share = Double(Self.dropped(try DropPlan(fraction: fraction, seed: seed)).count) / 10_000
            #expect(abs(share - fraction) < 0.02, "seed \(seed): \(share) for \(fraction)")
        }
    }

    @Test func noneAndAllAreExact() throws {
        #expect(Self.dropped(try DropPlan(fraction: 0, seed: 9)).isEmpty)
        #expect(Self.dropped(try DropPlan(fraction: 1, seed: 9)).count == 10_000)
        #expect(Self.dropped(try DropPlan()).isEmpty, "the default plan drops nothing")
    }

    /// The outage names step numbers as `simulate lifecycle` prints them (1 = the first emission), and wins over the
    /// draw.
    @Test func everyStepOfTheOutageIsDropped() throws {
        let outage = try DropPlan(outage: 2...4)
        #expect(Self.dropped(outage, count: 10) == [1, 2, 3])
        #expect(outage.reason(forEmissionAt: 1, of: "refund") == .outage)
        #expect(outage.reason(forEmissionAt: 0, of: "refund") == nil)
        let both = try DropPlan(fraction: 1, seed: 0, outage: 3...3)
        #expect(both.reason(forEmissionAt: 2, of: "refund") == .outage)
        #expect(both.reason(forEmissionAt: 3, of: "refund") == .random)
        #expect(Self.dropped(try DropPlan(outage: 1...1), count: 5) == [0])
    }

    @Test func reasonsSayWhatApplesHistoryRecords() {
        #expect(DropPlan.Reason.random.sendAttemptResult == "TIMED_OUT")
        #expect(DropPlan.Reason.outage.sendAttemptResult == "NO_RESPONSE")
        #expect(DropPlan.Reason.random.rawValue == "random" && DropPlan.Reason.outage.rawValue == "outage")
    }

    @Test func argumentsOutOfRangeAreRefused() {
        for fraction in [-0.1, 1.01, .nan, .infinity] {
            #expect(throws: SimulatorError.self, "\(fraction)") { try DropPlan(fraction: fraction) }
        }
        #expect(throws: SimulatorError.self) { try DropPlan(outage: 0...2) }
    }
}
