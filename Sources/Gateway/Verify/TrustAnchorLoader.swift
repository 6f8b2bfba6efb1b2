internal import Crypto
internal import FoundationEssentials
public import V2Adapter

/// The V2 trust anchors the config asks for: Apple Root CA - G3, plus the `trust.extra_roots` files (DER or PEM),
/// which are honoured for sandbox payloads only. Used by the service and by `iap-gateway verify`.
public enum TrustAnchorLoader {
    /// Apple Root CA - G3 plus extra roots read from DER (or PEM) files, sandbox only.
    public static func anchors(extraRootPaths: [String]) throws(ConfigError) -> TrustAnchors {
        var extra: [[UInt8]] = []
        for path in extraRootPaths {
            guard let bytes = try? Array(Data(contentsOf: URL(filePath: path))) else {
                throw ConfigError(field: "trust.extra_roots", "cannot read \(path)")
            }
            if let cert = try? X509Certificate(der: bytes) {
                extra.append(cert.der)
            } else if let cert = try? X509Certificate(pem: String(decoding: bytes, as: UTF8.self)) {
                extra.append(cert.der)
            } else {
                throw ConfigError(field: "trust.extra_roots", "\(path) is not a DER or PEM certificate")
            }
        }
        do { return try TrustAnchors.apple(extraSandboxRoots: extra) } catch {
            throw ConfigError(field: "trust.extra_roots", "a root certificate could not be loaded")
        }
    }
}
