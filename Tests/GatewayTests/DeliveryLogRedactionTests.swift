import Foundation
import HTTPClient
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// The delivery log keeps the head of each answer, and many frameworks answer an error with a page that quotes the
/// request: the shared secret a `v1_passthrough` delivery restored, the `webhook-signature` of a webhook delivery. The
/// worker as `serve` builds it keeps neither (docs/operations.md, "The delivery log").
@Suite struct DeliveryLogRedactionTests {
    /// An error page quoting the request: its headers (webhook deliveries), then its body.
    static func echo(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Action {
        var page = Array("<h1>400 Bad Request</h1><pre>".utf8)
        if request.path == "/events" {
            for header in request.headers { page += Array("\(header.name): \(header.value)\n".utf8) }
        }
        page += request.body + Array("</pre>".utf8)
        return .respond(status: 400, body: page)
    }

    /// The newest logged attempt's head of every delivery to `downstream`.
    static func heads(_ h: GatewayHarness, _ downstream: String) throws -> [String] {
        try h.store.read { tx in
            try tx.deliveryPage(downstream: downstream, state: .pending, after: .since(0), limit: 10)
        }.compactMap { $0.attempts.first.map { String(decoding: $0.responseHead, as: UTF8.self) } }
    }

    @Test func anAnswerQuotingItsRequestKeepsNeitherTheSharedSecretNorTheSignature() async throws {
        let receiver = try LoopbackHTTPServer { Self.echo($0) }
        let h = try DeliveryWorkerTests.harness(receiver)
        defer { h.close() }
        #expect(h.ingest.handle(try Fixtures.bytes("v1-synthetic/did-renew.json")).status == 200)
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        // The service's own worker: its redactor is the one `serve` gives it.
        let worker = h.service.delivery
        try await GatewayHarness.runUntil(run: { await worker.run() }, stop: { worker.stop() }) {
            let tried = try h.store.deliveries().filter { ["legacy", "main"].contains($0.downstream) }
            return Set(tried.map(\.downstream)).count == 2 && tried.allSatisfy { $0.attempts >= 1 }
        }
        // The receiver got the secret and the signature: the answers quote them.
        let v1 = try #require(receiver.requests.first { $0.path == "/apple/v1" })
        #expect(String(decoding: v1.body, as: UTF8.self).contains(GatewayHarness.v1Secret))
        let headers: [String] = receiver.requests.filter { $0.path == "/events" }.compactMap {
            $0.header("webhook-signature")
        }
        let signatures: [String] = headers.flatMap { header in
            header.split(separator: " ").map { String($0.dropFirst(3)) }
        }
        #expect(!signatures.isEmpty)

        // Each answer's head as the log keeps it (an attempt that sent nothing has none).
        let legacy = try Self.heads(h, "legacy").filter { $0.hasPrefix("<h1>") }
        #expect(!legacy.isEmpty)
        #expect(legacy.allSatisfy { !$0.contains(GatewayHarness.v1Secret) && $0.contains("iapgw-secret:APP_SECRET") })
        let main = try Self.heads(h, "main").filter { $0.hasPrefix("<h1>") }
        #expect(main.count == 1)
        for head in main {
            #expect(head.contains("webhook-signature: v1,iapgw-secret:webhook-signature"))
            for signature in signatures { #expect(!head.contains(signature)) }
        }
        // Nor anywhere in the file: the log is the only place an answer goes.
        var stored: [UInt8] = []
        for suffix in ["", "-wal"] {
            stored += (try? Array(Data(contentsOf: URL(filePath: h.config.sqlitePath + suffix)))) ?? []
        }
        for needle in signatures + [GatewayHarness.v1Secret] {
            let found = DeliveryLogTests.contains(stored, Array(needle.utf8))
            #expect(!found, "\(needle) stored")
        }
    }
}
