import Crypto
import TestPKI
import TestSupport
import Testing

/// CMS SignedData (PKCS#7): reading Apple's real receipts (DER) and Xcode's (BER), proving their signatures, and
/// signing look-alikes with an RSA test PKI — the primitives the receipt reader's policy stands on.
@Suite struct CMSSignedDataTests {
    /// 2020-01-01 → 2040-01-01 (seconds): the generated PKIs' validity.
    static let notBefore: Int64 = 1_577_836_800
    static let notAfter: Int64 = 2_208_988_800
    /// 2025-06-01T00:00:00Z (seconds).
    static let june2025: Int64 = 1_748_736_000

    static let leafName = "Mac App Store and iTunes Store Receipt Signing"

    /// The DER of a fixture receipt (`Fixtures/receipts/<name>.b64`).
    static func receipt(_ name: String) throws -> [UInt8] {
        try Base64.decode(try Fixtures.bytes("receipts/\(name).b64"), alphabet: .standard)
    }

    /// One RSA PKI for the suite (RSA key generation is slow), with the test names.
    static let pki: GeneratedReceiptPKI = {
        do { return try GeneratedReceiptPKI.generate(notBefore: notBefore, notAfter: notAfter) } catch {
            fatalError("test PKI: \(error)")
        }
    }()

    static let payload: [UInt8] = [0x31, 0x0A, 0x30, 0x08, 0x02, 0x01, 0x02, 0x02, 0x01, 0x01, 0x04, 0x00]

    /// The index of `needle` in `haystack` (first occurrence).
    static func index(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return i
        }
        return nil
    }

    // MARK: Apple's receipts

    @Test(arguments: [
        ("revenuecat-receiptsample1-sandbox-2020", CMSDigest.sha1),
        ("tpinappreceipt-receipt-production-2024", CMSDigest.sha256),
    ])
    func applesReceiptsParseAndTheirSignaturesVerify(_ name: String, _ digest: CMSDigest) throws {
        let cms = try CMSSignedData(der: try Self.receipt(name))
        #expect(cms.content.first == 0x31, "the payload is a SET")
        #expect(cms.certificates.count == 3)
        #expect(cms.signerCount == 1)
        let signer = try cms.verifySignature()
        #expect(signer.digest == digest)
        #expect(signer.keyBits == 2048)
        #expect(signer.certificate.commonName == Self.leafName)
        #expect(signer.certificate === cms.certificates[0], "the leaf comes first")
        #expect(cms.certificates[2].commonName == "Apple Root CA" && cms.certificates[2].isSelfIssued)
        #expect(cms.certificates[0].isIssued(byName: cms.certificates[1]))
        #expect(cms.certificates[1].isIssued(byName: cms.certificates[2]))
        #expect(!cms.certificates[0].isIssued(byName: cms.certificates[2]))
        // Each embedded certificate is held as its exact encoding.
        for c in cms.certificates { #expect(try X509Certificate(der: c.der).der == c.der) }
        let root = try Fixtures.bytes("receipts/AppleIncRootCertificate.cer")
        #expect(cms.certificates[2].der == root, "Apple Inc. Root, byte for byte")
    }

    @Test func applesChainValidatesAtTheCreationDateOnly() throws {
        let cms = try CMSSignedData(der: try Self.receipt("revenuecat-receiptsample1-sandbox-2020"))
        let root = try X509Certificate(der: try Fixtures.bytes("receipts/AppleIncRootCertificate.cer"))
        let store = try X509TrustStore(anchor: root)
        // 2020-07-22T17:39:08Z, the receipt's attribute 12; its leaf expired in 2023.
        try store.validate(leaf: cms.certificates[0], intermediates: [cms.certificates[1]], at: 1_595_439_548)
        #expect(throws: X509PathFailure.self) {
            try store.validate(leaf: cms.certificates[0], intermediates: [cms.certificates[1]], at: Self.june2025)
        }
    }

    @Test(arguments: ["apple-xcode-app-receipt-empty", "apple-xcode-app-receipt-with-transaction"])
    func xcodeReceiptsInBERParse(_ name: String) throws {
        let der = try Self.receipt(name)
        #expect(der[1] == 0x80, "indefinite length")
        let cms = try CMSSignedData(der: der)
        // The constructed OCTET STRING around the payload comes out as one string.
        #expect(cms.content.first == 0x31)
        #expect(cms.certificates.count == 1)
        let signer = try cms.verifySignature()
        #expect(signer.certificate.commonName == "StoreKit" && signer.certificate.isSelfIssued)
        #expect(signer.digest == .sha256)
    }

    // MARK: Signing

    @Test(arguments: [CMSDigest.sha1, .sha256])
    func aSignedReceiptVerifiesAndChainsToItsRoot(_ digest: CMSDigest) throws {
        let der = try Self.pki.sign(Self.payload, digest: digest)
        #expect(der[0] == 0x30 && der[1] != 0x80, "DER, definite lengths")
        let cms = try CMSSignedData(der: der)
        #expect(cms.content == Self.payload, "the content")
        // DER sorts the certificates SET by encoding: the three are there, in whatever order that gives.
        let embedded = Set(cms.certificates.map(\.der))
        #expect(embedded == Set([Self.pki.leaf.der, Self.pki.intermediate.der, Self.pki.root.der]), "the chain")
        let signer = try cms.verifySignature()
        #expect(signer.digest == digest && signer.keyBits == 2048)
        #expect(signer.certificate.der == Self.pki.leaf.der, "the leaf signed")
        try X509TrustStore(anchor: Self.pki.root).validate(
            leaf: signer.certificate,
            intermediates: [cms.certificates[1]],
            at: Self.june2025
        )
        #expect(Self.pki.leaf.hasExtension(oid: GeneratedReceiptPKI.leafMarkerOID))
        #expect(Self.pki.intermediate.hasExtension(oid: GeneratedReceiptPKI.intermediateMarkerOID))
    }

    @Test func anEmptyContentSigns() throws {
        let cms = try CMSSignedData(der: try Self.pki.sign([]))
        #expect(cms.content.isEmpty)
        _ = try cms.verifySignature()
    }

    @Test func aChangedContentByteFailsTheSignature() throws {
        var der = try Self.pki.sign(Self.payload)
        let at = try #require(Self.index(of: Self.payload, in: der))
        der[at + 6] ^= 0x01
        let cms = try CMSSignedData(der: der)
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try cms.verifySignature() } == .badSignature)
    }

    @Test func aChangedSignatureByteFailsTheSignature() throws {
        var der = try Self.pki.sign(Self.payload)
        der[der.count - 10] ^= 0x40  // inside the 256-byte RSA signature, the last field
        let cms = try CMSSignedData(der: der)
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try cms.verifySignature() } == .badSignature)
    }

    @Test func anECDSASignerIsOutsideTheProfile() throws {
        let ec = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter)
        let der = try CMSSignedData.sign(
            content: Self.payload,
            signer: ec.leaf,
            key: ec.leafKey,
            chain: [ec.intermediate],
            digest: .sha256
        )
        let cms = try CMSSignedData(der: der)
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try cms.verifySignature() } == .unsupportedAlgorithm)
    }

    @Test func signingWithAKeyOfAnotherCertificateIsRefused() {
        #expect(
            cryptoErrorCode { () throws(CryptoError) in
                _ = try CMSSignedData.sign(
                    content: Self.payload,
                    signer: Self.pki.leaf,
                    key: Self.pki.rootKey,
                    chain: [],
                    digest: .sha256
                )
            } == .invalidKey
        )
    }

    // MARK: Hostile input

    @Test func bytesThatAreNoSignedDataAreRefused() throws {
        let signed = try Self.pki.sign(Self.payload)
        var lcg = LCG(seed: 7)
        let cases: [[UInt8]] = [
            [], [0x30], [0x30, 0x00], [0x30, 0x80, 0x00, 0x00], lcg.bytes(500), Self.pki.leaf.der,
            Array(signed.dropLast()), signed + [0x00], Array(signed.prefix(signed.count / 2)),
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF] + Array(signed.dropFirst(4)),
        ]
        for bytes in cases {
            #expect(
                cryptoErrorCode { () throws(CryptoError) in _ = try CMSSignedData(der: bytes) } == .invalidCMS,
                "\(bytes.prefix(8))"
            )
        }
    }

    @Test func everyTruncationIsRefusedOrFailsCleanly() throws {
        let signed = try Self.pki.sign(Self.payload)
        for n in stride(from: 0, to: signed.count, by: 7) {
            #expect(
                cryptoErrorCode { () throws(CryptoError) in _ = try CMSSignedData(der: Array(signed.prefix(n))) }
                    == .invalidCMS
            )
        }
    }

    // MARK: Keys and names

    @Test func rsaKeysHaveTheirSize() throws {
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try PrivateKey.generateRSA(bits: 768) } == .invalidArgument
        )
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try PrivateKey.generateRSA(bits: 16_384) }
                == .invalidArgument
        )
        // 1024 bits: the leaf of version-2 iOS 6 transaction receipts.
        #expect(try PrivateKey.generateRSA(bits: 1024).publicKey.rsaBits == 1024)
        let ec = try PrivateKey.generateP256()
        #expect(Self.pki.leafKey.isRSA && !ec.isRSA)
    }

    @Test func theLookAlikeNamesAreApplesOwn() throws {
        let apple = try CMSSignedData(der: try Self.receipt("tpinappreceipt-receipt-production-2024")).certificates
        let names = GeneratedReceiptPKI.Names.appleLookAlike
        func subject(_ s: CertificateSubject) throws -> String {
            try CertificateBuilder.make(
                subject: s,
                issuer: nil,
                key: try PrivateKey.generateP256(),
                notBefore: Self.notBefore,
                notAfter: Self.notAfter,
                isCA: true,
                signatureDigest: .sha256
            ).subject
        }
        #expect(try subject(names.leaf) == apple[0].subject)
        #expect(try subject(names.intermediate) == apple[1].subject)
        #expect(try subject(names.root) == apple[2].subject)
        #expect(apple[0].commonName == Self.leafName && apple[2].commonName == "Apple Root CA")
    }

    @Test func theITunesStoreLookAlikeNamesAreApplesOwn() throws {
        let names = GeneratedReceiptPKI.Names.appleITunesStoreLookAlike
        let pki = try GeneratedReceiptPKI.generate(
            notBefore: Self.notBefore,
            notAfter: Self.notAfter,
            names: names,
            profile: .iTunesStore
        )
        let ca = try X509Certificate(der: try Fixtures.bytes("receipts/AppleITunesStoreCertificationAuthority.cer"))
        let root = try X509Certificate(der: try Fixtures.bytes("receipts/AppleIncRootCertificate.cer"))
        #expect(pki.intermediate.subject == ca.subject && pki.root.subject == root.subject)
        #expect(pki.leaf.subject == "C=US,O=Apple Inc.,OU=Apple iTunes Store,CN=PurchaseReceiptCertificate")
        // The profile: a 1024-bit leaf, Apple's markers of the iTunes Store chain.
        #expect(try pki.leaf.publicKey().rsaBits == 1024 && pki.leafKey.isRSA)
        #expect(
            pki.leaf.hasExtension(oid: "1.2.840.113635.100.6.5.1")
                && !pki.leaf.hasExtension(oid: "1.2.840.113635.100.6.11.1")
        )
        #expect(
            pki.intermediate.hasExtension(oid: "1.2.840.113635.100.6.2.2")
                && ca.hasExtension(oid: "1.2.840.113635.100.6.2.2")
        )
    }

    @Test func certificatesSignWithSHA256WhenAsked() throws {
        // sha256WithRSAEncryption, 1.2.840.113549.1.1.11.
        let oid: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B]
        #expect(Self.index(of: oid, in: Self.pki.leaf.der) != nil)
        #expect(Self.index(of: oid, in: Self.pki.root.der) != nil)
    }
}
