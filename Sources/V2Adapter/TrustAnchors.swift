public import ApplePKI
public import Crypto

/// The roots a V2 chain may end at. Apple's roots (by default only the embedded Apple Root CA - G3) are trusted for
/// every environment; extra roots (`trust.extra_roots`, `verify --root`, the simulator's) only for `Sandbox` payloads,
/// so a test or leaked root can never vouch for a production purchase. The system trust store is never used.
public final class TrustAnchors: Sendable {
    /// One pinned root and the path validator that ends at it.
    public typealias Root = PinnedRoots.Root

    public let pinned: PinnedRoots
    public var roots: [Root] { pinned.roots }

    /// Apple Root CA - G3 for all environments, plus `extraSandboxRoots` (DER) for sandbox only.
    public static func apple(extraSandboxRoots: [[UInt8]] = []) throws(CryptoError) -> TrustAnchors {
        try TrustAnchors(appleRoots: [AppleRootCAG3.der], sandboxOnlyRoots: extraSandboxRoots)
    }

    /// `appleRoots` are trusted like Apple's (tests pin a test root here to exercise production rules);
    /// `sandboxOnlyRoots` are honoured for sandbox payloads only. A root listed in both stays production-trusted.
    /// A root that is not a DER certificate is refused with its error: a configured root that does not read is a
    /// configuration mistake, never a root silently left out.
    public init(appleRoots: [[UInt8]], sandboxOnlyRoots: [[UInt8]] = []) throws(CryptoError) {
        let pinned = PinnedRoots(productionRoots: appleRoots, sandboxOnlyRoots: sandboxOnlyRoots)
        if let first = pinned.unusable.first { throw first.error }
        self.pinned = pinned
    }

    /// The pinned root whose DER is byte-equal to `der`, if any.
    func root(matching der: [UInt8]) -> Root? { pinned.root(matching: der) }

    /// DER of the embedded Apple Root CA - G3.
    public static var appleRootCAG3: [UInt8] { AppleRootCAG3.der }
}
