public import Store
public import Canonical
internal import FoundationEssentials
public import V2Adapter

/// `iap-gateway backfill` and `iap-gateway test-notification`: the App Store Server API's notification history and
/// test notifications, through the gateway's own pipeline.
public enum AppStoreAPICommands {
    public struct BackfillResult: Sendable, Encodable {
        public var bundleID: String
        public var environment: String
        /// Notifications Apple listed in the window.
        public var listed: Int
        /// Journaled now (they had been missed).
        public var added: Int
        /// Already journaled (delivered live or by an earlier backfill).
        public var duplicates: Int
        /// Refused by the pipeline (codes and counts).
        public var refused: [String: Int]

        enum CodingKeys: String, CodingKey {
            case bundleID = "bundle_id", environment, listed, added, duplicates, refused
        }
    }

    /// Fetches Get Notification History for [since, until) for each app (or one) and environment, and feeds every
    /// `signedPayload` through the normal pipeline (`origin: backfill`: verified like live traffic but without the
    /// freshness window; deduplicated on the notification UUID, so what arrived live is not stored twice).
    public static func backfill(service: GatewayService, source: AppStoreAPIPathSource, since: Int64, until: Int64, bundleID: String?,
                                environment: AppStoreEnvironment?) async throws -> [BackfillResult] {
        var results: [BackfillResult] = []
        for app in service.config.apps where bundleID == nil || app.bundleID == bundleID {
            guard let client = source.client(for: app.bundleID) else { continue }
            for env in app.environments.sorted(by: { $0.rawValue < $1.rawValue }) where environment == nil || env == environment {
                let items = try await client.allNotificationHistory(NotificationHistoryRequest(startDate: since, endDate: until), environment: env)
                var result = BackfillResult(bundleID: app.bundleID, environment: env.rawValue, listed: items.count, added: 0, duplicates: 0, refused: [:])
                for item in items {
                    let r = service.ingest.handle(InboundBody.v2(signedPayload: item.signedPayload), origin: .backfill)
                    if r.status == 200 {
                        if r.duplicate { result.duplicates += 1 } else { result.added += 1 }
                    } else {
                        result.refused[r.code ?? "status_\(r.status)", default: 0] += 1
                    }
                }
                results.append(result)
            }
        }
        return results
    }

    public struct TestNotificationResult: Sendable, Encodable {
        public var token: String
        /// Apple's delivery attempts so far (`SUCCESS`, …); empty when none was reported in time.
        public var sendAttempts: [SendAttempt]
        /// Whether this gateway journaled the test notification.
        public var received: Bool

        enum CodingKeys: String, CodingKey { case token, sendAttempts = "send_attempts", received }
    }

    /// Asks Apple to send a test notification to the app's configured URL, then polls its status (and this gateway's
    /// journal) until a delivery attempt is reported or `timeoutMillis` passes.
    public static func testNotification(client: AppStoreAPIClient, environment: AppStoreEnvironment, journal: any GatewayStore,
                                        timeoutMillis: Int64 = 30_000, pollMillis: Int64 = 500) async throws -> TestNotificationResult {
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
