internal import ApplePKI
public import Crypto

/// An Apple-shaped test PKI generated at run time, with the profile of Apple's real App Store chain
/// (Apple Root CA - G3 → WWDR CA G6 → receipt-signing leaf) and of the committed `Fixtures/test-pki`:
///
/// | | key | basicConstraints (critical) | keyUsage (critical) | other |
/// |---|---|---|---|---|
/// | root | P-384 | CA:TRUE | keyCertSign, cRLSign | SKI; self-signed |
/// | intermediate | P-384 | CA:TRUE, pathlen 0 | keyCertSign, cRLSign | SKI, AKI, marker 1.2.840.113635.100.6.2.1 |
/// | leaf | P-256 | CA:FALSE | digitalSignature | SKI, AKI, marker 1.2.840.113635.100.6.11.1 |
///
/// Markers are non-critical with value DER NULL (`05 00`), every signature is ECDSA with SHA-384, all three
/// certificates share the requested validity. Fresh keys each time, so no two generations share a key or a serial.
/// Everything it is used for is sandbox-only in the product: its root can only ever be an extra (sandbox) root.
public struct GeneratedTestPKI: Sendable {
    public let root: X509Certificate
    public let rootKey: PrivateKey
    public let intermediate: X509Certificate
    public let intermediateKey: PrivateKey
    public let leaf: X509Certificate
    public let leafKey: PrivateKey

    /// Leaf marker ("Mac App Store and iTunes Store Receipt Signing").
    static let leafMarkerOID = AppleMarkerOID.storeKitLeaf
    /// Intermediate marker (Apple Worldwide Developer Relations CA).
    static let intermediateMarkerOID = AppleMarkerOID.developerRelationsIntermediate
    private static let derNull: [UInt8] = [0x05, 0x00]

    /// Subjects are `CN=<name> Root CA | WWDR CA | Receipt Signing, OU=<name> test PKI (not Apple), O=iap-gateway, C=US`.
    public static func generate(
        notBefore: Int64,
        notAfter: Int64,
        name: String = "iap-gateway Simulator"
    ) throws(CryptoError) -> GeneratedTestPKI {
        func subject(_ role: String) -> CertificateSubject {
            CertificateSubject(
                commonName: "\(name) \(role)",
                organizationalUnit: "\(name) test PKI (not Apple)",
                organization: "iap-gateway",
                country: "US"
            )
        }
        let rootKey = try PrivateKey.generateP384()
        let root = try CertificateBuilder.make(
            subject: subject("Root CA"),
            issuer: nil,
            key: rootKey,
            notBefore: notBefore,
            notAfter: notAfter,
            isCA: true
        )
        let intermediateKey = try PrivateKey.generateP384()
        let intermediate = try CertificateBuilder.make(
            subject: subject("WWDR CA"),
            issuer: (root, rootKey),
            key: intermediateKey,
            notBefore: notBefore,
            notAfter: notAfter,
            isCA: true,
            pathLength: 0,
            extensions: [CertificateExtension(oid: intermediateMarkerOID, critical: false, derValue: derNull)]
        )
        let leafKey = try PrivateKey.generateP256()
        let leaf = try CertificateBuilder.make(
            subject: subject("Receipt Signing"),
            issuer: (intermediate, intermediateKey),
            key: leafKey,
            notBefore: notBefore,
            notAfter: notAfter,
            isCA: false,
            extensions: [CertificateExtension(oid: leafMarkerOID, critical: false, derValue: derNull)]
        )
        return GeneratedTestPKI(
            root: root,
            rootKey: rootKey,
            intermediate: intermediate,
            intermediateKey: intermediateKey,
            leaf: leaf,
            leafKey: leafKey
        )
    }
}
