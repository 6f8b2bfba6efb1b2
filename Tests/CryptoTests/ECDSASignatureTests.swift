import Crypto
import Testing

@Suite struct ECDSASignatureTests {
    /// r = 00 00 7f 11…11 (two leading zero bytes dropped, high bit clear: no pad);
    /// s = ff 22…22 (high bit set: one 0x00 added).
    static let leadingZerosAndHighBit = (
        raw: [0x00, 0x00, 0x7F] + [UInt8](repeating: 0x11, count: 29) + [0xFF] + [UInt8](repeating: 0x22, count: 31),
        der: [0x30, 0x43, 0x02, 0x1E, 0x7F] + [UInt8](repeating: 0x11, count: 29)
            + [0x02, 0x21, 0x00, 0xFF] + [UInt8](repeating: 0x22, count: 31)
    )

    /// r = 00 80 33…33 (one leading zero dropped, then re-added because the next byte has its high bit set);
    /// s = 00…00 01 (31 zeros dropped: a one-byte INTEGER).
    static let zeroThenHighBitAndSmallS = (
        raw: [0x00, 0x80] + [UInt8](repeating: 0x33, count: 30) + [UInt8](repeating: 0, count: 31) + [0x01],
        der: [0x30, 0x25, 0x02, 0x20, 0x00, 0x80] + [UInt8](repeating: 0x33, count: 30) + [0x02, 0x01, 0x01]
    )

    /// Full-width r and s, both with the high bit clear: two 32-byte INTEGERs, no padding.
    static let fullWidth = (
        raw: [0x7F] + [UInt8](repeating: 0x44, count: 31) + [0x01] + [UInt8](repeating: 0x55, count: 31),
        der: [0x30, 0x44, 0x02, 0x20, 0x7F] + [UInt8](repeating: 0x44, count: 31)
            + [0x02, 0x20, 0x01] + [UInt8](repeating: 0x55, count: 31)
    )

    /// Both r and s with the high bit set: the 72-byte maximum for P-256 minus the sequence header.
    static let bothHighBit = (
        raw: [UInt8](repeating: 0x80, count: 32) + [UInt8](repeating: 0xFE, count: 32),
        der: [0x30, 0x46, 0x02, 0x21, 0x00] + [UInt8](repeating: 0x80, count: 32)
            + [0x02, 0x21, 0x00] + [UInt8](repeating: 0xFE, count: 32)
    )

    static let pairs = [leadingZerosAndHighBit, zeroThenHighBitAndSmallS, fullWidth, bothHighBit]

    @Test(arguments: pairs)
    func convertsRawToMinimalDER(raw: [UInt8], der: [UInt8]) {
        #expect(raw.count == 64)
        #expect(ECDSASignature.der(fromRaw: raw) == der)
    }

    @Test(arguments: pairs)
    func convertsDERBackToFixedWidthRaw(raw: [UInt8], der: [UInt8]) throws {
        #expect(try ECDSASignature.raw(fromDER: der) == raw)
    }

    @Test func returnsNilWhenROrSIsZero() {
        let zero = [UInt8](repeating: 0, count: 32)
        let one = [UInt8](repeating: 0, count: 31) + [1]
        #expect(ECDSASignature.der(fromRaw: zero + one) == nil)
        #expect(ECDSASignature.der(fromRaw: one + zero) == nil)
        #expect(ECDSASignature.der(fromRaw: zero + zero) == nil)
        #expect(ECDSASignature.der(fromRaw: one + one) == [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01])
    }

    @Test(arguments: [0, 1, 63, 65, 72])
    func returnsNilForARawSignatureThatIsNot64Bytes(_ count: Int) {
        #expect(ECDSASignature.der(fromRaw: [UInt8](repeating: 0x11, count: count)) == nil)
    }

    @Test(
        arguments: [
            [],
            [0x01, 0x02, 0x03],
            [0x30, 0x00],
            [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01],  // truncated
            [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],  // SET, not SEQUENCE
            [0x30, 0x06, 0x04, 0x01, 0x01, 0x02, 0x01, 0x01],  // OCTET STRING for r
        ] as [[UInt8]]
    )
    func throwsForBytesThatAreNotADERSignature(_ der: [UInt8]) {
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try ECDSASignature.raw(fromDER: der) } == .invalidSignature
        )
    }

    @Test func rejectsTrailingBytesAfterTheSignature() throws {
        let raw = [UInt8](repeating: 0x11, count: 32) + [UInt8](repeating: 0x22, count: 32)
        let der = try #require(ECDSASignature.der(fromRaw: raw))
        #expect(try ECDSASignature.raw(fromDER: der) == raw)
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try ECDSASignature.raw(fromDER: der + [0x00]) }
                == .invalidSignature
        )
    }

    @Test func rejectsANonMinimalInteger() {
        let der: [UInt8] = [0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01]
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try ECDSASignature.raw(fromDER: der) } != nil)
    }

    @Test func throwsWhenAnIntegerDoesNotFitP256() {
        // r = 2^256: 33 significant bytes.
        let der: [UInt8] = [0x30, 0x26, 0x02, 0x21, 0x01] + [UInt8](repeating: 0, count: 32) + [0x02, 0x01, 0x01]
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try ECDSASignature.raw(fromDER: der) } != nil)
    }

    @Test func roundTripsDeterministicPseudoRandomSignatures() throws {
        var rng = LCG(seed: 42)
        for _ in 0..<200 {
            var raw = rng.bytes(64)
            // Exercise leading zeros often.
            let zeros = Int(rng.next() % 4)
            for i in 0..<zeros {
                raw[i] = 0
                raw[32 + i] = 0
            }
            guard let der = ECDSASignature.der(fromRaw: raw) else { continue }
            #expect(try ECDSASignature.raw(fromDER: der) == raw)
            #expect(der[0] == 0x30 && Int(der[1]) == der.count - 2)
        }
    }
}
