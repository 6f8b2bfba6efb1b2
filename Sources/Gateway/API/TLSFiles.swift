internal import FoundationEssentials
internal import HTTPServer
internal import ServiceKit

/// `listen_tls`: the PEM certificate (chain) and key files the public listener serves HTTPS with, read when it
/// starts (docs/configuration.md, "listen_tls").
struct TLSFiles: Sendable {
    let certificateFile: String
    let keyFile: String

    /// nil when the config serves plain HTTP.
    init?(_ config: GatewayConfig) {
        guard let certificateFile = config.tlsCertificateFile, let keyFile = config.tlsKeyFile else { return nil }
        (self.certificateFile, self.keyFile) = (certificateFile, keyFile)
    }

    /// Both files' text; a file that cannot be read is a `listen_tls` error. Whether they hold a usable certificate
    /// and key is found when the listener starts.
    func load() throws(ConfigError) -> HTTPServer.TLS {
        guard let cert = try? String(decoding: Data(contentsOf: URL(filePath: certificateFile)), as: UTF8.self),
            let key = try? String(decoding: Data(contentsOf: URL(filePath: keyFile)), as: UTF8.self)
        else { throw ConfigError(field: "listen_tls", "cannot read the certificate or key file") }
        return HTTPServer.TLS(certificatePEM: cert, privateKeyPEM: key)
    }
}
