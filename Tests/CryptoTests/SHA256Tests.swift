import Crypto
import Testing

@Suite struct SHA256Tests {
    /// FIPS 180-2 appendix B (and the empty message).
    static let vectors: [(message: String, digest: String)] = [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ]

    @Test(arguments: vectors)
    func hashesTheFIPS180Vectors(message: String, digest: String) {
        #expect(SHA256.hash(Array(message.utf8)) == hexBytes(digest))
        #expect(SHA256.hex(Array(message.utf8)) == digest)
    }

    @Test func hashesOneMillionLetterA() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(message) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func hashesANonContiguousSequenceLikeAnArray() {
        let message = Array("abc".utf8)
        #expect(SHA256.hash(message.lazy.map { $0 }) == SHA256.hash(message))
        #expect(SHA256.hash(AnySequence(message)) == SHA256.hash(message))
        #expect(SHA256.hash("abc".utf8) == SHA256.hash(message))
        #expect(SHA256.hash(message[1...]) == SHA256.hash(Array("bc".utf8)))
    }

    @Test func hashesAnEmptyBufferWithoutABaseAddress() {
        let digest = SHA256.hash(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(Hex.encode(digest) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func hexIsSixtyFourLowerCaseDigits() {
        let hex = SHA256.hex(Array("abc".utf8))
        #expect(hex.count == 2 * SHA256.byteCount)
        #expect(hex.allSatisfy { "0123456789abcdef".contains($0) })
    }
}
