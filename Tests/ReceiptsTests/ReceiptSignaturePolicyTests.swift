import Crypto
import Receipts
import TestPKI
import TestSupport
import Testing

/// The signature policy (docs/architecture.md, "The receipt reader"): verified, never trusted. Receipts are built and
/// signed at run time with RSA test PKIs (``TestReceipts``); the chain is judged at each receipt's creation date.
@Suite struct ReceiptSignaturePolicyTests {
    typealias F = ReceiptSignature.Failure

    static func read(_ text: [UInt8], trust: ReceiptTrust = TestReceipts.withTestRoot) throws -> DecodedReceipt {
        try ReceiptReader.read(text, trust: trust)
    }

    // MARK: Extra roots vouch for sandbox receipts only

    @Test(arguments: [CMSDigest.sha256, .sha1])
    func aSandboxReceiptUnderAnExtraRootIsAuthenticated(_ digest: CMSDigest) throws {
        let r = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt(), digest: digest))
        #expect(
            r.signature
                == ReceiptSignature(
                    valid: true,
                    signer: "iap-gateway Test Receipt Signing",
                    digest: digest.rawValue,
                    judgedAt: TestReceipts.june2025,
                    root: "extra"
                )
        )
        #expect(r.format == .appReceipt && r.isSandbox)
        #expect(r.lookupTransactionID == "2000000000000001")
        #expect(r.app == TestReceipts.sandboxReceipt(), "what was built reads back")
    }

    @Test(arguments: ["ProductionSandbox", "ProductionVPPSandbox"])
    func everySandboxTypeCounts(_ type: String) throws {
        let r = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt(type: type)))
        #expect(r.signature.valid && r.isSandbox && r.signature.root == "extra")
    }

    @Test(arguments: [String?.some("Production"), "ProductionVPP", "Sandbox-ish", "", nil])
    func aProductionReceiptUnderAnExtraRootIsNot(_ type: String?) throws {
        var receipt = TestReceipts.sandboxReceipt()
        receipt.receiptType = type
        let r = try Self.read(try TestReceipts.signed(receipt))
        #expect(!r.isSandbox)
        #expect(!r.signature.valid)
        #expect(r.signature.failure == F.sandboxOnlyRoot && r.signature.root == "extra")
    }

    @Test func aRootPinnedAsApplesVouchesForProduction() throws {
        var receipt = TestReceipts.sandboxReceipt()
        receipt.receiptType = "Production"
        let trust = ReceiptTrust(pinnedRoots: [TestReceipts.pki.root.der])
        let r = try Self.read(try TestReceipts.signed(receipt), trust: trust)
        #expect(r.signature.valid && r.signature.root == "apple" && !r.isSandbox)
    }

    @Test func withoutTheExtraRootNothingIsTrusted() throws {
        let r = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt()), trust: TestReceipts.apple)
        #expect(!r.signature.valid && r.signature.failure == F.untrustedRoot && r.signature.root == nil)
    }

    // MARK: Look-alikes

    @Test(arguments: ["ProductionSandbox", "Production"])
    func aLookAlikeOfApplesChainIsRefused(_ type: String) throws {
        // Apple's subject names, Apple's marker OIDs, keys of its own: it names Apple Root CA as issuer and is not
        // issued by it.
        let text = try TestReceipts.signed(TestReceipts.sandboxReceipt(type: type), by: TestReceipts.lookAlike)
        for trust in [TestReceipts.apple, TestReceipts.withTestRoot] {
            let r = try Self.read(text, trust: trust)
            #expect(!r.signature.valid, "\(type)")
            #expect(r.signature.failure == F.untrustedRoot, "\(type): \(String(describing: r.signature.failure))")
            #expect(r.signature.signer == "Mac App Store and iTunes Store Receipt Signing", "it claims Apple's name")
            #expect(r.signature.root == nil)
        }
    }

    @Test func aLookAlikeRootNeverPassesForApples() throws {
        // Even pinned as an extra root, the look-alike root vouches for sandbox only and is reported as extra.
        let trust = ReceiptTrust(extraSandboxRoots: [TestReceipts.lookAlike.root.der])
        let production = try Self.read(
            try TestReceipts.signed(TestReceipts.sandboxReceipt(type: "Production"), by: TestReceipts.lookAlike),
            trust: trust
        )
        #expect(!production.signature.valid && production.signature.failure == F.sandboxOnlyRoot)
        let sandbox = try Self.read(
            try TestReceipts.signed(TestReceipts.sandboxReceipt(), by: TestReceipts.lookAlike),
            trust: trust
        )
        #expect(sandbox.signature.valid && sandbox.signature.root == "extra")
    }

    @Test func aLeafWithoutApplesMarkerIsRefused() throws {
        let pki = TestReceipts.noLeafMarker
        let r = try Self.read(
            try TestReceipts.signed(TestReceipts.sandboxReceipt(), by: pki),
            trust: ReceiptTrust(extraSandboxRoots: [pki.root.der])
        )
        #expect(!r.signature.valid && r.signature.failure == F.missingAppleMarker)
    }

    @Test func anIntermediateWithoutApplesMarkerIsRefused() throws {
        let pki = TestReceipts.noIntermediateMarker
        let r = try Self.read(
            try TestReceipts.signed(TestReceipts.sandboxReceipt(), by: pki),
            trust: ReceiptTrust(extraSandboxRoots: [pki.root.der])
        )
        #expect(!r.signature.valid && r.signature.failure == F.missingAppleMarker)
    }

    @Test func aChainWithoutItsIntermediateIsRefused() throws {
        let pki = TestReceipts.pki
        let der = try ReceiptBuilder.build(
            TestReceipts.sandboxReceipt(),
            leafKey: pki.leafKey,
            leaf: pki.leaf,
            chain: [pki.root]
        )
        let r = try ReceiptReader.read(decoded: der, trust: TestReceipts.withTestRoot)
        #expect(!r.signature.valid && r.signature.failure == F.untrustedRoot)
    }

    @Test func aStrayCertificateIsRefused() throws {
        let pki = TestReceipts.pki
        let der = try ReceiptBuilder.build(
            TestReceipts.sandboxReceipt(),
            leafKey: pki.leafKey,
            leaf: pki.leaf,
            chain: [pki.intermediate, pki.root, TestReceipts.lookAlike.root]
        )
        let r = try ReceiptReader.read(decoded: der, trust: TestReceipts.withTestRoot)
        #expect(!r.signature.valid && r.signature.failure == F.unexpectedCertificate)
        // Without the root embedded (it is the pinned one that counts) the receipt is fine.
        let bare = try ReceiptBuilder.build(
            TestReceipts.sandboxReceipt(),
            leafKey: pki.leafKey,
            leaf: pki.leaf,
            chain: [pki.intermediate]
        )
        #expect(try ReceiptReader.read(decoded: bare, trust: TestReceipts.withTestRoot).signature.valid)
    }

    // MARK: Time

    @Test func theChainIsJudgedAtTheCreationDate() throws {
        // 2041: after the test chain expired (2040). A receipt made then is not authenticated, whatever "now" is.
        let late = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt(created: 2_240_611_200_000)))
        #expect(!late.signature.valid && late.signature.failure == F.certificateExpired)
        #expect(late.signature.judgedAt == 2_240_611_200_000)
        // 2019: before it existed.
        let early = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt(created: 1_546_300_800_000)))
        #expect(!early.signature.valid && early.signature.failure == F.certificateExpired)
    }

    @Test func aReceiptWithoutACreationDateIsNotAuthenticated() throws {
        let r = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt(created: nil)))
        #expect(!r.signature.valid && r.signature.failure == F.noCreationDate && r.signature.judgedAt == nil)
    }

    // MARK: Xcode

    @Test func anXcodeTypedReceiptIsNeverAuthenticated() throws {
        let r = try Self.read(try TestReceipts.signed(TestReceipts.sandboxReceipt(type: "Xcode")))
        #expect(r.format == .xcode && !r.signature.valid && r.signature.failure == F.xcodeReceipt)
        #expect(r.lookupTransactionID == nil)
    }

    // MARK: Changed bytes

    /// Reading `der` either fails or gives an unauthenticated receipt.
    static func refused(_ der: [UInt8], trust: ReceiptTrust = TestReceipts.apple) -> Bool {
        guard let r = try? ReceiptReader.read(decoded: der, trust: trust) else { return true }
        return !r.signature.valid
    }

    /// Where `needle` sits in `haystack`.
    static func range(of needle: [UInt8], in haystack: [UInt8]) throws -> Range<Int> {
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return i..<(i + needle.count)
        }
        throw FixtureError(description: "not found")
    }

    @Test(arguments: ["tpinappreceipt-receipt-production-2024", "revenuecat-receiptsample1-sandbox-2020"])
    func aChangedByteInAnyPartIsRefused(_ name: String) throws {
        let der = try TestReceipts.der(name)
        #expect(!Self.refused(der), "the original is authenticated")
        let cms = try CMSSignedData(der: der)
        let content = try Self.range(of: cms.content, in: der)
        let regions: [(String, Range<Int>)] =
            [
                ("signed content", content),
                ("signature", (der.count - 256)..<der.count),
                ("envelope", 0..<content.lowerBound),
            ]
            + (try cms.certificates.enumerated().map {
                ("certificate \($0.offset)", try Self.range(of: $0.element.der, in: der))
            })
        for (region, range) in regions {
            // Every 5th byte of the region, two ways each: a low and a high bit.
            for i in stride(from: range.lowerBound, to: range.upperBound, by: 5) {
                for mask: UInt8 in [0x01, 0x80] {
                    var copy = der
                    copy[i] ^= mask
                    #expect(Self.refused(copy), "\(name): \(region), byte \(i) ^ \(mask)")
                }
            }
        }
    }

    @Test func aChangedByteInABuiltReceiptsContentIsRefusedReadably() throws {
        // The payload still reads (a letter of the bundle id changed): returned, not thrown, and not authenticated.
        let der = try ReceiptBuilder.build(TestReceipts.sandboxReceipt(), pki: TestReceipts.pki)
        let at = try Self.range(of: Array("com.example.gateway".utf8), in: der).lowerBound
        var copy = der
        copy[at] ^= 0x20  // "Com.example.gateway"
        let r = try ReceiptReader.read(decoded: copy, trust: TestReceipts.withTestRoot)
        #expect(r.app?.bundleID == "Com.example.gateway")
        #expect(!r.signature.valid && r.signature.failure == F.badSignature)
    }
}
