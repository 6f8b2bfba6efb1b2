/// The same pseudo-random sequence on every run (Knuth's MMIX LCG): rows a test generates in bulk, reproducibly.
public struct SeededGenerator: Sendable {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }

    /// A number in 0..<n.
    public mutating func next(_ n: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(n))
    }
}
