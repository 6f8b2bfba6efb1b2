import Crypto
import Foundation
import Testing

@Suite struct Base64Tests {
    /// RFC 4648 §10, standard alphabet with padding.
    static let rfc4648: [(plain: String, encoded: String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    static func decode(_ text: String, _ alphabet: Base64.Alphabet) throws(CryptoError) -> [UInt8] {
        try Base64.decode(Array(text.utf8), alphabet: alphabet)
    }

    static func rejects(_ text: String, _ alphabet: Base64.Alphabet) -> Bool {
        cryptoErrorCode { () throws(CryptoError) in _ = try decode(text, alphabet) } == .invalidBase64
    }

    // MARK: RFC 4648 vectors

    @Test(arguments: rfc4648)
    func encodesAndDecodesTheRFC4648VectorsInTheStandardAlphabet(plain: String, encoded: String) throws {
        #expect(Base64.encode(Array(plain.utf8), alphabet: .standard) == encoded)
        #expect(try Self.decode(encoded, .standard) == Array(plain.utf8))
    }

    @Test(arguments: rfc4648)
    func encodesAndDecodesTheRFC4648VectorsUnpaddedInTheURLAlphabet(plain: String, encoded: String) throws {
        let unpadded = encoded.replacingOccurrences(of: "=", with: "")
        #expect(Base64.encode(Array(plain.utf8), alphabet: .url) == unpadded)
        #expect(try Self.decode(unpadded, .url) == Array(plain.utf8))
    }

    @Test func usesDashAndUnderscoreOnlyInTheURLAlphabet() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes, alphabet: .standard) == "+/+/")
        #expect(Base64.encode(bytes, alphabet: .url) == "-_-_")
        #expect(try Self.decode("+/+/", .standard) == bytes)
        #expect(try Self.decode("-_-_", .url) == bytes)
    }

    // MARK: what each alphabet rejects

    @Test(arguments: ["Zg==", "Zm8=", "Zg=", "Zm9vYg==", "+/+/", "-_+/", "ab/c", "="])
    func urlAlphabetRejectsPaddingPlusAndSlash(_ text: String) {
        #expect(Self.rejects(text, .url))
    }

    @Test(arguments: [
        "-_-_", "ab_c", "Zm9-", "Zg", "Zm8", "Zm9vYg", "Zm9vY", "Zm9vYg=", "Zm9vYg===", "Zg=a", "Z=g=", "====",
    ])
    func standardAlphabetRejectsURLCharactersMissingPaddingAndWrongLengths(_ text: String) {
        #expect(Self.rejects(text, .standard))
    }

    @Test(arguments: [
        ("Zh", Base64.Alphabet.url), ("Zm9", .url), ("AB", .url), ("AAB", .url),
        ("Zh==", .standard), ("Zm9=", .standard), ("AB==", .standard), ("AAB=", .standard),
    ])
    func rejectsNonZeroTrailingBits(_ text: String, _ alphabet: Base64.Alphabet) throws {
        #expect(Self.rejects(text, alphabet))
        // The canonical spelling of the same bytes is accepted, so the trailing bits alone decide.
        let canonical = Base64.encode(try Self.decode(text, alphabet, ignoringTrailingBits: true), alphabet: alphabet)
        #expect(canonical != text)
        #expect(!Self.rejects(canonical, alphabet))
    }

    /// Decodes `text` after clearing the bits the last character carries beyond the final byte (test oracle).
    static func decode(_ text: String, _ alphabet: Base64.Alphabet, ignoringTrailingBits: Bool) throws -> [UInt8] {
        let chars = Array(
            (alphabet == .standard
                ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_").utf8
        )
        var body = Array(text.utf8.filter { $0 != UInt8(ascii: "=") })
        let rest = body.count % 4
        let last = try #require(chars.firstIndex(of: body[body.count - 1]))
        let mask = rest == 2 ? 0b11_0000 : 0b11_1100
        body[body.count - 1] = chars[last & mask]
        let padded =
            String(decoding: body, as: UTF8.self)
            + (alphabet == .standard ? String(repeating: "=", count: 4 - rest) : "")
        return try decode(padded, alphabet)
    }

    @Test(
        arguments: ["Zm9!", "Zm9v!A==", "Zm*v", "Z\u{e9}9", "Zm9v\u{0}AAA", "\u{7f}AAA"],
        [Base64.Alphabet.standard, .url]
    )
    func rejectsCharactersOutsideTheAlphabet(_ text: String, _ alphabet: Base64.Alphabet) {
        #expect(Self.rejects(text, alphabet))
    }

    @Test(arguments: ["Zm9 ", " Zm9", "Zm\t9", "Zm9v\r\nAA", "Zm9v\nZm9v\n\n\n"], [Base64.Alphabet.standard, .url])
    func rejectsWhitespace(_ text: String, _ alphabet: Base64.Alphabet) {
        #expect(Self.rejects(text, alphabet))
    }

    @Test(arguments: ["A", "AAAAA", "Zm9vY"])
    func urlAlphabetRejectsALengthNoByteStringHas(_ text: String) {
        #expect(Self.rejects(text, .url))
    }

    // MARK: round trips

    @Test(arguments: [Base64.Alphabet.standard, .url])
    func roundTripsEveryLengthFromZeroTo300(_ alphabet: Base64.Alphabet) throws {
        var rng = LCG(seed: alphabet == .standard ? 1 : 2)
        for length in 0...300 {
            let bytes = rng.bytes(length)
            let text = Base64.encode(bytes, alphabet: alphabet)
            // Independent oracle: Foundation's encoder (standard alphabet, padded).
            let foundation = Data(bytes).base64EncodedString()
            let expected =
                alphabet == .standard
                ? foundation
                : foundation.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            #expect(text == expected, "length \(length)")
            #expect(try Base64.decode(Array(text.utf8), alphabet: alphabet) == bytes, "length \(length)")
        }
    }

    @Test(arguments: [Base64.Alphabet.standard, .url])
    func decodesASliceAStringAndANonContiguousCollectionLikeAnArray(_ alphabet: Base64.Alphabet) throws {
        var rng = LCG(seed: 3)
        let bytes = rng.bytes(100)
        let text = Base64.encode(bytes, alphabet: alphabet)
        let framed = Array(("xx" + text + "yy").utf8)
        let slice: ArraySlice<UInt8> = framed[2..<(framed.count - 2)]
        #expect(slice.startIndex == 2)
        let viaArray = try Base64.decode(Array(text.utf8), alphabet: alphabet)
        #expect(viaArray == bytes)
        #expect(try Base64.decode(slice, alphabet: alphabet) == viaArray)
        #expect(try Base64.decode(text.utf8, alphabet: alphabet) == viaArray)
        #expect(try Base64.decode(Array(text.utf8).lazy.map { $0 }, alphabet: alphabet) == viaArray)
    }

    @Test func rejectsTheSameInvalidInputThroughASlice() {
        let framed = Array("AAAAZh==AAAA".utf8)
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try Base64.decode(framed[4..<8], alphabet: .standard) }
                == .invalidBase64
        )
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try Base64.decode(framed[0..<4], alphabet: .standard) }
                == nil
        )
    }

    @Test func decodesAnEmptySliceToNoBytes() throws {
        let empty = Array("AAAA".utf8)[2..<2]
        #expect(try Base64.decode(empty, alphabet: .url) == [])
        #expect(try Base64.decode(empty, alphabet: .standard) == [])
    }

    /// `Data().withUnsafeBytes` and `UnsafeRawBufferPointer(start: nil, count: 0)` hand over an empty buffer without a
    /// base address. Run as an exit test so a regression (a trap) does not take the test process down.
    @Test func decodesAnEmptyBufferWithoutABaseAddressToNoBytes() async {
        await #expect(processExitsWith: .success) {
            let url = try? Base64.decode(UnsafeRawBufferPointer(start: nil, count: 0), alphabet: .url)
            let standard = try? Base64.decode(UnsafeRawBufferPointer(start: nil, count: 0), alphabet: .standard)
            precondition(url == [] && standard == [])
        }
    }
}
