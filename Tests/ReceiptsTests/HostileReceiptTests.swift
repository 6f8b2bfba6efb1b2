import Crypto
import TestPKI
import Testing

@testable import Receipts

/// Bytes made to hurt a BER reader (docs/threat-model.md): nesting bombs, lengths that point past the end or
/// declare gigabytes, integers that overflow, truncations everywhere. Each is refused with its code; none traps,
/// recurses without bound or allocates what it declares. (Time is bounded by construction — linear in the input
/// times ``BER/maxDepth`` — and not asserted against a clock.)
@Suite struct HostileReceiptTests {
    static func text(_ der: [UInt8]) -> [UInt8] { Array(Base64.encode(der, alphabet: .standard).utf8) }

    /// `depth` nested indefinite-length SEQUENCEs, closed or not.
    static func bomb(depth: Int, closed: Bool) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(depth * 4)
        for _ in 0..<depth { out += [0x30, 0x80] }
        if closed { for _ in 0..<depth { out += [0x00, 0x00] } }
        return out
    }

    @Test(arguments: [33, 1_000, 500_000])
    func aNestingBombIsTooDeep(_ depth: Int) {
        #expect(TestReceipts.errorCode(Self.text(Self.bomb(depth: depth, closed: true))) == .tooDeep)
        #expect(TestReceipts.errorCode(Self.text(Self.bomb(depth: depth, closed: false))) == .tooDeep)
        // Constructed OCTET STRINGs and definite lengths nest the same way.
        var definite: [UInt8] = [0x04, 0x00]
        for _ in 0..<min(depth, 2_000) { definite = DER.tlv(0x24, definite) }
        #expect(TestReceipts.errorCode(Self.text(DER.tlv(0x30, definite))) == .tooDeep)
    }

    @Test func nestingUpToTheLimitIsReadButIsNoReceipt() {
        #expect(TestReceipts.errorCode(Self.text(Self.bomb(depth: BER.maxDepth, closed: true))) == .notAReceipt)
    }

    @Test func aHugeDeclaredLengthIsRefusedWithoutAllocating() {
        let cases: [[UInt8]] = [
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x06, 0x09],  // 4 GiB
            [0x30, 0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00],  // Int64.max: 8 length bytes
            [0x30, 0xFF, 0x00],  // reserved length byte
            [0x30, 0x82, 0x01, 0x00, 0x06],  // 256 bytes declared, one there
            [0x30, 0x80, 0x04, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x00, 0x00],
            [0x30, 0x03, 0x04, 0x80, 0x00],  // indefinite length on a primitive
            [0x30, 0x02, 0x00, 0x00],  // end-of-contents in a definite element
            [0x30, 0x07, 0x3F, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00],  // a tag number in too many bytes
        ]
        for der in cases {
            #expect(TestReceipts.errorCode(Self.text(der)) == .malformed, "\(der)")
        }
    }

    @Test func integersOfEveryWidthReadOrAreNil() {
        #expect(BER.int64([]) == nil)
        #expect(BER.int64([0x00]) == 0 && BER.int64([0xFF]) == -1 && BER.int64([0x00, 0x80]) == 128)
        #expect(BER.int64([0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == Int64.max)
        #expect(BER.int64([0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]) == Int64.min)
        #expect(BER.int64([0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]) == nil)
        #expect(BER.int64([UInt8](repeating: 0xFF, count: 100)[...]) == nil)
    }

    @Test func attributesWithHostileValuesAreLeftOut() throws {
        // A payload whose attribute values are of the wrong type, too long, empty, or not alone in their string.
        func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
            DER.sequence([DER.integer(type), DER.integer(1), DER.octetString(value)])
        }
        let payload = DER.set([
            attribute(2, DER.integer(5)),  // bundle id as a number
            attribute(1, DER.tlv(0x02, [UInt8](repeating: 0x7F, count: 20))),  // app item id past Int64
            attribute(3, []),  // empty
            attribute(12, DER.ia5String("2020-02-30T00:00:00Z")),  // no such day
            attribute(19, DER.utf8String("1") + [0x00]),  // a trailing byte
            attribute(0, [0xFF, 0xFE]),  // not DER at all
            DER.sequence([
                DER.tlv(0x02, [0x01] + [UInt8](repeating: 0, count: 12)), DER.integer(1), DER.octetString([]),
            ]),
            attribute(17, DER.utf8String("not a SET")),
            DER.utf8String("not an attribute"),
        ])
        let receipt = try ReceiptPayload.parse(payload)
        #expect(receipt.bundleID == nil && receipt.appItemID == nil && receipt.applicationVersion == nil)
        #expect(receipt.creationDate == nil && receipt.originalApplicationVersion == nil && receipt.receiptType == nil)
        #expect(receipt.inApp == [ReceiptPurchase()])
    }

    @Test func payloadsThatAreNotASetAreMalformed() {
        for payload: [UInt8] in [
            [], [0x30, 0x00], [0x31, 0x00, 0x00], [0x04, 0x02, 0x04, 0x00], [0x31, 0x05, 0x30],
        ] {
            #expect(throws: ReceiptError.self, "\(payload)") { try ReceiptPayload.parse(payload) }
        }
        // Wrapped once or twice in an OCTET STRING (as Xcode does), a SET reads.
        #expect(throws: Never.self) { try ReceiptPayload.parse(DER.octetString(DER.set([]))) }
        #expect(throws: Never.self) { try ReceiptPayload.parse(DER.tlv(0x24, DER.octetString(DER.set([])))) }
    }

    @Test func everyTruncationOfARealReceiptFailsCleanly() throws {
        let der = try TestReceipts.der("apple-xcode-app-receipt-with-transaction")
        for n in 0..<der.count {
            let code = TestReceipts.errorCode(Self.text(Array(der.prefix(n))))
            #expect(code != nil, "\(n) bytes")
        }
    }

    @Test func aSignedReceiptWithAHostilePayloadIsStillJudged() throws {
        // A payload with a nesting bomb inside a genuine signature — an attribute value of 40 constructed OCTET
        // STRINGs, one in the other: the reader's depth limit, not OpenSSL's.
        var value: [UInt8] = DER.octetString(Array("x".utf8))
        for _ in 0..<40 { value = DER.tlv(0x24, value) }
        let payload = DER.set([DER.sequence([DER.integer(2), DER.integer(1), value])])
        let der = try TestReceipts.pki.sign(payload)
        #expect(TestReceipts.errorCode(Self.text(der), trust: TestReceipts.withTestRoot) == .tooDeep)
    }
}
