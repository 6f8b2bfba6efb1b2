import Crypto
import Receipts
import Testing

/// `receipt-data` as clients really send it (docs/architecture.md, "The receipt reader"), and what is no receipt at
/// all: every spelling of the same receipt reads the same; everything else is a clean error with its code, in time
/// bounded by the input's size.
@Suite struct ReceiptInputTests {
    static let name = "tpinappreceipt-receipt-production-2024"

    static func expectSameReceipt(
        _ text: [UInt8],
        _ comment: Comment,
        sourceLocation: SourceLocation = #_sourceLocation
    )
        throws
    {
        let original = try ReceiptReader.read(try TestReceipts.text(name), trust: TestReceipts.apple)
        let r = try ReceiptReader.read(text, trust: TestReceipts.apple)
        #expect(r.app == original.app, comment, sourceLocation: sourceLocation)
        #expect(r.signature.valid, comment, sourceLocation: sourceLocation)
    }

    static func wrapped(_ text: [UInt8], every n: Int, with separator: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for (i, c) in text.enumerated() {
            if i > 0, i % n == 0 { out += separator }
            out.append(c)
        }
        return out
    }

    @Test func wrappedAndIndentedBase64Reads() throws {
        let text = try TestReceipts.text(Self.name)
        try Self.expectSameReceipt(Self.wrapped(text, every: 64, with: [0x0A]), "64 columns, LF")
        try Self.expectSameReceipt(Self.wrapped(text, every: 76, with: [0x0D, 0x0A]), "76 columns, CR LF")
        try Self.expectSameReceipt(Self.wrapped(text, every: 64, with: [0x20, 0x0D, 0x0A, 0x20, 0x20]), "indented")
        try Self.expectSameReceipt(Self.wrapped(text, every: 10, with: [0x09]), "tabs")
        try Self.expectSameReceipt([0x20, 0x0A] + text + [0x0A, 0x20, 0x0A], "white space around")
    }

    @Test func formDecodedSpacesAreReadAsPlus() throws {
        let text = try TestReceipts.text(Self.name)
        #expect(text.contains(UInt8(ascii: "+")), "the fixture has a + to lose")
        try Self.expectSameReceipt(text.map { $0 == UInt8(ascii: "+") ? 0x20 : $0 }, "+ as space")
    }

    @Test func theURLSafeAlphabetAndMissingPaddingRead() throws {
        let der = try TestReceipts.der("revenuecat-receiptsample1-sandbox-2020")
        let url = Array(Base64.encode(der, alphabet: .url).utf8)
        #expect(url.contains(UInt8(ascii: "-")) || url.contains(UInt8(ascii: "_")))
        let r = try ReceiptReader.read(url, trust: TestReceipts.apple)
        #expect(r.signature.valid && r.app?.inApp.count == 9)
        let standard = try TestReceipts.text("revenuecat-receiptsample1-sandbox-2020")
        #expect(standard.last == UInt8(ascii: "="))
        let unpadded = Array(standard.prefix { $0 != UInt8(ascii: "=") })
        #expect(try ReceiptReader.read(unpadded, trust: TestReceipts.apple).signature.valid)
    }

    @Test func aStoreKit2TransactionIsNotAReceipt() {
        let jws = Array(
            "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUkiXX0.eyJ0cmFuc2FjdGlvbklkIjoiMjAwMDAwMDAwMDAwMDAwMSJ9.c2lnbmF0dXJl".utf8
        )
        #expect(TestReceipts.errorCode(jws) == .storeKit2JWS)
        #expect(TestReceipts.errorCode([0x20] + jws + [0x0A]) == .storeKit2JWS)
    }

    @Test(arguments: [
        ("", ReceiptError.Code.empty), (" \r\n\t ", .empty), ("==", .empty), ("====", .malformed), ("A", .malformed),
        ("not a receipt!", .malformed), ("MIIT%2F", .malformed), ("QUJD=D", .malformed), ("QUJD===", .malformed),
        ("a.b.c", .malformed), ("QUJDRA", .notAReceipt), ("AAAA", .notAReceipt), ("e30=", .notAReceipt),
        ("MAA=", .notAReceipt), ("MIA=", .malformed), ("QUJD\u{00E9}", .malformed),
    ])
    func garbageIsRefusedWithItsCode(_ text: String, _ code: ReceiptError.Code) {
        #expect(TestReceipts.errorCode(Array(text.utf8)) == code, "\(text)")
    }

    @Test func aTwoMebibyteBodyIsRefusedCleanly() {
        // Base64 of 1.5 MiB of zero bytes: within the default limit, no receipt.
        let body = [UInt8](repeating: UInt8(ascii: "A"), count: 2 * 1024 * 1024)
        #expect(TestReceipts.errorCode(body) == .notAReceipt)
        // Over a smaller limit: refused while scanning, before anything is decoded.
        #expect(TestReceipts.errorCode(body, maxBytes: 1024 * 1024) == .tooLarge)
        // Padding white space does not count against it; characters do.
        #expect(TestReceipts.errorCode([UInt8](repeating: 0x0A, count: 2 * 1024 * 1024), maxBytes: 1024) == .empty)
    }

    @Test func aReceiptOverTheLimitIsTooLarge() throws {
        let text = try TestReceipts.text(Self.name)
        #expect(TestReceipts.errorCode(text, maxBytes: 6626) == .tooLarge)
        #expect(TestReceipts.errorCode(text, maxBytes: 6627) == nil)
        #expect(TestReceipts.errorCode(text, maxBytes: 0) == .tooLarge)
    }
}
