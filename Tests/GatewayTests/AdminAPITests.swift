import Canonical
import HTTPServer
import Store
import Testing
import WireJSON

@testable import Gateway

/// The admin routes without a listener: the bearer token, the answers to bad requests, a store that cannot answer.
@Suite struct AdminAPITests {
    static let token = "admin-api-test-token"
    static let authorized: [(name: String, value: String)] = [("Authorization", "Bearer \(token)")]

    static func api(
        _ h: GatewayHarness,
        logs: GatewayServiceTests.LogBox = .init(),
        downstreams: [String]? = nil
    ) -> AdminAPI {
        let now: @Sendable () -> Int64 = { GatewayHarness.t }
        return AdminAPI(
            token: Array(token.utf8),
            tokenEnv: "ADMIN_TOKEN",
            reportWindowMillis: 86_400_000,
            metrics: h.metrics,
            operations: Operations(store: h.store, now: now, downstreams: downstreams),
            ledger: CompareLedger(store: h.store, config: h.config),
            switcher: h.service.switcher,
            ingest: h.ingest,
            v1Secrets: [],
            log: Log(now: now, sink: { logs.append($0) }),
            now: now,
            reportRenderer: { _, format, nonce in
                switch format {
                case "text": ("text/plain", Array("rendered".utf8))
                case "page": ("text/html; charset=utf-8", Array("<style nonce=\"\(nonce)\"></style>".utf8))
                default: nil
                }
            },
            randomBytes: { count in (0..<count).map { UInt8($0) } }
        )
    }

    static func request(
        _ method: String,
        _ path: String,
        _ query: [String: String] = [:],
        headers: [(name: String, value: String)] = authorized
    ) -> ServerRequest {
        ServerRequest(method: method, path: path, query: query, headers: headers)
    }

    static func text(_ r: ServerResponse) -> String { String(decoding: r.body, as: UTF8.self) }

    @Test(
        arguments: [
            [], [("Authorization", "Bearer wrong")], [("Authorization", token)], [("Authorization", "Basic \(token)")],
            [("Authorization", "Bearer \(token)x")],
        ] as [[(name: String, value: String)]]
    )
    func withoutTheTokenEveryRouteIsUnauthorized(_ headers: [(name: String, value: String)]) throws {
        let h = try GatewayHarness()
        defer { h.close() }
        for path in ["/metrics", "/admin/status", "/nowhere"] {
            let r = Self.api(h).handle(Self.request("GET", path, headers: headers))
            #expect(r.status == 401)
            #expect(
                r.headers.map { "\($0.name): \($0.value)" } == [
                    "Content-Type: application/json", "WWW-Authenticate: Bearer", "X-Content-Type-Options: nosniff",
                    "Referrer-Policy: no-referrer", "Cache-Control: no-store",
                    "Content-Security-Policy: default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                ]
            )
            #expect(Self.text(r) == #"{"error":{"code":"unauthorized","message":"a valid bearer token is required"}}"#)
        }
    }

    @Test func metricsAreServedAtBothPaths() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        Metric.describeAll(in: h.metrics)
        h.metrics.increment(.quarantinedTotal, ["lane": "untrusted"])
        for path in ["/metrics", "/admin/metrics"] {
            let r = Self.api(h).handle(Self.request("GET", path))
            #expect(r.status == 200)
            #expect(r.header("Content-Type") == "text/plain; version=0.0.4")
            #expect(Self.text(r) == h.metrics.render())
        }
        #expect(Self.api(h).handle(Self.request("POST", "/metrics")).status == 404)
    }

    @Test(
        arguments: [
            (
                "POST", "/admin/replay", ["since": "last tuesday"], 400,
                #"{"error":{"code":"bad_request","message":"since is not a time (ISO-8601, 7d, 12h or epoch ms)"}}"#
            ),
            (
                "POST", "/admin/replay", [:], 400,
                #"{"error":{"code":"bad_request","message":"give id, since[/until] or dead_letters"}}"#
            ),
            (
                "GET", "/admin/quarantine", ["lane": "both"], 400,
                #"{"error":{"code":"bad_request","message":"lane is untrusted or genuine"}}"#
            ),
            (
                "POST", "/admin/quarantine/replay", ["id": "x"], 400,
                #"{"error":{"code":"bad_request","message":"id is a row id"}}"#
            ),
            (
                "POST", "/admin/cutover", ["bundle": "b", "to": "v2"], 400,
                #"{"error":{"code":"bad_request","message":"give bundle, environment and to (v1 or v2) or receipts"}}"#
            ),
            ("GET", "/admin/replay", [:], 404, #"{"error":{"code":"not_found","message":"no such admin endpoint"}}"#),
            (
                "GET", "/admin/subscriptions", [:], 404,
                #"{"error":{"code":"not_found","message":"no such admin endpoint"}}"#
            ),
            ("POST", "/admin/replay", ["dead_letters": ""], 200, #"{"requeued":0}"#),
            ("GET", "/admin/dead-letters", ["limit": "0"], 200, "[]"),
        ] as [(String, String, [String: String], Int, String)]
    )
    func answers(_ method: String, _ path: String, _ query: [String: String], _ status: Int, _ body: String) throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = Self.api(h).handle(Self.request(method, path, query))
        #expect(r.status == status)
        #expect(r.header("Content-Type") == "application/json")
        #expect(Self.text(r) == body)
    }

    /// The status says which gateway answers: the version `iap-gateway --version` prints.
    @Test func theStatusCarriesTheGatewaysVersion() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = Self.api(h).handle(Self.request("GET", "/admin/status"))
        #expect(r.status == 200)
        let status = try #require(try JSONParser.parse(r.body).objectValue)
        #expect(status["version"]?.stringValue == GatewayVersion.string)
        #expect(status["journal"]?.int64Value == 0)
    }

    @Test func aCutoverTheLedgerRefusesKeepsItsOwnCodeAndStatus() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let logs = GatewayServiceTests.LogBox()
        let query = ["bundle": "com.example.nowhere", "environment": "production", "to": "v2"]
        let r = Self.api(h, logs: logs).handle(Self.request("POST", "/admin/cutover", query))
        #expect(r.status == 400)
        #expect(Self.text(r).hasPrefix(#"{"error":{"code":"unknown_bundle","message":"unknown_bundle: "#))
        #expect(logs.all.isEmpty)
    }

    @Test func theReportUsesTheRendererAndFallsBackToJSON() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let text = Self.api(h).handle(Self.request("GET", "/admin/report", ["format": "text"]))
        #expect(text.status == 200 && text.header("Content-Type") == "text/plain" && Self.text(text) == "rendered")
        let other = Self.api(h).handle(Self.request("GET", "/admin/report", ["format": "pdf"]))
        #expect(
            other.status == 200 && other.header("Content-Type") == "application/json"
                && other.body.first == UInt8(ascii: "{")
        )
    }

    @Test func anHTMLReportIsServedUnderAPolicyNamingTheNonceItsRendererWasGiven() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        // The nonce is hex of 16 injected random bytes (here 00 01 … 0f), handed to the renderer and named by the policy.
        let nonce = "000102030405060708090a0b0c0d0e0f"
        let page = Self.api(h).handle(Self.request("GET", "/admin/report", ["format": "page"]))
        #expect(page.status == 200 && Self.text(page) == "<style nonce=\"\(nonce)\"></style>")
        #expect(
            page.header("Content-Security-Policy")
                == "default-src 'none'; style-src 'nonce-\(nonce)'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        #expect(page.header("X-Content-Type-Options") == "nosniff" && page.header("Cache-Control") == "no-store")
        // Not HTML: the base policy, which allows nothing.
        let text = Self.api(h).handle(Self.request("GET", "/admin/report", ["format": "text"]))
        #expect(text.header("Content-Security-Policy") == AdminAPI.basePolicy)
    }

    @Test func aStoreThatCannotAnswerIsUnavailable() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        h.store.close()
        for (method, path) in [("GET", "/admin/status"), ("POST", "/admin/replay")] {
            let r = Self.api(h).handle(Self.request(method, path, method == "POST" ? ["id": "e1"] : [:]))
            #expect(r.status == 503)
            #expect(Self.text(r) == #"{"error":{"code":"store_unavailable","message":"the store could not answer"}}"#)
        }
    }
}
