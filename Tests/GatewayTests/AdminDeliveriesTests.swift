import Store
import StoreTestSupport
import TestSupport
import Testing
import WireJSON

@testable import Gateway

/// `GET /admin/deliveries` (the delivery log) and `POST /admin/replay?id=…&downstream=…`, behind the token.
@Suite struct AdminDeliveriesTests {
    typealias API = AdminAPITests

    /// A harness with one V2 notification's deliveries queued, main's attempted once (a 500 whose answer is `head`).
    static func harness(head: [UInt8]) throws -> (GatewayHarness, eventID: String) {
        let h = try GatewayHarness()
        #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/notif-did-renew.json")).status == 200)
        let main = try #require(try h.store.deliveries().first { $0.downstream == "main" })
        let outcome = DeliveryOutcome(
            state: .pending,
            attempts: 1,
            nextAttemptAt: 0,
            deliveredAt: nil,
            status: 500,
            error: "HTTP 500",
            attempt: DeliveryAttempt(startedAt: 7, latencyMillis: 3, responseHead: head, redactor: SecretRedactor([]))
        )
        try h.store.write { tx in try tx.settleDelivery(id: main.id, outcome) }
        return (h, try #require(main.eventID))
    }

    @Test func theLogNeedsTheToken() throws {
        let (h, eventID) = try Self.harness(head: [])
        defer { h.close() }
        for (method, query) in [("GET", ["event": eventID]), ("POST", ["id": eventID, "downstream": "main"])] {
            let path = method == "GET" ? "/admin/deliveries" : "/admin/replay"
            let r = API.api(h).handle(API.request(method, path, query, headers: []))
            #expect(r.status == 401)
        }
        #expect(try h.store.deliveries().allSatisfy { $0.attempts <= 1 })
    }

    @Test func anEventsDeliveriesWithTheirAttemptsTheAnswersHeadEscaped() throws {
        let head = Array("<b>\"hi\"</b>\u{2028}".utf8) + [0xFF]
        let (h, eventID) = try Self.harness(head: head)
        defer { h.close() }
        let r = API.api(h).handle(API.request("GET", "/admin/deliveries", ["event": eventID]))
        #expect(r.status == 200 && r.header("Content-Type") == "application/json")
        let text = API.text(r)
        #expect(!text.contains("<b>\"hi\""), "\(text)")
        let answer = try #require(try JSONParser.parse(r.body).objectValue)
        #expect(answer["event_id"]?.stringValue == eventID)
        let deliveries = answer["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(deliveries.compactMap { $0["downstream"]?.stringValue }.sorted() == ["legacy", "main", "shadow"])
        let main = try #require(deliveries.first { $0["downstream"]?.stringValue == "main" })
        let attempt = try #require(main["attempt_log"]?.arrayValue?.first?.objectValue)
        #expect(attempt["status"] == .number("500") && attempt["error"] == .string("HTTP 500"))
        #expect(attempt["started_at"] == .number("7") && attempt["latency_ms"] == .number("3"))
        #expect(attempt["replay"] == .bool(false))
        #expect(attempt["response_head"]?.stringValue == String(decoding: head, as: UTF8.self))

        let unknown = API.api(h).handle(API.request("GET", "/admin/deliveries", ["event": "nope"]))
        #expect(unknown.status == 404)
        #expect(API.text(unknown) == #"{"error":{"code":"not_found","message":"no such event"}}"#)
    }

    @Test func aDownstreamsDeliveriesAPageAtATime() throws {
        let (h, _) = try Self.harness(head: [])
        defer { h.close() }
        for name in ["notif-subscribed-initial-buy", "notif-refund"] {
            #expect(h.ingest.handle(try Fixtures.bytes("v2-synthetic/\(name).json")).status == 200)
        }
        var (ids, cursor): ([String], String?) = ([], nil)
        repeat {
            var query = ["downstream": "main", "status": "pending", "limit": "2", "since": "30d"]
            query["cursor"] = cursor
            let r = API.api(h).handle(API.request("GET", "/admin/deliveries", query))
            #expect(r.status == 200)
            let page = try #require(try JSONParser.parse(r.body).objectValue)
            let rows = page["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
            #expect(rows.count <= 2)
            ids += rows.compactMap { $0["event_id"]?.stringValue }
            cursor = page["next_cursor"]?.stringValue
            #expect(rows.allSatisfy { $0["last_attempt"] != nil })
        } while cursor != nil && ids.count < 10
        let expected = try h.store.deliveries().filter { $0.downstream == "main" }.compactMap(\.eventID)
        #expect(ids == expected && ids.count == 3)
        #expect(throws: GatewayError(.badRequest, "")) {
            try AdminQuery(["downstream": "main", "status": "pending", "limit": "1001"]).deliverySelection(now: { 0 })
        }
        #expect(
            try AdminQuery(["downstream": "main", "status": "pending"]).deliverySelection(now: { 0 })
                == .page(downstream: "main", state: .pending, cursor: .since(Int64.min), limit: 100)
        )
        #expect(try AdminQuery(["event": "e1", "limit": "5"]).deliverySelection(now: { 0 }) == .event("e1"))
        // What `event` leaves unused is still checked: a malformed parameter is a mistake, never ignored.
        for parameters in [
            ["event": "e1", "limit": "0"], ["event": "e1", "status": "gone"], ["event": "e1", "since": ""],
            ["event": "e1", "cursor": "x"], ["event": ""],
        ] {
            #expect(throws: GatewayError(.badRequest, "")) {
                try AdminQuery(parameters).deliverySelection(now: { 0 })
            }
        }
    }

    @Test(
        arguments: [
            (
                "GET", "/admin/deliveries", [:],
                #"{"error":{"code":"bad_request","message":"give event, or downstream and status (pending, delivered or dead)"}}"#
            ),
            (
                "GET", "/admin/deliveries", ["downstream": "main", "status": "lost"],
                #"{"error":{"code":"bad_request","message":"status is pending, delivered or dead"}}"#
            ),
            (
                "GET", "/admin/deliveries", ["downstream": "main", "status": "dead", "cursor": "x"],
                #"{"error":{"code":"bad_request","message":"cursor is a page's next_cursor"}}"#
            ),
            (
                "GET", "/admin/deliveries", ["downstream": "main", "status": "dead", "since": "someday"],
                #"{"error":{"code":"bad_request","message":"since is not a time (ISO-8601, 7d, 12h or epoch ms)"}}"#
            ),
            (
                "POST", "/admin/replay", ["downstream": "main"],
                #"{"error":{"code":"bad_request","message":"downstream goes with id"}}"#
            ),
            (
                "POST", "/admin/replay", ["id": "e", "downstream": "nowhere"],
                #"{"error":{"code":"bad_request","message":"no downstream named nowhere in the config"}}"#
            ),
        ] as [(String, String, [String: String], String)]
    )
    func badRequests(_ method: String, _ path: String, _ query: [String: String], _ body: String) throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = API.api(h, downstreams: h.router.downstreamNames).handle(API.request(method, path, query))
        #expect(r.status == 400)
        #expect(API.text(r) == body)
    }

    @Test func oneEventIsReplayedToOneDownstream() throws {
        let (h, eventID) = try Self.harness(head: [])
        defer { h.close() }
        try h.store.write { tx in
            for d in try tx.deliveries(state: nil, downstream: nil, eventID: nil, limit: 10) {
                try tx.settleDelivery(
                    id: d.id,
                    DeliveryOutcome(
                        state: .delivered,
                        attempts: 2,
                        nextAttemptAt: 0,
                        deliveredAt: 9,
                        status: 200,
                        error: nil
                    )
                )
            }
        }
        let api = API.api(h, downstreams: h.router.downstreamNames)
        let r = api.handle(API.request("POST", "/admin/replay", ["id": eventID, "downstream": "main"]))
        #expect(r.status == 200 && API.text(r) == #"{"requeued":1}"#)
        let states = Dictionary(uniqueKeysWithValues: try h.store.deliveries().map { ($0.downstream, $0.state) })
        #expect(states["main"] == .pending && states["shadow"] == .delivered)
    }
}
