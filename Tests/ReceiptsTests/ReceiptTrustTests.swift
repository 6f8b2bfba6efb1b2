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

    @Test func theEmbeddedTransactionIntermediatesAreApplesPublishedOnes() throws {
        let intermediates = ReceiptTrust.appleTransactionIntermediatesDER
        #expect(
            intermediates.map { SHA256.hex($0) } == [
                "447ad65484610f20fdc33804c8597a1e208fbe4ef9c5653485cc7d3df730c016",
                "ce057691d730f89ca25e916f7335f4c8a15713dcd273a658c024023f8eb809c2",
                "53fd008278e5a595fe1e908ae9c5e5675f26243264a5a6438c023e3ce2870760",
            ]
        )
        // Byte for byte: the iTunes Store CA as Apple published it; the WWDR CAs as Apple's own receipts embed them.
        #expect(intermediates[0] == (try Fixtures.bytes("receipts/AppleITunesStoreCertificationAuthority.cer")))
        #expect(try CMSCertificates.of("revenuecat-receiptsample1-sandbox-2020").contains(intermediates[1]))
        #expect(try CMSCertificates.of("tpinappreceipt-receipt-production-2024").contains(intermediates[2]))
        // Each is a CA issued by Apple Inc. Root, with its marker, and validates to it within its validity.
        let root = try X509Certificate(der: ReceiptTrust.appleIncRootDER)
        let store = try X509TrustStore(anchor: root)
        let expected: [(String, String, Int64)] = [
            ("Apple iTunes Store Certification Authority", "1.2.840.113635.100.6.2.2", 1_447_821_281),
            ("Apple Worldwide Developer Relations Certification Authority", "1.2.840.113635.100.6.2.1", 1_574_617_369),
            ("Apple Worldwide Developer Relations Certification Authority", "1.2.840.113635.100.6.2.1", 1_708_709_236),
        ]
        for (der, (name, marker, at)) in zip(intermediates, expected) {
            let c = try X509Certificate(der: der)
            #expect(c.commonName == name && c.isCA && c.isIssued(byName: root) && c.hasExtension(oid: marker))
            #expect(throws: Never.self) { try store.validate(leaf: c, intermediates: [], at: at) }
        }
    }

    @Test func unusableExtraRootsAreNamed() {
        let trust = ReceiptTrust(extraSandboxRoots: [[0x30, 0x00], TestReceipts.pki.root.der, Array("PEM".utf8)])
        #expect(trust.unusableExtraRoots == [0, 2])
        #expect(trust.rootCertificates.map(\.isApple) == [true, false])
        // Apple's root listed again as extra changes nothing.
        #expect(ReceiptTrust(extraSandboxRoots: [ReceiptTrust.appleIncRootDER]).rootCertificates.count == 1)
    }
}
