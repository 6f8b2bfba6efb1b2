import Crypto
import TestSupport
import Testing

/// RSA PKCS#1 v1.5 with SHA-1 (``PublicKey/verifyRSASHA1(signature:message:)``, ``PrivateKey/signRSASHA1(_:)``): the
/// signature of iOS 6 transaction receipts. The fixed vector is Apple's: Apple Inc. Root signed Apple iTunes Store
/// Certification Authority with `sha1WithRSAEncryption`, so the root's key verifies that certificate's signature over
/// its `tbsCertificate`.
@Suite struct RSASHA1Tests {
    /// `tbsCertificate` and the signature of a DER certificate: `SEQUENCE { tbs, algorithm, BIT STRING }`.
    static func signedParts(_ der: [UInt8]) throws -> (tbs: [UInt8], signature: [UInt8]) {
        /// The element at `i`: where its contents start and end.
        func element(_ i: Int) throws -> (start: Int, end: Int) {
            var n = Int(der[i + 1])
            var start = i + 2
            if n & 0x80 != 0 {
                let count = n & 0x7F
                n = der[start..<(start + count)].reduce(0) { $0 << 8 | Int($1) }
                start += count
            }
            try #require(start + n <= der.count)
            return (start, start + n)
        }
        let certificate = try element(0)
        let tbs = try element(certificate.start)
        let algorithm = try element(tbs.end)
        let bits = try element(algorithm.end)
        try #require(der[algorithm.end] == 0x03 && der[bits.start] == 0x00, "a BIT STRING without unused bits")
        return (Array(der[certificate.start..<tbs.end]), Array(der[(bits.start + 1)..<bits.end]))
    }

    static func applesVector() throws -> (key: PublicKey, tbs: [UInt8], signature: [UInt8]) {
        let root = try X509Certificate(der: try Fixtures.bytes("receipts/AppleIncRootCertificate.cer"))
        let (tbs, signature) = try signedParts(
            try Fixtures.bytes("receipts/AppleITunesStoreCertificationAuthority.cer")
        )
        return (try root.publicKey(), tbs, signature)
    }

    @Test func applesRootKeyVerifiesItsSHA1SignatureOfTheITunesStoreCA() throws {
        let (key, tbs, signature) = try Self.applesVector()
        #expect(key.rsaBits == 2048 && signature.count == 256)
        #expect(key.verifyRSASHA1(signature: signature, message: tbs))
    }

    @Test func anyChangedByteFailsApplesVector() throws {
        let (key, tbs, signature) = try Self.applesVector()
        for i in stride(from: 0, to: tbs.count, by: 13) {
            var changed = tbs
            changed[i] ^= 0x01
            #expect(!key.verifyRSASHA1(signature: signature, message: changed), "message byte \(i)")
        }
        for i in 0..<signature.count {
            var changed = signature
            changed[i] ^= 0x80
            #expect(!key.verifyRSASHA1(signature: changed, message: tbs), "signature byte \(i)")
        }
        #expect(!key.verifyRSASHA1(signature: Array(signature.dropLast()), message: tbs), "one byte short")
        #expect(!key.verifyRSASHA1(signature: signature + [0], message: tbs), "one byte long")
        #expect(!key.verifyRSASHA1(signature: [], message: tbs))
        #expect(!key.verifyRSASHA1(signature: signature, message: tbs + [0]))
    }

    @Test(arguments: [1024, 2048])
    func aSignatureMadeVerifiesWithItsKeyOnly(_ bits: Int) throws {
        let key = try PrivateKey.generateRSA(bits: bits)
        let other = try PrivateKey.generateRSA(bits: bits)
        let message: [UInt8] = [0x02] + Array("{ \"transaction-id\" = \"1\"; }".utf8)
        let signature = try key.signRSASHA1(message)
        #expect(signature.count == bits / 8 && key.publicKey.rsaBits == bits)
        #expect(key.publicKey.verifyRSASHA1(signature: signature, message: message))
        #expect(!other.publicKey.verifyRSASHA1(signature: signature, message: message))
        #expect(!key.publicKey.verifyRSASHA1(signature: signature, message: [0x03] + message.dropFirst()))
    }

    @Test func anECKeyNeitherSignsNorVerifies() throws {
        let ec = try PrivateKey.generateP256()
        #expect(ec.publicKey.rsaBits == nil)
        #expect(cryptoErrorCode { () throws(CryptoError) in _ = try ec.signRSASHA1([1, 2, 3]) } == .invalidKey)
        let (_, tbs, signature) = try Self.applesVector()
        #expect(!ec.publicKey.verifyRSASHA1(signature: signature, message: tbs))
    }
}
