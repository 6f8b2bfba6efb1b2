public import Crypto

/// A team API key of the App Store Connect API (Users and Access → Integrations → App Store Connect API; role App
/// Manager or Admin to modify apps): its issuer id, key id and P-256 private key, the `.p8` file App Store Connect
/// lets you download once.
///
/// Not the In-App Purchase key the App Store Server API takes: App Store Connect refuses that
/// one (`401`). The key never appears in ``description`` or in an error.
public struct AppStoreConnectCredentials: Sendable, CustomStringConvertible {
    /// The team's issuer id (a UUID), the token's `iss`.
    public var issuerID: String
    /// The key's id, the token header's `kid`.
    public var keyID: String
    /// The key (P-256).
    public var privateKey: PrivateKey

    public init(issuerID: String, keyID: String, privateKey: PrivateKey) {
        (self.issuerID, self.keyID, self.privateKey) = (issuerID, keyID, privateKey)
    }

    /// The key read from the `.p8` file's PEM text; `invalid_key` unless it is a P-256 private key (the error never
    /// repeats the text).
    public init(issuerID: String, keyID: String, privateKeyPEM pem: String) throws(AppStoreConnectError) {
        guard let key = try? PrivateKey(pem: pem), key.publicKey.isP256 else {
            throw AppStoreConnectError(
                .invalidKey,
                "the App Store Connect API key is not a P-256 private key in PEM (the .p8 file)"
            )
        }
        self.init(issuerID: issuerID, keyID: keyID, privateKey: key)
    }

    /// Everything but the key.
    public var description: String {
        "AppStoreConnectCredentials(issuerID: \(issuerID), keyID: \(keyID), privateKey: <redacted>)"
    }
}
