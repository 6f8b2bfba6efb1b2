import Canonical
import Foundation
import Gateway
import HTTPClient
import TestSupport
import Store
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
    let config: GatewayConfig
    let store: SQLiteStore
    let router: Router
    let ingest: NotificationIngest
    let metrics = Metrics()

    init(now: Int64 = GatewayHarness.t + 3_600_000, configJSON: String = GatewayHarness.configJSON) throws {
        directory = try Scratch.directory()
        var config = try GatewayConfig.parse(Array(configJSON.utf8), baseDirectory: directory)
        config.sqlitePath = directory + "/gateway.db"
        self.config = config
        store = try SQLiteStore(path: config.sqlitePath)
        router = Router(config: config)
        let v1Apps = config.v1Apps(environment: ["APP_SECRET": Self.v1Secret]).apps
        let v2 = V2Adapter(
            verifier: AppleJWSVerifier(anchors: try TrustAnchors(appleRoots: [TrustAnchors.appleRootCAG3, try TestPKI.der("root")])),
            apps: config.apps.map { V2App(bundleID: $0.bundleID, appAppleID: $0.appAppleID, environments: $0.environments) })
        ingest = NotificationIngest(
            v1: V1Adapter(apps: v1Apps), v2: v2, store: store, router: router, limits: .init(), metrics: metrics, now: { now })
        let wanted = config.apps.flatMap { app in
            app.environments.map { AuthorityEntry(bundleID: app.bundleID, environment: $0, authority: app.authority(for: $0), origin: .config) }
        }
        _ = try store.write { tx in try tx.seedAuthority(wanted, now: now) }
    }

    func close() {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// How long a test waits for a condition that should hold within moments. Only a failing test ever waits this
    /// long, so it is far above what the slowest condition needs while other processes keep both cores busy
    /// (`scripts/test --stress N --load`): a tight deadline on a condition turns a loaded machine into a failure.
    static let patience: Duration = .seconds(60)

    /// Polls `condition` every 20 ms until it holds; records an issue (at the caller) when `timeout` passed first.
    /// Returns whether it held.
    @discardableResult
    static func eventually(_ what: @autoclosure () -> String = "condition", timeout: Duration = patience,
                           sourceLocation: SourceLocation = #_sourceLocation, _ condition: () throws -> Bool) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while !(try condition()) {
            guard clock.now < deadline else {
                Issue.record("\(what()) not met within \(timeout)", sourceLocation: sourceLocation)
                return false
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Runs a background worker until `done` holds, then stops it and waits for it.
    static func runUntil(run: @escaping @Sendable () async -> Void, stop: () -> Void, sourceLocation: SourceLocation = #_sourceLocation,
                         _ done: @escaping @Sendable () throws -> Bool) async throws {
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
