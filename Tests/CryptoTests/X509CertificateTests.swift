import Crypto
import Foundation
import TestSupport
import Testing

@Suite struct X509CertificateTests {
    static let leafMarker = "1.2.840.113635.100.6.11.1"
    static let intermediateMarker = "1.2.840.113635.100.6.2.1"

    /// Every certificate of the test PKI, by name without `.der`.
    static let names: [String] = {
        let items = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.url("test-pki").path())) ?? []
        return items.filter { $0.hasSuffix(".der") }.map { String($0.dropLast(4)) }.sorted()
    }()

    static func certificate(_ name: String) throws -> X509Certificate {
        try X509Certificate(der: try TestPKI.der(name))
    }

    /// A PEM built here from DER, 64 characters a line (RFC 7468).
    static func pem(fromDER der: [UInt8]) -> String {
        let body = Array(Base64.encode(der, alphabet: .standard).utf8)
        let lines = stride(from: 0, to: body.count, by: 64).map {
            String(decoding: body[$0..<min($0 + 64, body.count)], as: UTF8.self)
        }
        return "-----BEGIN CERTIFICATE-----\n" + lines.joined(separator: "\n") + "\n-----END CERTIFICATE-----\n"
    }

    static func invalidCertificate(_ der: [UInt8]) -> Bool {
        cryptoErrorCode { () throws(CryptoError) in _ = try X509Certificate(der: der) } == .invalidCertificate
    }

    @Test func theFixtureFolderHoldsTheWholeTestPKI() {
        #expect(Self.names.count == 14)
        #expect(Self.names.contains("root") && Self.names.contains("leaf") && Self.names.contains("intermediate"))
    }

    @Test(arguments: names)
    func parsesEveryFixtureCertificate(_ name: String) throws {
        let der = try TestPKI.der(name)
        let certificate = try X509Certificate(der: der)
        #expect(certificate.der == der)
        let serial = certificate.serialNumberHex
        #expect(!serial.isEmpty)
        #expect(serial.allSatisfy { "0123456789abcdef".contains($0) })
        let notBefore = try #require(certificate.notBefore)
        let notAfter = try #require(certificate.notAfter)
        #expect(notBefore < notAfter)
        #expect(certificate.subject.contains("CN=iap-gateway Test "))
        _ = try certificate.publicKey()
    }

    @Test(arguments: [
        ("root", "3aebdde1b805d371abb0e436b2a4bbfb"),
        ("intermediate", "2686c767376f267500efdef53b315445"),
        ("leaf", "4aeef8cf0b627b1605d7dcfe1e31ab2d"),
    ])
    func printsTheSerialNumberAsLowerCaseHex(_ name: String, _ serial: String) throws {
        #expect(try Self.certificate(name).serialNumberHex == serial)
    }

    /// Whole bytes, as `openssl x509 -serial` prints them: a first byte below 0x10 keeps its zero nibble
    /// (intermediate-not-ca: 05 19 18 4e …), so serials compare equal with OpenSSL's and Apple's tooling.
    @Test func printsTheSerialAsWholeBytes() throws {
        let serial = try Self.certificate("intermediate-not-ca").serialNumberHex
        #expect(serial == "0519184e442c134cb845b06b3fb2f903")
    }

    /// Validity per Fixtures/test-pki/README.md (seconds since the epoch, UTC).
    @Test(
        arguments: [
            ("root", 1_577_836_800, 2_366_841_600),  // 2020-01-01 → 2045-01-01
            ("other-root", 1_577_836_800, 2_366_841_600),
            ("intermediate", 1_577_836_800, 2_208_988_800),  // 2020-01-01 → 2040-01-01
            ("leaf", 1_704_067_200, 1_893_456_000),  // 2024-01-01 → 2030-01-01
            ("leaf-expired", 1_577_836_800, 1_609_459_200),  // 2020-01-01 → 2021-01-01
        ] as [(String, Int64, Int64)]
    )
    func readsTheExactValidityPeriod(_ name: String, _ notBefore: Int64, _ notAfter: Int64) throws {
        let certificate = try Self.certificate(name)
        #expect(certificate.notBefore == notBefore)
        #expect(certificate.notAfter == notAfter)
    }

    @Test(arguments: [
        ("root", true), ("intermediate", true), ("other-root", true), ("other-intermediate", true),
        ("intermediate-no-marker", true), ("leaf-ca", true),
        ("leaf", false), ("other-leaf", false), ("leaf-expired", false), ("leaf-no-marker", false),
        ("leaf-p384", false),
        ("intermediate-not-ca", false),
    ])
    func readsTheCAFlagFromBasicConstraints(_ name: String, _ isCA: Bool) throws {
        #expect(try Self.certificate(name).isCA == isCA)
    }

    @Test(arguments: [
        ("leaf", true), ("leaf-expired", true), ("leaf-p384", true), ("leaf-ca", true), ("other-leaf", true),
        ("leaf-no-marker", false), ("intermediate", false), ("root", false),
    ])
    func findsTheLeafMarkerExtension(_ name: String, _ present: Bool) throws {
        #expect(try Self.certificate(name).hasExtension(oid: Self.leafMarker) == present)
    }

    @Test(arguments: [
        ("intermediate", true), ("intermediate-not-ca", true), ("other-intermediate", true),
        ("intermediate-no-marker", false), ("leaf", false), ("root", false),
    ])
    func findsTheIntermediateMarkerExtension(_ name: String, _ present: Bool) throws {
        #expect(try Self.certificate(name).hasExtension(oid: Self.intermediateMarker) == present)
    }

    @Test func findsStandardExtensionsAndNotMalformedOIDs() throws {
        let leaf = try Self.certificate("leaf")
        #expect(leaf.hasExtension(oid: "2.5.29.19"))  // basicConstraints
        #expect(leaf.hasExtension(oid: "2.5.29.15"))  // keyUsage
        #expect(!leaf.hasExtension(oid: "2.5.29.17"))  // subjectAltName: absent
        #expect(!leaf.hasExtension(oid: ""))
        #expect(!leaf.hasExtension(oid: "not an oid"))
        #expect(!leaf.hasExtension(oid: "1.2.840.113635.100.6.11"))  // a prefix of the marker is another OID
    }

    @Test(arguments: [
        ("root", "C=US,O=iap-gateway,OU=iap-gateway test PKI (not Apple),CN=iap-gateway Test Root CA"),
        ("intermediate", "C=US,O=iap-gateway,OU=iap-gateway test PKI (not Apple),CN=iap-gateway Test WWDR CA"),
        ("leaf", "C=US,O=iap-gateway,OU=iap-gateway test PKI (not Apple),CN=iap-gateway Test Receipt Signing"),
    ])
    func printsTheSubjectAsOneRFC2253Line(_ name: String, _ subject: String) throws {
        let printed = try Self.certificate(name).subject
        #expect(printed == subject)
        #expect(printed.contains("CN=" + subject.split(separator: "=").last.map(String.init)!))
    }

    @Test func lookAlikesShareTheSubjectButNotTheKey() throws {
        let leaf = try Self.certificate("leaf")
        let other = try Self.certificate("other-leaf")
        #expect(leaf.subject == other.subject)
        #expect(leaf.serialNumberHex != other.serialNumberHex)
        #expect(try leaf.publicKey().subjectPublicKeyInfo != other.publicKey().subjectPublicKeyInfo)
    }

    // MARK: rejection

    @Test func rejectsGarbageBytes() {
        var rng = LCG(seed: 5)
        #expect(Self.invalidCertificate([]))
        #expect(Self.invalidCertificate([0x30]))
        #expect(Self.invalidCertificate([0x30, 0x00]))
        #expect(Self.invalidCertificate(rng.bytes(600)))
        #expect(Self.invalidCertificate(Array("-----BEGIN CERTIFICATE-----".utf8)))
    }

    @Test(arguments: [[0x00], [0x30, 0x00], [0xFF]] as [[UInt8]])
    func rejectsAValidCertificateFollowedByTrailingBytes(_ trailing: [UInt8]) throws {
        let der = try TestPKI.der("leaf")
        #expect(!Self.invalidCertificate(der))
        #expect(Self.invalidCertificate(der + trailing))
    }

    @Test(arguments: [1, 2, 100])
    func rejectsATruncatedCertificate(_ dropped: Int) throws {
        let der = try TestPKI.der("leaf")
        #expect(Self.invalidCertificate(Array(der.dropLast(dropped))))
    }

    @Test func rejectsACertificateWithItsOuterLengthAltered() throws {
        var der = try TestPKI.der("leaf")
        // 30 82 hh ll: grow the declared length by one.
        #expect(der[0] == 0x30 && der[1] == 0x82)
        der[3] &+= 1
        #expect(Self.invalidCertificate(der))
    }

    // MARK: PEM

    @Test(arguments: ["root", "intermediate", "leaf"])
    func readsAPEMBuiltFromTheDER(_ name: String) throws {
        let der = try TestPKI.der(name)
        let pem = Self.pem(fromDER: der)
        #expect(pem.split(separator: "\n").dropFirst().dropLast().dropLast().allSatisfy { $0.count == 64 })
        let certificate = try X509Certificate(pem: pem)
        #expect(certificate.der == der)
        #expect(certificate.serialNumberHex == (try X509Certificate(der: der)).serialNumberHex)
    }

    @Test func readsTheFirstCertificateOfAPEMBundle() throws {
        let pem = Self.pem(fromDER: try TestPKI.der("leaf")) + Self.pem(fromDER: try TestPKI.der("intermediate"))
        #expect(try X509Certificate(pem: pem).der == (try TestPKI.der("leaf")))
    }

    @Test(arguments: ["", "garbage", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"])
    func rejectsAPEMWithoutACertificate(_ pem: String) {
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try X509Certificate(pem: pem) } == .invalidCertificate)
    }
}
