import Foundation
import Gateway
import ReportModel
import Reports
import Store
import TestSupport
import Testing
import WireJSON

/// Hand-built reports: one ready bundle, one not ready (disagreements, one-sided observations, a forced cutover whose
/// reason is hostile markup), and one with nothing compared yet.
enum SampleReport {
    static let day: Int64 = 86_400_000
    static let since: Int64 = 1_748_736_000_000  // 2025-06-01T00:00:00Z
    static let until = since + 7 * day
    static let hostileReason = "ship it <script>alert(1)</script> & \"quotes\" 'single'"

    static func days(_ counts: [(Int, Int)]) -> [BundleReport.DayPoint] {
        counts.enumerated().map { k, c in
            BundleReport.DayPoint(day: "2025-06-0\(k + 1)", pairs: c.0, agreements: c.1)
        }
    }

    static let ready = BundleReport(
        bundleID: "com.example.fitness",
        environment: "production",
        authority: "v1",
        eventsBySource: ["v1": 5012, "v2": 4998, "v2-api": 14],
        pairs: 4980,
        agreements: 4978,
        disagreementsByField: ["expires_date": .init(count: 2, examples: ["2000000111", "2000000222"])],
        oneSided: .init(v1Only: 0, v2Only: 0, examples: []),
        daily: days([(700, 700), (712, 711), (698, 698), (730, 729), (705, 705), (720, 720), (715, 715)]),
        verdict: .ready,
        rule: ReadinessRule().text,
        reasons: [],
        cutovers: []
    )

    static let notReady = BundleReport(
        bundleID: "com.example.news",
        environment: "production",
        authority: "v2",
        eventsBySource: ["v2": 247, "v1": 250],
        pairs: 250,
        agreements: 249,
        disagreementsByField: [
            "auto_renew": .init(count: 1, examples: ["1000000042"]),
            "entitlement": .init(count: 3, examples: ["1000000042", "1000000043", "1000000044", "1000000045"]),
            "expires_date": .init(count: 2, examples: ["1000000042", "1000000050"]),
        ],
        oneSided: .init(v1Only: 2, v2Only: 1, examples: ["1000000077", "1000000078", "1000000079"]),
        daily: days([(30, 30), (35, 35), (40, 39), (36, 36), (38, 38), (35, 35), (36, 36)]),
        verdict: .notReady,
        rule: ReadinessRule().text,
        reasons: ["3 one-sided observations (2 V1 only, 1 V2 only) are unexplained"],
        cutovers: [
            CutoverRecord(
                at: since + 5 * day + 37_800_000,
                bundleID: "com.example.news",
                environment: "production",
                from: "v1",
                to: "v2",
                who: "alice",
                reason: hostileReason,
                verdict: "not_ready",
                forced: true
            )
        ]
    )

    static let fresh = BundleReport(
        bundleID: "com.example.new",
        environment: "sandbox",
        authority: "v1",
        eventsBySource: ["v1": 3],
        pairs: 0,
        agreements: 0,
        disagreementsByField: [:],
        oneSided: .init(v1Only: 0, v2Only: 0, examples: []),
        daily: [],
        verdict: .notReady,
        rule: ReadinessRule().text,
        reasons: ["no pairs compared yet (need at least 200)"],
        cutovers: []
    )

    static let report = CompareReport(
        generatedAt: until + 6 * 3_600_000,
        since: since,
        until: until,
        rule: ReadinessRule(),
        bundles: [ready, notReady, fresh]
    )

    /// Every untrusted string replaced by markup that would run or load something if it were not escaped.
    static var hostile: CompareReport {
        let evil = "\"'><script>alert(1)</script><img src=x onerror=alert(2)>"
        var b = notReady
        b.bundleID = "com.evil" + evil
        b.environment = "env" + evil
        b.authority = "v1" + evil
        b.eventsBySource = ["v1" + evil: 1]
        b.disagreementsByField = ["field" + evil: .init(count: 1, examples: ["id" + evil])]
        b.oneSided.examples = ["one" + evil]
        b.daily = [.init(day: "day" + evil, pairs: 2, agreements: 1)]
        b.rule = "rule" + evil
        b.reasons = ["reason" + evil, "see https://example.invalid/x and http://example.invalid"]
        b.cutovers = [
            CutoverRecord(
                at: since,
                bundleID: b.bundleID,
                environment: b.environment,
                from: "v1" + evil,
                to: "v2" + evil,
                who: "who" + evil,
                reason: "reason" + evil,
                verdict: "verdict" + evil,
                forced: false
            )
        ]
        return CompareReport(generatedAt: until, since: since, until: until, rule: ReadinessRule(), bundles: [b])
    }
}

@Suite struct ReportRendererJSONTests {
    @Test func parsesBackWithTheDocumentedKeys() throws {
        let value = try JSONParser.parse(ReportRenderer.json(SampleReport.report))
        let top = try #require(value.objectValue)
        #expect(top.keys == ["bundles", "generated_at", "rule", "since", "until"])
        #expect(top["since"]?.int64Value == SampleReport.since)
        #expect(
            top["rule"]?.objectValue?.keys == [
                "allow_one_sided", "minimum_agreement_rate", "minimum_pairs", "window_ms",
            ]
        )
        let bundles = try #require(top["bundles"]?.arrayValue)
        #expect(bundles.count == 3)
        let first = try #require(bundles[0].objectValue)
        #expect(
            Set(first.keys) == [
                "bundle_id", "environment", "authority", "events_by_source", "pairs", "agreements", "agreement_rate",
                "disagreements_by_field", "one_sided", "daily", "verdict", "rule", "reasons", "cutovers", "recovered",
                "apple_switches", "receipts", "refund_requests",
            ]
        )
        #expect(first.keys == first.keys.sorted())
        #expect(first["verdict"]?.stringValue == "ready")
        #expect(bundles[1].objectValue?["verdict"]?.stringValue == "not_ready")
        #expect(bundles[1].objectValue?["one_sided"]?.objectValue?.keys == ["examples", "v1_only", "v2_only"])
        #expect(bundles[1].objectValue?["events_by_source"]?.objectValue?.keys == ["v1", "v2"])
        #expect(
            bundles[1].objectValue?["cutovers"]?.arrayValue?.first?.objectValue?["reason"]?.stringValue
                == SampleReport.hostileReason
        )
    }

    @Test func agreementRateIsNullOnlyWhenNothingWasCompared() throws {
        let bundles = try #require(
            JSONParser.parse(ReportRenderer.json(SampleReport.report)).objectValue?["bundles"]?.arrayValue
        )
        #expect(bundles[2].objectValue?["agreement_rate"]?.isNull == true)
        #expect(bundles[1].objectValue?["agreement_rate"] == .number("0.996"))
    }

    @Test func isDeterministicWhateverTheDictionaryOrder() throws {
        var shuffled = SampleReport.report
        shuffled.bundles[1].eventsBySource = Dictionary(
            uniqueKeysWithValues: SampleReport.notReady.eventsBySource.reversed()
        )
        shuffled.bundles[1].disagreementsByField = Dictionary(
            uniqueKeysWithValues: SampleReport.notReady.disagreementsByField.sorted { $0.key > $1.key }
        )
        #expect(ReportRenderer.json(SampleReport.report) == ReportRenderer.json(SampleReport.report))
        #expect(ReportRenderer.json(shuffled) == ReportRenderer.json(SampleReport.report))
        #expect(ReportRenderer.html(shuffled) == ReportRenderer.html(SampleReport.report))
        #expect(ReportRenderer.table(shuffled) == ReportRenderer.table(SampleReport.report))
    }

    @Test func decodesBackToTheSameReport() throws {
        let decoded = try JSONValueDecoder().decode(CompareReport.self, from: ReportRenderer.json(SampleReport.report))
        #expect(decoded == SampleReport.report)
    }
}

@Suite struct ReportRendererTableTests {
    let text = ReportRenderer.table(SampleReport.report)

    @Test func statesVerdictsRatesAndTheWindow() {
        #expect(text.contains("window 2025-06-01 → 2025-06-08 UTC · generated 2025-06-08T06:00:00Z"))
        #expect(text.contains("1 of 3 ready to cut over"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(
            lines.contains {
                $0.hasPrefix("com.example.fitness  (production)") && $0.hasSuffix(" READY") && $0.count == 78
            }
        )
        #expect(
            lines.contains {
                $0.hasPrefix("com.example.news  (production)") && $0.hasSuffix(" NOT READY") && $0.count == 78
            }
        )
        #expect(text.contains("agreement        99.6 %  (249 of 250)"))
        #expect(text.contains("agreement        99.9 %  (4978 of 4980)"))  // 99.96 rounds down
        #expect(text.contains("agreement        —  (nothing compared yet)"))
        #expect(text.contains("verdict          NOT READY"))
        #expect(text.contains("rule             ≥ 99.5 % agreement over ≥ 200 pairs in the last 7 days"))
        #expect(text.contains("reasons          - 3 one-sided observations (2 V1 only, 1 V2 only) are unexplained"))
        #expect(text.contains("events           v1 250   v2 247"))
        #expect(text.contains("one-sided        v1 only 2   v2 only 1   e.g. 1000000077, 1000000078, 1000000079"))
    }

    @Test func listsFieldsByCountWithAtMostThreeExamples() {
        let expected = """
              disagreements    field         count  examples
                               entitlement       3  1000000042, 1000000043, 1000000044
                               expires_date      2  1000000042, 1000000050
                               auto_renew        1  1000000042
            """
        #expect(text.contains(expected))
        #expect(!text.contains("1000000045"))
    }

    @Test func showsTheCutoverLogAndNoEscapeSequences() {
        #expect(text.contains("cutovers         2025-06-06T10:30:00Z  v1 → v2  by alice  (verdict not_ready, forced)"))
        var r = SampleReport.report
        r.bundles[0].bundleID = "com.example\u{1B}[31m.red\u{202E}"
        let table = ReportRenderer.table(r)
        #expect(!table.contains("\u{1B}") && !table.contains("\u{202E}"))
        #expect(table.contains("com.example\u{FFFD}[31m.red\u{FFFD}"))
    }
}

@Suite struct ReportRendererHTMLTests {
    let page = ReportRenderer.html(SampleReport.report)

    @Test func isOneSelfContainedPageWithoutScriptsOrURLs() {
        #expect(page.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
        #expect(page.contains("<title>V1 → V2 readiness · 2025-06-01 → 2025-06-08 UTC · iap-gateway</title>"))
        #expect(page.contains("<style>"))
        for banned in [
            "<script", "http://", "https://", "<link", "<img", "src=", "url(", "@import", "@font-face", "<iframe",
        ] {
            #expect(!page.lowercased().contains(banned), "page contains \(banned)")
        }
    }

    @Test func itsOneStyleElementCarriesTheNonceItIsGivenAndNothingIsStyledByAttribute() {
        let withNonce = ReportRenderer.html(SampleReport.report, styleNonce: "abc123")
        #expect(withNonce.components(separatedBy: "<style").count == 2)
        #expect(withNonce.contains("<style nonce=\"abc123\">\n"))
        #expect(withNonce == page.replacingOccurrences(of: "<style>", with: "<style nonce=\"abc123\">"))
        for p in [page, withNonce] { #expect(!p.contains(" style=") && !p.contains("<script")) }
        // A nonce is only ever our own hex, but it is escaped like any text all the same.
        #expect(
            ReportRenderer.html(SampleReport.report, styleNonce: "\"><script>").contains(
                "<style nonce=\"&quot;&gt;&lt;script&gt;\">"
            )
        )
    }

    @Test func theHostileCutoverReasonAppearsOnlyEscaped() {
        #expect(!page.contains("alert(1)</script>"))
        #expect(
            page.contains("ship it &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; &#39;single&#39;")
        )
    }

    @Test func hasBadgesChartsAndTheCutoverLog() {
        #expect(page.contains("<div class=\"badge ready\" id=\"verdict-0\" data-verdict=\"ready\">Ready</div>"))
        #expect(
            page.contains("<div class=\"badge failing\" id=\"verdict-1\" data-verdict=\"not_ready\">Not ready</div>")
        )
        #expect(page.contains("<div class=\"badge short\" id=\"verdict-2\" data-verdict=\"not_ready\">Not ready</div>"))
        #expect(page.contains("<svg class=\"daily\" id=\"daily-0\""))
        #expect(page.contains("<svg class=\"daily\" id=\"daily-1\""))
        #expect(page.contains("<line class=\"threshold\""))
        #expect(page.contains("rule 99.5 %"))
        #expect(page.contains("<svg class=\"fields\" id=\"fields-1\""))
        #expect(page.contains(">entitlement</text>"))
        #expect(page.contains("e.g. 1000000042, 1000000043, 1000000044</text>"))
        #expect(page.contains("<table class=\"cutovers\" id=\"cutovers-1\">"))
        #expect(page.contains("<td>not ready <span class=\"forced\">forced</span></td>"))
        #expect(page.contains(">2 · &lt; 0.1 %</text>"))
        #expect(page.contains("99.6 %"))
    }

    @Test func showsEmptyStates() {
        #expect(
            page.contains(
                "<p class=\"empty chart-empty\" id=\"daily-2\">Nothing compared yet — no days in this window.</p>"
            )
        )
        #expect(page.contains("<p class=\"empty chart-empty\" id=\"fields-2\">Nothing compared yet.</p>"))
        #expect(page.contains("agreement: nothing compared yet"))
        var allAgree = SampleReport.ready
        allAgree.disagreementsByField = [:]
        let one = ReportRenderer.html(
            CompareReport(generatedAt: 0, since: 0, until: SampleReport.day, rule: ReadinessRule(), bundles: [allAgree])
        )
        #expect(one.contains("No disagreements: every compared pair matched."))
        #expect(one.contains("No authority change yet"))
        let none = ReportRenderer.html(
            CompareReport(generatedAt: 0, since: 0, until: SampleReport.day, rule: ReadinessRule(), bundles: [])
        )
        #expect(none.contains("No bundles in this window"))
        #expect(none.contains("0 of 0</strong> ready to cut over"))
    }

    @Test func labelsLongWindowsSparselyAndBreaksTheLineOnEmptyDays() {
        var b = SampleReport.ready
        b.daily = (0..<30).map { k in
            BundleReport.DayPoint(
                day: "2025-06-\(k < 9 ? "0" : "")\(k + 1)",
                pairs: k == 10 ? 0 : 100,
                agreements: k == 10 ? 0 : 100 - k % 3
            )
        }
        let page = ReportRenderer.html(
            CompareReport(generatedAt: 0, since: 0, until: 30 * SampleReport.day, rule: ReadinessRule(), bundles: [b])
        )
        let labels = page.components(separatedBy: "text-anchor=\"middle\">").dropFirst().map { String($0.prefix(5)) }
        #expect(labels.first == "06-01" && labels.last == "06-30" && labels.count <= 8, "\(labels)")
        #expect(page.contains("<title>2025-06-11: no pairs</title>"))
        #expect(page.components(separatedBy: "<circle").count - 1 == 29)
        let path = page.components(separatedBy: "<path class=\"rate-line\" d=\"").last?.prefix { $0 != "\"" } ?? ""
        #expect(path.hasPrefix("M") && path.filter { $0 == "M" }.count == 2)  // the line restarts after the empty day
        #expect(page.contains("<title>2025-06-03: 98.0 % (98 of 100 pairs)</title>"))
    }

    @Test func escapesEveryUntrustedString() {
        let hostile = ReportRenderer.html(SampleReport.hostile)
        #expect(!hostile.contains("<script") && !hostile.contains("<img"))
        #expect(!hostile.contains("'"))  // the page's own markup never uses single quotes
        #expect(!hostile.contains("http://") && !hostile.contains("https://"))
        #expect(hostile.contains("see https&#58;//example.invalid/x and http&#58;//example.invalid"))
        for prefix in ["com.evil", "env", "field", "id", "one", "rule", "reason", "who", "verdict"] {
            #expect(
                hostile.contains(
                    prefix + "&quot;&#39;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"
                ),
                "\(prefix) not escaped"
            )
        }
    }
}

/// The page as a browser shows it: headless Chromium loads it from a file, then its DOM and a screenshot are checked.
/// Chromium is required (Debian's `chromium` package); without it these tests fail rather than skip.
@Suite(.serialized) struct ReportRendererChromiumTests {
    /// Writes `html` to a fresh folder and runs `body` with the folder, the page's `file://` address and Chromium.
    static func withPage(
        _ html: String,
        keep: Bool = false,
        _ body: (URL, String, String) async throws -> Void
    ) async throws {
        let browser = try HeadlessChromium.executable()
        let dir = FileManager.default.temporaryDirectory.appending(path: "iapgw-report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let page = dir.appending(path: "report.html")
        try Data(html.utf8).write(to: page)
        try await body(dir, "file://" + page.path(), browser)
        // IAPGW_REPORT_OUT=/some/folder keeps the page and its screenshot for a person to look at.
        if keep, let out = ProcessInfo.processInfo.environment["IAPGW_REPORT_OUT"] {
            for name in ["report.html", "report.png"]
            where FileManager.default.fileExists(atPath: dir.appending(path: name).path()) {
                let target = URL(filePath: out).appending(path: name)
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: dir.appending(path: name), to: target)
            }
        }
    }

    @Test(.timeLimit(.minutes(3))) func chromiumShowsBadgesRuleChartsAndEscapedText() async throws {
        try await Self.withPage(ReportRenderer.html(SampleReport.report), keep: true) { dir, url, browser in
            let profile = dir.appending(path: "profile").path()
            let dom = try await HeadlessChromium.run(
                browser,
                HeadlessChromium.flags(profile: profile) + ["--dump-dom", url],
                in: dir
            )
            #expect(!dom.timedOut, "chromium --dump-dom did not finish within 60 s")
            #expect(dom.status == 0, "chromium exited \(dom.status): \(dom.stderr.suffix(2000))")
            let text = dom.stdout
            #expect(text.contains("<div class=\"badge ready\" id=\"verdict-0\" data-verdict=\"ready\">Ready</div>"))
            #expect(
                text.contains(
                    "<div class=\"badge failing\" id=\"verdict-1\" data-verdict=\"not_ready\">Not ready</div>"
                )
            )
            #expect(
                text.contains("<div class=\"badge short\" id=\"verdict-2\" data-verdict=\"not_ready\">Not ready</div>")
            )
            for bundle in ["com.example.fitness", "com.example.news", "com.example.new"] {
                #expect(text.contains("<h2>\(bundle)</h2>"))
            }
            #expect(
                text.contains(
                    "<span id=\"rule\">≥ 99.5 % agreement over ≥ 200 pairs in the last 7 days, and no unexplained one-sided observations</span>"
                )
            )
            #expect(text.contains("<svg class=\"daily\" id=\"daily-1\""))
            #expect(text.contains("<svg class=\"fields\" id=\"fields-1\""))
            #expect(text.contains("<circle class=\"pt bad\""))
            #expect(text.contains("<line class=\"threshold\""))
            #expect(text.contains("<rect class=\"bar\""))
            #expect(!text.contains("<script"), "the hostile reason became an element")
            #expect(text.contains("ship it &lt;script&gt;alert(1)&lt;/script&gt; &amp; \"quotes\" 'single'"))

            let png = dir.appending(path: "report.png")
            let shot = try await HeadlessChromium.run(
                browser,
                HeadlessChromium.flags(profile: profile) + [
                    "--screenshot=\(png.path())", "--window-size=1200,1600", url,
                ],
                in: dir
            )
            #expect(!shot.timedOut && shot.status == 0, "chromium --screenshot failed: \(shot.stderr.suffix(2000))")
            let bytes = try [UInt8](Data(contentsOf: png))
            #expect(bytes.count > 10_000, "screenshot is only \(bytes.count) bytes: blank?")
            #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            if bytes.count > 24 {
                let be = { (o: Int) in bytes[o..<o + 4].reduce(0) { $0 << 8 | Int($1) } }
                #expect(be(16) == 1200 && be(20) == 1600, "screenshot is \(be(16))×\(be(20))")
            }
        }
    }

    @Test(.timeLimit(.minutes(2))) func chromiumShowsHostileTextAsText() async throws {
        try await Self.withPage(ReportRenderer.html(SampleReport.hostile)) { dir, url, browser in
            let dom = try await HeadlessChromium.run(
                browser,
                HeadlessChromium.flags(profile: dir.appending(path: "profile").path()) + ["--dump-dom", url],
                in: dir
            )
            #expect(!dom.timedOut && dom.status == 0, "chromium failed: \(dom.stderr.suffix(2000))")
            #expect(dom.stdout.contains("</html>"))
            #expect(!dom.stdout.contains("<script") && !dom.stdout.contains("<img"))
            #expect(
                dom.stdout.contains(
                    "<h2>com.evil\"'&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;</h2>"
                )
            )
        }
    }
}

/// The verdict's reasons (Gateway) and the renderings state a rate in the same words, rounded down.
@Suite struct ReportRateTextTests {
    @Test func ratesAreRoundedDownToATenth() {
        #expect(CompareReport.percentText(249, of: 250) == "99.6 %")
        #expect(CompareReport.percentText(199, of: 200) == "99.5 %")
        #expect(CompareReport.percentText(1, of: 3) == "33.3 %")
        #expect(CompareReport.percentText(2, of: 3) == "66.6 %")
        #expect(CompareReport.percentText(0, of: 7) == "0.0 %")
        #expect(CompareReport.percentText(5, of: 5) == "100.0 %")
        #expect(CompareReport.percentText(0, of: 0) == nil)
    }

    @Test func theTableStatesTheVerdictsRate() {
        let b = SampleReport.notReady
        #expect(
            ReportRenderer.table(SampleReport.report).contains(
                "\(CompareReport.percentText(b.agreements, of: b.pairs)!)  (249 of 250)"
            )
        )
    }
}

/// The refund requests section: answered in time, how the rest ended, and Apple's decisions after each preference —
/// in the table and the page.
@Suite struct ReportRefundRequestsTests {
    static var report: CompareReport {
        var r = SampleReport.report
        r.bundles[0].refundRequests = BundleReport.RefundRequestsSection(
            requests: 12,
            answeredInTime: 9,
            byState: ["sent": 9, "declined": 1, "dead": 2],
            bySource: ["team": 7, "default": 2],
            outcomes: [
                "DECLINE": .init(requests: 6, refunded: 1, declined: 4, undecided: 1),
                "GRANT_FULL": .init(requests: 3, refunded: 3),
                "not_sent": .init(requests: 3, refunded: 2, undecided: 1),
            ]
        )
        return r
    }

    @Test func theTableSaysHowManyWereAnsweredAndWhatAppleDecided() {
        let text = ReportRenderer.table(Self.report)
        #expect(text.contains("12   answered in time 9   (dead 2, declined 1, sent 9)"))
        #expect(text.contains("DECLINE 6: refunded 1, declined 4, undecided 1"))
        #expect(text.contains("not_sent 3: refunded 2, declined 0, undecided 1"))
        #expect(!ReportRenderer.table(SampleReport.report).contains("refund requests"), "absent when not answered")
    }

    @Test func thePageHasTheSectionAndTheOutcomes() {
        let html = ReportRenderer.html(Self.report)
        #expect(html.contains("<h3>Refund requests</h3>"))
        #expect(html.contains("<tr><td>GRANT_FULL</td><td>3</td><td>3</td><td>0</td><td>0</td></tr>"))
        #expect(html.contains("unanswered: dead"))
    }

    @Test func theJSONCarriesTheSection() throws {
        let top = try #require(try JSONParser.parse(JSONOutput.encode(Self.report)).objectValue)
        let first = try #require(top["bundles"]?.arrayValue?.first?.objectValue)
        let section = try #require(first["refund_requests"]?.objectValue)
        #expect(section["answered_in_time"]?.int64Value == 9)
        #expect(section["outcomes"]?.objectValue?["DECLINE"]?.objectValue?["declined"]?.int64Value == 4)
    }
}

/// docs/commands.md's description of `report --format json` names every member the encoder writes: the report's, a
/// bundle's and its three sections' (a member added to the report without a word in the docs fails here).
@Suite struct ReportJSONDocumentationTests {
    static let commands = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "docs/commands.md")

    /// The paragraph that describes the JSON, from `JSON: ` to the next blank line.
    static func documented() throws -> String {
        let text = try String(contentsOf: commands, encoding: .utf8)
        let start = try #require(text.range(of: "JSON: `{\"bundles\""))
        let end = text.range(of: "\n\n", range: start.upperBound..<text.endIndex)?.lowerBound ?? text.endIndex
        return String(text[start.lowerBound..<end])
    }

    @Test func everyMemberIsDocumented() throws {
        var report = SampleReport.report
        report.bundles[0].receipts = BundleReport.ReceiptsSection(
            mode: "shadow",
            pairs: 3,
            agreements: 2,
            disagreementsByField: [:],
            appleOnly: 0,
            gatewayOnly: 1,
            oneSidedExamples: [],
            daily: [],
            verdict: .notReady,
            reasons: ["too few pairs"]
        )
        report.bundles[0].refundRequests = ReportRefundRequestsTests.report.bundles[0].refundRequests
        report.bundles[0].groups = BundleReport.GroupsSection(
            groups: 1,
            seats: 5,
            seatsAdded: 2,
            seatsReduced: 1,
            seatRefunds: 1,
            unclaims: 0
        )
        let top = try #require(try JSONParser.parse(JSONOutput.encode(report)).objectValue)
        let bundle = try #require(top["bundles"]?.arrayValue?.first?.objectValue)
        var members = Set(top.keys).union(bundle.keys)
        for section in ["receipts", "refund_requests", "groups"] {
            let object = try #require(bundle[section]?.objectValue, "\(section) is encoded")
            members.formUnion(object.keys)
        }
        let text = try Self.documented()
        let missing = members.filter { !text.contains("\"\($0)\"") }.sorted()
        #expect(members.count > 30)
        #expect(missing.isEmpty, "docs/commands.md does not name \(missing)")
    }
}
