import Crypto
import Receipts
import TestPKI
import Testing
import WireJSON

/// Receipts built as Apple builds them read back to what was built, with the size of real ones.
@Suite struct ReceiptBuilderTests {
    /// A receipt like a long-lived subscriber's: `count` monthly renewals and a few other products.
    static func receipt(purchases count: Int) -> AppReceipt {
        var r = TestReceipts.sandboxReceipt()
        r.inApp = (0..<count).map { i in
            let bought = TestReceipts.june2025 - Int64(count - i) * 2_592_000_000
            return ReceiptPurchase(
                quantity: 1,
                productID: i % 10 == 9 ? "com.example.coins.100" : "com.example.monthly",
                transactionID: String(2_000_000_000_000_000 + i),
                originalTransactionID: i % 10 == 9 ? String(2_000_000_000_000_000 + i) : "2000000000000000",
                purchaseDate: bought,
                originalPurchaseDate: TestReceipts.june2025 - Int64(count) * 2_592_000_000,
                expiresDate: i % 10 == 9 ? nil : bought + 2_592_000_000,
                cancellationDate: i == 3 ? bought + 86_400_000 : nil,
                webOrderLineItemID: i % 10 == 9 ? nil : String(2_000_000_000_100_000 + i),
                isTrialPeriod: i == 0,
                isInIntroOfferPeriod: false,
                promotionalOfferID: i == 5 ? "com.example.winback" : nil,
                productType: i % 10 == 9 ? 1 : 3
            )
        }
        return r
    }

    @Test func aBuiltReceiptReadsBackInEncodedOrder() throws {
        let built = Self.receipt(purchases: 12)
        let r = try ReceiptReader.read(try TestReceipts.signed(built), trust: TestReceipts.withTestRoot)
        #expect(r.signature.valid)
        let app = try #require(r.app)
        // DER sorts the purchases by their encoding: the same set, perhaps another order.
        #expect(Set(app.inApp) == Set(built.inApp) && app.inApp.count == built.inApp.count)
        var same = app
        same.inApp = built.inApp
        #expect(same == built)
        #expect(r.lookupTransactionID == "2000000000000000", "the subscription's original transaction id")
    }

    @Test func aHundredKilobyteReceiptHasAbout187Purchases() throws {
        let text = try TestReceipts.signed(Self.receipt(purchases: 187))
        #expect((95_000...115_000).contains(text.count), "\(text.count) bytes of base64")
        let r = try ReceiptReader.read(text, trust: TestReceipts.withTestRoot)
        #expect(r.signature.valid && r.app?.inApp.count == 187)
    }

    @Test func theObjectOfABuiltReceiptFollowsApplesRules() throws {
        let r = try ReceiptReader.read(
            try TestReceipts.signed(Self.receipt(purchases: 10)),
            trust: TestReceipts.withTestRoot
        )
        let inApp = try #require(r.receiptObject(requestDate: TestReceipts.june2025).objectValue?["in_app"]?.arrayValue)
        let byID = Dictionary(
            uniqueKeysWithValues: inApp.compactMap { e in
                e.objectValue.map { ($0["transaction_id"]?.stringValue ?? "", $0) }
            }
        )
        let consumable = try #require(byID["2000000000000009"])
        #expect(
            consumable.keys == [
                "quantity", "product_id", "transaction_id", "original_transaction_id", "purchase_date",
                "purchase_date_ms",
                "purchase_date_pst", "original_purchase_date", "original_purchase_date_ms",
                "original_purchase_date_pst",
                "is_trial_period",
            ]
        )
        let cancelled = try #require(byID["2000000000000003"])
        #expect(
            cancelled.keys.suffix(5) == [
                "is_trial_period", "is_in_intro_offer_period", "cancellation_date", "cancellation_date_ms",
                "cancellation_date_pst",
            ]
        )
        #expect(byID["2000000000000005"]?["promotional_offer_id"] == .string("com.example.winback"))
        #expect(byID["2000000000000000"]?["is_trial_period"] == .string("true"))
    }

    @Test func aWebOrderLineItemThatIsNoNumberCannotBeBuilt() {
        var r = TestReceipts.sandboxReceipt()
        r.inApp[0].webOrderLineItemID = "abc"
        #expect(throws: ReceiptError(.cannotBuild, "")) { try ReceiptBuilder.payload(r) }
    }

    @Test func theJSONTextKeepsTheOrder() {
        let value = JSONValue.object(
            JSONObject([
                ("b", .number("1")), ("a", .array([.string("x\"y"), .null, .bool(true)])), ("c", .object(JSONObject())),
            ])
        )
        #expect(String(decoding: value.text(), as: UTF8.self) == #"{"b":1,"a":["x\"y",null,true],"c":{}}"#)
        #expect(
            String(decoding: value.text(pretty: true), as: UTF8.self)
                == "{\n  \"b\": 1,\n  \"a\": [\n    \"x\\\"y\",\n    null,\n    true\n  ],\n  \"c\": {}\n}"
        )
    }
}
