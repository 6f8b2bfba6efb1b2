public import Crypto

/// Builds compact JWS tokens at run time, for cases a fixture file cannot hold (a 1 MiB header), that must share a
/// header byte-for-byte with another token (chain-cache tests), or whose header is not Apple's (the negative cases
/// of `CodeBuiltChainTests`: another `alg`, another x5c, a P-384 key). ``TestSigner`` is the friendlier face.
public enum TestJWS {
    /// `{"alg":"ES256","x5c":[…]}` with the given certificates (DER), standard base64 as Apple writes them.
    public static func header(alg: String = "ES256", certificates: [[UInt8]]) -> String {
        let x5c = certificates.map { "\"" + Base64.encode($0, alphabet: .standard) + "\"" }.joined(separator: ",")
        return "{\"alg\":\"\(alg)\",\"x5c\":[\(x5c)]}"
    }

    /// The standard test chain of `Fixtures/test-pki`: leaf, intermediate, root.
    public static func standardHeader() throws -> String {
        header(certificates: [try TestPKI.der("leaf"), try TestPKI.der("intermediate"), try TestPKI.der("root")])
    }

    /// Signs `payloadJSON` under `headerJSON` with `key` (raw R‖S signature).
    public static func sign(headerJSON: String, payloadJSON: String, key: PrivateKey) throws -> [UInt8] {
        let input =
            Base64.encode(Array(headerJSON.utf8), alphabet: .url) + "."
            + Base64.encode(Array(payloadJSON.utf8), alphabet: .url)
        return Array(try sign(signingInput: input, key: key).utf8)
    }

    /// `signingInput + "." + signature`: the segments are signed exactly as given (a test may have broken them on
    /// purpose). The signature is ECDSA over SHA-256, raw `R‖S` with each half as long as the key's field: 64 bytes
    /// for a P-256 key (ES256), 96 for a P-384 one (which no ES256 verifier may accept).
    public static func sign(signingInput: String, key: PrivateKey) throws -> String {
        let message = Array(signingInput.utf8)
        let signature =
            key.publicKey.isP256 ? try key.signES256(message) : try rawSignature(der: key.signDER(message), half: 48)
        return signingInput + "." + Base64.encode(signature, alphabet: .url)
    }

    /// The token with its payload segment replaced by `payloadJSON` (header and signature kept): a forgery.
    public static func replacingPayload(of token: String, with payloadJSON: String) -> String {
        var parts = segments(token)
        parts[1] = Base64.encode(Array(payloadJSON.utf8), alphabet: .url)
        return parts.joined(separator: ".")
    }

    /// The dot-separated segments, empty ones included.
    public static func segments(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// `SEQUENCE { r INTEGER, s INTEGER }` → `r‖s`, each left-padded to `half` bytes.
    static func rawSignature(der: [UInt8], half: Int) throws -> [UInt8] {
        var i = 2  // SEQUENCE tag and a short length: a P-384 signature is at most 104 bytes
        guard der.count > 2, der[0] == 0x30, der[1] < 0x80 else {
            throw FixtureError(description: "not a DER ECDSA signature")
        }
        var out: [UInt8] = []
        for _ in 0..<2 {
            guard i + 2 <= der.count, der[i] == 0x02 else {
                throw FixtureError(description: "not a DER ECDSA signature")
            }
            let length = Int(der[i + 1])
            let integer = der[(i + 2)..<min(i + 2 + length, der.count)].drop { $0 == 0 }
            guard integer.count <= half else {
                throw FixtureError(description: "signature integer longer than \(half) bytes")
            }
            out += [UInt8](repeating: 0, count: half - integer.count) + integer
            i += 2 + length
        }
        return out
    }

    /// A TEST notification for `bundle` in `environment`, signed by the standard test leaf at `signedDate`.
    public static func testNotification(
        bundle: String = "com.example.gateway",
        environment: String = "Sandbox",
        signedDate: Int64 = 1_748_736_000_000,
        uuid: String = "00000000-0000-4000-8000-000000000001"
    ) throws -> [UInt8] {
        let payload = TestNotification.test(
            bundleID: bundle,
            environment: environment,
            signedDate: signedDate,
            uuid: uuid
        ).payloadJSON()
        return try sign(headerJSON: try standardHeader(), payloadJSON: payload, key: try TestPKI.key("leaf"))
    }
}
