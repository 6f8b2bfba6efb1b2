import Crypto
import TestPKI
import TestSupport
import Testing

@testable import Receipts

/// The signature of iOS 6 transaction receipts (docs/architecture.md, "The receipt reader";
/// ``TransactionReceiptSignaturePolicy``): Apple's real receipts verify at their purchase date, and nothing else does
/// — a changed byte of `purchase-info` or of the signature, another version byte, a truncated blob, a look-alike chain,
/// a leaf of another issuer, a purchase date outside the leaf's validity.
@Suite struct TransactionReceiptSignatureTests {
    typealias F = ReceiptSignature.Failure

    /// A transaction receipt taken apart: its signature blob, its decoded `purchase-info`, its `environment`.
    struct Parts {
        var blob: [UInt8]?
        var purchaseInfo: [UInt8]
        var environment: String?

        init(_ text: [UInt8]) throws {
            let outer = try OldStylePlist.parse(try Base64.decode(text, alphabet: .standard))
            blob = try OldStylePlist.string(outer, "signature").map {
                try Base64.decode(Array($0.utf8), alphabet: .standard)
            }
            purchaseInfo = try Base64.decode(
                Array(try #require(OldStylePlist.string(outer, "purchase-info")).utf8),
                alphabet: .standard
            )
            environment = OldStylePlist.string(outer, "environment")
        }

        /// `receipt-data` text of these parts.
        var text: [UInt8] {
            let plist = ReceiptBuilder.transactionReceipt(
                purchaseInfo: purchaseInfo,
                signature: blob,
                environment: environment
            )
            return Array(ReceiptBuilder.base64(plist).utf8)
        }

        func read(_ trust: ReceiptTrust = TestReceipts.apple) throws -> DecodedReceipt {
            try ReceiptReader.read(text, trust: trust)
        }
    }

    static let real = [
        "revenuecat-legacy-transaction-receipt-sandbox-2015", "jackywu-legacy-transaction-receipt-production-2019",
    ]

    static func parts(_ name: String) throws -> Parts { try Parts(try TestReceipts.text(name)) }

    // MARK: Apple's receipts

    @Test(arguments: real)
    func applesReceiptsVerifyRebuiltAsTheyAre(_ name: String) throws {
        // Taking a receipt apart and putting it back together (the outer list is not signed) changes nothing.
        let parts = try Self.parts(name)
        let r = try parts.read()
        #expect(r.signature.valid && r.signature.root == "apple" && r.signature.failure == nil, "\(name)")
        #expect(r.signature.judgedAt == r.transaction?.purchaseDate)
    }

    @Test(arguments: real)
    func everyChangedByteOfPurchaseInfoFailsTheSignature(_ name: String) throws {
        let parts = try Self.parts(name)
        for i in 0..<parts.purchaseInfo.count {
            var changed = parts
            changed.purchaseInfo[i] ^= 0x01
            // A byte that breaks the property list makes it no receipt at all; every other is a bad signature.
            guard let r = try? changed.read() else { continue }
            #expect(!r.signature.valid && r.signature.failure == F.badSignature, "\(name) byte \(i)")
        }
        var longer = parts
        longer.purchaseInfo.append(0x0A)
        #expect(try longer.read().signature.failure == F.badSignature, "\(name): a byte added")
    }

    @Test(arguments: real)
    func everyChangedByteOfTheSignatureFailsIt(_ name: String) throws {
        let parts = try Self.parts(name)
        let blob = try #require(parts.blob)
        let length = blob[0] == 2 ? 128 : 256
        for i in 1...length {
            var changed = parts
            changed.blob?[i] ^= 0x80
            let r = try changed.read()
            #expect(!r.signature.valid && r.signature.failure == F.badSignature, "\(name) byte \(i)")
        }
    }

    @Test(arguments: real)
    func everyChangedByteOfTheCertificateFailsIt(_ name: String) throws {
        // Its length, then the DER leaf: each change leaves no certificate, another key, or one Apple did not issue.
        let parts = try Self.parts(name)
        let blob = try #require(parts.blob)
        let start = blob[0] == 2 ? 129 : 257
        for i in stride(from: start, to: blob.count, by: 3) {
            var changed = parts
            changed.blob?[i] ^= 0x01
            let r = try changed.read()
            #expect(!r.signature.valid && r.signature.failure != nil, "\(name) byte \(i)")
        }
    }

    @Test(arguments: real)
    func anotherVersionByteIsRefused(_ name: String) throws {
        let parts = try Self.parts(name)
        for version: UInt8 in [0, 1, 2, 3, 4, 0x82, 0xFF] where version != parts.blob?[0] {
            var changed = parts
            changed.blob?[0] = version
            let r = try changed.read()
            let expected = version == 2 || version == 3 ? F.malformedSignature : F.unsupportedAlgorithm
            #expect(!r.signature.valid && r.signature.failure == expected, "\(name) version \(version)")
        }
    }

    @Test(arguments: real)
    func aTruncatedOrLengthenedBlobIsMalformed(_ name: String) throws {
        let parts = try Self.parts(name)
        let blob = try #require(parts.blob)
        for n in stride(from: 1, to: blob.count, by: 5) {
            var changed = parts
            changed.blob = Array(blob.prefix(n))
            let r = try changed.read()
            #expect(!r.signature.valid && r.signature.failure == F.malformedSignature, "\(name) \(n) bytes")
        }
        var longer = parts
        longer.blob?.append(0)
        #expect(try longer.read().signature.failure == F.malformedSignature, "a byte after the certificate")
    }

    @Test(arguments: real)
    func aPurchaseDateNoLongerInThePurchaseInfoCannotBeJudged(_ name: String) throws {
        // Such a receipt is one Apple did not sign (the signature fails first); built by a test chain it is refused.
        let parts = try Self.parts(name)
        var changed = parts
        changed.purchaseInfo = Array(
            String(decoding: parts.purchaseInfo, as: UTF8.self).replacing("\"purchase-date", with: "\"purchase-time")
                .utf8
        )
        #expect(try changed.read().signature.failure == F.badSignature)
        let unsigned = try TestReceipts.signedTransaction(purchased: nil)
        let r = try ReceiptReader.read(unsigned, trust: TestReceipts.withTestChains)
        #expect(!r.signature.valid && r.signature.failure == F.noPurchaseDate && r.signature.judgedAt == nil)
    }

    @Test func applesSignatureOnAnotherReceiptFails() throws {
        // The made-up receipt naming someone's transaction id, with a real signature spliced on.
        var parts = try Self.parts("revenuecat-legacy-transaction-receipt-sandbox-2015")
        parts.purchaseInfo = ReceiptBuilder.purchaseInfo(TestReceipts.purchaseFields())
        let r = try parts.read()
        #expect(!r.signature.valid && r.signature.failure == F.badSignature)
        #expect(r.signature.signer == "PurchaseReceiptCertificate", "the certificate is Apple's; the signature is not")
    }

    @Test func withoutAnySignatureItIsUnsigned() throws {
        var parts = try Self.parts("revenuecat-legacy-transaction-receipt-sandbox-2015")
        parts.blob = nil
        #expect(try parts.read().signature == ReceiptSignature(valid: false, failure: F.unsigned))
        parts.blob = []
        #expect(try parts.read().signature == ReceiptSignature(valid: false, failure: F.unsigned), "empty")
    }

    @Test func aSignatureThatIsNoBase64IsMalformed() throws {
        let info = ReceiptBuilder.base64(ReceiptBuilder.purchaseInfo(TestReceipts.purchaseFields()))
        let plist = "{ \"signature\" = \"not base64!\"; \"purchase-info\" = \"\(info)\"; }"
        let r = try ReceiptReader.read(Array(ReceiptBuilder.base64(Array(plist.utf8)).utf8), trust: TestReceipts.apple)
        #expect(r.format == .transactionReceipt && r.signature.failure == F.malformedSignature)
    }

    @Test func theEnvironmentIsNotSignedAndOnlyRoutes() throws {
        // Apple signed `purchase-info` alone: the sandbox receipt reads as production without its `environment`,
        // still Apple's (the gateway then looks its transaction up in production, where it does not exist).
        var parts = try Self.parts("revenuecat-legacy-transaction-receipt-sandbox-2015")
        parts.environment = nil
        let r = try parts.read()
        #expect(r.signature.valid && !r.isSandbox)
    }

    // MARK: Test chains

    @Test(
        arguments: [(TestReceipts.iTunes, "sha1", 2), (TestReceipts.pki, "sha1", 3)]
            as [(GeneratedReceiptPKI, String, Int)]
    )
    func aSandboxReceiptOfATestChainIsAuthenticatedWithItsRootAndIntermediate(
        _ pki: GeneratedReceiptPKI,
        _ digest: String,
        _ version: Int
    ) throws {
        let text = try TestReceipts.signedTransaction(by: pki)
        #expect(try Parts(text).blob?.first == UInt8(version))
        let r = try ReceiptReader.read(text, trust: TestReceipts.withTestChains)
        #expect(
            r.signature
                == ReceiptSignature(
                    valid: true,
                    signer: pki.leaf.commonName,
                    digest: digest,
                    judgedAt: TestReceipts.june2025,
                    root: "extra"
                )
        )
        #expect(r.format == .transactionReceipt && r.isSandbox)
        #expect(r.transaction?.purchaseInfo == TestReceipts.purchaseFields(), "what was built reads back")
        #expect(r.lookupTransactionID == "2000000000000001")
        // Without the intermediate the leaf has no issuer; without the root, no anchor.
        let noIntermediate = ReceiptTrust(extraSandboxRoots: [pki.root.der])
        #expect(try ReceiptReader.read(text, trust: noIntermediate).signature.failure == F.untrustedRoot)
        let noRoot = ReceiptTrust(extraIntermediates: [pki.intermediate.der])
        #expect(try ReceiptReader.read(text, trust: noRoot).signature.failure == F.untrustedRoot)
        #expect(try ReceiptReader.read(text, trust: TestReceipts.apple).signature.failure == F.untrustedRoot)
    }

    @Test(arguments: [String?.none, "Production", "sandbox"])
    func aProductionReceiptOfATestChainIsNot(_ environment: String?) throws {
        let text = try TestReceipts.signedTransaction(environment: environment)
        let r = try ReceiptReader.read(text, trust: TestReceipts.withTestChains)
        #expect(!r.isSandbox && !r.signature.valid)
        #expect(r.signature.failure == F.sandboxOnlyRoot && r.signature.root == "extra")
        // A root pinned as Apple's (tests only) vouches for it.
        let pinned = ReceiptTrust(
            pinnedRoots: [TestReceipts.iTunes.root.der],
            extraIntermediates: [TestReceipts.iTunes.intermediate.der]
        )
        let p = try ReceiptReader.read(text, trust: pinned)
        #expect(p.signature.valid && p.signature.root == "apple")
    }

    @Test(arguments: [TestReceipts.notBefore * 1000 - 1, TestReceipts.notAfter * 1000, 0, -1, Int64.min])
    func aPurchaseDateOutsideTheLeafsValidityIsRefused(_ purchased: Int64) throws {
        let r = try ReceiptReader.read(
            try TestReceipts.signedTransaction(purchased: purchased),
            trust: TestReceipts.withTestChains
        )
        #expect(!r.signature.valid && r.signature.failure == F.certificateExpired && r.signature.judgedAt == purchased)
    }

    @Test func theValidityIsJudgedToTheSecondAsOpenSSLDoes() throws {
        // notBefore ..< notAfter: the first second is in, the second of notAfter is out.
        for purchased in [TestReceipts.notBefore * 1000, TestReceipts.notAfter * 1000 - 1] {
            let text = try TestReceipts.signedTransaction(purchased: purchased)
            let r = try ReceiptReader.read(text, trust: TestReceipts.withTestChains)
            #expect(r.signature.valid, "\(purchased): \(r.signature.failure ?? "-")")
        }
    }

    @Test func aLookAlikeOfApplesChainIsRefused() throws {
        // Apple's subject names and marker OIDs, keys of its own: its leaf names Apple's iTunes Store CA as issuer
        // and was not issued by it; trusted as a test chain it is still sandbox-only and never "apple".
        let lookAlike = TestReceipts.iTunesLookAlike
        for environment in ["Sandbox", nil] as [String?] {
            let text = try TestReceipts.signedTransaction(environment: environment, by: lookAlike)
            let r = try ReceiptReader.read(text, trust: TestReceipts.apple)
            #expect(!r.signature.valid && r.signature.root == nil, "\(String(describing: environment))")
            #expect(r.signature.failure == F.invalidCertificate || r.signature.failure == F.untrustedRoot)
            #expect(r.signature.signer == "PurchaseReceiptCertificate", "it claims Apple's name")
            let withItsRoot = ReceiptTrust(extraSandboxRoots: [lookAlike.root.der])
            #expect(!(try ReceiptReader.read(text, trust: withItsRoot)).signature.valid)
        }
        // Its leaf's subject is byte for byte the real one's.
        let real = try #require(try Self.parts("revenuecat-legacy-transaction-receipt-sandbox-2015").blob)
        #expect(try TransactionReceiptSignature.parse(real).leaf.subject == lookAlike.leaf.subject)
    }

    @Test func aLookAlikeOfApplesVersion3ChainIsRefused() throws {
        let text = try TestReceipts.signedTransaction(environment: nil, by: TestReceipts.lookAlike)
        let r = try ReceiptReader.read(text, trust: TestReceipts.apple)
        #expect(!r.signature.valid && r.signature.root == nil)
        #expect(r.signature.signer == "Mac App Store and iTunes Store Receipt Signing")
    }

    @Test func aLeafNotIssuedByTheITunesStoreCAIsRefused() throws {
        // A version-2 leaf issued by the intermediate of the app receipts' profile (marker 6.2.1, not 6.2.2).
        let wrongIssuer = TestReceipts.generate(
            .test("iap-gateway Test Wrong Issuer"),
            profile: .iTunesStore,
            intermediateMarker: false
        )
        let trust = ReceiptTrust(
            extraSandboxRoots: [wrongIssuer.root.der],
            extraIntermediates: [wrongIssuer.intermediate.der]
        )
        let r = try ReceiptReader.read(try TestReceipts.signedTransaction(by: wrongIssuer), trust: trust)
        #expect(!r.signature.valid && r.signature.failure == F.missingAppleMarker)
        // A leaf of the test chain read with Apple's intermediates only: none issued it.
        let apple = try ReceiptReader.read(try TestReceipts.signedTransaction(), trust: TestReceipts.apple)
        #expect(!apple.signature.valid && apple.signature.failure == F.untrustedRoot)
    }

    @Test func aLeafWithoutItsMarkerIsRefused() throws {
        let noMarker = TestReceipts.generate(
            .test("iap-gateway Test No PRC Marker"),
            profile: .iTunesStore,
            leafMarker: false
        )
        let trust = ReceiptTrust(
            extraSandboxRoots: [noMarker.root.der],
            extraIntermediates: [noMarker.intermediate.der]
        )
        let r = try ReceiptReader.read(try TestReceipts.signedTransaction(by: noMarker), trust: trust)
        #expect(!r.signature.valid && r.signature.failure == F.missingAppleMarker)
    }

    @Test func aKeyOfAnotherSizeThanTheVersionsIsRefused() throws {
        // A version-2 blob (128-byte signature) around a 2048-bit leaf, and a version-3 one around a 1024-bit leaf.
        let info = ReceiptBuilder.purchaseInfo(TestReceipts.purchaseFields())
        for (version, pki) in [(UInt8(2), TestReceipts.pki), (3, TestReceipts.iTunes)] {
            let length = version == 2 ? 128 : 256
            let blob = TransactionReceiptSignature.encode(
                version: version,
                signature: [UInt8](repeating: 0x5A, count: length),
                leaf: pki.leaf.der
            )
            let plist = ReceiptBuilder.transactionReceipt(purchaseInfo: info, signature: blob, environment: "Sandbox")
            let r = try ReceiptReader.read(Array(ReceiptBuilder.base64(plist).utf8), trust: TestReceipts.withTestChains)
            #expect(!r.signature.valid && r.signature.failure == F.unsupportedAlgorithm, "version \(version)")
        }
    }

    @Test func theBuilderRefusesAKeyThatIsNotTheLeafs() throws {
        let info = ReceiptBuilder.purchaseInfo(TestReceipts.purchaseFields())
        for (key, leaf) in [
            (TestReceipts.pki.leafKey, TestReceipts.iTunes.leaf), (TestReceipts.iTunes.leafKey, TestReceipts.pki.leaf),
        ] {
            #expect(throws: ReceiptError(.cannotBuild, "")) {
                try ReceiptBuilder.transactionSignature(purchaseInfo: info, leafKey: key, leaf: leaf)
            }
        }
    }
}
