import Canonical
import Foundation
import HTTPClient
import Policy
import ServiceKit
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import V1Adapter

@testable import Gateway

/// A comparison waiting for the V1 path to know a subscription runs when the receipt is stored, never because its
/// retry came due. The workers here run on a clock that stands still: a job that is not due now never runs, so only a
/// wake-up can finish one. (CI: a V1 fetch read no receipt, the receipt was stored and woke it while it was in flight,
/// then the fetch's own "not seen yet" retry — 5 minutes out — overwrote the wake-up.)
@Suite struct CompareWakeTests {
    static let now: Int64 = GatewayHarness.t + 3_600_000
    /// The subscription of the synthetic V1 fixtures.
    static let otid = "2000000800020000"
    static let key = SubscriptionKey(
        bundleID: "com.example.gateway",
        environment: .production,
        originalTransactionID: otid
    )

    /// The workers' clock: it stands still at `now` unless a test moves it.
    final class StillClock: Sendable {
        private let time = Mutex(CompareWakeTests.now)
        var now: Int64 { time.withLock { $0 } }
        func set(_ t: Int64) { time.withLock { $0 = t } }
    }

    /// verifyReceipt on 127.0.0.1, answering with the fixtures' receipt (which knows `otid`).
    static func apple() throws -> LoopbackHTTPServer {
        let answer = try Fixtures.bytes("v1-synthetic/did-renew.receipt.json")
        return try LoopbackHTTPServer { _ in .respond(status: 200, body: answer) }
    }

    static func context(_ h: GatewayHarness, clock: StillClock = StillClock()) -> WorkerContext {
        WorkerContext(
            store: h.store,
            metrics: h.metrics,
            log: Log(now: { clock.now }, sink: { _ in }),
            now: { clock.now },
            jitter: { 0 }
        )
    }

    static func receiptClient(_ apple: LoopbackHTTPServer) -> VerifyReceiptClient {
        VerifyReceiptClient(
            transport: CurlTransport(),
            configuration: .init(
                productionURL: apple.url("/verifyReceipt"),
                sandboxURL: apple.url("/sandbox/verifyReceipt"),
                maxAttempts: 2
            ),
            sleep: { _ in },
            jitter: { 0 }
        )
    }

    static func compareWorker(
        _ h: GatewayHarness,
        apple: LoopbackHTTPServer,
        clock: StillClock = StillClock()
    ) -> CompareWorker {
        var policy = CompareWorker.Tuning()
        policy.pollMillis = 10
        return CompareWorker(
            context: context(h, clock: clock),
            router: h.router,
            settings: h.config.compareSettings,
            silenceAlertMillis: 6 * 3_600_000,
            v2Source: nil,
            receiptClient: receiptClient(apple),
            apps: h.config.v1Apps(environment: ["APP_SECRET": GatewayHarness.v1Secret]).apps,
            tuning: policy
        )
    }

    /// A comparison's V1 fetch of the fixtures' subscription, queued at `createdAt` (as a V2 notification queues it).
    static func queueV1Fetch(_ h: GatewayHarness, createdAt: Int64 = now) throws {
        try h.store.write { tx in
            try tx.enqueueFetch(FetchRequest(subscription: key, fetch: .v1, compare: true), at: createdAt, due: nil)
        }
    }

    /// The fetch as the worker starts it at `time`.
    static func claim(_ worker: CompareWorker, _ h: GatewayHarness, at time: Int64 = now) throws -> CompareWorker.Job {
        try #require(
            try h.store.read {
                try worker.due(at: time, lane: "", count: 10, lease: Lease(owner: "test", until: time), in: $0)
            }.first
        )
    }

    /// What the V1VerificationWorker does for the subscription's V1 notification (the part that concerns the comparison).
    static func storeReceipt(_ h: GatewayHarness) throws {
        try h.store.write { tx in
            try tx.putReceipt(StoredReceipt(receipt: "cmVjZWlwdA==", secretName: "APP_SECRET", updatedAt: now), of: key)
        }
    }

    static func fetch(_ h: GatewayHarness) throws -> (state: JobState, due: Int64, error: String?) {
        let job = try #require(try h.store.fetchJobs().first { $0.fetch == .v1 })
        return (job.state, job.nextAttemptAt, job.lastError)
    }

    @Test func aReceiptStoredWhileTheV1FetchIsUnderWayWakesIt() async throws {
        let apple = try Self.apple()
        let h = try GatewayHarness()
        defer { h.close() }
        try Self.queueV1Fetch(h)
        let worker = Self.compareWorker(h, apple: apple)
        // The order of the CI failure, made explicit: the fetch starts and reads no receipt; the receipt is stored (its
        // wake-up finds the fetch pending, as it is in flight); then the fetch settles as "V1 has not seen it".
        let job = try Self.claim(worker, h)
        try Self.storeReceipt(h)
        #expect(try await worker.notSeen(job, by: .v1, time: Self.now, receipt: nil) == .receiptStored)
        let woken = try Self.fetch(h)
        #expect(woken.state == .pending && woken.due == Self.now, "due now, not in \(woken.due - Self.now) ms")
        // And it runs: verifyReceipt of the stored receipt, the V1 snapshot, the fetch done — with the clock standing still.
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }) {
            try Self.fetch(h).state == .done
        }
        #expect(try Self.fetch(h).state == .done)
        #expect(try h.store.snapshot(Self.key, path: .v1)?.source == .v1Receipt)
        #expect(apple.requests.count == 1)
    }

    @Test func pastTheGraceWindowAReceiptStoredMeanwhileIsNotRecordedAsV2Only() async throws {
        let apple = try Self.apple()
        let h = try GatewayHarness()
        defer { h.close() }
        try Self.queueV1Fetch(h, createdAt: Self.now - h.config.compareSettings.graceMillis)
        let worker = Self.compareWorker(h, apple: apple)
        let job = try Self.claim(worker, h)
        try Self.storeReceipt(h)
        #expect(try await worker.notSeen(job, by: .v1, time: Self.now, receipt: nil) == .receiptStored)
        #expect(try h.store.ledger().count == 0, "V1 knows the subscription now")
        #expect(try Self.fetch(h).due == Self.now)
    }

    @Test func withNoReceiptTheFetchWaitsAndTheGraceWindowStillEndsIt() async throws {
        let apple = try Self.apple()
        let h = try GatewayHarness()
        defer { h.close() }
        let clock = StillClock()
        let worker = Self.compareWorker(h, apple: apple, clock: clock)
        try Self.queueV1Fetch(h)
        #expect(try await worker.notSeen(try Self.claim(worker, h), by: .v1, time: Self.now, receipt: nil) == .waiting)
        let waiting = try Self.fetch(h)
        #expect(
            waiting.state == .pending && waiting.due == Self.now + worker.notSeenRetryMillis
                && waiting.error == "v1_not_seen_yet"
        )
        // The grace window has passed since the fetch was queued: its next look records what was seen.
        let end = Self.now + h.config.compareSettings.graceMillis
        clock.set(end)
        #expect(
            try await worker.notSeen(try Self.claim(worker, h, at: end), by: .v1, time: end, receipt: nil) == .oneSided
        )
        #expect(try Self.fetch(h).state == .done)
        #expect(try h.store.ledger().map(\.outcome) == [.v2Only])
        #expect(apple.requests.isEmpty)
    }

    @Test func waitingForTheOtherPathNeverUsesUpTheAttemptsBeforeTheGraceWindowEnds() async throws {
        let apple = try Self.apple()
        let h = try GatewayHarness()
        defer { h.close() }
        let clock = StillClock()
        let worker = Self.compareWorker(h, apple: apple, clock: clock)
        try Self.queueV1Fetch(h)
        // Far more looks than the policy's attempt limit, all inside the grace window: the job stays pending (it used to
        // fail after 50 looks, about four hours, and a longer grace window never recorded the one-sided outcome).
        for _ in 0..<(CompareWorker.Tuning().retry.maxAttempts + 10) {
            try h.store.makeFetchesDue(at: Self.now)
            #expect(
                try await worker.notSeen(try Self.claim(worker, h), by: .v1, time: Self.now, receipt: nil) == .waiting
            )
        }
        #expect(try Self.fetch(h).state == .pending)
        // The last look is due when the window ends, not after it: a look a second before the end.
        let late = Self.now + h.config.compareSettings.graceMillis - 1_000
        clock.set(late)
        try h.store.makeFetchesDue(at: late)
        #expect(
            try await worker.notSeen(try Self.claim(worker, h, at: late), by: .v1, time: late, receipt: nil) == .waiting
        )
        #expect(try Self.fetch(h).due == late + 1_000)
    }

    @Test func theV1VerificationWorkerWakesTheFetchWaitingForItsReceipt() async throws {
        let apple = try Self.apple()
        let h = try GatewayHarness()
        defer { h.close() }
        try Self.queueV1Fetch(h)
        let waiting = Self.compareWorker(h, apple: apple)
        // V1 has not seen the subscription yet: the fetch waits (its retry never comes due on this clock).
        try await GatewayHarness.runUntil(run: { await waiting.run() }, stop: { waiting.stop() }) {
            try Self.fetch(h).error == "v1_not_seen_yet"
        }
        #expect(try Self.fetch(h).due == Self.now + waiting.notSeenRetryMillis)
        // The subscription's V1 notification arrives and is verified: its receipt is stored and wakes the fetch.
        #expect(h.ingest.handle(try Fixtures.bytes("v1-synthetic/did-renew.json")).status == 200)
        let receipts = V1VerificationWorker(
            context: Self.context(h),
            router: h.router,
            client: Self.receiptClient(apple),
            apps: h.config.v1Apps(environment: ["APP_SECRET": GatewayHarness.v1Secret]).apps
        )
        try await GatewayHarness.runUntil(run: { await receipts.run() }, stop: { receipts.stop() }) {
            try h.store.receiptJobs().filter { $0.state == .done }.count == 1
        }
        #expect(try Self.fetch(h).due == Self.now)
        let compare = Self.compareWorker(h, apple: apple)
        try await GatewayHarness.runUntil(run: { await compare.run() }, stop: { compare.stop() }) {
            try Self.fetch(h).state == .done
        }
        #expect(try Self.fetch(h).state == .done)
    }
}
