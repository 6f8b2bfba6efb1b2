internal import Crypto
package import HTTPClient

/// Standard Webhooks signatures (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of
/// id.timestamp.body>`). During a rotation several secrets sign and every signature is sent, space-separated.
public struct WebhookSigner: Sendable {
    /// One `whsec_…` secret: the key is the base64 text after the prefix. `name` is the variable it came from.
    public struct Secret: Sendable, CustomStringConvertible {
        public let name: String
        package let key: [UInt8]
        public var description: String { "WebhookSigner.Secret(\(name))" }

        /// Parses `whsec_<base64>`; nil when the text is not such a secret (the error message names only `name`).
        /// The base64 may come without its `=` padding: the official Standard Webhooks libraries accept that and
        /// derive the same key, so a secret they accept is accepted here.
        public init?(name: String, text: String) {
            guard text.hasPrefix("whsec_") else { return nil }
            var encoded = Array(text.utf8.dropFirst(6))
            if encoded.count % 4 != 0, !encoded.contains(UInt8(ascii: "=")) {
                encoded += Array(repeating: UInt8(ascii: "="), count: 4 - encoded.count % 4)
            }
            guard let key = try? Base64.decode(encoded, alphabet: .standard), key.count >= 16 else { return nil }
            (self.name, self.key) = (name, key)
        }
    }

    public let secrets: [Secret]
    public init(secrets: [Secret]) { self.secrets = secrets }

    /// The three headers for one attempt. `id` and `timestamp` must not contain '.'.
    public func headers(id: String, timestamp: Int64, body: [UInt8]) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("webhook-id", id), ("webhook-timestamp", String(timestamp))]
        if !secrets.isEmpty {
            headers.append(("webhook-signature", signature(id: id, timestamp: timestamp, body: body)))
        }
        return headers
    }

    /// A signed JSON POST's headers: `Content-Type` and the three above.
    package func jsonHeaders(id: String, timestamp: Int64, body: [UInt8]) -> [HTTPHeader] {
        [HTTPHeader("Content-Type", "application/json")]
            + headers(id: id, timestamp: timestamp, body: body).map { HTTPHeader($0.name, $0.value) }
    }

    /// `v1,<sig>` for each secret, space-separated.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        let content = Array("\(id).\(timestamp).".utf8) + body
        return secrets.map {
            "v1," + Base64.encode(HMACSHA256.authenticationCode(key: $0.key, message: content), alphabet: .standard)
        }
        .joined(separator: " ")
    }

    /// What a receiver does: true when any `v1` signature in `header` matches one of `secrets` (constant time).
    public static func verify(header: String, id: String, timestamp: Int64, body: [UInt8], secrets: [Secret]) -> Bool {
        let content = Array("\(id).\(timestamp).".utf8) + body
        let expected = secrets.map { HMACSHA256.authenticationCode(key: $0.key, message: content) }
        var ok = false
        for entry in header.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1",
                let sig = try? Base64.decode(Array(parts[1].utf8), alphabet: .standard)
            else {
                continue
            }
            for e in expected where Bytes.constantTimeEqual(e, sig) { ok = true }
        }
        return ok
    }
}

extension WebhookSigner {
    /// A signer with the secrets the variables `names` hold; fails naming `field` when one is unset or not a `whsec_`
    /// secret.
    package static func fromEnvironment(
        _ names: [String],
        field: String,
        environment env: [String: String]
    ) throws(ConfigError) -> WebhookSigner {
        var secrets: [WebhookSigner.Secret] = []
        for name in names {
            guard let text = env[name], !text.isEmpty else {
                throw ConfigError(field: field, "environment variable \(name) is not set")
            }
            guard let secret = WebhookSigner.Secret(name: name, text: text) else {
                throw ConfigError(field: field, "\(name) is not a whsec_ secret (base64 of at least 16 bytes)")
            }
            secrets.append(secret)
        }
        return WebhookSigner(secrets: secrets)
    }
}
