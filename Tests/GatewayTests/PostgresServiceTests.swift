import Canonical
import Foundation
import Gateway
import HTTPClient
import ReceiptPath
import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

/// The whole service on PostgreSQL (`store.postgres`), two instances on one database, as a load balancer would run
/// them: run against the real server of `scripts/with-postgres`, skipped without one.
@Suite(.enabled(if: TestPostgresServer.url != nil, "needs scripts/with-postgres")) struct PostgresServiceTests {
    typealias Service = GatewayServiceTests

    /// An instance of the gateway on `schema`'s database, named `instance` in its job claims.
    static func instance(_ name: String, on schema: TestSchema, receiver: LoopbackHTTPServer) throws -> Service.Running
    {
        try Service.start(receiver: receiver) { config, deps in
            config.postgresURLEnv = "IAPGW_DATABASE_URL"
            deps.environment["IAPGW_DATABASE_URL"] = schema.url
            deps.instanceID = name
        }
    }

    static func answer(_ response: HTTPResponse) throws -> (ok: Bool, duplicate: Bool) {
        let o = try JSONParser.parse(response.body).objectValue
        return (o?["ok"] == .bool(true), o?["duplicate"] == .bool(true))
    }

    @Test func twoInstancesShareTheJournalTheOutboxAndTheAuthority() async throws {
        let schema = try TestSchema()
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let a = try Self.instance("a", on: schema, receiver: receiver)
        let b = try Self.instance("b", on: schema, receiver: receiver)
        // The same Apple retry reaching both instances: journaled once, the second answer says so.
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        let first = try await Service.post(a.url("/notifications"), body)
        let retry = try await Service.post(b.url("/notifications"), body)
        #expect(first.status == 200 && retry.status == 200)
        #expect(try Self.answer(first) == (true, false) && Self.answer(retry) == (true, true))
        #expect(try a.service.store.journal().count == 1 && b.service.store.journal().count == 1)
        // Another notification through the other instance; each event reaches the webhook, whichever instance sends it.
        let v1 = try Fixtures.bytes("v1-synthetic/did-renew.json")
        let other = try await Service.post(b.url("/notifications"), v1)
        #expect(other.status == 200)
        try await eventually("every delivery settled") {
            try a.service.store.deliveries().allSatisfy { $0.state == .delivered }
                && a.service.store.deliveries().count >= 2
        }
        let ids = receiver.requests.filter { $0.path == "/events" }.compactMap { $0.header("webhook-id") }
        let events = Set(try a.service.store.deliveries().filter { $0.downstream == "main" }.compactMap(\.eventID))
        #expect(!ids.isEmpty && Set(ids) == events, "each event delivered, duplicates only under its own webhook id")
        // A cutover made through one instance's admin API is what the other journals under at once: it reads the
        // authority from the database in the transaction that journals.
        var cutover = URLComponents(string: a.adminURL("/admin/cutover"))!
        cutover.queryItems = [
            .init(name: "bundle", value: "com.example.gateway"), .init(name: "environment", value: "sandbox"),
            .init(name: "to", value: "v1"), .init(name: "reason", value: "test"),
        ]
        let flipped = try await CurlTransport().send(
            HTTPRequest(
                method: .post,
                url: cutover.string!,
                headers: [HTTPHeader("Authorization", "Bearer \(Service.adminToken)")],
                body: [],
                timeoutMillis: 10_000
            )
        )
        #expect(flipped.status == 200, "\(String(decoding: flipped.body, as: UTF8.self))")
        let seenByB = try await b.service.store.read { tx in
            try tx.authority(bundleID: "com.example.gateway", environment: .sandbox)
        }
        #expect(seenByB == .v1)
        await a.service.shutdown()
        await b.service.shutdown()
    }

    @Test func twoInstancesAskAppleOnceForOneCustomer() async throws {
        // Receipts of one customer reaching both instances at once: one instance claims the fetch, the other waits for
        // its result in the shared store; Apple is asked once.
        let schema = try TestSchema()
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let apple = ReceiptEndpointTests.FakeHistory()
        apple.state.withLock {
            $0.histories[ReceiptEndpointTests.customer] = ReceiptEndpointTests.history()
            $0.holds = true
        }
        func instance(_ name: String) throws -> Service.Running {
            try Service.start(receiver: receiver) { config, deps in
                config.postgresURLEnv = "IAPGW_DATABASE_URL"
                config.apps[0].receipts = .api
                deps.environment["IAPGW_DATABASE_URL"] = schema.url
                deps.instanceID = name
                deps.receiptReader = ReceiptEndpointTests.reader
                deps.receiptHistorySource = apple
            }
        }
        let (a, b) = (try instance("a"), try instance("b"))
        var w = JSONObjectWriter()
        w.string("receipt-data", ReceiptEndpointTests.receiptData())
        w.string("password", GatewayHarness.v1Secret)
        let body = w.finish()
        let answers = Task {
            await withTaskGroup(of: Int.self) { group in
                for i in 0..<20 {
                    let endpoint = (i % 2 == 0 ? a : b).service.receiptEndpoint
                    group.addTask { ReceiptEndpoint.status(of: await endpoint.handle(body, sandboxURL: true)) }
                }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        await eventually("one instance is asking Apple") { apple.calls == 1 }
        apple.state.withLock { $0.holds = false }
        let statuses = await answers.value
        #expect(statuses.count == 20 && statuses.allSatisfy { $0 == 0 }, "\(statuses)")
        #expect(apple.calls == 1)
        await a.service.shutdown()
        await b.service.shutdown()
    }

    @Test func aSecondInstanceGoesOnFromThePagesTheFirstKept() async throws {
        // A customer of 1,200 transactions: instance a keeps 30 pages, then stops (its fetch ended by the shutdown,
        // nothing left running); instance b asks Apple only for the 30 pages after them.
        let schema = try TestSchema()
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let (transactions, renewals) = ReceiptHistoryPagesTests.bigHistory()
        let apple = ReceiptHistoryPagesTests.PagedApple(transactions: transactions, renewals: renewals, clock: nil)
        apple.state.withLock { $0.holdAt = 31 }
        func instance(_ name: String) throws -> Service.Running {
            try Service.start(receiver: receiver) { config, deps in
                config.postgresURLEnv = "IAPGW_DATABASE_URL"
                config.apps[0].receipts = .api
                deps.environment["IAPGW_DATABASE_URL"] = schema.url
                deps.instanceID = name
                deps.receiptReader = ReceiptEndpointTests.reader
                deps.receiptHistorySource = apple
            }
        }
        var w = JSONObjectWriter()
        w.string("receipt-data", ReceiptEndpointTests.receiptData())
        w.string("password", GatewayHarness.v1Secret)
        let body = w.finish()
        let a = try instance("a")
        let first = Task { ReceiptEndpoint.status(of: await a.service.receiptEndpoint.handle(body, sandboxURL: true)) }
        await eventually("instance a kept 30 pages") { apple.held }
        await a.service.shutdown()
        #expect(await first.value == 21005)
        apple.release()
        let b = try instance("b")
        let answer = await b.service.receiptEndpoint.handle(body, sandboxURL: true)
        #expect(ReceiptEndpoint.status(of: answer) == 0)
        let listed = try JSONParser.parse(answer).objectValue?["latest_receipt_info"]?.arrayValue
        #expect(listed?.count == 1_200)
        #expect(apple.calls == 61 && apple.revisions[31] == "600", "b began at page 31, not at the start")
        await b.service.shutdown()
    }
}
