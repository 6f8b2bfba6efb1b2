import Crypto
import Testing

@Suite struct BytesTests {
    @Test(
        arguments: [
            ([UInt8](), [UInt8](), true),
            ([1, 2, 3], [1, 2, 3], true),
            ([1, 2, 3], [1, 2, 4], false),
            ([0, 2, 3], [1, 2, 3], false),
            ([1, 2, 3], [1, 2], false),
            ([1, 2], [1, 2, 3], false),
            ([], [0], false),
            ([0], [], false),
        ] as [([UInt8], [UInt8], Bool)]
    )
    func constantTimeEqualComparesContentAndLength(_ a: [UInt8], _ b: [UInt8], _ equal: Bool) {
        #expect(Bytes.constantTimeEqual(a, b) == equal)
    }

    @Test func constantTimeEqualFindsADifferenceInTheLastOfManyBytes() {
        let a = [UInt8](repeating: 7, count: 4096)
        var b = a
        #expect(Bytes.constantTimeEqual(a, b))
        b[4095] ^= 0x01
        #expect(!Bytes.constantTimeEqual(a, b))
    }

    @Test func randomReturnsTheRequestedCount() {
        #expect(Bytes.random(count: 0).isEmpty)
        #expect(Bytes.random(count: 33).count == 33)
        // Two 32-byte draws colliding has probability 2^-256.
        #expect(Bytes.random(count: 32) != Bytes.random(count: 32))
    }
}
