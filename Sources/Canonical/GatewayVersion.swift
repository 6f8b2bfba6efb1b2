/// The gateway's version: one constant, printed by `iap-gateway --version`, reported by `GET /admin/status`
/// (`"version"`) and sent as the `User-Agent` of every HTTP request the gateway makes (``userAgent``). It lives here,
/// in the lowest module, so that every module that speaks of the version sees the same one.
public enum GatewayVersion {
    /// Semantic versioning; `-dev` until a release is cut (CHANGELOG.md names the releases).
    public static let string = "0.9.0-dev"

    /// The `User-Agent` of the gateway's outgoing requests (RFC 9110 §10.1.5: product "/" version).
    public static var userAgent: String { "iap-gateway/" + string }
}
