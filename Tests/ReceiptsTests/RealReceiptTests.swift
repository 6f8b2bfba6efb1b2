import Receipts
import TestSupport
import Testing
import WireJSON

/// Every real receipt of `Fixtures/receipts` reads to what its source says (Fixtures/receipts/README.md): Apple's
/// production and sandbox receipts authenticated at their creation date, Xcode's readable and never Apple's, the
/// iOS 6 transaction receipts with their ids.
@Suite struct RealReceiptTests {
    static let leafName = "Mac App Store and iTunes Store Receipt Signing"

    static func read(_ name: String, trust: ReceiptTrust = TestReceipts.apple) throws -> DecodedReceipt {
        try ReceiptReader.read(try TestReceipts.text(name), trust: trust)
    }

    @Test func theProductionReceiptOf2024() throws {
        let r = try Self.read("tpinappreceipt-receipt-production-2024")
        #expect(r.format == .appReceipt)
        #expect(
            r.signature
                == ReceiptSignature(
                    valid: true,
                    signer: Self.leafName,
                    digest: "sha256",
                    judgedAt: 1_708_709_236_000,
                    root: "apple"
                )
        )
        #expect(!r.isSandbox)
        let app = try #require(r.app)
        #expect(app.receiptType == "Production")
        #expect(app.appItemID == 690_661_663)
        #expect(app.bundleID == "org.getpure.pure-iphone")
        #expect(app.applicationVersion == "15741" && app.originalApplicationVersion == "434")
        #expect(app.creationDate == 1_708_709_236_000)  // 2024-02-23T17:27:16Z
        #expect(app.originalPurchaseDate == 1_471_360_543_000)  // 2016-08-16T15:15:43Z
        #expect(app.downloadID == 74_011_462_945_433 && app.versionExternalIdentifier == 863_855_306)
        #expect(app.expirationDate == nil)
        // One family: a week, then three months (a cross-grade), each with its own transaction id.
        #expect(
            app.inApp.map(\.transactionID) == [
                "340001196262039", "340001237736590", "340001264290434", "340001311555626",
            ]
        )
        #expect(app.inApp.allSatisfy { $0.originalTransactionID == "340001196262039" })
        #expect(
            app.inApp.map(\.productID) == ["org.getpure.pure.Week"]
                + Array(repeating: "org.getpure.pure.Month", count: 3)
        )
        #expect(app.inApp.allSatisfy { $0.productType == 3 && $0.quantity == 1 && $0.isTrialPeriod == false })
        #expect(
            app.inApp.map(\.webOrderLineItemID) == [
                "340000558053130", "340000558053131", "340000580178733", "340000594256018",
            ]
        )
        #expect(app.inApp[0].purchaseDate == 1_683_674_455_000)  // 2023-05-09T23:20:55Z
        #expect(app.inApp[0].expiresDate == 1_684_279_255_000)  // a week later: 2023-05-16T23:20:55Z
        #expect(
            app.inApp.map(\.promotionalOfferID) == [
                nil, nil, "org.getpure.pure.Month.Offer.3M.PayToGo", "org.getpure.pure.Month.Offer.3M.PayToGo",
            ]
        )
        #expect(app.inApp.allSatisfy { $0.cancellationDate == nil })
        #expect(r.lookupTransactionID == "340001196262039")
    }

    @Test func theSandboxReceiptOf2020() throws {
        let r = try Self.read("revenuecat-receiptsample1-sandbox-2020")
        #expect(r.format == .appReceipt)
        #expect(
            r.signature
                == ReceiptSignature(
                    valid: true,
                    signer: Self.leafName,
                    digest: "sha1",
                    judgedAt: 1_595_439_548_000,
                    root: "apple"
                )
        )
        #expect(r.isSandbox)
        let app = try #require(r.app)
        #expect(app.receiptType == "ProductionSandbox" && app.bundleID == "com.revenuecat.sampleapp")
        #expect(app.applicationVersion == "4" && app.originalApplicationVersion == "1.0")
        #expect(app.creationDate == 1_595_439_548_000)  // 2020-07-22T17:39:08Z
        #expect(app.appItemID == 0 && app.downloadID == 0 && app.versionExternalIdentifier == 0)
        #expect(app.inApp.count == 9)
        #expect(app.inApp.allSatisfy { $0.originalTransactionID == "1000000692878476" })
        #expect(app.inApp.first?.transactionID == "1000000692879214", "the first met in encoded order")
        #expect(app.inApp.last?.transactionID == "1000000692878476", "the last met, and the family's first purchase")
        #expect(app.inApp.filter { $0.isTrialPeriod == true }.map(\.transactionID) == ["1000000692878476"])
        #expect(app.inApp.filter { $0.productID == "com.revenuecat.annual_39.99.2_week_intro" }.count == 1)
        #expect(r.lookupTransactionID == "1000000692878476")
    }

    @Test(arguments: ["tpinappreceipt-receipt-production-2024", "revenuecat-receiptsample1-sandbox-2020"])
    func applesReceiptsNeedApplesRoot(_ name: String) throws {
        // Without Apple Inc. Root (a test root pinned in its place) the same bytes do not authenticate.
        let r = try Self.read(name, trust: ReceiptTrust(pinnedRoots: [TestReceipts.pki.root.der]))
        #expect(!r.signature.valid && r.signature.failure == "untrusted_root")
        #expect(r.signature.judgedAt == r.app?.creationDate, "the chain is judged at the creation date")
    }

    @Test func theXcodeReceiptWithoutPurchases() throws {
        let r = try Self.read("apple-xcode-app-receipt-empty")
        #expect(r.format == .xcode)
        #expect(
            r.signature
                == ReceiptSignature(valid: false, signer: "StoreKit", digest: "sha256", failure: "xcode_receipt")
        )
        #expect(!r.isSandbox)
        let app = try #require(r.app)
        #expect(app.receiptType == "Xcode" && app.bundleID == "com.example.naturelab.backyardbirds.example")
        #expect(app.applicationVersion == "1" && app.appItemID == 0)
        #expect(app.creationDate == 1_697_678_334_000)  // 2023-10-19T01:18:54Z
        #expect(app.expirationDate == 64_092_211_200_000)  // 4001-01-01
        #expect(app.inApp.isEmpty)
        #expect(r.lookupTransactionID == nil)
    }

    @Test func theXcodeReceiptWithAPurchase() throws {
        // Even with Xcode's certificate pinned as a root, an Xcode receipt is never authenticated.
        let storeKit = try #require(try CMSCertificates.of("apple-xcode-app-receipt-with-transaction").first)
        let r = try Self.read("apple-xcode-app-receipt-with-transaction", trust: ReceiptTrust(pinnedRoots: [storeKit]))
        #expect(r.format == .xcode)
        #expect(!r.signature.valid && r.signature.failure == "xcode_receipt")
        let app = try #require(r.app)
        #expect(app.creationDate == 1_697_679_940_000)  // 2023-10-19T01:45:40Z
        #expect(
            app.inApp
                == [
                    ReceiptPurchase(
                        quantity: 1,
                        productID: "pass.premium",
                        transactionID: "0",
                        purchaseDate: 1_697_679_936_000,
                        expiresDate: 1_700_358_336_000,
                        isInIntroOfferPeriod: true
                    )
                ]
        )
        #expect(r.lookupTransactionID == nil, "never \"0\"")
    }

    @Test func appleSyntheticTransactionReceipt() throws {
        let r = try Self.read("apple-legacyTransaction")
        #expect(r.format == .transactionReceipt)
        #expect(r.signature == ReceiptSignature(valid: false, failure: "unsigned"))
        #expect(r.transaction?.transactionID == "33993399")
        #expect(r.transaction?.purchaseInfo == [.init(key: "transaction-id", value: "33993399")])
        #expect(!r.isSandbox && r.app == nil)
        #expect(r.lookupTransactionID == "33993399")
    }

    @Test func theRealTransactionReceiptOf2015() throws {
        let r = try Self.read("revenuecat-legacy-transaction-receipt-sandbox-2015")
        #expect(r.format == .transactionReceipt)
        // Version 2: PurchaseReceiptCertificate (2014-06-07..2016-05-18) under Apple iTunes Store CA, judged at the
        // purchase date.
        #expect(
            r.signature
                == ReceiptSignature(
                    valid: true,
                    signer: "PurchaseReceiptCertificate",
                    digest: "sha1",
                    judgedAt: 1_447_821_281_000,
                    root: "apple"
                )
        )
        #expect(r.isSandbox)
        let t = try #require(r.transaction)
        #expect(t.transactionID == "1000000181298734" && t.originalTransactionID == "1000000180636226")
        #expect(t.productID == "yearly" && t.bundleID == "com.mbaasy.ios.demo" && t.bundleVersion == "1")
        #expect(t.webOrderLineItemID == "1000000030938713" && t.environment == "Sandbox")
        #expect(t.purchaseDate == 1_447_821_281_000 && t.expiresDate == 1_448_346_881_000)
        #expect(t.purchaseInfo.count == 19)
        #expect(r.lookupTransactionID == "1000000180636226")
    }

    @Test func theRealTransactionReceiptOf2019() throws {
        let r = try Self.read("jackywu-legacy-transaction-receipt-production-2019")
        #expect(r.format == .transactionReceipt)
        // Version 3: the app receipts' leaf (2015-11-13..2023-02-07) under the first WWDR CA, judged at the purchase
        // date.
        #expect(
            r.signature
                == ReceiptSignature(
                    valid: true,
                    signer: Self.leafName,
                    digest: "sha1",
                    judgedAt: 1_574_617_369_000,
                    root: "apple"
                )
        )
        #expect(!r.isSandbox, "a production receipt carries no environment")
        let t = try #require(r.transaction)
        #expect(t.transactionID == "140000650438622" && t.originalTransactionID == "140000650438622")
        #expect(t.productID == "com.freeramble.smsautosender.6" && t.bundleID == "com.freeramble.smsautosender")
        #expect(t.bundleVersion == "196" && t.webOrderLineItemID == "140000221703974" && t.environment == nil)
        #expect(t.purchaseDate == 1_574_617_369_000 && t.expiresDate == 1_577_209_369_000)
        #expect(t.purchaseInfo.count == 24)
        #expect(r.lookupTransactionID == "140000650438622")
    }

    @Test func theReceiptObjectOf2019IsWhatApplesAnswerCarried() throws {
        // The notification this receipt came in (Fixtures/v1) carries Apple's verifyReceipt object for it,
        // `latest_receipt_info`: the same keys in the same order, the same values.
        let notification = try #require(
            try JSONParser.parse(try Fixtures.bytes("v1/v1-notif-initial-buy-prod-2019.json")).objectValue
        )
        let r = try Self.read("jackywu-legacy-transaction-receipt-production-2019")
        #expect(r.receiptObject(requestDate: TestReceipts.june2025) == notification["latest_receipt_info"])
        #expect(
            notification["latest_receipt"]?.stringValue
                == String(
                    decoding: try TestReceipts.text("jackywu-legacy-transaction-receipt-production-2019"),
                    as: UTF8.self
                )
        )
    }

    @Test(arguments: TestReceipts.names)
    func everyFixtureReadsTheSameFromItsBytes(_ name: String) throws {
        // `receipt decode` of a binary receipt file goes through `read(decoded:)`.
        let fromText = try ReceiptReader.read(try TestReceipts.text(name), trust: TestReceipts.apple)
        let fromBytes = try ReceiptReader.read(decoded: try TestReceipts.der(name), trust: TestReceipts.apple)
        #expect(fromText.app == fromBytes.app && fromText.transaction == fromBytes.transaction)
        #expect(fromText.signature == fromBytes.signature && fromText.format == fromBytes.format)
    }
}
