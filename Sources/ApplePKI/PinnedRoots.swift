public import Crypto

/// The roots a chain of Apple's may end at — for V2 signatures (Apple Root CA - G3) and for receipts (Apple Inc.
/// Root) alike: Apple's roots vouch for every environment; extra roots (a test PKI, the simulator's, named by
/// `trust.extra_roots` or `trust.extra_receipt_roots`) for sandbox payloads only, so a test or leaked root can never
/// vouch for a production purchase. A root given twice counts once, and a root in both lists stays trusted for
/// production. The system trust store is never used.
public struct PinnedRoots: Sendable {
    /// One pinned root and the path validator that ends at it.
    public struct Root: Sendable {
        public let certificate: X509Certificate
        public let store: X509TrustStore
        /// False for extra roots: they vouch for sandbox payloads only.
        public let trustedForProduction: Bool
    }

    /// A root given that is not a DER certificate, left out.
    public struct Unusable: Sendable {
        /// Its index in the list it was given in.
        public let index: Int
        /// True when it was one of the production (Apple's) roots.
        public let production: Bool
        public let error: CryptoError
    }

    public let roots: [Root]
    /// The roots given that are not certificates, in the order given; left out of ``roots``.
    public let unusable: [Unusable]

    /// `productionRoots` (Apple's, or a test root pinned as if it were) first, then `sandboxOnlyRoots`.
    public init(productionRoots: [[UInt8]], sandboxOnlyRoots: [[UInt8]] = []) {
        var roots: [Root] = []
        var unusable: [Unusable] = []
        let entries =
            productionRoots.enumerated().map { ($0.element, true, $0.offset) }
            + sandboxOnlyRoots.enumerated().map { ($0.element, false, $0.offset) }
        for (der, production, index) in entries {
            if roots.contains(where: { $0.certificate.der == der }) { continue }
            do {
                let certificate = try X509Certificate(der: der)
                let store = try X509TrustStore(anchor: certificate)
                roots.append(Root(certificate: certificate, store: store, trustedForProduction: production))
            } catch {
                unusable.append(Unusable(index: index, production: production, error: error))
            }
        }
        (self.roots, self.unusable) = (roots, unusable)
    }

    /// The pinned root whose DER is byte-equal to `der`, if any.
    public func root(matching der: [UInt8]) -> Root? { roots.first { $0.certificate.der == der } }
}
