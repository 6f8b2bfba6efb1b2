import Crypto
import Receipts
import TestSupport
import Testing

/// The roots: Apple Inc. Root embedded byte for byte, extra roots checked.
@Suite struct ReceiptTrustTests {
    @Test func theEmbeddedRootIsApplesPublishedOne() throws {
        let file = try Fixtures.bytes("receipts/AppleIncRootCertificate.cer")
        #expect(ReceiptTrust.appleIncRootDER == file, "byte for byte")
        #expect(
            SHA256.hex(ReceiptTrust.appleIncRootDER)
                == "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"
        )
        let root = try X509Certificate(der: ReceiptTrust.appleIncRootDER)
        #expect(root.commonName == "Apple Root CA" && root.isSelfIssued && root.isCA)
        #expect(ReceiptTrust().rootCertificates.map(\.isApple) == [true])
    }

    @Test func unusableExtraRootsAreNamed() {
        let trust = ReceiptTrust(extraSandboxRoots: [[0x30, 0x00], TestReceipts.pki.root.der, Array("PEM".utf8)])
        #expect(trust.unusableExtraRoots == [0, 2])
        #expect(trust.rootCertificates.map(\.isApple) == [true, false])
        // Apple's root listed again as extra changes nothing.
        #expect(ReceiptTrust(extraSandboxRoots: [ReceiptTrust.appleIncRootDER]).rootCertificates.count == 1)
    }
}
