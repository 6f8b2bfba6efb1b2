import Canonical
import Foundation
@testable import Gateway
import HTTPClient
import TestSupport
import Store
import Testing
import Synchronization
import V1Adapter

/// DESIGN ch. 5: the authoritative path silent for `silence_alert` while the other path is not → a metric and a log line.
@Suite struct SilenceAlertTests {
    @Test func anAuthoritativePathGoneQuietIsReportedOnce() async throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let hour: Int64 = 3_600_000
        let now = GatewayHarness.t + 10 * hour
        // com.example.gateway is V2-authoritative: its last V2 event is 8 h old, V1 events kept coming.
        _ = try h.writer.perform { c in
            func event(_ id: String, path: String, at: Int64) throws {
                try c.run(
                    """
                    INSERT INTO events (id, path, source, kind, bundle_id, environment, event_date, authoritative, created_at, json)
                    VALUES (?, ?, ?, 'renewal', 'com.example.gateway', 'production', ?, 0, ?, X'7B7D')
                    """, [.text(id), .text(path), .text(path), .integer(at), .integer(at)])
            }
            try event("a", path: "v2", at: now - 8 * hour)
            try event("b", path: "v1", at: now - hour)
        }
        let lines = LogLines()
        let context = WorkerContext(db: h.db, writer: h.writer, router: h.router, metrics: h.metrics,
                                    log: Log(now: { now }, sink: { lines.append($0) }), now: { now }, jitter: { 0 })
        let worker = CompareWorker(
            context: context, settings: .init(), silenceAlertMillis: 6 * hour, v2Source: nil,
            receiptClient: VerifyReceiptClient(transport: ScriptedTransport(results: [])), apps: [])
        await worker.checkSilence(at: now)
        await worker.checkSilence(at: now + 60_000)
        #expect(h.metrics.render().contains(#"iapgw_authority_silent{bundle="com.example.gateway",environment="production"} 1"#))
        #expect(h.metrics.render().contains(#"iapgw_authority_silent{bundle="com.example.gateway",environment="sandbox"} 0"#))
        #expect(lines.all.filter { $0.contains("authoritative path is silent") }.count == 1)
    }

    final class LogLines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ s: String) { lines.withLock { $0.append(s) } }
        var all: [String] { lines.withLock { $0 } }
    }
}
