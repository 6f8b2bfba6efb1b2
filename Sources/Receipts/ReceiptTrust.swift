internal import Crypto

/// The roots an app receipt's chain may end at (docs/architecture.md, "The receipt reader"). Apple Inc. Root (embedded,
/// ``appleIncRootDER``) vouches for every receipt; extra roots (`trust.extra_receipt_roots`, `receipt decode --root`,
/// the simulator's test PKI) vouch for sandbox receipts only (``DecodedReceipt/isSandbox``), so a test or leaked root
/// can never vouch for a production purchase. The system trust store is never used.
public struct ReceiptTrust: Sendable {
    /// One pinned root and the path validator that ends at it.
    struct Root: Sendable {
        let certificate: X509Certificate
        let store: X509TrustStore
        /// False for extra roots: they vouch for sandbox receipts only.
        let isApple: Bool
    }

    let roots: [Root]

    /// Indexes into the `extraSandboxRoots` given to ``init(extraSandboxRoots:)`` of the entries that are not DER
    /// X.509 certificates and were left out (the config loader checks its files first; this says which failed).
    public let unusableExtraRoots: [Int]

    /// DER of the embedded Apple Inc. Root (SHA-256 b0b1730e…f024), the root of App Store receipts.
    public static let appleIncRootDER: [UInt8] = AppleIncRoot.der

    /// Apple Inc. Root for every receipt, plus `extraSandboxRoots` (DER certificates) for sandbox receipts only.
    /// An entry that is not a certificate is left out and listed in ``unusableExtraRoots``; one equal to Apple's root
    /// changes nothing.
    public init(extraSandboxRoots: [[UInt8]] = []) {
        self.init(appleRoots: [Self.appleIncRootDER], sandboxRoots: extraSandboxRoots)
    }

    /// Tests only: `pinnedRoots` trusted as if they were Apple's (for every receipt, production included) — to
    /// exercise production rules with a test chain — and `extraSandboxRoots` as ``init(extraSandboxRoots:)`` has them.
    /// Apple's own root is not included unless listed.
    public init(pinnedRoots: [[UInt8]], extraSandboxRoots: [[UInt8]] = []) {
        self.init(appleRoots: pinnedRoots, sandboxRoots: extraSandboxRoots)
    }

    private init(appleRoots: [[UInt8]], sandboxRoots: [[UInt8]]) {
        var roots: [Root] = []
        var unusable: [Int] = []
        let entries =
            appleRoots.map { ($0, true, -1) } + sandboxRoots.enumerated().map { ($0.element, false, $0.offset) }
        for (der, isApple, index) in entries {
            if roots.contains(where: { $0.certificate.der == der }) { continue }
            guard let certificate = try? X509Certificate(der: der),
                let store = try? X509TrustStore(anchor: certificate)
            else {
                // Apple's embedded root always parses (a test checks it); a pinned test root that does not is the
                // test's own mistake, and is simply not trusted.
                if index >= 0 { unusable.append(index) }
                continue
            }
            roots.append(Root(certificate: certificate, store: store, isApple: isApple))
        }
        self.roots = roots
        self.unusableExtraRoots = unusable
    }

    /// The DER certificates of every root, Apple's first (what ``ReceiptSignature/root`` can name).
    public var rootCertificates: [(der: [UInt8], isApple: Bool)] { roots.map { ($0.certificate.der, $0.isApple) } }
}
