/// The compact serialization of a JWS signed with ES256 (RFC 7515 §7.1, RFC 7518 §3.4): three base64url segments
/// without padding, `header.payload.signature`, the signature the raw 64-byte `R‖S` over `header.payload`.
///
/// The one place a compact token is signed and its signature checked: the App Store Server API's and the App Store
/// Connect API's bearer tokens, the simulator's signed payloads, and the fakes that check tokens. What the header and
/// the payload say is the caller's business (this module knows no JSON); Apple's chain policy for notifications is
/// `V2Adapter`'s.
public enum CompactES256 {
    /// A token's three segments, decoded; nothing verified.
    public struct Parts: Sendable {
        /// The protected header's bytes (JSON, for the caller to parse).
        public let header: [UInt8]
        /// The payload's bytes.
        public let payload: [UInt8]
        /// The signature's bytes: 64 for ES256.
        public let signature: [UInt8]
        /// `header.payload` as sent: what the signature covers.
        public let signingInput: [UInt8]

        /// Whether the signature is an ES256 signature of ``signingInput`` by `publicKey` (a P-256 key).
        public func verifies(with publicKey: PublicKey) -> Bool {
            signature.count == 64
                && signingInput.withUnsafeBytes { publicKey.verifyES256(signature: signature, message: $0) }
        }
    }

    /// A compact token over `header` and `payload` (JSON bytes, signed exactly as given).
    public static func sign(header: [UInt8], payload: [UInt8], key: PrivateKey) throws(CryptoError) -> String {
        try sign(headerSegment: Base64.encode(header, alphabet: .url), payload: payload, key: key)
    }

    /// A compact token whose header segment is already encoded (a signer whose header never changes encodes it once).
    public static func sign(headerSegment: String, payload: [UInt8], key: PrivateKey) throws(CryptoError) -> String {
        let signingInput = headerSegment + "." + Base64.encode(payload, alphabet: .url)
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + Base64.encode(signature, alphabet: .url)
    }

    /// The three segments of `token` decoded; nil unless it is exactly three base64url segments.
    public static func split(_ token: String) -> Parts? {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3,
            let header = try? Base64.decode(Array(segments[0].utf8), alphabet: .url),
            let payload = try? Base64.decode(Array(segments[1].utf8), alphabet: .url),
            let signature = try? Base64.decode(Array(segments[2].utf8), alphabet: .url)
        else { return nil }
        let signingInput = Array(segments[0].utf8) + [UInt8(ascii: ".")] + Array(segments[1].utf8)
        return Parts(header: header, payload: payload, signature: signature, signingInput: signingInput)
    }
}
