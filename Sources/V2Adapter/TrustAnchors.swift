public import Crypto

/// The roots a V2 chain may end at. Apple's roots (by default only the embedded Apple Root CA - G3) are trusted for
/// every environment; extra roots (`trust.extra_roots`, `verify --root`, the simulator's) only for `Sandbox` payloads,
/// so a test or leaked root can never vouch for a production purchase. The system trust store is never used.
public final class TrustAnchors: Sendable {
    /// One pinned root and the path validator that ends at it.
    public struct Root: Sendable {
        public let certificate: X509Certificate
        let store: X509TrustStore
        /// False for extra roots: they vouch for sandbox payloads only.
        public let trustedForProduction: Bool
    }

    public let roots: [Root]

    /// Apple Root CA - G3 for all environments, plus `extraSandboxRoots` (DER) for sandbox only.
    public static func apple(extraSandboxRoots: [[UInt8]] = []) throws(CryptoError) -> TrustAnchors {
        try TrustAnchors(appleRoots: [AppleRootCAG3.der], sandboxOnlyRoots: extraSandboxRoots)
    }

    /// `appleRoots` are trusted like Apple's (tests pin a test root here to exercise production rules);
    /// `sandboxOnlyRoots` are honoured for sandbox payloads only. A root listed in both stays production-trusted.
    public init(appleRoots: [[UInt8]], sandboxOnlyRoots: [[UInt8]] = []) throws(CryptoError) {
        var roots: [Root] = []
        for (der, production) in appleRoots.map({ ($0, true) }) + sandboxOnlyRoots.map({ ($0, false) }) {
            if roots.contains(where: { $0.certificate.der == der }) { continue }
            let cert = try X509Certificate(der: der)
            roots.append(
                Root(certificate: cert, store: try X509TrustStore(anchor: cert), trustedForProduction: production)
            )
        }
        self.roots = roots
    }

    /// The pinned root whose DER is byte-equal to `der`, if any.
    func root(matching der: [UInt8]) -> Root? { roots.first { $0.certificate.der == der } }

    /// DER of the embedded Apple Root CA - G3.
    public static var appleRootCAG3: [UInt8] { AppleRootCAG3.der }
}
