internal import COpenSSL

/// The one error type of the `Crypto` module. Equality uses the code only; `reason` never holds key or payload bytes.
public struct CryptoError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Bytes that are not a DER-encoded X.509 certificate.
        public static let invalidCertificate = Self(rawValue: "invalid_certificate")
        /// A key that cannot be decoded, or of the wrong kind for the operation.
        public static let invalidKey = Self(rawValue: "invalid_key")
        /// Bytes that are not a DER ECDSA signature.
        public static let invalidSignature = Self(rawValue: "invalid_signature")
        /// Text that is not valid base64 in the expected alphabet.
        public static let invalidBase64 = Self(rawValue: "invalid_base64")
        /// A certificate-builder input that cannot be encoded: a malformed OID or extension value, a duplicate
        /// extension, an empty name field, a country that is not two letters, a path length without CA, an empty
        /// validity window.
        public static let invalidArgument = Self(rawValue: "invalid_argument")
        /// Bytes that are not a CMS (PKCS#7) SignedData with its content embedded, in DER or BER.
        public static let invalidCMS = Self(rawValue: "invalid_cms")
        /// A signature made with an algorithm outside what the operation accepts (a CMS signer digest other than
        /// SHA-1 or SHA-256, a key that is not RSA of at least 2048 bits, more than one signer).
        public static let unsupportedAlgorithm = Self(rawValue: "unsupported_algorithm")
        /// A well-formed signature that does not verify with its signer's key (or whose signer is not embedded).
        public static let badSignature = Self(rawValue: "bad_signature")
        /// OpenSSL failed an operation that should not fail (allocation, encoding).
        public static let internalFailure = Self(rawValue: "internal_failure")
    }

    public var code: Code
    public var reason: String
    public var location: String

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        (self.code, self.reason, self.location) = (code, reason, "\(file):\(line)")
    }

    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "CryptoError.\(code): \(reason) (\(location))" }

    /// Drains OpenSSL's thread-local error queue into one line (library reason strings only).
    static func drainOpenSSLErrors() -> String {
        var parts: [String] = []
        while true {
            let e = ERR_get_error()
            if e == 0 { break }
            if let s = ERR_reason_error_string(e) {
                parts.append(String(cString: s))
            } else {
                parts.append("error \(e)")
            }
        }
        return parts.joined(separator: "; ")
    }
}
