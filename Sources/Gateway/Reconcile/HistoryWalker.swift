public import Canonical
public import ServiceKit
internal import Store
internal import Threads

/// A walk through Apple's notification history (Get Notification History; docs/operations.md, "Reconciliation"), the
/// one that `iap-gateway backfill` and the scheduled sweep (``ReconcileWorker``) both make. Each ``Listing`` — one
/// app's notifications in one environment over a window — is read one page at a time, and every page's
/// `signedPayload`s go through the normal pipeline (``NotificationIngest``, as ``Configuration/origin``: verified like
/// live traffic but without the freshness window, deduplicated on the notification UUID) before the next page is asked
/// for: what a walk holds is one page, whatever Apple answers. The pipeline waits for the store, so each notification
/// is handed to it on a blocking thread (``Blocking``), never on Swift's cooperative pool.
///
/// A walk ends at the first of (``Stop``): its caps (``Configuration/maxPages``, ``Configuration/maxBytes``, over all
/// its listings), a request refused before it is sent or failed at Apple, a notification the store keeps nowhere
/// (``NotificationIngest/Result/mustComeAgain``: its page is where to start again). A notification the gateway cannot
/// serve (a bundle the config does not have, say) is counted under its code, quarantined once by the origin's rule
/// (``NotificationIngest/Origin/quarantinesOnce``), and gone past.
public struct HistoryWalker: Sendable {
    /// What one user of the walk sets apart from another.
    public struct Configuration: Sendable {
        /// How the pipeline judges and records what the walk feeds it (``NotificationIngest/Origin/backfill``,
        /// ``NotificationIngest/Origin/historySweep``).
        public var origin: NotificationIngest.Origin
        /// Pages one walk fetches, over all its listings.
        public var maxPages: Int
        /// Bytes of Apple's answers one walk reads, over all its listings: checked before each page, so a walk ends
        /// after the page that reaches it.
        public var maxBytes: Int64
        /// The pagination token every listing the walk reaches starts from (the ``Walk/resumeToken`` of an earlier
        /// walk of the same listing); nil: its first page.
        public var resumeToken: String?

        public init(
            origin: NotificationIngest.Origin,
            maxPages: Int = .max,
            maxBytes: Int64 = .max,
            resumeToken: String? = nil
        ) {
            (self.origin, self.maxPages, self.maxBytes, self.resumeToken) = (origin, maxPages, maxBytes, resumeToken)
        }
    }

    /// One app's notification history in one environment, over [startDate, endDate) (ms).
    public struct Listing: Sendable, Hashable {
        public var bundleID: String
        public var environment: AppStoreEnvironment
        public var startDate: Int64
        public var endDate: Int64

        public init(bundleID: String, environment: AppStoreEnvironment, startDate: Int64, endDate: Int64) {
            (self.bundleID, self.environment, self.startDate, self.endDate) = (
                bundleID, environment, startDate, endDate
            )
        }
    }

    /// What the walk makes of one notification, from what the pipeline answered.
    public enum Item: Sendable, Hashable {
        /// Journaled now: it had been missed.
        case added
        /// Journaled before (received live, or by an earlier walk).
        case duplicate
        /// Refused and held in the quarantine, or refused for good: counted under its code and gone past.
        case refused(code: String)
        /// Kept nowhere (the store failed, the genuine lane is full): the walk stops at it.
        case notKept(code: String)

        public init(_ result: NotificationIngest.Result) {
            if result.status == 200 {
                self = result.duplicate ? .duplicate : .added
            } else if result.mustComeAgain {
                self = .notKept(code: result.code ?? OutcomeCode.storeUnavailable.rawValue)
            } else {
                self = .refused(code: result.code ?? "status_\(result.status)")
            }
        }
    }

    /// Why a walk ended before the end of a listing.
    public enum Stop: Sendable {
        /// ``Configuration/maxPages`` pages were fetched.
        case pageCap
        /// ``Configuration/maxBytes`` of Apple's answers were read.
        case byteCap
        /// A request was refused before it was sent (the `beforeRequest` of ``walk(_:beforeRequest:observe:)``), or
        /// failed at Apple.
        case failed(PathFetchError)
        /// A notification the store keeps nowhere (``Item/notKept(code:)``): its page is where to start again.
        case notKept(code: String)

        /// The code it is reported by: `max_pages`, `max_bytes`, or the failure's or the pipeline's code.
        public var code: String {
            switch self {
            case .pageCap: "max_pages"
            case .byteCap: "max_bytes"
            case .failed(let error): error.code
            case .notKept(let code): code
            }
        }
    }

    /// What a walk did in one listing.
    public struct Walk: Sendable {
        public var listing: Listing
        /// Notifications of the listing that went through the pipeline.
        public var listed = 0
        /// Of those, ``Item/added``, ``Item/duplicate`` and ``Item/refused(code:)`` (counts by code).
        public var added = 0
        public var duplicates = 0
        public var refused: [String: Int] = [:]
        /// Requests sent to Apple (one that failed included), pages fetched, and the bytes of Apple's answers.
        public var requests = 0
        public var pages = 0
        public var bytes: Int64 = 0
        /// Whether Apple's listing was read to its end.
        public var complete = false
        /// Why not. A listing the walk did not reach (an earlier one stopped it) says why too, with no page fetched.
        public var stop: Stop?
        /// Where a later walk goes on from (``Configuration/resumeToken``): the pagination token of the page to fetch
        /// next. nil when the listing is complete, or when it must start again from its first page.
        public var resumeToken: String?

        public init(listing: Listing) { self.listing = listing }
    }

    /// What a walk reports as it goes, for its caller's metrics and logs.
    public enum Event: Sendable {
        /// A notification of the listing went through the pipeline (one kept nowhere included).
        case item(Listing, NotificationIngest.Result, Item)
        /// The walk stopped in this listing; the listings after it are not asked for.
        case stopped(Listing, Stop)
    }

    let source: any NotificationHistorySource
    let ingest: NotificationIngest
    public let configuration: Configuration

    public init(source: any NotificationHistorySource, ingest: NotificationIngest, configuration: Configuration) {
        (self.source, self.ingest, self.configuration) = (source, ingest, configuration)
    }

    /// Walks `listings` in order, the caps counted over all of them. `beforeRequest` runs before each request to Apple
    /// (a rate limit in force, a metric): what it throws stops the walk as ``Stop/failed(_:)``, the request unsent.
    public func walk(
        _ listings: [Listing],
        beforeRequest: (Listing) throws(PathFetchError) -> Void = { _ in },
        observe: (Event) -> Void = { _ in }
    ) async -> [Walk] {
        var spent = Spent()
        var walks: [Walk] = []
        for listing in listings {
            if let stop = walks.last?.stop {
                var walk = Walk(listing: listing)
                walk.stop = stop
                walks.append(walk)
            } else {
                walks.append(await walk(listing, spent: &spent, beforeRequest: beforeRequest, observe: observe))
            }
        }
        return walks
    }

    /// Walks one listing (``walk(_:beforeRequest:observe:)`` with one).
    public func walk(
        _ listing: Listing,
        beforeRequest: (Listing) throws(PathFetchError) -> Void = { _ in },
        observe: (Event) -> Void = { _ in }
    ) async -> Walk {
        var spent = Spent()
        return await walk(listing, spent: &spent, beforeRequest: beforeRequest, observe: observe)
    }

    /// What a walk has fetched so far, over all its listings.
    struct Spent {
        var pages = 0
        var bytes: Int64 = 0
    }

    private func walk(
        _ listing: Listing,
        spent: inout Spent,
        beforeRequest: (Listing) throws(PathFetchError) -> Void,
        observe: (Event) -> Void
    ) async -> Walk {
        var walk = Walk(listing: listing)
        var token = configuration.resumeToken
        guard
            let stop = await read(
                into: &walk,
                from: &token,
                spent: &spent,
                beforeRequest: beforeRequest,
                observe: observe
            )
        else {
            walk.complete = true
            return walk
        }
        walk.stop = stop
        if walk.pages > 0 || configuration.resumeToken != nil { walk.resumeToken = token }
        observe(.stopped(listing, stop))
        return walk
    }

    /// Reads the listing's pages from `token` on, leaving `token` at the page to fetch next; nil once Apple's listing
    /// ends.
    private func read(
        into walk: inout Walk,
        from token: inout String?,
        spent: inout Spent,
        beforeRequest: (Listing) throws(PathFetchError) -> Void,
        observe: (Event) -> Void
    ) async -> Stop? {
        let listing = walk.listing
        while true {
            if spent.pages >= configuration.maxPages { return .pageCap }
            if spent.bytes >= configuration.maxBytes { return .byteCap }
            let page: NotificationHistorySlice
            do throws(PathFetchError) {
                try beforeRequest(listing)
                walk.requests += 1
                page = try await source.notificationHistoryPage(
                    bundleID: listing.bundleID,
                    environment: listing.environment,
                    startDate: listing.startDate,
                    endDate: listing.endDate,
                    paginationToken: token
                )
            } catch {
                return .failed(error)
            }
            spent.pages += 1
            spent.bytes += Int64(page.byteCount)
            walk.pages += 1
            walk.bytes += Int64(page.byteCount)
            for payload in page.signedPayloads {
                // `handle` throws nothing: only a bridge that could not run it would leave no result.
                guard let result = await handle(payload) else {
                    return .notKept(code: OutcomeCode.storeUnavailable.rawValue)
                }
                let item = Item(result)
                walk.listed += 1
                switch item {
                case .added: walk.added += 1
                case .duplicate: walk.duplicates += 1
                case .refused(let code): walk.refused[code, default: 0] += 1
                case .notKept: break
                }
                observe(.item(listing, result, item))
                if case .notKept(let code) = item { return .notKept(code: code) }
            }
            guard let next = page.nextPaginationToken else { return nil }
            token = next
        }
    }

    /// One notification through the pipeline, which waits for the store's commit: on a blocking thread.
    private func handle(_ signedPayload: String) async -> NotificationIngest.Result? {
        let (ingest, origin) = (self.ingest, configuration.origin)
        return try? await Blocking.run { ingest.handle(InboundBody.v2(signedPayload: signedPayload), origin: origin) }
    }
}
