/// The verdict on a receipt's signature (docs/architecture.md, "The receipt reader": the signature policy). A
/// receipt is authenticated only when ``valid`` is true; every other member describes what was found either way.
public struct ReceiptSignature: Sendable, Hashable {
    /// True when the signature verified with the embedded leaf (an app receipt's PKCS#7; a transaction receipt's
    /// blob, over its `purchase-info`), the leaf → intermediate → pinned root chain validated at the receipt's creation
    /// date (a transaction receipt's purchase date), both certificates carry Apple's marker OIDs, and the root may
    /// vouch for this receipt (Apple's always; an extra root only for a sandbox receipt).
    public var valid: Bool
    /// The signing certificate's subject common name ("Mac App Store and iTunes Store Receipt Signing",
    /// "StoreKit", "PurchaseReceiptCertificate"), when one was found.
    public var signer: String?
    /// The signature's digest: "sha1" or "sha256"; nil when the signature could not be read.
    public var digest: String?
    /// The time (ms since the epoch) the chain was judged at: the receipt's creation date (attribute 12), or a
    /// transaction receipt's purchase date.
    public var judgedAt: Int64?
    /// "apple" (Apple Inc. Root) or "extra" (an extra sandbox root) when the chain validated to one.
    public var root: String?
    /// A stable code when ``valid`` is false (``Failure``); nil when valid.
    public var failure: String?

    public init(
        valid: Bool,
        signer: String? = nil,
        digest: String? = nil,
        judgedAt: Int64? = nil,
        root: String? = nil,
        failure: String? = nil
    ) {
        (self.valid, self.signer, self.digest, self.judgedAt, self.root, self.failure) =
            (valid, signer, digest, judgedAt, root, failure)
    }

    /// The values of ``failure``.
    public enum Failure {
        /// An Xcode (StoreKit testing) receipt: `receipt_type` Xcode or a self-signed `CN=StoreKit` signer.
        public static let xcodeReceipt = "xcode_receipt"
        /// A transaction receipt with no signature at all.
        public static let unsigned = "unsigned"
        /// A transaction receipt whose signature blob does not read: not base64, shorter than its version's layout,
        /// a certificate length other than what follows it, a certificate that is not DER.
        public static let malformedSignature = "malformed_signature"
        /// Not exactly one signer, a digest other than SHA-1 / SHA-256, a signature or key that is not RSA ≥ 2048; a
        /// transaction receipt's signature of a version other than 2 or 3, or whose leaf key is not RSA of the
        /// version's size (1024 bits for 2, 2048 for 3).
        public static let unsupportedAlgorithm = "unsupported_algorithm"
        /// The signature does not verify over the content (a changed byte; a transaction receipt's: over its version
        /// byte and `purchase-info`), or its certificate is not embedded.
        public static let badSignature = "bad_signature"
        /// The receipt has no readable creation date (attribute 12) to judge the chain at.
        public static let noCreationDate = "no_creation_date"
        /// A transaction receipt has no readable purchase date (`purchase-date-ms`, `purchase-date`) to judge the
        /// chain at.
        public static let noPurchaseDate = "no_purchase_date"
        /// The chain does not end at a pinned root (a look-alike chain, no intermediate, an unknown root; a
        /// transaction receipt's leaf issued by no intermediate the trust holds).
        public static let untrustedRoot = "untrusted_root"
        /// A certificate of the chain is outside its validity at the creation date (a transaction receipt's purchase
        /// date).
        public static let certificateExpired = "certificate_expired"
        /// The leaf lacks 1.2.840.113635.100.6.11.1 or the intermediate 1.2.840.113635.100.6.2.1 (a version-2
        /// transaction receipt's: 1.2.840.113635.100.6.5.1 and 1.2.840.113635.100.6.2.2).
        public static let missingAppleMarker = "missing_apple_marker"
        /// Any other certificate defect: a leaf that is a CA, an intermediate that is not, a bad certificate
        /// signature, a strict-profile violation.
        public static let invalidCertificate = "invalid_certificate"
        /// The PKCS#7 envelope differs from Apple's where the signature does not cover it (a SignedData or SignerInfo
        /// version, algorithm parameters, a second digest algorithm, unsigned attributes, a CRL).
        public static let invalidEnvelope = "invalid_envelope"
        /// A certificate is embedded that is neither the leaf, nor its intermediate, nor the pinned root itself.
        public static let unexpectedCertificate = "unexpected_certificate"
        /// The chain ends at an extra root, which vouches for sandbox receipts only, and the receipt is not one.
        public static let sandboxOnlyRoot = "sandbox_only_root"
    }
}
