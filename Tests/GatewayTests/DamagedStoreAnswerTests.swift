import Foundation
import HTTPClient
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// What the admin API answers about a subscription whose stored events are damaged (each a small frame that would
/// expand to 60 MiB): a quick answer of a few kilobytes that names every damaged row, on a real server.
@Suite struct DamagedStoreAnswerTests {
    typealias Service = GatewayServiceTests

    @Test func theAdminAnswerAboutADamagedSubscriptionIsSmallAndNamesTheDamagedRows() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Service.start(receiver: receiver)
        let (damaged, intact) = try DamagedSubscription.make(in: g.service.store, path: g.directory + "/gateway.db")
        let otid = DamagedSubscription.originalTransactionID

        var request = HTTPRequest(
            method: .get,
            url: g.adminURL("/admin/subscriptions/\(otid)"),
            headers: [HTTPHeader("Authorization", "Bearer \(Service.adminToken)")],
            timeoutMillis: 60_000
        )
        request.maxResponseBytes = 16 * 1_048_576
        let response = try await CurlTransport().send(request)
        #expect(response.status == 200)
        #expect(response.body.count < 64 * 1_024, "\(response.body.count) bytes")
        let answer = try #require(try JSONParser.parse(response.body).objectValue)
        #expect(answer["complete"] == .bool(true) && answer["stopped_by"] == nil)
        #expect(answer["damaged"] == .number("31"))
        let events = answer["events"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(events.count == 33)
        #expect(
            events.prefix(31).map { [$0["event_id"]?.stringValue, $0["damaged"]?.stringValue] }
                == damaged.map { [$0, "value_too_large"] }
        )
        #expect(events.suffix(2).map { $0["event"]?.objectValue?["id"]?.stringValue } == intact)
        #expect(answer["states"]?.arrayValue?.count == 1)
        await g.service.shutdown()
    }
}
