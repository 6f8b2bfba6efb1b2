internal import ServiceKit
internal import TeamDatabase
internal import V1Adapter
public import WireJSON

/// The secrets a config names, read from the environment (the file never holds one; docs/configuration.md): each
/// app's V1 shared secrets, each webhook downstream's signing secrets, each PostgreSQL database downstream's connection
/// string and the admin bearer token.
struct ServiceSecrets: Sendable {
    /// The apps as the V1 adapter sees them, with their shared secrets.
    let v1Apps: [V1App]
    /// Every configured V1 shared secret.
    let v1Secrets: [SharedSecret]
    /// Per webhook downstream (by name), its signer.
    let signers: [String: WebhookSigner]
    /// The signer of `alerts.webhook`, when it is configured.
    let alertSigner: WebhookSigner?
    /// Per PostgreSQL `database` downstream (by name), its connection string (`url_env`): passed to libpq untouched,
    /// never logged.
    let databaseURLs: [String: String]
    /// nil when the variable `admin.token_env` names is unset or empty: the admin API is then off.
    let adminToken: [UInt8]?
    /// Every secret above, the App Store Server API key and the App Store Connect API key: what must never be stored
    /// or logged (docs/threat-model.md, "Secret disclosure").
    let redactor: SecretRedactor

    /// Fails with a ``ConfigError`` naming the field whose variable is unset, or whose webhook secret is not a
    /// `whsec_` secret.
    init(config: GatewayConfig, environment env: [String: String]) throws(ConfigError) {
        let (v1Apps, unresolved) = config.v1Apps(environment: env)
        if let missing = unresolved.first {
            let index = config.apps.firstIndex { $0.bundleID == missing.bundle } ?? 0
            throw ConfigError(
                field: "apps[\(index)].shared_secret_env",
                "environment variable \(missing.variable) is not set"
            )
        }
        self.v1Apps = v1Apps
        v1Secrets = v1Apps.flatMap(\.sharedSecrets)
        var signers: [String: WebhookSigner] = [:]
        for (i, d) in config.downstreams.enumerated() where d.kind == .webhook {
            signers[d.name] = try WebhookSigner.fromEnvironment(
                d.secretEnv,
                field: "downstreams[\(i)].secret_env",
                environment: env
            )
        }
        self.signers = signers
        alertSigner = try config.alertWebhook.map { alerts throws(ConfigError) in
            try WebhookSigner.fromEnvironment(alerts.secretEnv, field: "alerts.secret_env", environment: env)
        }
        var databaseURLs: [String: String] = [:]
        for (i, d) in config.downstreams.enumerated() {
            guard case .postgres(let variable, _)? = d.database else { continue }
            guard let url = env[variable], !url.isEmpty else {
                throw ConfigError(field: "downstreams[\(i)].url_env", "environment variable \(variable) is not set")
            }
            do throws(DownstreamDatabaseError) {
                try PostgresDownstream.validate(connectionString: url, label: variable)
            } catch {
                throw ConfigError(
                    field: "downstreams[\(i)].url_env",
                    "\(variable) is not a PostgreSQL connection string (URI or key=value)"
                )
            }
            databaseURLs[d.name] = url
        }
        self.databaseURLs = databaseURLs
        if let tokenText = env[config.adminTokenEnv], !tokenText.isEmpty {
            adminToken = Array(tokenText.utf8)
        } else {
            adminToken = nil
        }
        redactor = config.secretRedactor(environment: env)
    }
}

extension GatewayConfig {
    /// The configured secrets as values to keep out of stored and logged bytes: each V1 shared secret, webhook secret,
    /// database connection string and the admin token whole; a private key (PEM: the App Store Server API's and the
    /// App Store Connect API's) by each line of its base64, so that any part of it is found.
    public func secretRedactor(environment env: [String: String]) -> SecretRedactor {
        var variables: [String] = apps.flatMap(\.sharedSecretEnv)
        variables += downstreams.flatMap(\.secretEnv) + (alertWebhook?.secretEnv ?? [])
        variables += apps.flatMap { $0.consumption?.askSecretEnv ?? [] }
        for d in downstreams { if case .postgres(let variable, _)? = d.database { variables.append(variable) } }
        variables.append(adminTokenEnv)
        var secrets = variables.compactMap { name in
            env[name].map { SecretRedactor.Secret(name: name, value: Array($0.utf8)) }
        }
        for name in [appStoreAPI.privateKeyEnv, appStoreConnect?.privateKeyEnv].compactMap({ $0 }) {
            guard let pem = env[name] else { continue }
            for line in pem.split(whereSeparator: \.isNewline) where !line.hasPrefix("-----") {
                secrets.append(SecretRedactor.Secret(name: name, value: Array(line.utf8)))
            }
        }
        return SecretRedactor(secrets)
    }
}
