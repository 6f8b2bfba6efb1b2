import Crypto
import TestPKI
import TestSupport
import Testing

/// Certificates built with OpenSSL at run time must have the profile of Apple's chain and of the committed
/// Python-generated `Fixtures/test-pki`, and must validate (or not) exactly like them.
@Suite struct CertificateBuilderTests {
    /// 2024-01-01T00:00:00Z and 2030-01-01T00:00:00Z, the fixture leaf's window.
    static let notBefore: Int64 = 1_704_067_200
    static let notAfter: Int64 = 1_893_456_000
    /// 2025-06-01T00:00:00Z, inside the window.
    static let june2025: Int64 = 1_748_736_000

    static let leafMarker = "1.2.840.113635.100.6.11.1"
    static let intermediateMarker = "1.2.840.113635.100.6.2.1"
    static let basicConstraints = "2.5.29.19"
    static let keyUsage = "2.5.29.15"
    static let subjectKeyID = "2.5.29.14"
    static let authorityKeyID = "2.5.29.35"
    /// DER of the ecdsa-with-SHA384 OID (1.2.840.10045.4.3.3).
    static let ecdsaWithSHA384: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x03]

    static func generate() throws -> GeneratedTestPKI {
        try GeneratedTestPKI.generate(notBefore: notBefore, notAfter: notAfter)
    }

    static func chain(_ pki: GeneratedTestPKI) -> [X509Certificate] { [pki.root, pki.intermediate, pki.leaf] }

    static func value(_ cert: X509Certificate, _ oid: String) -> [UInt8]? {
        cert.extensions.first { $0.oid == oid }?.derValue
    }

    /// The failure of validating `leaf` → `intermediates` → `anchor` at `time`, nil when it succeeds.
    static func failure(
        anchor: X509Certificate,
        leaf: X509Certificate,
        intermediates: [X509Certificate],
        at time: Int64
    ) throws -> X509PathFailure? {
        let store = try X509TrustStore(anchor: anchor)
        do {
            try store.validate(leaf: leaf, intermediates: intermediates, at: time)
            return nil
        } catch {
            return error
        }
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard haystack.count >= needle.count else { return 0 }
        return (0...(haystack.count - needle.count)).filter { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
            .count
    }

    // MARK: profile

    @Test func generatedKeysAreP384ForTheCAsAndP256ForTheLeaf() throws {
        let pki = try Self.generate()
        #expect(try Self.chain(pki).map { try $0.publicKey().curveName } == ["secp384r1", "secp384r1", "prime256v1"])
        // Each certificate carries the public half of the key that comes with it.
        let pairs = [(pki.root, pki.rootKey), (pki.intermediate, pki.intermediateKey), (pki.leaf, pki.leafKey)]
        for (cert, key) in pairs {
            #expect(try cert.publicKey().subjectPublicKeyInfo == key.publicKey.subjectPublicKeyInfo)
        }
    }

    @Test func onlyTheRootAndTheIntermediateAreCAs() throws {
        let pki = try Self.generate()
        #expect(Self.chain(pki).map(\.isCA) == [true, true, false])
    }

    @Test func eachAppleMarkerIsOnItsOwnCertificateOnly() throws {
        let pki = try Self.generate()
        #expect(Self.chain(pki).map { $0.hasExtension(oid: Self.intermediateMarker) } == [false, true, false])
        #expect(Self.chain(pki).map { $0.hasExtension(oid: Self.leafMarker) } == [false, false, true])
        // Non-critical, value DER NULL, as Apple's.
        #expect(
            pki.intermediate.extensions.last
                == CertificateExtension(oid: Self.intermediateMarker, critical: false, derValue: [0x05, 0x00])
        )
        #expect(
            pki.leaf.extensions.last
                == CertificateExtension(oid: Self.leafMarker, critical: false, derValue: [0x05, 0x00])
        )
    }

    @Test func validityIsExactlyTheRequestedSeconds() throws {
        let pki = try Self.generate()
        #expect(Self.chain(pki).map(\.notBefore) == Array(repeating: Self.notBefore, count: 3))
        #expect(Self.chain(pki).map(\.notAfter) == Array(repeating: Self.notAfter, count: 3))
        // Odd seconds, and a notAfter past 2049 (GeneralizedTime instead of UTCTime).
        let odd = try GeneratedTestPKI.generate(notBefore: 1_704_067_213, notAfter: 2_556_143_999)
        #expect(odd.leaf.notBefore == 1_704_067_213)
        #expect(odd.leaf.notAfter == 2_556_143_999)
        // The extremes RFC 5280 can encode: 1950-01-01 (first UTCTime) to 9999-12-31T23:59:59Z.
        let widest = try CertificateBuilder.make(
            subject: CertificateSubject(commonName: "Widest"),
            issuer: nil,
            key: try PrivateKey.generateP256(),
            notBefore: -631_152_000,
            notAfter: 253_402_300_799,
            isCA: false
        )
        #expect(widest.notBefore == -631_152_000)
        #expect(widest.notAfter == 253_402_300_799)
    }

    @Test func subjectsFollowTheNameAndEachIssuerIsTheNextCertificatesSubject() throws {
        let pki = try GeneratedTestPKI.generate(notBefore: Self.notBefore, notAfter: Self.notAfter, name: "Chain Test")
        #expect(pki.root.subject == "C=US,O=iap-gateway,OU=Chain Test test PKI (not Apple),CN=Chain Test Root CA")
        #expect(pki.intermediate.subject.hasSuffix(",CN=Chain Test WWDR CA"))
        #expect(pki.leaf.subject.hasSuffix(",CN=Chain Test Receipt Signing"))
        #expect(pki.root.issuer == pki.root.subject)
        #expect(pki.intermediate.issuer == pki.root.subject)
        #expect(pki.leaf.issuer == pki.intermediate.subject)
    }

    @Test func authorityKeyIdentifiersNameTheIssuersSubjectKeyIdentifier() throws {
        let pki = try Self.generate()
        let ski = try Self.chain(pki).map { try #require(Self.value($0, Self.subjectKeyID)) }
        // SKI = OCTET STRING of 20 bytes (SHA-1 of the key); AKI = SEQUENCE { [0] the issuer's 20 bytes }.
        #expect(ski.allSatisfy { $0.count == 22 && $0.prefix(2) == [0x04, 0x14] })
        #expect(Set(ski).count == 3)
        #expect(Self.value(pki.root, Self.authorityKeyID) == nil)
        #expect(Self.value(pki.intermediate, Self.authorityKeyID) == [0x30, 0x16, 0x80, 0x14] + ski[0].dropFirst(2))
        #expect(Self.value(pki.leaf, Self.authorityKeyID) == [0x30, 0x16, 0x80, 0x14] + ski[1].dropFirst(2))
    }

    @Test func extensionsMatchTheCommittedFixturePKI() throws {
        let pki = try Self.generate()
        for (generated, name) in zip(Self.chain(pki), ["root", "intermediate", "leaf"]) {
            let fixture = try X509Certificate(der: try TestPKI.der(name))
            // Same extensions, same order, same criticality…
            #expect(generated.extensions.map(\.oid) == fixture.extensions.map(\.oid), "\(name)")
            #expect(generated.extensions.map(\.critical) == fixture.extensions.map(\.critical), "\(name)")
            // …and byte-identical values wherever the value does not depend on the key.
            for oid in [Self.basicConstraints, Self.keyUsage, Self.leafMarker, Self.intermediateMarker] {
                #expect(Self.value(generated, oid) == Self.value(fixture, oid), "\(name) \(oid)")
            }
            // Signed with ECDSA SHA-384: the algorithm appears inside the signed part and before the signature.
            #expect(Self.occurrences(of: Self.ecdsaWithSHA384, in: generated.der) == 2, "\(name)")
        }
        // The values checked above, spelled out.
        #expect(Self.value(pki.root, Self.basicConstraints) == [0x30, 0x03, 0x01, 0x01, 0xFF])
        #expect(
            Self.value(pki.intermediate, Self.basicConstraints) == [0x30, 0x06, 0x01, 0x01, 0xFF, 0x02, 0x01, 0x00]
        )
        #expect(Self.value(pki.leaf, Self.basicConstraints) == [0x30, 0x00])
        #expect(Self.value(pki.intermediate, Self.keyUsage) == [0x03, 0x02, 0x01, 0x06])
        #expect(Self.value(pki.leaf, Self.keyUsage) == [0x03, 0x02, 0x07, 0x80])
    }

    // MARK: path validation (X509TrustStore runs OpenSSL with X509_V_FLAG_X509_STRICT)

    @Test(arguments: [notBefore, june2025, notAfter - 1])
    func chainValidatesUnderTheStrictProfileInsideTheValidity(_ time: Int64) throws {
        let pki = try Self.generate()
        #expect(try Self.failure(anchor: pki.root, leaf: pki.leaf, intermediates: [pki.intermediate], at: time) == nil)
    }

    @Test(arguments: [notBefore - 1, notAfter])
    func chainIsOutsideValidityOutsideTheRequestedWindow(_ time: Int64) throws {
        let pki = try Self.generate()
        let failure = try #require(
            try Self.failure(anchor: pki.root, leaf: pki.leaf, intermediates: [pki.intermediate], at: time)
        )
        #expect(failure.kind == .outsideValidity)
    }

    @Test func leafOfAnotherGeneratedPKIIsUntrustedEvenWithLookAlikeNames() throws {
        let pki = try Self.generate()
        let other = try Self.generate()
        #expect(other.intermediate.subject == pki.intermediate.subject)  // same names, different keys
        let ownChain = try #require(
            try Self.failure(anchor: pki.root, leaf: other.leaf, intermediates: [other.intermediate], at: Self.june2025)
        )
        #expect(ownChain.kind == .untrustedIssuer)
        let borrowed = try #require(
            try Self.failure(anchor: pki.root, leaf: other.leaf, intermediates: [pki.intermediate], at: Self.june2025)
        )
        #expect(borrowed.kind == .untrustedIssuer)
        // The other PKI's chain is fine against its own root.
        #expect(
            try Self.failure(
                anchor: other.root,
                leaf: other.leaf,
                intermediates: [other.intermediate],
                at: Self.june2025
            ) == nil
        )
    }

    // MARK: builder

    @Test func customExtensionsRoundTripWithTheirCriticalityAndValueBytes() throws {
        let key = try PrivateKey.generateP256()
        let custom = [
            CertificateExtension(oid: "1.3.6.1.4.1.55555.1", critical: false, derValue: [0x05, 0x00]),
            CertificateExtension(oid: "1.3.6.1.4.1.55555.2", critical: true, derValue: [0x0C, 0x02, 0x68, 0x69]),
            CertificateExtension(
                oid: "1.3.6.1.4.1.55555.3",
                critical: false,
                derValue: [0x30, 0x03, 0x02, 0x01, 0x07]
            ),
        ]
        let cert = try CertificateBuilder.make(
            subject: CertificateSubject(commonName: "Extensions"),
            issuer: nil,
            key: key,
            notBefore: Self.notBefore,
            notAfter: Self.notAfter,
            isCA: false,
            extensions: custom
        )
        #expect(Array(cert.extensions.suffix(3)) == custom)
        #expect(cert.extensions.map(\.oid).prefix(3) == [Self.basicConstraints, Self.keyUsage, Self.subjectKeyID])
        #expect(custom.allSatisfy { cert.hasExtension(oid: $0.oid) })
        #expect(cert.subject == "CN=Extensions")
    }

    enum BadInput: String, CaseIterable, Sendable {
        case malformedOID, truncatedValue, trailingBytesInValue, emptyValue, duplicateOfBasicConstraints,
            duplicateCustomExtension, threeLetterCountry, emptyCommonName, pathLengthWithoutCA, emptyValidity,
            validityBeyondYear9999
    }

    @Test(arguments: BadInput.allCases)
    func rejectsInputsThatCannotBeEncoded(_ input: BadInput) throws {
        let key = try PrivateKey.generateP256()
        var subject = CertificateSubject(commonName: "Bad", country: "US")
        var extensions: [CertificateExtension] = []
        var (pathLength, notAfter): (Int?, Int64) = (nil, Self.notAfter)
        func ext(_ oid: String = "1.3.6.1.4.1.55555.9", value: [UInt8] = [0x05, 0x00]) -> CertificateExtension {
            CertificateExtension(oid: oid, critical: false, derValue: value)
        }
        switch input {
        case .malformedOID: extensions = [ext("apple.marker")]
        case .truncatedValue: extensions = [ext(value: [0x04, 0x05, 0x00])]
        case .trailingBytesInValue: extensions = [ext(value: [0x05, 0x00, 0x00])]
        case .emptyValue: extensions = [ext(value: [])]
        case .duplicateOfBasicConstraints: extensions = [ext(Self.basicConstraints, value: [0x30, 0x00])]
        case .duplicateCustomExtension: extensions = [ext(), ext()]
        case .threeLetterCountry: subject.country = "USA"
        case .emptyCommonName: subject.commonName = ""
        case .pathLengthWithoutCA: pathLength = 0
        case .emptyValidity: notAfter = Self.notBefore
        case .validityBeyondYear9999: notAfter = 253_402_300_800
        }
        let code = cryptoErrorCode { () throws(CryptoError) in
            _ = try CertificateBuilder.make(
                subject: subject,
                issuer: nil,
                key: key,
                notBefore: Self.notBefore,
                notAfter: notAfter,
                isCA: false,
                pathLength: pathLength,
                extensions: extensions
            )
        }
        #expect(code == .invalidArgument)
    }

    @Test func buildsTheControlInputOfTheRejectionCases() throws {
        let cert = try CertificateBuilder.make(
            subject: CertificateSubject(commonName: "Bad", country: "US"),
            issuer: nil,
            key: try PrivateKey.generateP256(),
            notBefore: Self.notBefore,
            notAfter: Self.notAfter,
            isCA: false,
            extensions: [CertificateExtension(oid: "1.3.6.1.4.1.55555.9", critical: false, derValue: [0x05, 0x00])]
        )
        #expect(cert.subject == "C=US,CN=Bad")
    }

    @Test func rejectsAnIssuerKeyThatIsNotTheIssuerCertificatesKey() throws {
        let pki = try Self.generate()
        let code = cryptoErrorCode { () throws(CryptoError) in
            _ = try CertificateBuilder.make(
                subject: CertificateSubject(commonName: "Leaf"),
                issuer: (pki.intermediate, pki.rootKey),
                key: try PrivateKey.generateP256(),
                notBefore: Self.notBefore,
                notAfter: Self.notAfter,
                isCA: false
            )
        }
        #expect(code == .invalidKey)
    }

    @Test func serialsArePositive128BitNumbersThatDifferBetweenGenerations() throws {
        let serials = try (0..<2).flatMap { _ in Self.chain(try Self.generate()).map(\.serialNumberHex) }
        #expect(Set(serials).count == 6)
        for serial in serials {
            #expect(!serial.isEmpty && serial.count <= 32 && serial.count % 2 == 0, "\(serial)")
            // Top bit cleared: a 16-byte serial starts below 0x80 (no sign byte needed).
            if serial.count == 32 { #expect(Int(serial.prefix(2), radix: 16)! < 0x80, "\(serial)") }
        }
    }

    @Test func certificatesAndKeysRoundTripThroughPEM() throws {
        let pki = try Self.generate()
        for cert in Self.chain(pki) {
            #expect(cert.pem.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
            #expect(cert.pem.hasSuffix("\n-----END CERTIFICATE-----\n"))
            #expect(cert.pem.split(separator: "\n").allSatisfy { $0.count <= 64 })
            #expect(try X509Certificate(pem: cert.pem).der == cert.der)
        }
        let leafKey = try PrivateKey(pem: pki.leafKey.pemPKCS8)
        #expect(leafKey.publicKey.subjectPublicKeyInfo == (try pki.leaf.publicKey().subjectPublicKeyInfo))
    }
}
