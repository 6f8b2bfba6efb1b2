public import AppStoreConnect
public import HTTPClient
public import ServiceKit

extension AppStoreConnectClient {
    /// The client the configuration's `app_store_connect` describes, its key read from the environment variable
    /// `private_key_env` names; nil when the file has no `app_store_connect`. A ``ConfigError`` naming
    /// `app_store_connect.private_key_env` when the variable is unset or empty, or does not hold a P-256 private key
    /// in PEM (the `.p8` file); the key itself never appears in an error.
    public static func make(
        config: GatewayConfig,
        environment: [String: String],
        transport: any HTTPTransport,
        now: @escaping @Sendable () -> Int64
    ) throws(ConfigError) -> AppStoreConnectClient? {
        guard let settings = config.appStoreConnect else { return nil }
        let field = "app_store_connect.private_key_env"
        let variable = settings.privateKeyEnv
        guard let pem = environment[variable], !pem.isEmpty else {
            throw ConfigError(field: field, "environment variable \(variable) is not set")
        }
        let credentials: AppStoreConnectCredentials
        do {
            credentials = try AppStoreConnectCredentials(
                issuerID: settings.issuerID,
                keyID: settings.keyID,
                privateKeyPEM: pem
            )
        } catch {
            throw ConfigError(
                field: field,
                "\(variable) does not hold a P-256 private key in PEM (the .p8 file of an App Store Connect API key)"
            )
        }
        return AppStoreConnectClient(baseURL: settings.url, credentials: credentials, transport: transport, now: now)
    }
}
