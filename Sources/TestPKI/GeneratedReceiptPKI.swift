internal import ApplePKI
public import Crypto

/// An RSA test PKI with the profile of one of Apple's receipt chains, generated at run time: what tests and the
/// simulator sign receipts with — app receipts (``CMSSignedData/sign(content:signer:key:chain:digest:)``) and iOS 6
/// transaction receipts (`ReceiptBuilder`).
///
/// ``Profile/appReceipt``: Apple Root CA → Apple Worldwide Developer Relations CA G5 → "Mac App Store and iTunes Store
/// Receipt Signing" (app receipts, and version-3 transaction receipts).
///
/// | | key | basicConstraints (critical) | keyUsage (critical) | other |
/// |---|---|---|---|---|
/// | root | RSA 2048 | CA:TRUE | keyCertSign, cRLSign | SKI; self-signed |
/// | intermediate | RSA 2048 | CA:TRUE, pathlen 0 | keyCertSign, cRLSign | SKI, AKI, marker 1.2.840.113635.100.6.2.1 |
/// | leaf | RSA 2048 | CA:FALSE | digitalSignature | SKI, AKI, marker 1.2.840.113635.100.6.11.1 |
///
/// ``Profile/iTunesStore``: Apple Root CA → Apple iTunes Store Certification Authority → `PurchaseReceiptCertificate`
/// (version-2 transaction receipts): the same, but the intermediate's marker is 1.2.840.113635.100.6.2.2, the leaf's
/// 1.2.840.113635.100.6.5.1 and the leaf's key RSA 1024, as Apple's.
///
/// Markers are non-critical with value DER NULL (`05 00`), as Apple's are (each can be left out for negative
/// tests); every certificate is signed with `sha256WithRSAEncryption` and shares the requested validity. Fresh keys
/// each time. With ``Names/appleLookAlike`` (or ``Names/appleITunesStoreLookAlike``) the subjects are Apple's own,
/// byte for byte in Apple's name order: a chain that looks like Apple's in every field but its keys, which a verifier
/// must refuse. Everything made with it is sandbox-only in the product: its root can only ever be an extra (sandbox)
/// root.
public struct GeneratedReceiptPKI: Sendable {
    public let root: X509Certificate
    public let rootKey: PrivateKey
    public let intermediate: X509Certificate
    public let intermediateKey: PrivateKey
    public let leaf: X509Certificate
    public let leafKey: PrivateKey

    /// Which of Apple's receipt chains a PKI has the profile of.
    public enum Profile: Sendable, Hashable {
        /// WWDR CA → "Mac App Store and iTunes Store Receipt Signing" (RSA 2048): app receipts, version-3
        /// transaction receipts.
        case appReceipt
        /// Apple iTunes Store Certification Authority → `PurchaseReceiptCertificate` (RSA 1024): version-2
        /// transaction receipts.
        case iTunesStore

        var leafMarkerOID: String {
            self == .appReceipt ? GeneratedReceiptPKI.leafMarkerOID : GeneratedReceiptPKI.iTunesStoreLeafMarkerOID
        }
        var intermediateMarkerOID: String {
            self == .appReceipt
                ? GeneratedReceiptPKI.intermediateMarkerOID : GeneratedReceiptPKI.iTunesStoreIntermediateMarkerOID
        }
        var leafKeyBits: Int { self == .appReceipt ? 2048 : 1024 }
    }

    /// Leaf marker ("Mac App Store and iTunes Store Receipt Signing").
    public static let leafMarkerOID = AppleMarkerOID.storeKitLeaf
    /// Intermediate marker (Apple Worldwide Developer Relations CA).
    public static let intermediateMarkerOID = AppleMarkerOID.developerRelationsIntermediate
    /// Leaf marker of ``Profile/iTunesStore`` (`PurchaseReceiptCertificate`).
    public static let iTunesStoreLeafMarkerOID = AppleMarkerOID.iTunesStoreLeaf
    /// Intermediate marker of ``Profile/iTunesStore`` (Apple iTunes Store Certification Authority).
    public static let iTunesStoreIntermediateMarkerOID = AppleMarkerOID.iTunesStoreIntermediate
    private static let derNull: [UInt8] = [0x05, 0x00]

    /// The three subjects.
    public struct Names: Sendable, Hashable {
        public var root: CertificateSubject
        public var intermediate: CertificateSubject
        public var leaf: CertificateSubject

        public init(root: CertificateSubject, intermediate: CertificateSubject, leaf: CertificateSubject) {
            (self.root, self.intermediate, self.leaf) = (root, intermediate, leaf)
        }

        /// `CN=<name> Root CA | WWDR CA | Receipt Signing, OU=<name> test PKI (not Apple), O=iap-gateway, C=US`.
        public static func test(_ name: String) -> Names {
            func subject(_ role: String) -> CertificateSubject {
                CertificateSubject(
                    commonName: "\(name) \(role)",
                    organizationalUnit: "\(name) test PKI (not Apple)",
                    organization: "iap-gateway",
                    country: "US"
                )
            }
            return Names(root: subject("Root CA"), intermediate: subject("WWDR CA"), leaf: subject("Receipt Signing"))
        }

        /// Apple's subjects as its real receipt chain has them (Apple Root CA: `C, O, OU, CN`; WWDR G5 and the
        /// receipt-signing leaf: `CN, OU, O, C`).
        public static let appleLookAlike = Names(
            root: CertificateSubject(
                commonName: "Apple Root CA",
                organizationalUnit: "Apple Certification Authority",
                organization: "Apple Inc.",
                country: "US",
                order: .countryFirst
            ),
            intermediate: CertificateSubject(
                commonName: "Apple Worldwide Developer Relations Certification Authority",
                organizationalUnit: "G5",
                organization: "Apple Inc.",
                country: "US"
            ),
            leaf: CertificateSubject(
                commonName: "Mac App Store and iTunes Store Receipt Signing",
                organizationalUnit: "Apple Worldwide Developer Relations",
                organization: "Apple Inc.",
                country: "US"
            )
        )

        /// Apple's subjects as its version-2 transaction-receipt chain has them (Apple Root CA and Apple iTunes Store
        /// Certification Authority: `C, O, OU, CN`; `PurchaseReceiptCertificate`: `CN, OU, O, C`).
        public static let appleITunesStoreLookAlike = Names(
            root: appleLookAlike.root,
            intermediate: CertificateSubject(
                commonName: "Apple iTunes Store Certification Authority",
                organizationalUnit: "Apple Certification Authority",
                organization: "Apple Inc.",
                country: "US",
                order: .countryFirst
            ),
            leaf: CertificateSubject(
                commonName: "PurchaseReceiptCertificate",
                organizationalUnit: "Apple iTunes Store",
                organization: "Apple Inc.",
                country: "US"
            )
        )
    }

    /// A fresh root, intermediate and leaf of `profile`, valid `notBefore ..< notAfter` (seconds since the epoch).
    /// `leafMarker` and `intermediateMarker` false leave the profile's marker extension out of that certificate.
    public static func generate(
        notBefore: Int64,
        notAfter: Int64,
        names: Names = .test("iap-gateway Simulator"),
        profile: Profile = .appReceipt,
        leafMarker: Bool = true,
        intermediateMarker: Bool = true
    ) throws(CryptoError) -> GeneratedReceiptPKI {
        let rootKey = try PrivateKey.generateRSA()
        let root = try CertificateBuilder.make(
            subject: names.root,
            issuer: nil,
            key: rootKey,
            notBefore: notBefore,
            notAfter: notAfter,
            isCA: true,
            signatureDigest: .sha256
        )
        let intermediateKey = try PrivateKey.generateRSA()
        let intermediate = try CertificateBuilder.make(
            subject: names.intermediate,
            issuer: (root, rootKey),
            key: intermediateKey,
            notBefore: notBefore,
            notAfter: notAfter,
            isCA: true,
            pathLength: 0,
            extensions: intermediateMarker
                ? [CertificateExtension(oid: profile.intermediateMarkerOID, critical: false, derValue: derNull)] : [],
            signatureDigest: .sha256
        )
        let leafKey = try PrivateKey.generateRSA(bits: profile.leafKeyBits)
        let leaf = try CertificateBuilder.make(
            subject: names.leaf,
            issuer: (intermediate, intermediateKey),
            key: leafKey,
            notBefore: notBefore,
            notAfter: notAfter,
            isCA: false,
            extensions: leafMarker
                ? [CertificateExtension(oid: profile.leafMarkerOID, critical: false, derValue: derNull)] : [],
            signatureDigest: .sha256
        )
        return GeneratedReceiptPKI(
            root: root,
            rootKey: rootKey,
            intermediate: intermediate,
            intermediateKey: intermediateKey,
            leaf: leaf,
            leafKey: leafKey
        )
    }

    /// Signs `content` (a receipt payload) as an App Store receipt with this PKI's leaf, embedding leaf, intermediate
    /// and root (Apple's receipts carry all three).
    public func sign(_ content: [UInt8], digest: CMSDigest = .sha256) throws(CryptoError) -> [UInt8] {
        try CMSSignedData.sign(
            content: content,
            signer: leaf,
            key: leafKey,
            chain: [intermediate, root],
            digest: digest
        )
    }
}
