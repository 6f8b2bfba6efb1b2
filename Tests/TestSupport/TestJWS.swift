public import Crypto

/// Builds compact JWS tokens at run time with the test PKI, for cases a fixture file cannot hold (a 1 MiB header)
/// or that must share a header byte-for-byte with another token (chain-cache tests).
public enum TestJWS {
    /// `{"alg":"ES256","x5c":[…]}` with the given certificates (DER), standard base64 as Apple writes them.
    public static func header(alg: String = "ES256", certificates: [[UInt8]]) -> String {
        let x5c = certificates.map { "\"" + Base64.encode($0, alphabet: .standard) + "\"" }.joined(separator: ",")
        return "{\"alg\":\"\(alg)\",\"x5c\":[\(x5c)]}"
    }

    /// The standard test chain: leaf, intermediate, root.
    public static func standardHeader() throws -> String {
        header(certificates: [try TestPKI.der("leaf"), try TestPKI.der("intermediate"), try TestPKI.der("root")])
    }

    /// Signs `payloadJSON` under `headerJSON` with `key` (raw R‖S signature).
    public static func sign(headerJSON: String, payloadJSON: String, key: PrivateKey) throws -> [UInt8] {
        let input = Base64.encode(Array(headerJSON.utf8), alphabet: .url) + "." + Base64.encode(Array(payloadJSON.utf8), alphabet: .url)
        let signature = try key.signES256(Array(input.utf8))
        return Array((input + "." + Base64.encode(signature, alphabet: .url)).utf8)
    }

    /// A TEST notification for `bundle` in `environment`, signed by the standard test leaf at `signedDate`.
    public static func testNotification(
        bundle: String = "com.example.gateway", environment: String = "Sandbox", signedDate: Int64 = 1_748_736_000_000,
        uuid: String = "00000000-0000-4000-8000-000000000001"
    ) throws -> [UInt8] {
        let payload = """
            {"notificationType":"TEST","notificationUUID":"\(uuid)","data":{"bundleId":"\(bundle)",\
            "environment":"\(environment)"},"version":"2.0","signedDate":\(signedDate)}
            """
        return try sign(headerJSON: try standardHeader(), payloadJSON: payload, key: try TestPKI.key("leaf"))
    }
}
