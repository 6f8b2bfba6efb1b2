import Crypto

/// Bytes from a hex string written in a test ("0b0b…"); spaces are ignored. Traps on a typo: the vectors are
/// constants of the test, not input.
func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
    precondition(digits.count % 2 == 0, "odd hex length")
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: preconditionFailure("not a hex digit")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

/// Deterministic pseudo-random bytes (Knuth's MMIX LCG, high byte of each state): the same on every run.
struct LCG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt8 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 56)
    }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in next() } }
}

/// The code of the `CryptoError` a call throws; nil when it does not throw.
func cryptoErrorCode(_ body: () throws(CryptoError) -> Void) -> CryptoError.Code? {
    do {
        try body()
        return nil
    } catch {
        return error.code
    }
}
