internal import ApplePKI
internal import Canonical
internal import Crypto
internal import WireJSON

/// Apple's JWS policy for one token (docs/architecture.md, "V2 authentication"): `alg` exactly `ES256`; exactly three standard-base64 DER
/// certificates in `x5c`; `x5c[2]` byte-equal to a pinned root; leaf → intermediate → that root valid at the
/// validation time (RFC 5280 strict profile); Apple's marker OIDs on leaf and intermediate; CA only on the
/// intermediate; a P-256 leaf key; a raw 64-byte `R‖S` signature over `header.payload`. Roots other than Apple's
/// vouch for sandbox payloads only. Verified chains are cached (bounded, see ``ChainCache``): by header bytes once a
/// token's signature verified, by certificates once the chain validated.
public final class AppleJWSVerifier: Sendable {
    /// Leaf marker: "Mac App Store and iTunes Store Receipt Signing".
    public static let leafMarkerOID = AppleMarkerOID.storeKitLeaf
    /// Intermediate marker: Apple Worldwide Developer Relations CA.
    public static let intermediateMarkerOID = AppleMarkerOID.developerRelationsIntermediate

    public let anchors: TrustAnchors
    let cache: ChainCache

    /// `chainCacheCapacity` 0 turns the cache off (every token re-validates its chain: the "cold" benchmark).
    public init(anchors: TrustAnchors, chainCacheCapacity: Int = 64) {
        self.anchors = anchors
        self.cache = ChainCache(capacity: chainCacheCapacity)
    }

    /// Statistics of the header-bytes cache (the fast path) since creation.
    public var chainCacheStatistics: (hits: Int, misses: Int, entries: Int) { cache.statistics }

    /// Statistics of the by-certificates cache (headers seen for the first time) since creation.
    public var certificateCacheStatistics: (hits: Int, misses: Int, entries: Int) { cache.certificateStatistics }

    /// Proves `jws` was signed by a chain this verifier trusts, valid at `time` (ms since the epoch), for a payload
    /// of `environment`. Returns the leaf's serial number (for logs). The payload itself was parsed by the caller.
    ///
    /// `time` is whatever the payload claims (`Int64.min` included): it is floored to whole seconds without
    /// arithmetic that could overflow, and a time outside every certificate's validity is `certificate_expired`.
    func authenticate(
        _ jws: CompactJWS,
        at time: Int64,
        environment: AppStoreEnvironment?
    ) throws(V2AdapterError) -> String {
        let seconds = time.flooredQuotient(dividingBy: 1000)
        let headerKey = ChainCache.Key(bytes: Array(jws.headerSegment))
        let chain: VerifiedChain
        let headerWasCached: Bool
        if let cached = cache.lookup(header: headerKey) {
            // Fast path: these exact header bytes already carried a verified signature.
            try Self.checkWindow(cached, at: seconds)
            (chain, headerWasCached) = (cached, true)
        } else {
            let header = try jws.decodeHeader()
            try Self.checkShape(header)
            let certificatesKey = ChainCache.Key(certificates: header.x5c)
            if let known = cache.lookup(certificates: certificatesKey) {
                // A new encoding of a header naming a chain that validated before: no chain validation to repeat.
                try Self.checkWindow(known, at: seconds)
                chain = known
            } else {
                chain = try validateChain(header, at: seconds)
                cache.insert(certificates: certificatesKey, chain)
            }
            headerWasCached = false
        }
        if !chain.trustedForProduction, environment != .sandbox {
            throw V2AdapterError(.untrustedRoot, "an extra (non-Apple) root vouches for sandbox payloads only")
        }
        guard jws.signature.count == 64 else {
            throw V2AdapterError(.badSignature, "signature is \(jws.signature.count) bytes, not a raw 64-byte R‖S")
        }
        let ok = jws.token.withUnsafeBytes { buf in
            chain.leafKey.verifyES256(
                signature: jws.signature,
                message: UnsafeRawBufferPointer(rebasing: buf[0..<jws.payloadEnd])
            )
        }
        guard ok else { throw V2AdapterError(.badSignature, "ES256 signature does not verify") }
        // Only now may these header bytes take a slot: a token that fails its signature (a re-encoded header with
        // Apple's real certificates, say) must never evict the entry of a genuine one.
        if !headerWasCached { cache.insert(header: headerKey, chain) }
        return chain.leafSerial
    }

    /// `notBefore <= t < notAfter` of every certificate, as OpenSSL judges it.
    private static func checkWindow(_ chain: VerifiedChain, at seconds: Int64) throws(V2AdapterError) {
        guard seconds >= chain.notBefore, seconds < chain.notAfter else {
            throw V2AdapterError(.certificateExpired, "certificate chain not valid at the signed date")
        }
    }

    /// What every header must say, whichever way its chain is found: `alg` exactly ES256 and three certificates.
    private static func checkShape(_ header: CompactJWS.Header) throws(V2AdapterError) {
        guard header.alg == "ES256" else { throw V2AdapterError(.unsupportedAlgorithm, "alg is not ES256") }
        guard header.x5c.count == 3 else {
            throw V2AdapterError(.invalidChainLength, "x5c holds \(header.x5c.count) certificates, not 3")
        }
    }

    /// Full validation of a header's chain (``checkShape(_:)`` has passed).
    private func validateChain(_ header: CompactJWS.Header, at seconds: Int64) throws(V2AdapterError) -> VerifiedChain {
        var ders: [[UInt8]] = []
        for (i, text) in header.x5c.enumerated() {
            do { ders.append(try Base64.decode(Array(text.utf8), alphabet: .standard)) } catch {
                throw V2AdapterError(.invalidCertificate, "x5c[\(i)] is not standard base64")
            }
        }
        guard let root = anchors.root(matching: ders[2]) else {
            throw V2AdapterError(.untrustedRoot, "x5c[2] is not a pinned root certificate")
        }
        let leaf: X509Certificate
        let intermediate: X509Certificate
        do {
            leaf = try X509Certificate(der: ders[0])
            intermediate = try X509Certificate(der: ders[1])
        } catch {
            throw V2AdapterError(.invalidCertificate, "x5c certificate does not decode")
        }
        let leafKey: PublicKey
        do { leafKey = try leaf.publicKey() } catch { throw V2AdapterError(.invalidCertificate, "leaf key unreadable") }
        guard leafKey.isP256 else { throw V2AdapterError(.invalidCertificate, "leaf key is not P-256") }
        guard !leaf.isCA else { throw V2AdapterError(.invalidCertificate, "leaf certificate is a CA") }
        guard intermediate.isCA else {
            throw V2AdapterError(.invalidCertificate, "intermediate certificate is not a CA")
        }
        guard intermediate.hasExtension(oid: Self.intermediateMarkerOID) else {
            throw V2AdapterError(.missingAppleMarker, "intermediate lacks \(Self.intermediateMarkerOID)")
        }
        guard leaf.hasExtension(oid: Self.leafMarkerOID) else {
            throw V2AdapterError(.missingAppleMarker, "leaf lacks \(Self.leafMarkerOID)")
        }
        do {
            try root.store.validate(leaf: leaf, intermediates: [intermediate], at: seconds)
        } catch {
            switch error.kind {
            case .untrustedIssuer:
                throw V2AdapterError(.untrustedRoot, "chain does not end at x5c[2]: \(error.message)")
            case .outsideValidity: throw V2AdapterError(.certificateExpired, "at the signed date: \(error.message)")
            case .invalid: throw V2AdapterError(.invalidCertificate, error.message)
            }
        }
        let certs = [leaf, intermediate, root.certificate]
        guard let notBefore = certs.compactMap(\.notBefore).max(), let notAfter = certs.compactMap(\.notAfter).min()
        else {
            throw V2AdapterError(.invalidCertificate, "unreadable validity dates")
        }
        return VerifiedChain(
            leafKey: leafKey,
            leafSerial: leaf.serialNumberHex,
            notBefore: notBefore,
            notAfter: notAfter,
            trustedForProduction: root.trustedForProduction
        )
    }
}
