public import Canonical
public import Gateway
public import ServiceKit
internal import WireJSON

/// `iap-gateway backfill`: the App Store Server API's notification history, fed through the gateway's own pipeline.
public enum BackfillCommand: Command {
    static let name = "backfill"
    static let usage = """
          iap-gateway backfill --config FILE --since T [--until T] [--bundle B] [--environment E]
                               [--max-pages N] [--max-bytes SIZE] [--resume-token TOKEN]
              Fetch Apple's notification history (App Store Server API) page by page and feed what was missed through
              the normal pipeline (verified, deduplicated; delivered by the running gateway). One run reads at most
              --max-pages pages (100) and --max-bytes of Apple's answers (64MiB); a listing a cap stopped prints
              "complete": false and its resume_token: run again with the same --since, --until, --bundle and
              --environment plus --resume-token TOKEN to go on from there. Exit status 1 when the store or Apple failed.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let a = try Arguments(
            arguments,
            valueFlags: ["config", "since", "until", "bundle", "environment", "max-pages", "max-bytes", "resume-token"]
        )
        _ = try a.positionals(atMost: 0, for: name)
        let environment = try a.environment()
        let now = WallClock.wallMillis()
        guard let since = try a.time("since", now: now) else { throw CommandError.usage("backfill needs --since T") }
        let until = try a.time("until", now: now) ?? now
        var limits = Limits()
        limits.maxPages = try a.number(
            "max-pages",
            default: limits.maxPages,
            valid: { (1...Limits.maxPagesLimit).contains($0) },
            "--max-pages must be 1…\(Limits.maxPagesLimit)"
        )
        limits.maxBytes = try a.size("max-bytes", default: limits.maxBytes, 1...Limits.maxBytesLimit)
        if let token = a.value("resume-token") {
            guard !token.isEmpty else { throw CommandError.usage("--resume-token must not be empty") }
            guard a.value("bundle") != nil, environment != nil else {
                throw CommandError.usage(
                    "--resume-token needs --bundle and --environment: a token continues one app's listing in one environment"
                )
            }
            limits.resumeToken = token
        }
        let config = try a.config(for: name)
        let results = try await withService(config) { service in
            guard let api = service.appStoreAPI else {
                throw CommandError.usage(
                    "backfill needs app_store_api (issuer_id, key_id, private_key_env) in the config"
                )
            }
            return try await backfill(
                service: service,
                source: api,
                since: since,
                until: until,
                bundleID: a.value("bundle"),
                environment: environment,
                limits: limits
            )
        }
        for result in results { print(JSONOutput.string(result)) }
        return results.contains { $0.failed } ? 1 : 0
    }

    /// What one run may read of Apple's history, and where it starts (docs/operations.md, "Reconciliation").
    public struct Limits: Sendable {
        /// Pages of Get Notification History one run fetches, over all its apps and environments.
        public var maxPages = 100
        /// Bytes of Apple's answers one run reads, over all its apps and environments: checked before each page, so a
        /// run ends after the page that reaches it (one page more at most, which the client bounds at 8 MiB).
        public var maxBytes: Int64 = 64 * 1_048_576
        /// The `resume_token` of a run a cap stopped, to go on from there: one app's listing in one environment (the
        /// same `since` and `until`).
        public var resumeToken: String?
        public init() {}

        public static let maxPagesLimit = 1_000_000
        public static let maxBytesLimit: Int64 = 1 << 40
        /// Why a run stopped that a caller can continue with a later run.
        public static let pageCap = HistoryWalker.Stop.pageCap.code, byteCap = HistoryWalker.Stop.byteCap.code
    }

    public struct BackfillResult: Sendable, Encodable {
        public var bundleID: String
        public var environment: String
        /// The window asked for (ms): a run resumed with ``resumeToken`` must ask for the same.
        public var since: Int64
        public var until: Int64
        /// Notifications of Apple's listing this run went through.
        public var listed = 0
        /// Journaled now (they had been missed).
        public var added = 0
        /// Already journaled (delivered live or by an earlier backfill).
        public var duplicates = 0
        /// Refused by the pipeline and gone past (codes and counts): quarantined once, like the sweep's.
        public var refused: [String: Int] = [:]
        /// Pages fetched and the bytes of Apple's answers.
        public var pages = 0
        public var bytes: Int64 = 0
        /// Whether Apple's listing was read to its end.
        public var complete = false
        /// Why not: a cap of the run (`max_pages`, `max_bytes`), or what failed (the store's or Apple's code). Listings
        /// the run did not reach say why too, with no pages and no token.
        public var stoppedBy: String?
        /// Where to go on from (`--resume-token`): the pagination token of the page to fetch next. nil when the
        /// listing is complete, or when it must start again from its first page.
        public var resumeToken: String?

        public init(bundleID: String, environment: String, since: Int64, until: Int64) {
            (self.bundleID, self.environment, self.since, self.until) = (bundleID, environment, since, until)
        }

        /// Stopped by a failure rather than by a cap (exit status 1).
        public var failed: Bool { stoppedBy.map { $0 != Limits.pageCap && $0 != Limits.byteCap } ?? false }

        enum CodingKeys: String, CodingKey {
            case bundleID = "bundle_id"
            case environment, since, until, listed, added, duplicates, refused, pages, bytes, complete
            case stoppedBy = "stopped_by"
            case resumeToken = "resume_token"
        }
    }

    /// Fetches Get Notification History for [since, until) for each app (or one) and environment with one
    /// ``HistoryWalker`` walk (`origin: backfill`: verified like live traffic but without the freshness window;
    /// deduplicated on the notification UUID, so what arrived live is not stored twice), one page at a time: what one
    /// run holds is one page, whatever Apple answers.
    ///
    /// The run ends at the first of: `limits.maxPages` pages or `limits.maxBytes` read (each listing then says where to
    /// resume), a notification the store keeps nowhere (the store failing, a full genuine lane: its page is where to
    /// resume), an App Store Server API failure. A notification the gateway cannot serve (a bundle the config does not
    /// have, say) is counted in `refused`, quarantined once, and gone past.
    public static func backfill(
        service: GatewayService,
        source: AppStoreAPIClients,
        since: Int64,
        until: Int64,
        bundleID: String?,
        environment: AppStoreEnvironment?,
        limits: Limits = .init()
    ) async throws -> [BackfillResult] {
        if limits.resumeToken != nil, bundleID == nil || environment == nil {
            throw CommandError.usage(
                "--resume-token needs --bundle and --environment: a token continues one app's listing in one environment"
            )
        }
        var listings: [HistoryWalker.Listing] = []
        for app in service.config.apps
        where (bundleID == nil || app.bundleID == bundleID) && source.serves(bundleID: app.bundleID) {
            for env in app.environments.sorted(by: { $0.rawValue < $1.rawValue })
            where environment == nil || env == environment {
                listings.append(.init(bundleID: app.bundleID, environment: env, startDate: since, endDate: until))
            }
        }
        let walker = HistoryWalker(
            source: source,
            ingest: service.ingest,
            configuration: .init(
                origin: .backfill,
                maxPages: limits.maxPages,
                maxBytes: limits.maxBytes,
                resumeToken: limits.resumeToken
            )
        )
        let walks = await walker.walk(
            listings,
            observe: { event in
                guard case .stopped(let listing, let stop) = event else { return }
                warn(service.log, listing, stop)
            }
        )
        return walks.map(BackfillResult.init)
    }

    /// The warning of a run that stopped on a failure (a cap is not one).
    static func warn(_ log: Log, _ listing: HistoryWalker.Listing, _ stop: HistoryWalker.Stop) {
        switch stop {
        case .failed(let error):
            log.warn(
                "backfill stopped: the App Store Server API failed",
                [
                    "bundle": .string(listing.bundleID), "environment": .string(listing.environment.rawValue),
                    "code": .string(error.code), "message": .string(error.message),
                ]
            )
        case .notKept(let code):
            log.warn(
                "backfill stopped: the store could not keep a notification",
                [
                    "bundle": .string(listing.bundleID), "environment": .string(listing.environment.rawValue),
                    "code": .string(code),
                ]
            )
        case .pageCap, .byteCap: break
        }
    }
}

extension BackfillCommand.BackfillResult {
    init(_ walk: HistoryWalker.Walk) {
        self.init(
            bundleID: walk.listing.bundleID,
            environment: walk.listing.environment.rawValue,
            since: walk.listing.startDate,
            until: walk.listing.endDate
        )
        (listed, added, duplicates, refused) = (walk.listed, walk.added, walk.duplicates, walk.refused)
        (pages, bytes, complete) = (walk.pages, walk.bytes, walk.complete)
        (stoppedBy, resumeToken) = (walk.stop?.code, walk.resumeToken)
    }
}
