import Foundation
import Gateway
import HTTPClient
import SQLite
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WireJSON

/// A store that cannot write (a full disk, stood for by SQLite's `max_page_count`): notifications are answered 503
/// so Apple retries, nothing already acknowledged is lost, workers neither lose nor repeat work meanwhile, and
/// everything resumes by itself once there is room again (docs/operations.md, "disk full").
@Suite struct StoreFullTests {
    typealias Service = GatewayServiceTests

    /// Distinct notifications signed by the test PKI for sandbox (the one the test gateway trusts).
    static func bodies() throws -> [[UInt8]] {
        try Fixtures.names(in: "v2-synthetic").filter {
            $0.hasPrefix("notif-") && !["production", "external-purchase", "rescind"].contains(where: $0.contains)
        }
        .map { try Fixtures.bytes("v2-synthetic/\($0)") }
    }

    @Test func aFullStoreAnswers503LosesNothingAcknowledgedAndRecoversByItself() async throws {
        let deliveries = Mutex<[String]>([])
        let receiver = try LoopbackHTTPServer { r in
            if r.path == "/events", let id = r.header("webhook-id") { deliveries.withLock { $0.append(id) } }
            return .respond(status: 200)
        }
        // Two days after the fixtures were signed: within the freshness window for all of them.
        let g = try Service.start(receiver: receiver, now: GatewayHarness.t + 2 * 86_400_000)
        let bodies = try Self.bodies()
        var acknowledged: Set<String> = []
        func post(_ body: [UInt8]) async throws -> (status: Int, id: String?, code: String?) {
            let r = try await Service.post(g.url("/notifications"), body)
            let json = try JSONParser.parse(r.body).objectValue
            return (r.status, json?["id"]?.stringValue, json?["error"]?.objectValue?["code"]?.stringValue)
        }
        for body in bodies.prefix(10) {
            let r = try await post(body)
            #expect(r.status == 200)
            if let id = r.id { acknowledged.insert(id) }
        }
        let expected = acknowledged
        await eventually("the first events delivered") { Set(deliveries.withLock { $0 }).isSuperset(of: expected) }

        // The disk is full: the file may not grow by a page. Fill whatever room is left inside it.
        try g.service.sqliteStore.setMaxPageCount(1)
        var refused: [[UInt8]] = []
        for body in bodies.dropFirst(10) {
            let r = try await post(body)
            if r.status == 200 {
                if let id = r.id { acknowledged.insert(id) }  // it still fitted in free space inside the file
            } else {
                #expect(r.status == 503 && r.code == "store_unavailable")
                refused.append(body)
            }
        }
        #expect(
            refused.count >= 20,
            "only \(refused.count) of \(bodies.count - 10) were refused: the store was not full"
        )
        // Acknowledged means committed: every one of them is in the journal, and delivered.
        let journaled = Set(try g.service.store.journal().map(\.key))
        #expect(journaled.isSuperset(of: acknowledged))
        let expectedNow = acknowledged
        await eventually("the accepted events delivered") {
            Set(deliveries.withLock { $0 }).isSuperset(of: expectedNow)
        }

        // Room again: Apple's retries are accepted, with no restart and no operator action.
        try g.service.sqliteStore.setMaxPageCount(1 << 30)
        for body in refused {
            let r = try await post(body)
            #expect(r.status == 200)
            if let id = r.id { acknowledged.insert(id) }
        }
        let expectedAll = acknowledged
        await eventually("every event delivered") { Set(deliveries.withLock { $0 }).isSuperset(of: expectedAll) }
        // Delivered once each: no outcome was lost while the store was full, so nothing was sent again.
        let sent = deliveries.withLock { $0 }
        #expect(sent.count == Set(sent).count, "\(sent.count - Set(sent).count) duplicate deliveries")
        let metrics = String(
            decoding: try await Service.get(g.adminURL("/metrics"), token: Service.adminToken).body,
            as: UTF8.self
        )
        #expect(metrics.contains("iapgw_store_failures_total{operation=\"journal\"}"))
        await g.service.shutdown()
    }

    @Test func aDeliveryWhoseOutcomeCannotBeRecordedIsNotSentAgainMeanwhile() async throws {
        let sent = Mutex(0)
        let gate = Mutex(false)
        let receiver = try LoopbackHTTPServer { r in
            guard r.path == "/events" else { return .respond(status: 200) }
            // The delivery is answered only once the disk is full, so its outcome cannot be written.
            eventuallyBlocking("the disk full", every: .milliseconds(2), recordsIssue: false) { gate.withLock { $0 } }
            sent.withLock { $0 += 1 }
            return .respond(status: 200)
        }
        let faults = StorageFaults()
        let g = try Service.start(receiver: receiver) { _, deps in deps.sqliteOptions.faults = faults }
        #expect(
            try await Service.post(g.url("/notifications"), try Fixtures.bytes("v2-synthetic/notif-did-renew.json"))
                .status == 200
        )
        faults.diskFull = true
        gate.withLock { $0 = true }
        // The outcome is retried with backoff while the delivery stays claimed: three refusals take at least 700 ms,
        // in which the old code (releasing the job as still due) sent it again every few milliseconds.
        // At least three: the text "… 3" also matched 30 to 39, so a count that passed 3 between two looks was only
        // seen some 45 s later.
        await eventually("three failed outcome writes counted") {
            g.service.metrics.counter("iapgw_store_failures_total", ["operation": "job_outcome"]) >= 3
        }
        #expect(sent.withLock { $0 } == 1)
        faults.diskFull = false
        try await eventually("the delivery recorded once the disk has room") {
            try g.service.store.deliveries().filter { $0.downstream == "main" && $0.state == .delivered }.count == 1
        }
        #expect(sent.withLock { $0 } == 1)
        await g.service.shutdown()
    }
}
