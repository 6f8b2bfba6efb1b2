import Foundation
import Gateway
import HTTPClient
import Reports
import TestSupport
import Testing

/// What the admin listener's answers tell a browser: never sniff a type, never send the address on, never keep a copy,
/// and — for the HTML report — run no script and apply only the page's own styles (Content-Security-Policy with a
/// nonce per response).
@Suite(.serialized) struct AdminResponseHeadersTests {
    typealias Service = GatewayServiceTests

    static let fixed = [
        "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
    ]

    /// The gateway as `serve` runs it: the admin API renders the report with the Reports module.
    static func start(_ receiver: LoopbackHTTPServer) throws -> Service.Running {
        try Service.start(receiver: receiver) { _, deps in
            deps.reportRenderer = { report, format, nonce in
                ReportRenderer.render(report, format: format, styleNonce: nonce)
            }
        }
    }

    /// The directives of a Content-Security-Policy value: name → sources.
    static func directives(_ policy: String) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for part in policy.split(separator: ";") {
            let words = part.split(separator: " ").map(String.init)
            if let name = words.first { out[name.lowercased()] = Array(words.dropFirst()) }
        }
        return out
    }

    static func checkHeaders(
        _ header: (String) -> String?,
        _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (name, value) in fixed {
            #expect(
                header(name) == value,
                "\(what): \(name) is \(header(name) ?? "missing")",
                sourceLocation: sourceLocation
            )
        }
        let policy = header("Content-Security-Policy") ?? ""
        let d = directives(policy)
        #expect(d["default-src"] == ["'none'"], "\(what): \(policy)", sourceLocation: sourceLocation)
        #expect(d["frame-ancestors"] == ["'none'"], "\(what): \(policy)", sourceLocation: sourceLocation)
        #expect(!policy.contains("unsafe-"), "\(what): \(policy)", sourceLocation: sourceLocation)
    }

    @Test func everyAdminAnswerCarriesTheSecurityHeaders() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver)
        let answers: [(String, String?, Int)] = [
            ("/admin/status", Service.adminToken, 200), ("/metrics", Service.adminToken, 200),
            ("/admin/metrics", Service.adminToken, 200), ("/admin/report", Service.adminToken, 200),
            ("/admin/report?format=html", Service.adminToken, 200),
            ("/admin/report?format=table", Service.adminToken, 200),
            ("/admin/status", nil, 401), ("/admin/status", "wrong", 401), ("/admin/nowhere", Service.adminToken, 404),
            ("/admin/quarantine?lane=both", Service.adminToken, 400),
        ]
        for (path, token, status) in answers {
            let response = try await Service.get(g.adminURL(path), token: token)
            #expect(response.status == status, "\(path)")
            Self.checkHeaders(response.header, "\(path) (\(status))")
        }
        // An answer the server gives itself, before any handler runs: a body over the limit.
        let client = try RawHTTPClient(port: try #require(g.adminPort))
        client.send("POST /admin/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999\r\n\r\n")
        let tooLarge = await client.readReply(timeout: .seconds(10))
        #expect(tooLarge?.status == 413, "\(String(describing: tooLarge))")
        Self.checkHeaders({ name in tooLarge?.header(name.lowercased()) }, "413")
        await g.service.shutdown()
    }

    @Test func theReportPageRunsNoScriptAndAppliesOnlyItsOwnStylesByAFreshNonce() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver)
        var nonces: [String] = []
        for _ in 0..<2 {
            let page = try await Service.get(g.adminURL("/admin/report?format=html"), token: Service.adminToken)
            #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true)
            let policy = try #require(page.header("Content-Security-Policy"))
            let d = Self.directives(policy)
            #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "\(policy)")
            // No script at all: script-src is 'none', or absent and default-src 'none' stands for it.
            #expect((d["script-src"] ?? d["default-src"]) == ["'none'"], "\(policy)")
            let styleSources = try #require(d["style-src"], "\(policy)")
            #expect(
                styleSources.count == 1 && styleSources[0].hasPrefix("'nonce-") && styleSources[0].hasSuffix("'"),
                "\(policy)"
            )
            let nonce = String(styleSources[0].dropFirst("'nonce-".count).dropLast())
            #expect(nonce.count >= 22, "a nonce of \(nonce.count) characters")
            nonces.append(nonce)
            // Every inline style and script of the page carries that nonce; nothing is styled by attribute.
            let html = String(decoding: page.body, as: UTF8.self)
            let tags = Self.openingTags(in: html, named: ["style", "script"])
            #expect(!tags.isEmpty)
            for tag in tags { #expect(tag.contains(" nonce=\"\(nonce)\""), "\(tag)") }
            #expect(!html.contains(" style=\""), "an inline style attribute would need 'unsafe-inline'")
        }
        #expect(nonces.count == 2 && nonces[0] != nonces[1], "the same nonce twice: \(nonces)")
        await g.service.shutdown()
    }

    /// The opening tags `<name …>` of the given elements in `html`.
    static func openingTags(in html: String, named names: [String]) -> [String] {
        var tags: [String] = []
        for name in names {
            var rest = html[...]
            while let open = rest.range(of: "<\(name)") {
                let after = rest[open.upperBound...]
                guard let first = after.first, first == " " || first == ">" else {
                    rest = after
                    continue
                }
                let close = after.firstIndex(of: ">") ?? after.endIndex
                tags.append(String(rest[open.lowerBound..<close]) + ">")
                rest = after[close...]
            }
        }
        return tags
    }

    @Test(.timeLimit(.minutes(3))) func chromiumShowsTheServedReportWithoutAPolicyViolation() async throws {
        let receiver = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let g = try Self.start(receiver)
        let page = try await Service.get(g.adminURL("/admin/report?format=html"), token: Service.adminToken)
        await g.service.shutdown()
        #expect(page.status == 200)
        let policy = try #require(page.header("Content-Security-Policy"))
        // The page exactly as served — body and headers — from a server Chromium can reach without the token, and a
        // control whose policy names another nonce: it must show a violation, or the check below proves nothing.
        let served = page.headers.filter {
            $0.name.lowercased() != "content-length" && $0.name.lowercased() != "connection"
        }
        let tampered = served.map { header in
            header.name.lowercased() == "content-security-policy"
                ? HTTPHeader(header.name, policy.replacingOccurrences(of: "'nonce-", with: "'nonce-x")) : header
        }
        let body = page.body
        let server = try LoopbackHTTPServer { request in
            .respond(status: 200, headers: request.path == "/report" ? served : tampered, body: body)
        }
        let browser = try HeadlessChromium.executable()
        let dir = FileManager.default.temporaryDirectory.appending(path: "iapgw-csp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (path, violates) in [("/report", false), ("/tampered", true)] {
            let flags =
                HeadlessChromium.flags(profile: dir.appending(path: "profile").path())
                + HeadlessChromium.consoleToStderr
            let run = try await HeadlessChromium.run(browser, flags + ["--dump-dom", server.url(path)], in: dir)
            #expect(!run.timedOut && run.status == 0, "chromium failed: \(run.stderr.suffix(2000))")
            #expect(
                run.stdout.contains("id=\"verdict-0\"") && run.stdout.contains("</html>"),
                "\(path): \(run.stdout.prefix(500))"
            )
            let violations = run.stderr.split(separator: "\n").filter { $0.contains("Content Security Policy") }
            if violates {
                #expect(!violations.isEmpty, "the control's foreign nonce was not reported: the check is blind")
            } else {
                #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
            }
        }
    }
}
