import Canonical
import Policy
import ServiceKit
import Store
import StoreTestSupport
import TestSupport
import Testing

@testable import Gateway

/// Retention on its own: one pass through the store at the injected clock's time.
@Suite struct RetentionWorkerTests {
    static let retention: Int64 = 86_400_000

    static func worker(
        _ h: GatewayHarness,
        at time: Int64,
        logs: GatewayServiceTests.LogBox = .init()
    ) -> RetentionWorker {
        RetentionWorker(
            store: h.store,
            log: Log(now: { time }, sink: { logs.append($0) }),
            now: { time },
            rawBodyRetentionMillis: retention
        )
    }

    /// The harness's gateway without its pass-through downstream, whose pending delivery of the notification's V1
    /// shape would keep the body.
    static func harness() throws -> GatewayHarness {
        try GatewayHarness(
            configJSON: GatewayHarness.configJSON.replacingOccurrences(
                of: #""downstreams": ["main", "shadow", "legacy"]"#,
                with: #""downstreams": ["main", "shadow"]"#
            )
        )
    }

    @Test func rawBodiesArePurgedOnceOlderThanTheRetention() async throws {
        let h = try Self.harness()
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let received = try #require(try h.store.journal().first).receivedAt

        // Exactly the retention old: kept.
        let logs = GatewayServiceTests.LogBox()
        #expect(await Self.worker(h, at: received + Self.retention, logs: logs).purge().bodies == 0)
        #expect(try h.store.journal().first?.body != nil)
        #expect(logs.all.isEmpty)

        // A millisecond older: dropped, the journal row and its events kept, and the purge logged.
        #expect(await Self.worker(h, at: received + Self.retention + 1, logs: logs).purge().bodies == 1)
        #expect(try h.store.journal().count == 1)
        #expect(try h.store.journal().first?.body == nil)
        #expect(try h.store.events().count == 1)
        #expect(logs.all.count == 1)
        #expect(logs.all.first?.contains(#""count":1"#) == true)
        #expect(logs.all.first?.contains(#""msg":"raw bodies purged""#) == true)
    }

    @Test func finishedFetchesArePurgedAfterAWeek() async throws {
        let h = try GatewayHarness()
        defer { h.close() }
        try await h.store.write { tx in
            for otid in ["done", "pending"] {
                let key = SubscriptionKey(bundleID: "b", environment: .sandbox, originalTransactionID: otid)
                try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v1, compare: true), at: 1_000, due: nil)
            }
        }
        try h.store.finishFetches { $0.originalTransactionID == "done" }
        let week = RetentionWorker.finishedFetchRetentionMillis
        #expect(await Self.worker(h, at: 1_000 + week).purge().fetches == 0)
        #expect(await Self.worker(h, at: 1_001 + week).purge().fetches == 1)
        #expect(try h.store.fetchJobs().map(\.originalTransactionID) == ["pending"])
    }

    @Test func aClosedStoreIsNoPurgeAndNoLogLine() async throws {
        let h = try GatewayHarness()
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        h.store.close()
        let logs = GatewayServiceTests.LogBox()
        let result = await Self.worker(h, at: .max / 2, logs: logs).purge()
        #expect(result.bodies == nil && result.fetches == nil)
        #expect(logs.all.isEmpty)
    }

    @Test func runPurgesAtOnceAndStopsWhenCancelled() async throws {
        let h = try Self.harness()
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let received = try #require(try h.store.journal().first).receivedAt
        let worker = Self.worker(h, at: received + Self.retention + 1)  // the hourly interval: only the first pass runs
        let task = Task { await worker.run() }
        try await eventually("the body purged") { try h.store.journal().first?.body == nil }
        task.cancel()
        await task.value
    }
}
