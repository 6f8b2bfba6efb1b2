import Crypto
import Foundation
import Receipts
import TestPKI
import TestSupport
import Testing
import WireJSON

@testable import GatewayCLI

/// `iap-gateway receipt decode`: what it prints for the real receipts (their goldens), its exit statuses, its flags.
@Suite struct ReceiptCommandTests {
    /// 2025-06-01T00:00:00Z: the request date the goldens were written with.
    static let now: Int64 = 1_748_736_000_000

    static let names = [
        "apple-legacyTransaction", "apple-xcode-app-receipt-empty", "apple-xcode-app-receipt-with-transaction",
        "jackywu-legacy-transaction-receipt-production-2019", "revenuecat-legacy-transaction-receipt-sandbox-2015",
        "revenuecat-receiptsample1-sandbox-2020", "tpinappreceipt-receipt-production-2024",
    ]

    @Test(arguments: names)
    func printsTheGoldenOfEachRealReceipt(_ name: String) throws {
        let (status, output) = ReceiptCommand.decode(
            try Fixtures.bytes("receipts/\(name).b64"),
            trust: ReceiptTrust(),
            now: Self.now
        )
        let golden = try Fixtures.text("receipts/\(name).expected.json")
        #expect(String(decoding: output, as: UTF8.self) + "\n" == golden, "\(name)")
        // Apple's own receipts; the unsigned transaction receipt and Xcode's are not.
        let authenticated = !name.hasPrefix("apple-")
        #expect(status == (authenticated ? 0 : 1), "\(name)")
    }

    @Test func aReceiptFileInDERReadsAsItsBase64() throws {
        let text = try Fixtures.bytes("receipts/revenuecat-receiptsample1-sandbox-2020.b64")
        let der = try Base64.decode(text, alphabet: .standard)
        let fromText = ReceiptCommand.decode(text, trust: ReceiptTrust(), now: Self.now)
        let fromDER = ReceiptCommand.decode(der, trust: ReceiptTrust(), now: Self.now)
        #expect(fromText.0 == 0 && fromDER.0 == 0)
        #expect(fromText.1 == fromDER.1)
    }

    @Test func noReceiptIsAnErrorObject() throws {
        let (status, output) = ReceiptCommand.decode(Array("eyJ.eyJ.sig".utf8), trust: ReceiptTrust(), now: Self.now)
        #expect(status == 1)
        let error = try #require(try JSONParser.parse(output).objectValue?["error"]?.objectValue)
        #expect(error["code"] == .string("storekit2_jws") && error["message"]?.stringValue != nil)
        #expect(ReceiptCommand.decode([], trust: ReceiptTrust(), now: Self.now).0 == 1)
    }

    @Test func usageErrorsExitWithTwo() async {
        await CommandLineTests.expectUsage(ReceiptCommand.self, [], "needs a subcommand")
        await CommandLineTests.expectUsage(ReceiptCommand.self, ["verify", "x.b64"], "unknown subcommand verify")
        await CommandLineTests.expectUsage(ReceiptCommand.self, ["decode"], "needs a FILE")
        await CommandLineTests.expectUsage(ReceiptCommand.self, ["decode", "a", "b"], "unexpected argument b")
        await CommandLineTests.expectUsage(ReceiptCommand.self, ["decode", "--shared-secret", "x"], "unknown option")
        await CommandLineTests.expectUsage(
            ReceiptCommand.self,
            ["decode", "--root", "/nonexistent/root.der", "x.b64"],
            "--root: cannot read"
        )
    }

    @Test func aRootFileVouchesForSandboxReceipts() async throws {
        try await Scratch.withDirectory { folder in
            let pki = try GeneratedReceiptPKI.generate(notBefore: 1_577_836_800, notAfter: 2_208_988_800)
            let receipt = AppReceipt(
                receiptType: "ProductionSandbox",
                bundleID: "com.example.gateway",
                creationDate: Self.now,
                inApp: [ReceiptPurchase(quantity: 1, productID: "p", transactionID: "2000000000000001")]
            )
            let text = ReceiptBuilder.base64(try ReceiptBuilder.build(receipt, pki: pki))
            try Data(text.utf8).write(to: URL(filePath: folder + "/receipt.b64"))
            try Data(pki.root.pem.utf8).write(to: URL(filePath: folder + "/root.pem"))
            try Data(pki.root.der).write(to: URL(filePath: folder + "/root.der"))
            try Data("not a certificate".utf8).write(to: URL(filePath: folder + "/junk.der"))
            let file = folder + "/receipt.b64"
            #expect(try await ReceiptCommand.run(["decode", file]) == 1, "no root for it")
            #expect(try await ReceiptCommand.run(["decode", "--root", folder + "/root.pem", file]) == 0)
            #expect(try await ReceiptCommand.run(["decode", file, "--root=" + folder + "/root.der"]) == 0)
            #expect(try await ReceiptCommand.run(["decode", folder + "/missing.b64"]) == 1)
            await CommandLineTests.expectUsage(
                ReceiptCommand.self,
                ["decode", "--root", folder + "/junk.der", file],
                "is not a DER or PEM certificate"
            )
        }
    }

    @Test func aTransactionReceiptOfATestChainNeedsItsRootAndIntermediate() async throws {
        try await Scratch.withDirectory { folder in
            let pki = try GeneratedReceiptPKI.generate(
                notBefore: 1_577_836_800,
                notAfter: 2_208_988_800,
                profile: .iTunesStore
            )
            let fields = [
                TransactionReceipt.PurchaseInfoField(key: "transaction-id", value: "2000000000000001"),
                TransactionReceipt.PurchaseInfoField(key: "purchase-date-ms", value: String(Self.now)),
                TransactionReceipt.PurchaseInfoField(key: "bid", value: "com.example.gateway"),
            ]
            let text = ReceiptBuilder.base64(try ReceiptBuilder.transactionReceipt(fields, pki: pki))
            let file = folder + "/receipt.b64"
            try Data(text.utf8).write(to: URL(filePath: file))
            try Data(pki.root.der).write(to: URL(filePath: folder + "/root.der"))
            try Data(pki.intermediate.pem.utf8).write(to: URL(filePath: folder + "/intermediate.pem"))
            let root = ["--root", folder + "/root.der"]
            let intermediate = ["--intermediate", folder + "/intermediate.pem"]
            #expect(try await ReceiptCommand.run(["decode", file]) == 1, "neither")
            #expect(try await ReceiptCommand.run(["decode"] + root + [file]) == 1, "the leaf has no known issuer")
            #expect(try await ReceiptCommand.run(["decode"] + intermediate + [file]) == 1, "no root")
            #expect(try await ReceiptCommand.run(["decode"] + root + intermediate + [file]) == 0)
            await CommandLineTests.expectUsage(
                ReceiptCommand.self,
                ["decode", "--intermediate", folder + "/missing.der", file],
                "--intermediate: cannot read"
            )
        }
    }
}
