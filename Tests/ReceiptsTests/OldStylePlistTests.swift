import Receipts
import TestPKI
import Testing
import WireJSON

/// The old-style property lists of iOS 6 transaction receipts: what Apple wrote reads, the rest is a clean error.
@Suite struct OldStylePlistTests {
    static func parse(_ text: String) throws(ReceiptError) -> [OldStylePlist.Entry] {
        try OldStylePlist.parse(Array(text.utf8))
    }

    @Test func applesLayoutReads() throws {
        let entries = try Self.parse(
            "{\n\t\"signature\" = \"AnTJ+/=\";\n\t\"purchase-info\" = \"ewo=\";\n\t\"pod\" = \"100\";\n}\n"
        )
        #expect(entries.map(\.key) == ["signature", "purchase-info", "pod"])
        #expect(OldStylePlist.string(entries, "purchase-info") == "ewo=")
    }

    @Test func quotedBareEscapedNestedAndCommentedValuesRead() throws {
        let entries = try Self.parse(
            #"/* a comment */ { bare = value-1.0; "q" = "a\"b\\c\n\U00e9"; // line comment"# + "\n"
                + #"nested = { "k" = "v"; }; last = x }"#
        )
        #expect(OldStylePlist.string(entries, "bare") == "value-1.0")
        #expect(OldStylePlist.string(entries, "q") == "a\"b\\c\né")
        #expect(entries[2].value == .dictionary([OldStylePlist.Entry(key: "k", value: .string("v"))]))
        #expect(OldStylePlist.string(entries, "last") == "x")
        #expect(OldStylePlist.string(entries, "nested") == nil)
    }

    @Test(arguments: [
        "", "{", "}", "{ \"a\" = \"b\" ", "{ \"a\" \"b\"; }", "{ \"a\" = ; }", "{ a = b; } trailing", "( a )",
        "{ \"unclosed = b; }", "{ a = \"\\U12\"; }", "{ a = b c; }", "{ = b; }",
    ])
    func brokenTextIsMalformed(_ text: String) {
        #expect(throws: ReceiptError(.malformed, "")) { try Self.parse(text) }
    }

    @Test func nestingAndSizeAreBounded() {
        let deep = String(repeating: "{ a = ", count: 5) + "b" + String(repeating: "; }", count: 5)
        #expect(throws: ReceiptError(.tooDeep, "")) { try Self.parse(deep) }
        let bomb = String(repeating: "{ a = ", count: 100_000)
        #expect(throws: ReceiptError(.tooDeep, "")) { try Self.parse(bomb) }
        let many = "{" + String(repeating: "a = b; ", count: OldStylePlist.maxEntries + 1) + "}"
        #expect(throws: ReceiptError(.tooLarge, "")) { try Self.parse(many) }
    }

    @Test func aTransactionReceiptWithoutPurchaseInfoIsNotAReceipt() {
        let text = Array(ReceiptBuilder.base64(Array(#"{ "signature" = "AA=="; "pod" = "100"; }"#.utf8)).utf8)
        #expect(TestReceipts.errorCode(text) == .notAReceipt)
        let broken = Array(ReceiptBuilder.base64(Array(#"{ "purchase-info" = "not base64!"; }"#.utf8)).utf8)
        #expect(TestReceipts.errorCode(broken) == .malformed)
        let inner = Array(ReceiptBuilder.base64(Array(#"{ "purchase-info" = "e30"; }"#.utf8)).utf8)
        let r = try? ReceiptReader.read(inner, trust: TestReceipts.apple)
        #expect(r?.transaction == TransactionReceipt() && r?.lookupTransactionID == nil)
    }

    /// Fuzz/Regressions/receipt/transaction-receipt-repeated-key-in-receipt-json.txt: a key written twice (here once
    /// as `transaction-id`, once as `transaction_id`) made a `receipt` object with a repeated key, which no strict
    /// JSON parser reads. The first value counts.
    @Test func aRepeatedKeyAppearsOnceInTheReceiptObject() throws {
        let info = #"{ "transaction-id" = "1"; "transaction_id" = "2"; "transaction-id" = "3"; }"#
        let outer = #"{ "purchase-info" = ""# + ReceiptBuilder.base64(Array(info.utf8)) + #""; }"#
        let r = try ReceiptReader.read(decoded: Array(outer.utf8), trust: TestReceipts.apple)
        #expect(r.transaction?.purchaseInfo.count == 3 && r.transaction?.transactionID == "1")
        let object = r.receiptObject(requestDate: TestReceipts.june2025)
        #expect(object == .object(JSONObject([("transaction_id", .string("1"))])))
        #expect(try JSONParser.parse(object.text()) == object)
    }
}
