import Crypto
import TestSupport
import Testing

@Suite struct PublicKeyTests {
    static func verify(_ key: PublicKey, _ signature: [UInt8], _ message: String) -> Bool {
        Array(message.utf8).withUnsafeBytes { key.verifyES256(signature: signature, message: $0) }
    }

    /// RFC 6979 A.2.5: the P-256 public key (uncompressed point wrapped in a SubjectPublicKeyInfo).
    static let rfc6979SPKI = hexBytes(
        "3059301306072a8648ce3d020106082a8648ce3d030107034200"
            + "04 60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
            + "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
    )

    /// RFC 6979 A.2.5, ECDSA with SHA-256: raw r‖s for the messages "sample" and "test".
    static let rfc6979Signatures: [(message: String, signature: String)] = [
        (
            "sample",
            "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
                + "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"
        ),
        (
            "test",
            "f1abb023518351cd71d881567b1ea663ed3efcf6c5132b354f28d3b0b7d38367"
                + "019f4113742a2b14bd25926b49c649155f267e60d3814b4c0cc84250e46f0083"
        ),
    ]

    @Test(arguments: rfc6979Signatures)
    func verifiesTheRFC6979P256Vectors(message: String, signature: String) throws {
        let key = try PublicKey(subjectPublicKeyInfo: Self.rfc6979SPKI)
        #expect(key.isP256)
        #expect(Self.verify(key, hexBytes(signature), message))
        #expect(!Self.verify(key, hexBytes(signature), message + "."))
    }

    @Test func rfc6979SignaturesAreNotInterchangeable() throws {
        let key = try PublicKey(subjectPublicKeyInfo: Self.rfc6979SPKI)
        #expect(!Self.verify(key, hexBytes(Self.rfc6979Signatures[0].signature), Self.rfc6979Signatures[1].message))
        #expect(!Self.verify(key, hexBytes(Self.rfc6979Signatures[1].signature), Self.rfc6979Signatures[0].message))
    }

    /// Made once with `openssl dgst -sha256 -sign Fixtures/test-pki/leaf.key.pem` over the message below (DER
    /// converted to r‖s): the code under test did not produce it.
    static let fixtureSignature = hexBytes(
        "dbaa690ed557459c6fd4b6973aad7b3b6a40bad31469a598a038a928740b65fd"
            + "58f84ba8e528dd02bf18bc8c92600fdef9de4051a8f35ad712bfacdb5bf22784"
    )

    @Test func verifiesAFixedSignatureByTheFixtureLeafWithTheLeafCertificatesKey() throws {
        let key = try X509Certificate(der: try TestPKI.der("leaf")).publicKey()
        #expect(Self.verify(key, Self.fixtureSignature, "iap-gateway fixed vector"))
        #expect(!Self.verify(key, Self.fixtureSignature, "iap-gateway fixed vectoR"))
        let other = try X509Certificate(der: try TestPKI.der("other-leaf")).publicKey()
        #expect(!Self.verify(other, Self.fixtureSignature, "iap-gateway fixed vector"))
    }

    @Test func theLeafCertificateKeyVerifiesWhatTheFixtureLeafKeySigns() throws {
        let certificateKey = try X509Certificate(der: try TestPKI.der("leaf")).publicKey()
        let privateKey = try TestPKI.key("leaf")
        #expect(certificateKey.subjectPublicKeyInfo == privateKey.publicKey.subjectPublicKeyInfo)
        let signature = try privateKey.signES256(Array("a JWS signing input".utf8))
        #expect(Self.verify(certificateKey, signature, "a JWS signing input"))
        #expect(!Self.verify(certificateKey, signature, "a JWS signing input "))
    }

    @Test func subjectPublicKeyInfoRoundTrips() throws {
        for key in [
            try PrivateKey.generateP256().publicKey, try PrivateKey.generateP384().publicKey,
            try PublicKey(subjectPublicKeyInfo: Self.rfc6979SPKI),
        ] {
            let spki = key.subjectPublicKeyInfo
            let decoded = try PublicKey(subjectPublicKeyInfo: spki)
            #expect(decoded.subjectPublicKeyInfo == spki)
            #expect(decoded.curveName == key.curveName)
        }
        #expect(try PublicKey(subjectPublicKeyInfo: Self.rfc6979SPKI).subjectPublicKeyInfo == Self.rfc6979SPKI)
        #expect(try PrivateKey.generateP256().publicKey.subjectPublicKeyInfo.count == 91)
    }

    @Test(arguments: [[], [0x30, 0x00], [0x01, 0x02, 0x03], Array(rfc6979SPKI.dropLast(1))] as [[UInt8]])
    func rejectsBytesThatAreNotASubjectPublicKeyInfo(_ der: [UInt8]) {
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try PublicKey(subjectPublicKeyInfo: der) } == .invalidKey
        )
    }

    @Test func rejectsAPointThatIsNotOnTheCurve() {
        var spki = Self.rfc6979SPKI
        spki[spki.count - 1] ^= 0x01
        #expect(
            cryptoErrorCode { () throws(CryptoError) in _ = try PublicKey(subjectPublicKeyInfo: spki) } == .invalidKey
        )
    }

    @Test func verifiesConcurrentlyWithOneSharedKey() async throws {
        let privateKey = try PrivateKey.generateP256()
        let key = privateKey.publicKey
        let message = Array("shared".utf8)
        let good = try privateKey.signES256(message)
        var bad = good
        bad[10] ^= 0x40
        let expected = (0..<32).map { $0 % 3 != 0 }
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for i in 0..<32 {
                let signature = expected[i] ? good : bad
                group.addTask { (i, message.withUnsafeBytes { key.verifyES256(signature: signature, message: $0) }) }
            }
            var out = [Bool](repeating: false, count: 32)
            for await (i, ok) in group { out[i] = ok }
            return out
        }
        #expect(results == expected)
    }

    @Test func aReusableVerifyContextAgreesWithTheKey() throws {
        let privateKey = try PrivateKey.generateP256()
        let message = Array("bench".utf8)
        let der = try privateKey.signDER(message)
        let context = try ReusableVerifyContext(key: privateKey.publicKey)
        #expect(context.verify(digest: SHA256.hash(message), derSignature: der))
        #expect(context.verify(digest: SHA256.hash(message), derSignature: der))
        #expect(!context.verify(digest: SHA256.hash(Array("other".utf8)), derSignature: der))
    }
}
