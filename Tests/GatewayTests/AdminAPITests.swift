import Canonical
import Contracts
import HTTPServer
import ServiceKit
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

    /// Every path of the OpenAPI document on the admin listener answers the method it documents, and any other with
    /// 405 and `Allow` naming that method (RFC 9110 §15.5.6; Schemathesis found a 404 without it) — behind the token,
    /// like every answer here.
    @Test func everyAdminPathAnswersAnotherMethod405WithItsMethodInAllow() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let paths = try #require(try JSONParser.parse(Contracts.openAPI).objectValue?["paths"]?.objectValue)
        var checked = 0
        for (path, item) in paths {
            let operations = try #require(item.objectValue)
            guard operations.members.contains(where: { $0.value.objectValue?["tags"] == .array([.string("admin")]) })
            else { continue }
            let concrete = path.replacingOccurrences(of: "{original_transaction_id}", with: "2000000000000001")
            let documented = operations.keys.map { $0.uppercased() }
            #expect(documented.count == 1, "\(path)")
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "TRACE"] where !documented.contains(method) {
                let r = Self.api(h).handle(Self.request(method, concrete))
                #expect(r.status == 405, "\(method) \(path)")
                #expect(r.header("Allow") == documented.first, "\(method) \(path)")
                #expect(Self.text(r) == #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#)
                let unauthorized = Self.api(h).handle(Self.request(method, concrete, headers: []))
                #expect(unauthorized.status == 401 && unauthorized.header("Allow") == nil, "the token comes first")
                checked += 1
            }
        }
        #expect(checked == 14 * 5)
    }

    /// A subscription id that starts with a combining scalar (an emoji modifier, an accent) is routed like any other:
    /// split into characters, the path's last `/` joined it and the route was not found (Schemathesis found
    /// `/admin/subscriptions/%F0%9F%8F%BB%21` answered 404).
    @Test(arguments: ["\u{1F3FB}!", "\u{301}x", "\u{200D}", "2000000000000001"])
    func aSubscriptionIdStartingWithACombiningScalarIsRouted(_ id: String) throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = Self.api(h).handle(Self.request("GET", "/admin/subscriptions/" + id))
        #expect(r.status == 200)
        #expect(try JSONParser.parse(r.body).objectValue?["original_transaction_id"] == .string(id))
    }

    /// `GET /admin/openapi.json`: the document `iap-gateway schema openapi` prints, behind the token.
    @Test func theOpenAPIDocumentIsServed() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        let r = Self.api(h).handle(Self.request("GET", "/admin/openapi.json"))
        #expect(r.status == 200 && r.header("Content-Type") == "application/json")
        #expect(r.body == Contracts.openAPI)
        #expect(try JSONParser.parse(r.body).objectValue?["openapi"] == .string("3.1.0"))
        #expect(Self.api(h).handle(Self.request("GET", "/admin/openapi.json", headers: [])).status == 401)
    }

    @Test func metricsAreServedAtBothPaths() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        h.metrics.describe(GatewayService.metricCatalogue)
        h.metrics.increment(.quarantinedTotal, ["lane": "untrusted"])
        for path in ["/metrics", "/admin/metrics"] {
            let r = Self.api(h).handle(Self.request("GET", path))
            #expect(r.status == 200)
            #expect(r.header("Content-Type") == "text/plain; version=0.0.4")
            #expect(Self.text(r) == h.metrics.render())
        }
        #expect(Self.api(h).handle(Self.request("POST", "/metrics")).status == 405)
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
            (
                "GET", "/admin/replay", [:], 405,
                #"{"error":{"code":"method_not_allowed","message":"method not allowed"}}"#
            ),
            ("GET", "/admin/nowhere", [:], 404, #"{"error":{"code":"not_found","message":"no such admin endpoint"}}"#),
            (
                "GET", "/admin/subscriptions", [:], 404,
                #"{"error":{"code":"not_found","message":"no such admin endpoint"}}"#
            ),
            ("POST", "/admin/replay", ["dead_letters": ""], 200, #"{"requeued":0}"#),
            (
                "GET", "/admin/dead-letters", ["limit": "0"], 400,
                #"{"error":{"code":"bad_request","message":"limit is an integer from 1 to 10000"}}"#
            ),
            (
                "GET", "/admin/refund-requests", ["limit": "1001"], 400,
                #"{"error":{"code":"bad_request","message":"limit is an integer from 1 to 1000"}}"#
            ),
            ("GET", "/admin/dead-letters", ["limit": "1"], 200, "[]"),
            (
                "POST", "/admin/replay", ["id": ""], 400,
                #"{"error":{"code":"bad_request","message":"id is an event id"}}"#
            ),
            (
                "POST", "/admin/replay", ["id": "", "downstream": "main"], 400,
                #"{"error":{"code":"bad_request","message":"id is an event id"}}"#
            ),
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

    /// The status says how `/verifyReceipt` is answered per app and environment, and what set it.
    @Test func theStatusCarriesTheReceiptModes() throws {
        let h = try GatewayHarness()
        defer { h.close() }
        _ = try h.store.write { tx in
            try tx.seedReceiptModes(
                [
                    ReceiptModeEntry(
                        bundleID: "com.example.gateway",
                        environment: .sandbox,
                        mode: .shadow,
                        origin: .config
                    )
                ],
                now: GatewayHarness.t
            )
        }
        let r = Self.api(h).handle(Self.request("GET", "/admin/status"))
        let status = try #require(try JSONParser.parse(r.body).objectValue)
        let modes = try #require(status["receipts"]?.arrayValue).compactMap(\.objectValue)
        let sandbox = try #require(
            modes.first { $0["bundle_id"] == .string("com.example.gateway") && $0["environment"] == .string("sandbox") }
        )
        #expect(sandbox["mode"] == .string("shadow") && sandbox["origin"] == .string("config"))
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
