public import Canonical
internal import Gateway
public import Store
public import V2Adapter
internal import WireJSON

/// `iap-gateway test-notification`: ask Apple (the App Store Server API) to send a test notification, and report its
/// delivery attempts and whether this gateway journaled it.
public enum TestNotificationCommand: Command {
    static let name = "test-notification"
    static let usage = """
          iap-gateway test-notification --config FILE --bundle B --environment production|sandbox
              Ask Apple to send a test notification and report Apple's delivery attempts and whether it arrived.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "bundle", "environment"])
        _ = try a.positionals(atMost: 0, for: name)
        let environment = try a.environment()
        let needsBundle = CommandError.usage("test-notification needs --bundle B (configured)")
        guard let bundle = a.value("bundle") else { throw needsBundle }
        guard let environment else {
            throw CommandError.usage("test-notification needs --environment production or sandbox")
        }
        let config = try a.config(for: name)
        let result = try await withService(config) { service in
            guard let api = service.appStoreAPI else {
                throw CommandError.usage(
                    "test-notification needs app_store_api (issuer_id, key_id, private_key_env) in the config"
                )
            }
            guard let client = api.client(for: bundle) else { throw needsBundle }
            return try await testNotification(client: client, environment: environment, journal: service.store)
        }
        print(JSONOutput.string(result))
        return 0
    }

    public struct TestNotificationResult: Sendable, Encodable {
        public var token: String
        /// Apple's delivery attempts so far (`SUCCESS`, …); empty when none was reported in time.
        public var sendAttempts: [SendAttempt]
        /// Whether this gateway journaled the test notification.
        public var received: Bool

        enum CodingKeys: String, CodingKey {
            case token
            case sendAttempts = "send_attempts"
            case received
        }
    }

    /// Asks Apple to send a test notification to the app's configured URL, then polls its status (and this gateway's
    /// journal) until a delivery attempt is reported or `timeoutMillis` passes.
    public static func testNotification(
        client: AppStoreAPIClient,
        environment: AppStoreEnvironment,
        journal: any GatewayStore,
        timeoutMillis: Int64 = 30_000,
        pollMillis: Int64 = 500
    ) async throws -> TestNotificationResult {
        let token = try await client.requestTestNotification(environment: environment)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(timeoutMillis))
        var attempts: [SendAttempt] = []
        var received = false
        repeat {
            attempts = try await client.testNotificationStatus(token: token, environment: environment).sendAttempts
            received = try await journal.read { tx in try !tx.journalEntries(id: nil, key: token, limit: 1).isEmpty }
            if !attempts.isEmpty { break }
            try? await Task.sleep(for: .milliseconds(pollMillis))
        } while clock.now < deadline
        return TestNotificationResult(token: token, sendAttempts: attempts, received: received)
    }
}
