internal import Crypto
internal import FoundationEssentials
public import V2Adapter

/// The V2 trust anchors the config asks for: Apple Root CA - G3, plus the `trust.extra_roots` files (DER or PEM),
/// which are honoured for sandbox payloads only. Used by the service and by `iap-gateway verify`.
public enum TrustAnchorLoader {
    /// Apple Root CA - G3 plus extra roots read from DER (or PEM) files, sandbox only.
    public static func anchors(extraRootPaths: [String]) throws(ConfigError) -> TrustAnchors {
        let extra = try certificates(extraRootPaths, field: "trust.extra_roots")
        do { return try TrustAnchors.apple(extraSandboxRoots: extra) } catch {
            throw ConfigError(field: "trust.extra_roots", "a root certificate could not be loaded")
        }
    }

    /// The DER of each certificate file (DER or PEM) in `paths`; a file that cannot be read or is no certificate is
    /// a config error naming `field` (`trust.extra_roots`, `trust.extra_receipt_roots`).
    package static func certificates(_ paths: [String], field: String) throws(ConfigError) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for path in paths {
            guard let bytes = try? Array(Data(contentsOf: URL(filePath: path))) else {
                throw ConfigError(field: field, "cannot read \(path)")
            }
            if let cert = try? X509Certificate(der: bytes) {
                out.append(cert.der)
            } else if let cert = try? X509Certificate(pem: String(decoding: bytes, as: UTF8.self)) {
                out.append(cert.der)
            } else {
                throw ConfigError(field: field, "\(path) is not a DER or PEM certificate")
            }
        }
        return out
    }
}
