import Crypto
import Testing

@Suite struct HexTests {
    @Test func encodesLowerCaseTwoDigitsPerByte() {
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0x00]) == "00")
        #expect(Hex.encode([0x0F, 0xF0]) == "0ff0")
        #expect(Hex.encode([0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]) == "0123456789abcdef")
    }

    @Test func encodesEveryByteValue() {
        let all = (0...255).map { UInt8($0) }
        let hex = Hex.encode(all)
        #expect(hex.count == 512)
        #expect(hexBytes(hex) == all)
        #expect(hex.hasPrefix("000102") && hex.hasSuffix("fdfeff"))
    }

    @Test func acceptsAnySequence() {
        #expect(Hex.encode(stride(from: UInt8(0xFA), through: 0xFF, by: 1)) == "fafbfcfdfeff")
    }
}
