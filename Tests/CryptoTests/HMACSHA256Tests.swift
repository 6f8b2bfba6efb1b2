import Crypto
import Testing

@Suite struct HMACSHA256Tests {
    /// RFC 4231 §4.2.
    @Test func computesRFC4231TestCase1() {
        let mac = HMACSHA256.authenticationCode(
            key: [UInt8](repeating: 0x0B, count: 20),
            message: Array("Hi There".utf8)
        )
        #expect(mac == hexBytes("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
    }

    /// RFC 4231 §4.3: a key shorter than the output.
    @Test func computesRFC4231TestCase2() {
        let mac = HMACSHA256.authenticationCode(
            key: Array("Jefe".utf8),
            message: Array("what do ya want for nothing?".utf8)
        )
        #expect(mac == hexBytes("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    /// RFC 4231 §4.7: a 131-byte key, longer than SHA-256's block, is hashed first.
    @Test func computesRFC4231TestCase6WithAKeyLongerThanTheBlock() {
        let mac = HMACSHA256.authenticationCode(
            key: [UInt8](repeating: 0xAA, count: 131),
            message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        )
        #expect(mac == hexBytes("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
    }

    @Test func acceptsAnySequenceAsTheMessage() {
        let key = Array("Jefe".utf8)
        let message = Array("what do ya want for nothing?".utf8)
        #expect(
            HMACSHA256.authenticationCode(key: key, message: message.lazy.map { $0 })
                == HMACSHA256.authenticationCode(key: key, message: message)
        )
    }

    @Test func dependsOnTheKey() {
        let message = Array("payload".utf8)
        let a = HMACSHA256.authenticationCode(key: [1], message: message)
        let b = HMACSHA256.authenticationCode(key: [2], message: message)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }
}
