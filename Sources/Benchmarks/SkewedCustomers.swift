internal import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Which customer an old backend asks about next, as a real app's traffic does it (docs/performance.md, "bench
/// receipt-scale"): most requests for a few customers who open the app all the time, a long tail asked rarely, and a
/// fraction of purchases — a customer never seen before. One stream per client, deterministic from its seed: the
/// same seed and stream give the same customers in the same order.
///
/// The base's customers are ranks 0..<customers drawn from a bounded Zipf law of exponent `exponent` (1: every decade
/// of ranks is asked as often as the next, so rank 0 is asked about 5 % of the time among a million, the first
/// thousand half of the time); purchases are numbered from `customers` up, each stream taking every
/// `streams`-th number so that no two streams buy the same customer.
struct SkewedCustomers: Sendable {
    let customers: Int
    let purchaseFraction: Double
    let exponent: Double
    let stream: Int
    let streams: Int
    private var random: SplitMix64
    private var purchases = 0

    init(
        customers: Int,
        purchaseFraction: Double = 0.01,
        exponent: Double = 1.0,
        seed: UInt64,
        stream: Int = 0,
        streams: Int = 1
    ) {
        precondition(customers >= 1 && streams >= 1 && (0..<streams).contains(stream))
        precondition((0...1).contains(purchaseFraction) && exponent > 0)
        (self.customers, self.purchaseFraction, self.exponent) = (customers, purchaseFraction, exponent)
        (self.stream, self.streams) = (stream, streams)
        random = SplitMix64(seed: seed, stream: stream)
    }

    /// The next customer: a rank of the base, or a purchase (a number from `customers` up, never drawn before).
    mutating func next() -> (customer: Int, purchase: Bool) {
        if purchaseFraction > 0, random.unit() < purchaseFraction {
            defer { purchases += 1 }
            return (customers + stream + purchases * streams, true)
        }
        return (rank(random.unit()), false)
    }

    /// The rank at `u` in [0, 1) of the bounded continuous Zipf law over [1, customers + 1), inverted in closed form;
    /// rank 0 is the most asked.
    func rank(_ u: Double) -> Int {
        let n = Double(customers) + 1
        let x: Double
        if abs(exponent - 1) < 1e-9 {
            x = exp(u * log(n))
        } else {
            let a = 1 - exponent
            x = pow((pow(n, a) - 1) * u + 1, 1 / a)
        }
        return min(max(Int(x) - 1, 0), customers - 1)
    }
}

/// Vigna's SplitMix64: a small, fast, seedable generator (bench traffic, not secrets).
struct SplitMix64: Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// Stream `stream` of `seed`: its start hashed from both, so that streams are far apart in the one sequence
    /// SplitMix64 walks (seeds one increment apart would give the same numbers one draw apart).
    init(seed: UInt64, stream: Int) {
        var mixer = SplitMix64(seed: seed ^ 0x5851_F42D_4C95_7F2D)
        let a = mixer.next()
        var streamMixer = SplitMix64(seed: a ^ UInt64(truncatingIfNeeded: stream))
        state = streamMixer.next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    mutating func unit() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
}
