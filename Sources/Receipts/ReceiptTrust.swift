internal import ApplePKI
internal import Crypto

/// The roots a receipt's chain may end at (docs/architecture.md, "The receipt reader"). Apple Inc. Root (embedded,
/// ``appleIncRootDER``) vouches for every receipt; extra roots (`trust.extra_receipt_roots`, `receipt decode --root`,
/// the simulator's test PKI) vouch for sandbox receipts only (``DecodedReceipt/isSandbox``), so a test or leaked root
/// can never vouch for a production purchase. The system trust store is never used.
///
/// Also the intermediates of iOS 6 transaction receipts, whose signature carries the leaf alone: Apple's, embedded
/// (``appleTransactionIntermediatesDER``), and for tests those of a test chain. An intermediate adds no trust: a chain
/// through one must still validate to one of the roots.
public struct ReceiptTrust: Sendable {
    /// Apple Inc. Root for every receipt (or, in tests, roots pinned as if Apple's), extra roots for sandbox only.
    let pinned: PinnedRoots
    var roots: [PinnedRoots.Root] { pinned.roots }

    /// The intermediates a transaction receipt's leaf may be issued by: Apple's, then the extra ones.
    let transactionIntermediates: [X509Certificate]

    /// Indexes into the `extraSandboxRoots` given to ``init(extraSandboxRoots:)`` of the entries that are not DER
    /// X.509 certificates and were left out (the config loader checks its files first; this says which failed).
    public let unusableExtraRoots: [Int]

    /// DER of the embedded Apple Inc. Root (SHA-256 b0b1730e…f024), the root of App Store receipts.
    public static let appleIncRootDER: [UInt8] = AppleIncRoot.der

    /// DER of the embedded intermediates of iOS 6 transaction receipts: Apple iTunes Store Certification Authority
    /// (SHA-256 447ad654…c016; version 2), Apple Worldwide Developer Relations CA (ce057691…09c2) and its G5
    /// (53fd0082…0760; version 3). All three are issued by Apple Inc. Root.
    public static let appleTransactionIntermediatesDER: [[UInt8]] = [
        AppleITunesStoreCA.der, AppleWWDRCA.first, AppleWWDRCA.g5,
    ]

    /// Apple Inc. Root for every receipt, plus `extraSandboxRoots` (DER certificates) for sandbox receipts only.
    /// An entry that is not a certificate is left out and listed in ``unusableExtraRoots``; one equal to Apple's root
    /// changes nothing. `extraIntermediates` (DER; tests) are the intermediates of transaction receipts signed by a
    /// test chain, beside Apple's embedded ones; one that is not a certificate is left out.
    public init(extraSandboxRoots: [[UInt8]] = [], extraIntermediates: [[UInt8]] = []) {
        self.init(
            appleRoots: [Self.appleIncRootDER],
            sandboxRoots: extraSandboxRoots,
            intermediates: extraIntermediates
        )
    }

    /// Tests only: `pinnedRoots` trusted as if they were Apple's (for every receipt, production included) — to
    /// exercise production rules with a test chain — and `extraSandboxRoots` and `extraIntermediates` as
    /// ``init(extraSandboxRoots:extraIntermediates:)`` has them. Apple's own root is not included unless listed.
    public init(pinnedRoots: [[UInt8]], extraSandboxRoots: [[UInt8]] = [], extraIntermediates: [[UInt8]] = []) {
        self.init(appleRoots: pinnedRoots, sandboxRoots: extraSandboxRoots, intermediates: extraIntermediates)
    }

    private init(appleRoots: [[UInt8]], sandboxRoots: [[UInt8]], intermediates: [[UInt8]]) {
        pinned = PinnedRoots(productionRoots: appleRoots, sandboxOnlyRoots: sandboxRoots)
        // Apple's embedded root always parses (a test checks it); a pinned test root that does not is the test's own
        // mistake, and is simply not trusted.
        unusableExtraRoots = pinned.unusable.filter { !$0.production }.map(\.index)
        var known: [X509Certificate] = []
        for der in Self.appleTransactionIntermediatesDER + intermediates where !known.contains(where: { $0.der == der })
        {
            // Apple's embedded intermediates always parse (a test checks them).
            if let certificate = try? X509Certificate(der: der) { known.append(certificate) }
        }
        self.transactionIntermediates = known
    }

    /// The DER certificates of every root, Apple's first (what ``ReceiptSignature/root`` can name).
    public var rootCertificates: [(der: [UInt8], isApple: Bool)] {
        roots.map { ($0.certificate.der, $0.trustedForProduction) }
    }
}
