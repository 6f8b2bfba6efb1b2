import Canonical
import Foundation
import Gateway
import HTTPClient
import Policy
import Store
import StoreTestSupport
import TestSupport
import Testing

/// `v2_passthrough` downstreams get Apple's V2 body exactly as it came, once per notification, and per-downstream
/// filters keep what they do not match from being queued (docs/configuration.md, `downstreams[]`).
@Suite struct V2PassthroughTests {
    /// Every real Apple-signed V2 notification of the fixtures (the other files of `Fixtures/v2` are bare signed
    /// transactions, not notifications).
    static let samples: [String] = {
        let folder = Fixtures.root.appending(path: "v2")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path())) ?? []
        return names.filter { $0.hasPrefix("notif-") && !$0.hasSuffix(".expected.json") }.sorted()
    }()

    /// The samples' apps (sandbox), a `v2_passthrough` downstream, a webhook taking refunds only and one taking all.
    static func harness(_ receiver: LoopbackHTTPServer) throws -> GatewayHarness {
        let bundles = [
            "com.loki-project.loki-messenger", "com.audaos.audarecorder", "cn.soulmate.elf", "com.Abilities",
        ]
        let apps = bundles.map { #"{ "bundle_id": "\#($0)", "environments": ["sandbox"], "authority": "v2" }"# }
        let json = """
            { "apps": [\(apps.joined(separator: ", "))],
              "downstreams": [
                { "name": "raw", "kind": "v2_passthrough", "url": "\(receiver.url("/raw"))", "environments": ["sandbox"] },
                { "name": "refunds", "url": "\(receiver.url("/refunds"))", "environments": ["sandbox"],
                  "filter": { "kinds": ["refund"] } },
                { "name": "all", "url": "\(receiver.url("/all"))", "environments": ["sandbox"] }
              ] }
            """
        return try GatewayHarness(configJSON: json)
    }

    @Test func everyRealV2NotificationReachesTheReceiverByteForByteOnce() async throws {
        #expect(Self.samples.count >= 11, "the real samples were found")
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        var accepted: [String: [UInt8]] = [:]
        for name in Self.samples {
            let bytes = try Fixtures.bytes("v2/" + name)
            let r = h.ingest.handle(bytes, origin: .backfill)
            #expect(r.status == 200, "\(name): \(String(decoding: r.body, as: UTF8.self))")
            if r.status == 200 { accepted[r.id ?? ""] = bytes }
            // Apple's retry of the same notification queues nothing more.
            #expect(h.ingest.handle(bytes, origin: .backfill).duplicate)
        }
        let worker = DeliveryWorkerTests.worker(h)
        let expected = accepted.count
        try await DeliveryWorkerTests.run(worker) {
            try h.store.deliveries().filter { $0.downstream == "raw" && $0.state == .delivered }.count == expected
        }
        let raw = receiver.requests.filter { $0.path == "/raw" }
        #expect(raw.count == accepted.count)
        for request in raw {
            let id = try #require(request.header("webhook-id"))
            #expect(request.body == accepted[id], "\(id): the bytes Apple sent")
            #expect(request.header("content-type") == "application/json")
            #expect(request.header("webhook-signature") == nil, "unsigned: the receiver verifies Apple's JWS")
        }
        #expect(Set(raw.compactMap { $0.header("webhook-id") }).count == raw.count, "once per notification")
    }

    @Test func aFilteredDownstreamGetsOnlyWhatItsFilterTakesAndTheRestIsCounted() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let h = try Self.harness(receiver)
        defer { h.close() }
        for name in Self.samples { _ = h.ingest.handle(try Fixtures.bytes("v2/" + name), origin: .backfill) }
        let deliveries = try h.store.deliveries()
        let all = deliveries.filter { $0.downstream == "all" }
        let refunds = deliveries.filter { $0.downstream == "refunds" }
        let events: [StoredEvent] = try await h.store.read { tx in
            try tx.events(id: nil, originalTransactionID: nil, limit: 1_000)
        }
        let refundIDs = Set(events.filter { $0.event.kind == .refund }.map(\.event.id))
        #expect(!refundIDs.isEmpty && all.count == events.count)
        #expect(Set(refunds.compactMap(\.eventID)) == refundIDs)
        #expect(
            h.metrics.counter("iapgw_delivery_filtered_total", ["downstream": "refunds"])
                == Double(events.count - refundIDs.count)
        )
        #expect(h.metrics.counter("iapgw_delivery_filtered_total", ["downstream": "all"]) == 0)
    }
}
