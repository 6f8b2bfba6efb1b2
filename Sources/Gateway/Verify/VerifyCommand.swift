public import Canonical
internal import Crypto
internal import FoundationEssentials
public import V1Adapter
public import V2Adapter
internal import WireJSON

#if canImport(Glibc)
import Glibc
#endif

/// `iap-gateway verify`: authenticate and normalize saved bodies offline (DESIGN ch. 8). No network unless
/// `--verify-receipt`: V1 events then come from the body (`verified: false`). Without a config or `--bundle-id` only
/// V2 signatures and chains are checked, and the report says which bundle and environment the body claims.
public struct VerifyCommand: Sendable {
    public struct Options: Sendable {
        public var configPath: String?
        public var extraRoots: [String] = []
        public var bundleID: String?
        public var environment: AppStoreEnvironment?
        public var appAppleID: Int64?
        /// Accept V1 bodies whose `password` equals this variable's value (for any bundle, or `bundleID`).
        public var sharedSecretEnv: String?
        public init() {}
    }

    let v2: V2Adapter
    let v1: V1Verification
    let now: @Sendable () -> Int64

    /// Builds the adapters from `options`. `environment` supplies the secrets the config names; `now` (ms) and
    /// `receiptClient` (verifyReceipt, only with `--verify-receipt`) are injected for tests.
    public init(
        options: Options, environment: [String: String] = ProcessEnvironment.variables,
        receiptClient: VerifyReceiptClient? = nil, now: @escaping @Sendable () -> Int64 = WallClock.wallMillis
    ) throws(ConfigError) {
        var rootPaths = options.extraRoots
        var apps: [V2App]?
        var v1 = V1Verification(receiptClient: receiptClient)
        if let path = options.configPath {
            let config = try GatewayConfig.load(path: path)
            rootPaths += config.extraRoots
            apps = config.apps.map { V2App(bundleID: $0.bundleID, appAppleID: $0.appAppleID, environments: $0.environments) }
            (v1.apps, v1.unresolvedSecrets) = config.v1Apps(environment: environment)
        }
        if let bundle = options.bundleID {
            let envs: Set<AppStoreEnvironment> = options.environment.map { [$0] } ?? [.production, .sandbox]
            apps = (apps ?? []).filter { $0.bundleID != bundle }
                + [V2App(bundleID: bundle, appAppleID: options.appAppleID, environments: envs)]
            v1.bundleOverride = bundle
            v1.environmentsOverride = envs
        }
        if let name = options.sharedSecretEnv {
            guard let value = environment[name], !value.isEmpty else {
                throw ConfigError(field: "--shared-secret-env", "environment variable \(name) is not set")
            }
            v1.adHocSecret = SharedSecret(name: name, value: value)
        }
        let anchors = try Self.anchors(extraRootPaths: rootPaths)
        self.v2 = V2Adapter(verifier: AppleJWSVerifier(anchors: anchors), apps: apps)
        self.v1 = v1
        self.now = now
    }

    /// A command over a prepared V2 adapter (tests pin their own roots here) and optional V1 apps.
    public init(v2: V2Adapter, v1Apps: [V1App] = [], receiptClient: VerifyReceiptClient? = nil, now: @escaping @Sendable () -> Int64) {
        self.v2 = v2
        var v1 = V1Verification(receiptClient: receiptClient)
        v1.apps = v1Apps
        self.v1 = v1
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
    public func run(file: String) async -> VerifyReport {
        var report: VerifyReport
        // Not read at all when larger than any body the gateway accepts (a mistaken path to a huge file).
        if let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int, size > InboundBody.maxBytes {
            report = .failure("body_too_large", "larger than \(InboundBody.maxBytes) bytes")
        } else if let bytes = try? Array(Data(contentsOf: URL(filePath: file))) {
            report = await verify(bytes)
        } else {
            report = .failure("unreadable_file", "cannot read \(file)")
        }
        report.file = file
        return report
    }

    /// Verifies one saved body.
    public func verify(_ bytes: [UInt8]) async -> VerifyReport {
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
                return await v1.verify(bytes, now: time)
            case .verifyReceiptResponse(let object):
                return V1Verification.snapshots(object, now: time)
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

/// The process environment, read in one place (secrets are named by variable in the config).
public enum ProcessEnvironment {
    public static var variables: [String: String] { ProcessInfo.processInfo.environment }

    /// Who runs this command, for the cutover log: the OS user name, else the uid.
    public static var userName: String {
        if let name = getpwuid(getuid())?.pointee.pw_name { return String(cString: name) }
        return variables["USER"] ?? "uid \(getuid())"
    }
}

/// The wall clock, the only one production code reads; everything else receives time as a value.
public enum WallClock {
    @Sendable public static func wallMillis() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
