public import Crypto

/// Signs compact JWS tokens the way the App Store does, for the simulator and tests (with a test PKI: whatever it
/// signs is honoured for sandbox payloads only, see ``TrustAnchors``):
/// header `{"alg":"ES256","x5c":[leaf,intermediate,root]}` (that member order, standard base64 DER with padding),
/// payload base64url without padding, signature the raw 64-byte `R‖S` over `header.payload`, base64url.
///
/// The header segment is encoded once here: it is identical for every token of one signer, which is exactly what
/// ``AppleJWSVerifier``'s chain cache keys on.
public struct AppleJWSSigner: Sendable {
    /// The base64url protected-header segment shared by every token this signer makes.
    public let headerSegment: String
    private let leafKey: PrivateKey

    /// Fails with `invalid_key` unless `leafKey` is a P-256 key (ES256) whose public half is the leaf's:
    /// any other combination would only produce tokens that never verify.
    public init(
        leaf: X509Certificate,
        intermediate: X509Certificate,
        root: X509Certificate,
        leafKey: PrivateKey
    ) throws(CryptoError) {
        let publicKey = leafKey.publicKey
        guard publicKey.isP256 else { throw CryptoError(.invalidKey, "ES256 needs a P-256 leaf key") }
        guard try leaf.publicKey().subjectPublicKeyInfo == publicKey.subjectPublicKeyInfo else {
            throw CryptoError(.invalidKey, "leaf key does not belong to the leaf certificate")
        }
        // Standard base64 has no character JSON would escape.
        let x5c = [leaf, intermediate, root].map { "\"" + Base64.encode($0.der, alphabet: .standard) + "\"" }
        let header = "{\"alg\":\"ES256\",\"x5c\":[" + x5c.joined(separator: ",") + "]}"
        self.headerSegment = Base64.encode(Array(header.utf8), alphabet: .url)
        self.leafKey = leafKey
    }

    /// A compact JWS over `payload` (the JSON bytes, signed exactly as given).
    public func sign(payload: [UInt8]) throws(CryptoError) -> String {
        try CompactES256.sign(headerSegment: headerSegment, payload: payload, key: leafKey)
    }
}
