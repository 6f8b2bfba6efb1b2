public import Canonical
internal import Crypto
internal import FoundationEssentials
public import V2Adapter
internal import WireJSON

/// `iap-gateway verify`: authenticate and normalize saved bodies offline (DESIGN ch. 8). No network: V1 events
/// come from the body. Without a config or `--bundle-id` only signatures and chains are checked, and the report
/// says which bundle and environment the body claims.
public struct VerifyCommand: Sendable {
    public struct Options: Sendable {
        public var configPath: String?
        public var extraRoots: [String] = []
        public var bundleID: String?
        public var environment: AppStoreEnvironment?
        public var appAppleID: Int64?
        public var sharedSecretEnv: String?
        public init() {}
    }

    let v2: V2Adapter
    let now: @Sendable () -> Int64

    /// Builds the adapters from `options`. `now` (ms) is injected for tests.
    public init(options: Options, now: @escaping @Sendable () -> Int64 = WallClock.wallMillis) throws(ConfigError) {
        var rootPaths = options.extraRoots
        var apps: [V2App]?
        if let path = options.configPath {
            let config = try GatewayConfig.load(path: path)
            rootPaths += config.extraRoots
            apps = config.apps.map { V2App(bundleID: $0.bundleID, appAppleID: $0.appAppleID, environments: $0.environments) }
        }
        if let bundle = options.bundleID {
            let envs: Set<AppStoreEnvironment> = options.environment.map { [$0] } ?? [.production, .sandbox]
            apps = (apps ?? []).filter { $0.bundleID != bundle }
                + [V2App(bundleID: bundle, appAppleID: options.appAppleID, environments: envs)]
        }
        let anchors = try Self.anchors(extraRootPaths: rootPaths)
        self.v2 = V2Adapter(verifier: AppleJWSVerifier(anchors: anchors), apps: apps)
        self.now = now
    }

    /// A command over a prepared adapter (tests pin their own roots here).
    public init(v2: V2Adapter, now: @escaping @Sendable () -> Int64) {
        self.v2 = v2
        self.now = now
    }

    /// Apple Root CA - G3 plus extra roots read from DER (or PEM) files, sandbox only.
    static func anchors(extraRootPaths: [String]) throws(ConfigError) -> TrustAnchors {
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

    /// Expands the command line's paths: a folder stands for the `*.json` bodies in it (sorted), skipping the
    /// `*.expected.json` golden outputs that sit beside bodies in a fixture folder. Files are kept as given.
    public static func expand(paths: [String]) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory else { return [path] }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            let base = path.hasSuffix("/") ? path : path + "/"
            return names.filter { $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json") }.sorted().map { base + $0 }
        }
    }

    /// Verifies one file.
    public func run(file: String) -> VerifyReport {
        var report: VerifyReport
        if let bytes = try? Array(Data(contentsOf: URL(filePath: file))) {
            report = verify(bytes)
        } else {
            report = .failure("unreadable_file", "cannot read \(file)")
        }
        report.file = file
        return report
    }

    /// Verifies one saved body.
    public func verify(_ bytes: [UInt8]) -> VerifyReport {
        let body: InboundBody
        do { body = try InboundBody.classify(bytes, allowBareTokens: true) } catch {
            return .failure(error.code.rawValue, error.reason)
        }
        let time = now()
        do {
            switch body {
            case .v2Notification(let token):
                let n = try v2.verifyNotification(signedPayload: token, now: time)
                return VerifyReport(
                    ok: true, version: "v2", kind: "notification", bundleID: n.bundleID, environment: n.environment,
                    leafSerial: n.leafSerial, signedDate: n.payload.signedDate, events: n.canonicalEvents())
            case .signedTransaction(let token):
                let t = try v2.verifyTransaction(token, now: time)
                return VerifyReport(
                    ok: true, version: "v2", kind: "transaction", bundleID: t.bundleID, environment: t.environment,
                    leafSerial: t.leafSerial, signedDate: t.signedDate, events: [], token: Self.json(t.payload))
            case .signedRenewalInfo(let token):
                let r = try v2.verifyRenewalInfo(token, now: time)
                return VerifyReport(
                    ok: true, version: "v2", kind: "renewal_info", bundleID: nil, environment: r.environment,
                    leafSerial: r.leafSerial, signedDate: r.signedDate, events: [], token: Self.json(r.payload))
            case .v1Notification:
                return .failure("unsupported_version", "V1 bodies are not verified by this build yet")
            }
        } catch {
            return .failure(error)
        }
    }

    /// A wire model back to JSON (Apple's member names), for the report.
    private static func json<T: Encodable>(_ value: T) -> JSONValue? {
        try? JSONParser.parse(JSONOutput.encode(value))
    }
}

/// The wall clock, the only one production code reads; everything else receives time as a value.
public enum WallClock {
    @Sendable public static func wallMillis() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
