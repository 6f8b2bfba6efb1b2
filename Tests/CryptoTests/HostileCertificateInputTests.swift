import Crypto
import TestSupport
import Testing

/// Certificates and times from outside (an `x5c`, a payload's date) at their extremes: DER that lies about its
/// lengths or nests without end is an error, validity dates convert exactly at the ends of what X.509 can say, and
/// a validation time anywhere in `Int64` is judged, not trapped on.
@Suite struct HostileCertificateInputTests {
    static let hostileDER: [[UInt8]] = [
        [],
        [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x30, 0x00],  // a 4 GiB length over 2 bytes
        [0x30, 0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // an Int64.max length
        [0x30, 0x89, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],  // length of length beyond 8 bytes
        [0x30, 0x80] + Array(repeating: 0x30, count: 4) + [0x80],  // indefinite length (BER, not DER)
        Array([[UInt8]](repeating: [0x30, 0x80], count: 10_000).joined()),  // nesting without end
        Array([[UInt8]](repeating: [0x30, 0x82, 0xFF, 0xFF], count: 1_000).joined()),
        [0x02, 0x01, 0x00],  // an INTEGER, not a certificate
    ]

    @Test(arguments: hostileDER)
    func derThatLiesAboutItselfIsAnErrorEverywhere(_ der: [UInt8]) {
        #expect(throws: CryptoError(.invalidCertificate, "")) { try X509Certificate(der: der) }
        #expect(throws: CryptoError(.invalidKey, "")) { try PublicKey(subjectPublicKeyInfo: der) }
        #expect(throws: CryptoError(.invalidSignature, "")) { try ECDSASignature.raw(fromDER: der) }
    }

    @Test(arguments: [
        "", "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\n" + String(repeating: "MIIB", count: 5_000) + "\n-----END CERTIFICATE-----\n",
    ])
    func pemThatIsNoCertificateOrKeyIsAnError(_ text: String) {
        #expect(throws: CryptoError(.invalidCertificate, "")) { try X509Certificate(pem: text) }
        #expect(throws: CryptoError(.invalidKey, "")) { try PrivateKey(pem: text) }
    }

    @Test func validityAtTheEndsOfWhatX509CanSayConvertsExactly() throws {
        // 1950-01-01T00:00:00Z (the first UTCTime instant) to 9999-12-31T23:59:59Z (the last GeneralizedTime one).
        let (first, last): (Int64, Int64) = (-631_152_000, 253_402_300_799)
        let key = try PrivateKey.generateP256()
        let certificate = try CertificateBuilder.make(
            subject: CertificateSubject(commonName: "extremes"),
            issuer: nil,
            key: key,
            notBefore: first,
            notAfter: last,
            isCA: true
        )
        #expect(certificate.notBefore == first)
        #expect(certificate.notAfter == last)
        #expect(throws: CryptoError(.invalidArgument, "")) {
            try CertificateBuilder.make(
                subject: CertificateSubject(commonName: "x"),
                issuer: nil,
                key: key,
                notBefore: .min,
                notAfter: .max,
                isCA: true
            )
        }
    }

    @Test func validationTimesAnywhereInInt64AreJudged() throws {
        let root = try X509Certificate(der: try TestPKI.der("root"))
        let store = try X509TrustStore(anchor: root)
        let leaf = try X509Certificate(der: try TestPKI.der("leaf"))
        let intermediate = try X509Certificate(der: try TestPKI.der("intermediate"))
        try store.validate(leaf: leaf, intermediates: [intermediate], at: 1_748_736_000)
        for time in [
            Int64.min, Int64.min + 1, -62_167_219_201, -1, 0, 253_402_300_800, Int64.max / 1000, Int64.max - 1,
            Int64.max,
        ] {
            do {
                try store.validate(leaf: leaf, intermediates: [intermediate], at: time)
                Issue.record("validated at \(time)")
            } catch {
                #expect(error.kind != .untrustedIssuer, "\(time): \(error.message)")
            }
        }
    }
}
