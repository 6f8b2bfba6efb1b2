import Crypto
import TestSupport
import Testing

@Suite struct PrivateKeyTests {
    static let message = Array("header.payload".utf8)

    static func verify(_ key: PublicKey, _ signature: [UInt8], _ message: [UInt8]) -> Bool {
        message.withUnsafeBytes { key.verifyES256(signature: signature, message: $0) }
    }

    @Test func signsES256ThatTheMatchingPublicKeyVerifies() throws {
        let key = try PrivateKey.generateP256()
        let signature = try key.signES256(Self.message)
        #expect(signature.count == 64)
        #expect(key.publicKey.isP256)
        #expect(Self.verify(key.publicKey, signature, Self.message))
    }

    @Test func anotherKeyDoesNotVerifyTheSignature() throws {
        let signature = try PrivateKey.generateP256().signES256(Self.message)
        #expect(!Self.verify(try PrivateKey.generateP256().publicKey, signature, Self.message))
    }

    @Test(arguments: [0, 7, 100, 111])
    func rejectsOneFlippedBitInTheMessage(_ bit: Int) throws {
        let key = try PrivateKey.generateP256()
        let signature = try key.signES256(Self.message)
        var tampered = Self.message
        tampered[bit / 8] ^= 1 << UInt8(bit % 8)
        #expect(Self.verify(key.publicKey, signature, Self.message))
        #expect(!Self.verify(key.publicKey, signature, tampered))
    }

    @Test(arguments: [0, 255, 256, 300, 511])
    func rejectsOneFlippedBitInTheSignature(_ bit: Int) throws {
        let key = try PrivateKey.generateP256()
        var signature = try key.signES256(Self.message)
        #expect(Self.verify(key.publicKey, signature, Self.message))
        signature[bit / 8] ^= 1 << UInt8(bit % 8)
        #expect(!Self.verify(key.publicKey, signature, Self.message))
    }

    @Test func rejectsADERSignatureWhereRawIsExpected() throws {
        let key = try PrivateKey.generateP256()
        let der = try key.signDER(Self.message)
        #expect(der.count != 64)
        #expect(der.first == 0x30)
        // The DER signature is valid in itself…
        #expect(key.publicKey.verify(digest: SHA256.hash(Self.message), derSignature: der))
        // …but ES256 takes only raw R‖S.
        #expect(!Self.verify(key.publicKey, der, Self.message))
        let raw = try ECDSASignature.raw(fromDER: der)
        #expect(Self.verify(key.publicKey, raw, Self.message))
        #expect(!Self.verify(key.publicKey, Array(raw.dropLast()), Self.message))
        #expect(!Self.verify(key.publicKey, raw + [0], Self.message))
        #expect(!Self.verify(key.publicKey, [], Self.message))
    }

    @Test func aP384KeyIsNotP256AndNeverVerifiesES256() throws {
        let key = try PrivateKey.generateP384()
        #expect(!key.publicKey.isP256)
        #expect(key.publicKey.curveName == "secp384r1")
        // The key itself works: an ECDSA/SHA-256 DER signature verifies through the generic entry point.
        let der = try key.signDER(Self.message)
        #expect(key.publicKey.verify(digest: SHA256.hash(Self.message), derSignature: der))
        // ES256 is refused whatever 64 bytes are offered.
        var rng = LCG(seed: 9)
        #expect(!Self.verify(key.publicKey, rng.bytes(64), Self.message))
        #expect(!Self.verify(key.publicKey, try PrivateKey.generateP256().signES256(Self.message), Self.message))
    }

    @Test func theFixtureP384LeafKeyIsNotP256() throws {
        let key = try TestPKI.key("leaf-p384")
        #expect(!key.publicKey.isP256)
        let certificateKey = try X509Certificate(der: try TestPKI.der("leaf-p384")).publicKey()
        #expect(certificateKey.subjectPublicKeyInfo == key.publicKey.subjectPublicKeyInfo)
    }

    // MARK: PEM

    @Test func loadsTheFixtureLeafKeyAndRoundTripsPKCS8PEM() throws {
        let pem = try Fixtures.text("test-pki/leaf.key.pem")
        let key = try PrivateKey(pem: pem)
        #expect(key.publicKey.isP256)
        let written = key.pemPKCS8
        #expect(written.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(written.hasSuffix("-----END PRIVATE KEY-----\n"))
        #expect(written == pem)
        let reread = try PrivateKey(pem: written)
        #expect(reread.pemPKCS8 == written)
        #expect(reread.publicKey.subjectPublicKeyInfo == key.publicKey.subjectPublicKeyInfo)
        // The re-read key signs what the original's public key verifies.
        #expect(Self.verify(key.publicKey, try reread.signES256(Self.message), Self.message))
    }

    @Test func aGeneratedKeyRoundTripsThroughPEM() throws {
        let key = try PrivateKey.generateP256()
        let reread = try PrivateKey(pem: key.pemPKCS8)
        #expect(reread.publicKey.subjectPublicKeyInfo == key.publicKey.subjectPublicKeyInfo)
    }

    static let secretLooking = "TUlJQ0dBU0VDUkVUS0VZTUFURVJJQUxUSEFUTVVTVE5PVExFQUs="

    @Test(arguments: [
        "",
        "not a key",
        "-----BEGIN PRIVATE KEY-----\n\(secretLooking)\n-----END PRIVATE KEY-----\n",
        "-----BEGIN EC PRIVATE KEY-----\n\(secretLooking)\n-----END EC PRIVATE KEY-----\n",
    ])
    func rejectsGarbagePEMWithoutRepeatingIt(_ pem: String) throws {
        var caught: CryptoError?
        do { _ = try PrivateKey(pem: pem) } catch { caught = error }
        let error = try #require(caught)
        #expect(error.code == .invalidKey)
        #expect(!error.description.contains(Self.secretLooking))
        #expect(!error.reason.contains(Self.secretLooking))
        if !pem.isEmpty { #expect(!error.description.contains(pem)) }
    }

    @Test func rejectsACertificatePEMAsAKey() throws {
        let pem = X509CertificateTests.pem(fromDER: try TestPKI.der("leaf"))
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try PrivateKey(pem: pem) } == .invalidKey)
    }

    @Test func rejectsAPEMWhoseBodyIsTruncated() throws {
        let pem = try Fixtures.text("test-pki/leaf.key.pem")
        var lines = pem.split(separator: "\n").map(String.init)
        lines[1] = String(lines[1].prefix(20))
        let truncated = lines.joined(separator: "\n") + "\n"
        var caught: CryptoError?
        do { _ = try PrivateKey(pem: truncated) } catch { caught = error }
        #expect(caught?.code == .invalidKey)
        #expect(caught.map { !$0.description.contains(lines[1]) } == true)
    }
}
