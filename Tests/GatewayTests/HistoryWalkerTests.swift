import Canonical
import Gateway
import ServiceKit
import Store
import Synchronization
import Testing

/// The walk through Apple's notification history that `backfill` and the sweep share (docs/operations.md,
/// "Reconciliation"), against the history ``HistorySweepTests/FakeHistory`` scripts (a page's size: its payloads'):
/// its caps over all its listings, where it says to go on from, and where it stops.
@Suite struct HistoryWalkerTests {
    typealias Rig = HistorySweepTests.Rig

    static let bundleID = HistorySweepTests.bundleID

    /// A history that never ends: page n holds notification n + 1.
    static func endless() throws -> @Sendable (Int, Int64, Int64) -> HistorySweepTests.FakeHistory.Page {
        let notifications = try (1...12).map { try HistorySweepTests.signed(HistorySweepTests.uuid($0)) }
        return { index, _, _ in ([notifications[min(index, notifications.count - 1)]], true) }
    }

    static func listing(_ start: Int64 = 0, _ end: Int64 = GatewayHarness.t + 1) -> HistoryWalker.Listing {
        HistoryWalker.Listing(bundleID: bundleID, environment: .sandbox, startDate: start, endDate: end)
    }

    static func walker(_ rig: Rig, _ configuration: HistoryWalker.Configuration) -> HistoryWalker {
        HistoryWalker(source: rig.history, ingest: rig.service.ingest, configuration: configuration)
    }

    @Test func thePageCapCountsOverAllListingsAndTheListingsAfterTheStopAreNotAskedFor() async throws {
        // The first window's history has two pages, the second's never ends.
        let endless = try Self.endless()
        let rig = try Rig(reconcile: #""every": "off""#) { index, start, end in
            start == 0 ? endless(index, start, end) : (endless(index, start, end).payloads, index == 0)
        }
        defer { rig.close() }
        let listings = [Self.listing(1), Self.listing(0), Self.listing(2)]
        var stops: [String] = []
        let walks = await Self.walker(rig, .init(origin: .historySweep, maxPages: 4)).walk(
            listings,
            observe: { event in
                if case .stopped(let listing, let stop) = event { stops.append("\(listing.startDate) \(stop.code)") }
            }
        )
        #expect(walks.map(\.listing) == listings)
        #expect(walks.map(\.pages) == [2, 2, 0] && walks.map(\.requests) == [2, 2, 0])
        #expect(walks.map(\.complete) == [true, false, false])
        #expect(walks.map { $0.stop?.code } == [nil, "max_pages", "max_pages"])
        // Where the stopped listing goes on from; the listing not reached starts from its first page.
        #expect(walks.map(\.resumeToken) == [nil, "page-2", nil])
        // One event for the stop, where it happened.
        #expect(stops == ["0 max_pages"])
        #expect(rig.history.requests.withLock { $0 }.map(\.token) == [nil, "page-1", nil, "page-1"])
    }

    @Test func theByteCapEndsTheWalkAfterThePageThatReachesIt() async throws {
        let rig = try Rig(reconcile: #""every": "off""#, history: try Self.endless())
        defer { rig.close() }
        let size = try HistorySweepTests.signed(HistorySweepTests.uuid(1)).utf8.count
        let walk = await Self.walker(rig, .init(origin: .historySweep, maxBytes: Int64(2 * size + 1)))
            .walk(Self.listing())
        #expect(walk.pages == 3 && walk.bytes == Int64(3 * size))
        #expect(walk.stop?.code == "max_bytes" && !walk.complete && walk.resumeToken == "page-3")
        #expect(walk.added == 3 && walk.listed == 3)
    }

    @Test func aWalkGoesOnFromItsResumeTokenAndKeepsItWhenACapLeavesItNoPage() async throws {
        let notifications = try (1...4).map { try HistorySweepTests.signed(HistorySweepTests.uuid($0)) }
        let rig = try Rig(reconcile: #""every": "off""#) { index, _, _ in ([notifications[index]], index < 3) }
        defer { rig.close() }
        let resumed = await Self.walker(rig, .init(origin: .historySweep, resumeToken: "page-2")).walk(Self.listing())
        #expect(rig.history.requests.withLock { $0 }.map(\.token) == ["page-2", "page-3"])
        #expect(resumed.pages == 2 && resumed.added == 2 && resumed.complete)
        #expect(resumed.stop == nil && resumed.resumeToken == nil)
        #expect(Set(try rig.journalKeys()) == [HistorySweepTests.uuid(3), HistorySweepTests.uuid(4)])

        // A cap met before the first page: the token is still where to go on from.
        let capped = await Self.walker(rig, .init(origin: .historySweep, maxPages: 0, resumeToken: "page-1"))
            .walk(Self.listing())
        #expect(capped.pages == 0 && capped.requests == 0 && capped.stop?.code == "max_pages")
        #expect(capped.resumeToken == "page-1")
        #expect(rig.history.requests.withLock { $0 }.count == 2)
    }

    @Test func aNotificationTheStoreKeepsNowhereStopsTheWalkAtItsPage() async throws {
        // The genuine lane holds one row: the second unservable notification of page 1 cannot be kept.
        let first = [try HistorySweepTests.signed(HistorySweepTests.uuid(1))]
        let second = [
            try HistorySweepTests.signed(HistorySweepTests.uuid(91), bundle: "com.example.unconfigured"),
            try HistorySweepTests.signed(HistorySweepTests.uuid(92), bundle: "com.example.unconfigured"),
            try HistorySweepTests.signed(HistorySweepTests.uuid(2)),
        ]
        let rig = try Rig(reconcile: #""every": "off""#, limits: #"{"genuine_quarantine": 1}"#) { index, _, _ in
            index == 0 ? (first, true) : (second, false)
        }
        defer { rig.close() }
        var items: [HistoryWalker.Item] = []
        let walks = await Self.walker(rig, .init(origin: .backfill)).walk(
            [Self.listing(), Self.listing(1)],
            observe: { event in
                if case .item(_, _, let item) = event { items.append(item) }
            }
        )
        #expect(items == [.added, .refused(code: "unknown_bundle"), .notKept(code: "unknown_bundle")])
        let walk = try #require(walks.first)
        #expect(walk.listed == 3 && walk.added == 1 && walk.refused == ["unknown_bundle": 1])
        #expect(walk.stop?.code == "unknown_bundle" && !walk.complete && walk.resumeToken == "page-1")
        #expect(walks.last?.stop?.code == "unknown_bundle" && walks.last?.pages == 0)
        #expect(try rig.journalKeys() == [HistorySweepTests.uuid(1)])
        #expect(try rig.quarantined().count == 1)
    }

    @Test func aRequestRefusedBeforeItIsSentStopsTheWalkUnsent() async throws {
        let rig = try Rig(reconcile: #""every": "off""#, history: try Self.endless())
        defer { rig.close() }
        let refusal = PathFetchError(code: "rate_limited", message: "waiting", retryable: true)
        var asked = 0
        let walk = await Self.walker(rig, .init(origin: .historySweep)).walk(
            Self.listing(),
            beforeRequest: { _ throws(PathFetchError) in
                asked += 1
                if asked == 3 { throw refusal }
            }
        )
        #expect(walk.requests == 2 && walk.pages == 2 && walk.added == 2)
        #expect(walk.stop?.code == "rate_limited" && walk.resumeToken == "page-2")
        #expect(rig.history.requests.withLock { $0 }.count == 2)
    }

    @Test func aCompleteListingCountsWhatItAddedWhatWasThereAndWhatItRefused() async throws {
        let page = [
            try HistorySweepTests.signed(HistorySweepTests.uuid(1)),
            try HistorySweepTests.signed(HistorySweepTests.uuid(99), bundle: "com.example.unconfigured"),
        ]
        let rig = try Rig(reconcile: #""every": "off""#) { _, _, _ in (page, false) }
        defer { rig.close() }
        let walker = Self.walker(rig, .init(origin: .backfill))
        let first = await walker.walk(Self.listing())
        #expect(first.complete && first.stop == nil && first.resumeToken == nil)
        #expect(
            first.listed == 2 && first.added == 1 && first.duplicates == 0 && first.refused == ["unknown_bundle": 1]
        )
        let again = await walker.walk(Self.listing())
        #expect(
            again.listed == 2 && again.added == 0 && again.duplicates == 1 && again.refused == ["unknown_bundle": 1]
        )
        // Refused on both walks, quarantined once.
        #expect(try rig.quarantined().count == 1)
    }
}
