import Canonical
import Foundation
import Gateway
import HTTPClient
import ServiceKit
import Store
import TestSupport
import Testing
import V1Adapter
import V2Adapter

/// A gateway core (store, writer, ingest) over a temporary SQLite file, with the test PKI trusted like Apple's and
/// the synthetic fixtures' apps, and the real samples' app for sandbox.
struct GatewayHarness: Sendable {
    static let v1Secret = "0123456789abcdef0123456789abcdef"
    static let t: Int64 = 1_748_736_000_000  // the synthetic fixtures' signedDate

    static let configJSON = """
        {
          "apps": [
            { "bundle_id": "com.example.gateway", "app_apple_id": 1234567890, "environments": ["production", "sandbox"],
              "shared_secret_env": ["APP_SECRET"], "authority": "v2", "downstreams": ["main", "shadow", "legacy"] },
            { "bundle_id": "com.example.optout", "app_apple_id": 42, "environments": ["production"],
              "shared_secret_env": ["APP_SECRET"], "verify_receipt": false, "downstreams": ["main"] },
            { "bundle_id": "com.example.prodonly", "app_apple_id": 2222222222, "environments": ["production"] },
            { "bundle_id": "com.loki-project.loki-messenger", "app_apple_id": 1470168868, "environments": ["sandbox"] }
          ],
          "downstreams": [
            { "name": "main", "url": "http://127.0.0.1:1/events", "environments": ["production", "sandbox"] },
            { "name": "shadow", "url": "http://127.0.0.1:1/shadow", "environments": ["production", "sandbox"], "shadow": true },
            { "name": "legacy", "kind": "v1_passthrough", "url": "http://127.0.0.1:1/apple/v1", "environments": ["production", "sandbox"] }
          ]
        }
        """

    let directory: String
    /// The service as `serve` builds it (nothing listening, no worker running), over the store below.
    let service: GatewayService
    /// The service's store, as the SQLite store it is.
    let store: SQLiteStore
    var config: GatewayConfig { service.config }
    var router: Router { service.router }
    var ingest: NotificationIngest { service.ingest }
    var metrics: Metrics { service.metrics }

    init(
        now: Int64 = GatewayHarness.t + 3_600_000,
        configJSON: String = GatewayHarness.configJSON,
        environment: [String: String] = [:]
    ) throws {
        directory = try Scratch.directory()
        var config = try GatewayConfig.parse(Array(configJSON.utf8), baseDirectory: directory)
        config.sqlitePath = directory + "/gateway.db"
        store = try SQLiteStore(path: config.sqlitePath)
        service = try Self.service(config: config, store: store, now: now, environment: environment)
    }

    /// What `serve` would build from `config` over `store` at `now`, authority seeded: the test PKI's root is trusted
    /// like Apple's, the V1 secret is in the environment, the log goes nowhere. `com.example.gateway` is V2-authoritative
    /// and takes V1, which `serve` accepts only with a V2 path (the App Store Server API): here one that is never asked
    /// (no worker runs) and would say so.
    static func service(
        config: GatewayConfig,
        store: any GatewayStore,
        now: Int64,
        environment: [String: String] = [:]
    ) throws
        -> GatewayService
    {
        var dependencies = GatewayService.Dependencies(
            environment: environment.merging(["APP_SECRET": Self.v1Secret]) { mine, _ in mine },
            transport: CurlTransport(),
            now: { now },
            jitter: { 0 },
            logSink: { _ in }
        )
        dependencies.store = store
        dependencies.v2PathSource = NoV2Path()
        dependencies.trustAnchors = try TrustAnchors(appleRoots: [TrustAnchors.appleRootCAG3, try TestPKI.der("root")])
        let service = try GatewayService(config: config, dependencies: dependencies)
        try service.seedAuthority()
        return service
    }

    /// The service a restart with another config (a fix, say) builds over this harness's store.
    func restarted(configJSON: String, now: Int64) throws -> GatewayService {
        var config = try GatewayConfig.parse(Array(configJSON.utf8), baseDirectory: directory)
        config.sqlitePath = self.config.sqlitePath
        return try Self.service(config: config, store: store, now: now)
    }

    struct NoV2Path: V2PathSource {
        func status(
            bundleID: String,
            environment: AppStoreEnvironment,
            originalTransactionID: String,
            observedAt: Int64
        )
            async throws(PathFetchError) -> V2PathStatus?
        {
            throw PathFetchError(code: "no_app_store_api", message: "the harness has no V2 path", retryable: false)
        }
    }

    func close() {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a background worker until `done` holds, then stops it and waits for it.
    static func runUntil(
        run: @escaping @Sendable () async -> Void,
        stop: () -> Void,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ done: @escaping @Sendable () throws -> Bool
    ) async throws {
        let task = Task { await run() }
        do {
            try await eventually("the worker's condition", sourceLocation: sourceLocation, done)
        } catch {
            stop()
            await task.value
            throw error
        }
        stop()
        await task.value
    }
}
