public import Canonical
internal import FoundationEssentials
internal import Gateway
internal import HTTPClient
public import ServiceKit
public import V1Adapter
public import V2Adapter
internal import WireJSON

/// `iap-gateway verify`: authenticate and normalize saved bodies offline (docs/architecture.md, "Command line"). No network unless
/// `--verify-receipt`: V1 events then come from the body (`verified: false`). Without a config or `--bundle-id` only
/// V2 signatures and chains are checked, and the report says which bundle and environment the body claims.
public struct VerifyCommand: Sendable, Command {
    static let name = "verify"
    static let usage = """
          iap-gateway verify [--config FILE] [--root DER]... [--bundle-id B] [--environment production|sandbox]
                             [--app-apple-id N] [--shared-secret-env VAR] [--verify-receipt] FILE|FOLDER...
              Authenticate and normalize saved bodies: V2 notifications, bare signed transactions / renewal infos,
              V1 notifications (secrets from --config or --shared-secret-env; events from the body, verified: false,
              unless --verify-receipt asks the config's verifyReceipt URLs) and saved verifyReceipt answers.
              A FOLDER means its *.json files (golden *.expected.json skipped). One JSON line per file;
              exit 0 when all are ok, 1 otherwise.
        """

    /// `iap-gateway verify …`: one JSON line per file; 0 when every file verified, 1 otherwise.
    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(
            arguments,
            valueFlags: ["config", "root", "bundle-id", "environment", "app-apple-id", "shared-secret-env"],
            switchFlags: ["verify-receipt"]
        )
        guard !a.positionals.isEmpty else { throw CommandError.usage("verify needs at least one FILE") }
        var options = Options()
        options.configPath = a.value("config")
        options.extraRoots = a.all("root")
        options.bundleID = a.value("bundle-id")
        options.sharedSecretEnv = a.value("shared-secret-env")
        options.environment = try a.environment()
        if let n = a.value("app-apple-id") {
            guard let id = Int64(n) else { throw CommandError.usage("--app-apple-id must be an integer") }
            options.appAppleID = id
        }
        var receiptClient: VerifyReceiptClient?
        if a.has("verify-receipt") {
            guard let path = options.configPath else {
                throw CommandError.usage("--verify-receipt needs --config (verifyReceipt URLs, secrets)")
            }
            receiptClient = try Arguments.loadConfig(path).verifyReceiptClient(transport: CurlTransport())
        }
        let command: VerifyCommand
        do { command = try VerifyCommand(options: options, receiptClient: receiptClient) } catch {
            throw CommandError.usage("config: \(error)")
        }
        var allOK = true
        for file in expand(paths: a.positionals) {
            let report = await command.run(file: file)
            allOK = allOK && report.ok
            print(JSONOutput.string(report))
        }
        return allOK ? 0 : 1
    }

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
        options: Options,
        environment: [String: String] = ProcessEnvironment.variables,
        receiptClient: VerifyReceiptClient? = nil,
        now: @escaping @Sendable () -> Int64 = WallClock.wallMillis
    ) throws(ConfigError) {
        var rootPaths = options.extraRoots
        var apps: [V2App]?
        var v1 = V1Verification(receiptClient: receiptClient)
        if let path = options.configPath {
            let config = try GatewayConfig.load(path: path)
            rootPaths += config.extraRoots
            apps = config.apps.map {
                V2App(bundleID: $0.bundleID, appAppleID: $0.appAppleID, environments: $0.environments)
            }
            (v1.apps, v1.unresolvedSecrets) = config.v1Apps(environment: environment)
        }
        if let bundle = options.bundleID {
            let envs: Set<AppStoreEnvironment> = options.environment.map { [$0] } ?? [.production, .sandbox]
            apps =
                (apps ?? []).filter { $0.bundleID != bundle }
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
        let anchors = try TrustAnchorLoader.anchors(extraRootPaths: rootPaths)
        self.v2 = V2Adapter(verifier: AppleJWSVerifier(anchors: anchors), apps: apps)
        self.v1 = v1
        self.now = now
    }

    /// A command over a prepared V2 adapter (tests pin their own roots here) and optional V1 apps.
    public init(
        v2: V2Adapter,
        v1Apps: [V1App] = [],
        receiptClient: VerifyReceiptClient? = nil,
        now: @escaping @Sendable () -> Int64
    ) {
        self.v2 = v2
        var v1 = V1Verification(receiptClient: receiptClient)
        v1.apps = v1Apps
        self.v1 = v1
        self.now = now
    }

    /// Expands the command line's paths: a folder stands for the `*.json` bodies in it (sorted), skipping the
    /// `*.expected.json` golden outputs that sit beside bodies in a fixture folder. Files are kept as given.
    public static func expand(paths: [String]) -> [String] {
        paths.flatMap { path -> [String] in
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory else {
                return [path]
            }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            let base = path.hasSuffix("/") ? path : path + "/"
            return names.filter { $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json") }.sorted().map { base + $0 }
        }
    }

    /// Verifies one file.
    public func run(file: String) async -> VerifyReport {
        var report: VerifyReport
        // Not read at all when larger than any body the gateway accepts (a mistaken path to a huge file).
        if let size = (try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int,
            size > InboundBody.maxBytes
        {
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
                    ok: true,
                    version: Generation.v2.rawValue,
                    kind: "notification",
                    bundleID: n.bundleID,
                    environment: n.environment,
                    leafSerial: n.leafSerial,
                    signedDate: n.payload.signedDate,
                    events: n.canonicalEvents()
                )
            case .signedTransaction(let token):
                let t = try v2.verifyTransaction(token, now: time)
                return VerifyReport(
                    ok: true,
                    version: Generation.v2.rawValue,
                    kind: "transaction",
                    bundleID: t.bundleID,
                    environment: t.environment,
                    leafSerial: t.leafSerial,
                    signedDate: t.signedDate,
                    events: [],
                    token: Self.json(t.payload)
                )
            case .signedRenewalInfo(let token):
                let r = try v2.verifyRenewalInfo(token, now: time)
                return VerifyReport(
                    ok: true,
                    version: Generation.v2.rawValue,
                    kind: "renewal_info",
                    bundleID: nil,
                    environment: r.environment,
                    leafSerial: r.leafSerial,
                    signedDate: r.signedDate,
                    events: [],
                    token: Self.json(r.payload)
                )
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
