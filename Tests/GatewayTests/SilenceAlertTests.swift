import Canonical
import Foundation
import HTTPClient
import ServiceKit
import Store
import Synchronization
import TestSupport
import Testing
import V1Adapter

@testable import Gateway

/// docs/architecture.md, "Authority and comparison": the authoritative path silent for `silence_alert` while the other path is not → a metric and a log line.
@Suite struct SilenceAlertTests {
    @Test func anAuthoritativePathGoneQuietIsReportedOnce() async throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let hour: Int64 = 3_600_000
        let now = GatewayHarness.t + 10 * hour
        // com.example.gateway is V2-authoritative: its last V2 event is 8 h old, V1 events kept coming.
        let router = h.router
        func store(_ id: String, source: EventSource, at: Int64) throws {
            var e = CanonicalEvent(
                id: id,
                source: source,
                kind: .renewal,
                rawType: "DID_RENEW",
                eventDate: at,
                eventDateSource: .notification,
                verified: true
            )
            (e.bundleID, e.environment) = ("com.example.gateway", .production)
            _ = try h.store.write { [e] tx in
                try tx.storeEvents([e], journalID: nil, routing: router.routing, now: at, authority: nil)
            }
        }
        try store("a", source: .v2, at: now - 8 * hour)
        try store("b", source: .v1, at: now - hour)
        let lines = LogLines()
        let context = WorkerContext(
            store: h.store,
            metrics: h.metrics,
            log: Log(now: { now }, sink: { lines.append($0) }),
            now: { now },
            jitter: { 0 }
        )
        let worker = CompareWorker(
            context: context,
            router: h.router,
            settings: .init(),
            silenceAlertMillis: 6 * hour,
            v2Source: nil,
            receiptClient: VerifyReceiptClient(transport: ScriptedTransport(results: [])),
            apps: []
        )
        await worker.checkSilence(at: now)
        await worker.checkSilence(at: now + 60_000)
        #expect(
            h.metrics.render().contains(
                #"iapgw_authority_silent{bundle="com.example.gateway",environment="production"} 1"#
            )
        )
        #expect(
            h.metrics.render().contains(
                #"iapgw_authority_silent{bundle="com.example.gateway",environment="sandbox"} 0"#
            )
        )
        #expect(lines.all.filter { $0.contains("authoritative path is silent") }.count == 1)
    }

    final class LogLines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ s: String) { lines.withLock { $0.append(s) } }
        var all: [String] { lines.withLock { $0 } }
    }
}
