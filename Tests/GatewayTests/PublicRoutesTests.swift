import HTTPServer
import ServiceKit
import TestSupport
import Testing

@testable import Gateway

/// The Apple-facing routes without a listener: what each answers, and what a notification leaves in the metrics
/// and the log.
@Suite struct PublicRoutesTests {
    static func routes(_ h: GatewayHarness, logs: GatewayServiceTests.LogBox = .init()) -> PublicRoutes {
        PublicRoutes(
            ingest: h.ingest,
            receipts: h.service.receiptEndpoint,
            metrics: h.metrics,
            log: Log(now: { GatewayHarness.t }, sink: { logs.append($0) })
        )
    }

    /// A 405 names the method the path takes in `Allow` (RFC 9110 §15.5.6; Schemathesis found it missing).
    @Test(
        arguments: [
            ("GET", "/healthz", 200, #"{"ok":true}"#, nil),
            (
                "HEAD", "/healthz", 405, #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#,
                "GET"
            ),
            (
                "TRACE", "/healthz", 405, #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#,
                "GET"
            ),
            (
                "GET", "/notifications", 405,
                #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#, "POST"
            ),
            (
                "PUT", "/verifyReceipt", 405,
                #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#, "POST"
            ),
            (
                "DELETE", "/sandbox/verifyReceipt", 405,
                #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#, "POST"
            ),
            ("GET", "/metrics", 404, #"{"error":{"code":"not_found","message":"no such endpoint"}}"#, nil),
            ("GET", "/admin/status", 404, #"{"error":{"code":"not_found","message":"no such endpoint"}}"#, nil),
            ("POST", "/notifications/", 404, #"{"error":{"code":"not_found","message":"no such endpoint"}}"#, nil),
        ] as [(String, String, Int, String, String?)]
    )
    func answers(_ method: String, _ path: String, _ status: Int, _ body: String, _ allow: String?) throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = Self.routes(h).handle(ServerRequest(method: method, path: path))
        #expect(r.status == status)
        #expect(
            r.headers.map { "\($0.name): \($0.value)" }
                == ["Content-Type: application/json"] + (allow.map { ["Allow: \($0)"] } ?? [])
        )
        #expect(String(decoding: r.body, as: UTF8.self) == body)
    }

    @Test func aNotificationIsCountedTimedAndLogged() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let logs = GatewayServiceTests.LogBox()
        let routes = Self.routes(h, logs: logs)
        let body = try Fixtures.bytes("v2-synthetic/notif-did-renew.json")
        let first = routes.handle(ServerRequest(method: "POST", path: "/notifications", body: body))
        #expect(first.status == 200)
        #expect(routes.handle(ServerRequest(method: "POST", path: "/notifications", body: body)).status == 200)
        let forged = routes.handle(
            ServerRequest(
                method: "POST",
                path: "/notifications",
                body: try Fixtures.bytes("v2-synthetic/negative/tampered-payload.json")
            )
        )
        #expect(forged.status == 403)

        #expect(h.metrics.counter(Metric.notificationsReceivedTotal.name, ["version": "v2"]) == 3)
        #expect(h.metrics.counter(Metric.notificationsAcceptedTotal.name, ["version": "v2"]) == 1)
        #expect(h.metrics.counter(Metric.notificationsDuplicateTotal.name, ["version": "v2"]) == 1)
        #expect(
            h.metrics.counter(Metric.notificationsRejectedTotal.name, ["version": "v2", "code": "bad_signature"])
                == 1
        )
        #expect(h.metrics.render().contains(#"iapgw_request_seconds_count{version="v2"} 3"#))
        let lines = logs.all.filter { $0.contains(#""msg":"notification""#) }
        #expect(lines.count == 3)
        #expect(lines.map { $0.contains(#""outcome":"accepted""#) } == [true, false, false])
        #expect(lines.map { $0.contains(#""outcome":"duplicate""#) } == [false, true, false])
        #expect(
            lines.last?.contains(#""code":"bad_signature""#) == true && lines.last?.contains(#""status":403"#) == true
        )
        #expect(lines.allSatisfy { $0.contains(#""latency_ms":"#) })
    }

    @Test func aBodyOfNoKnownVersionIsCountedAsUnknown() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = Self.routes(h).handle(ServerRequest(method: "POST", path: "/notifications", body: Array("{}".utf8)))
        #expect(r.status == 400)
        #expect(h.metrics.counter(Metric.notificationsReceivedTotal.name, ["version": "unknown"]) == 1)
        #expect(
            h.metrics.counter(
                Metric.notificationsRejectedTotal.name,
                ["version": "unknown", "code": "unknown_version"]
            ) == 1
        )
    }
}
