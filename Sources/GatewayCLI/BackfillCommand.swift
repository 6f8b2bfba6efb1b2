public import Canonical
public import Gateway
internal import V2Adapter

/// `iap-gateway backfill`: the App Store Server API's notification history, fed through the gateway's own pipeline.
public enum BackfillCommand: Command {
    static let name = "backfill"
    static let usage = """
          iap-gateway backfill --config FILE --since T [--until T] [--bundle B] [--environment E]
              Fetch Apple's notification history (App Store Server API) and feed what was missed through the normal
              pipeline (verified, deduplicated; delivered by the running gateway).
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(arguments, valueFlags: ["config", "since", "until", "bundle", "environment"])
        _ = try a.positionals(atMost: 0, for: name)
        let environment = try a.environment()
        let now = WallClock.wallMillis()
        guard let since = try a.time("since", now: now) else { throw CommandError.usage("backfill needs --since T") }
        let until = try a.time("until", now: now) ?? now
        let config = try a.config(for: name)
        let results = try await withService(config) { service in
            guard let api = service.appStoreAPI else {
                throw CommandError.usage("backfill needs app_store_api (issuer_id, key_id, private_key_env) in the config")
            }
            return try await backfill(service: service, source: api, since: since, until: until, bundleID: a.value("bundle"),
                                      environment: environment)
        }
        for result in results { print(JSONOutput.string(result)) }
        return 0
    }

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
}
