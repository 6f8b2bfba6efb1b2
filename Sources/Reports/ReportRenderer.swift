internal import Canonical
public import ReportModel
internal import WireJSON

/// Turns a ``CompareReport`` into what people and programs read: stable JSON (`--format json`, `GET /admin/report`),
/// a plain-text table for terminals, and one self-contained HTML page (``html(_:)``, in `ReportRenderer+HTML.swift`).
///
/// Every renderer is a pure function of the report: the same report gives the same bytes, whatever the order of its
/// dictionaries. Rates shown as text are rounded *down* to one decimal, so a rate never appears to meet a threshold
/// it misses (249 of 250 is "99.6 %", 0.99499 is "99.4 %").
public enum ReportRenderer {
    /// The report as JSON with sorted keys, compact (or `pretty`): the model's own `Codable` shape, so
    /// `agreement_rate` is `null` when nothing was compared.
    public static func json(_ r: CompareReport, pretty: Bool = false) -> [UInt8] {
        JSONOutput.encode(r, pretty: pretty)
    }

    /// The formats ``render(_:format:)`` knows.
    public static let formats = ["table", "json", "html"]

    /// The report in one of the formats the CLI and the admin API offer (`json`, `table`, `html`), with its content
    /// type; nil for any other name. `serve` gives it to the admin API (``GatewayService/Dependencies/reportRenderer``),
    /// which passes the nonce its policy names for the page's styles (``html(_:styleNonce:)``).
    public static func render(
        _ r: CompareReport,
        format: String,
        styleNonce: String? = nil
    ) -> (contentType: String, body: [UInt8])? {
        switch format {
        case "json": ("application/json", json(r))
        case "table": ("text/plain; charset=utf-8", Array(table(r).utf8))
        case "html": ("text/html; charset=utf-8", Array(html(r, styleNonce: styleNonce).utf8))
        default: nil
        }
    }

    /// A fixed-width, colourless table: one block per bundle and environment. Untrusted text (bundle ids, field
    /// names, reasons) has its control characters replaced, so it cannot move the cursor or recolour the terminal.
    public static func table(_ r: CompareReport) -> String {
        var out: [String] = []
        out.append(
            "V1/V2 compare report · window \(windowText(since: r.since, until: r.until)) · generated \(utcDateTime(r.generatedAt))"
        )
        out.append("rule: \(plain(r.rule.text))")
        let ready = r.bundles.filter { $0.verdict == .ready }.count
        out.append("\(ready) of \(r.bundles.count) ready to cut over")
        if r.bundles.isEmpty {
            out.append("")
            out.append("(no bundles in this window)")
        }
        for b in r.bundles {
            out.append("")
            out += tableBlock(b)
        }
        return out.joined(separator: "\n") + "\n"
    }

    static let tableWidth = 78
    static let labelWidth = 17

    static func tableBlock(_ b: BundleReport) -> [String] {
        var lines: [String] = []
        let verdict = b.verdict == .ready ? "READY" : "NOT READY"
        let title = "\(plain(b.bundleID))  (\(plain(b.environment)))"
        let gap = max(2, tableWidth - title.count - verdict.count)
        lines.append(title + String(repeating: " ", count: gap) + verdict)
        lines.append(String(repeating: "-", count: max(tableWidth, title.count + gap + verdict.count)))

        func row(_ label: String, _ value: String) { lines.append("  " + pad(label, labelWidth - 1) + " " + value) }
        func more(_ value: String) { lines.append("  " + String(repeating: " ", count: labelWidth) + value) }

        row("authority", plain(b.authority))
        let events = b.eventsBySource.sorted { $0.key < $1.key }.map { "\(plain($0.key)) \($0.value)" }
        row("events", events.isEmpty ? "none" : events.joined(separator: "   "))
        row("pairs", "\(b.pairs)")
        if let rate = percentText(b.agreements, of: b.pairs) {
            row("agreement", "\(rate)  (\(b.agreements) of \(b.pairs))")
        } else {
            row("agreement", "—  (nothing compared yet)")
        }

        let fields = sortedFields(b)
        if fields.isEmpty {
            row("disagreements", b.pairs > 0 ? "none" : "—")
        } else {
            let nameWidth = max(5, fields.map { plain($0.name).count }.max() ?? 0)
            let countWidth = max(5, fields.map { "\($0.value.count)".count }.max() ?? 0)
            row("disagreements", pad("field", nameWidth) + "  " + leftPad("count", countWidth) + "  examples")
            for (name, d) in fields {
                let examples = d.examples.prefix(3).map(plain).joined(separator: ", ")
                more(
                    pad(plain(name), nameWidth) + "  " + leftPad("\(d.count)", countWidth) + "  "
                        + (examples.isEmpty ? "—" : examples)
                )
            }
        }

        var oneSided = "v1 only \(b.oneSided.v1Only)   v2 only \(b.oneSided.v2Only)"
        if !b.oneSided.examples.isEmpty {
            oneSided += "   e.g. " + b.oneSided.examples.prefix(3).map(plain).joined(separator: ", ")
        }
        row("one-sided", oneSided)

        row("verdict", verdict)
        row("rule", plain(b.rule))
        if b.reasons.isEmpty {
            row("reasons", "—")
        } else {
            for (i, reason) in b.reasons.enumerated() {
                if i == 0 { row("reasons", "- " + plain(reason)) } else { more("- " + plain(reason)) }
            }
        }
        if b.recovered.isEmpty {
            row("recovered", "none")
        } else {
            for (i, r) in b.recovered.enumerated() {
                let text = "\(r.day)  \(r.count) by \(plain(r.mechanism))"
                if i == 0 { row("recovered", text) } else { more(text) }
            }
        }
        if b.cutovers.isEmpty {
            row("cutovers", "none")
        } else {
            for (i, c) in b.cutovers.enumerated() {
                let how = c.origin == "migrate" ? " with Apple (migrate)" : c.origin == "receipts" ? " receipts" : ""
                var text =
                    "\(utcDateTime(c.at))  \(plain(c.from)) → \(plain(c.to))\(how)  by \(plain(c.who))  (verdict \(plain(c.verdict))"
                text += c.forced ? ", forced)" : ")"
                if let reason = c.reason, !reason.isEmpty { text += "  \"\(plain(reason))\"" }
                if i == 0 { row("cutovers", text) } else { more(text) }
            }
        }
        for (i, s) in b.appleSwitches.filter({ $0.outcome == "reverted" }).enumerated() {
            let text = "\(utcDateTime(s.at))  Apple set back: \(plain(s.detail ?? "reverted"))"
            if i == 0 { row("switches reverted", text) } else { more(text) }
        }
        if let r = b.receipts { receiptRows(r, row: row, more: more) }
        if let r = b.refundRequests { refundRows(r, row: row, more: more) }
        if let g = b.groups {
            row(
                "groups",
                "\(g.groups) groups, \(g.seats) seats   in the window: seats added \(g.seatsAdded), reduced \(g.seatsReduced), "
                    + "seat refunds \(g.seatRefunds), unclaims \(g.unclaims)"
            )
        }
        return lines
    }

    /// Apple's refund requests: how many were answered in time, how the rest ended, and what Apple decided after
    /// each preference sent.
    static func refundRows(
        _ r: BundleReport.RefundRequestsSection,
        row: (String, String) -> Void,
        more: (String) -> Void
    ) {
        let states = r.byState.sorted { $0.key < $1.key }.map { "\(plain($0.key)) \($0.value)" }.joined(separator: ", ")
        row(
            "refund requests",
            "\(r.requests)   answered in time \(r.answeredInTime)" + (states.isEmpty ? "" : "   (\(states))")
        )
        for (preference, o) in r.outcomes.sorted(by: { $0.key < $1.key }) {
            more(
                "\(plain(preference)) \(o.requests): refunded \(o.refunded), declined \(o.declined), undecided \(o.undecided)"
            )
        }
    }

    /// The receipt path's rows: its mode, the shadow comparison and its own verdict.
    static func receiptRows(
        _ r: BundleReport.ReceiptsSection,
        row: (String, String) -> Void,
        more: (String) -> Void
    ) {
        let verdict = r.verdict == .ready ? "READY" : "NOT READY"
        let agreement = percentText(r.agreements, of: r.pairs).map { "\($0) (\(r.agreements) of \(r.pairs))" } ?? "—"
        row("receipts", "\(plain(r.mode))   pairs \(r.pairs)   agreement \(agreement)   verdict \(verdict)")
        let fields = r.disagreementsByField.sorted {
            $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.key < $1.key
        }
        for (name, d) in fields {
            let examples = d.examples.prefix(3).map(plain).joined(separator: ", ")
            more("\(plain(name)) \(d.count)" + (examples.isEmpty ? "" : "  e.g. " + examples))
        }
        if r.appleOnly + r.gatewayOnly > 0 {
            more(
                "Apple's only \(r.appleOnly)   the gateway's only \(r.gatewayOnly)"
                    + (r.oneSidedExamples.isEmpty
                        ? "" : "  e.g. " + r.oneSidedExamples.prefix(3).map(plain).joined(separator: ", "))
            )
        }
        for reason in r.reasons { more("- " + plain(reason)) }
    }

    // MARK: - Shared helpers (table and HTML)

    /// `agreements / pairs` as "99.6 %", rounded down to one decimal; nil when nothing was compared. The same text
    /// as the verdict's reasons (``CompareReport/percentText(_:of:)``, in ReportModel).
    static func percentText(_ agreements: Int, of pairs: Int) -> String? {
        CompareReport.percentText(agreements, of: pairs)
    }

    /// Fields by descending count, then by name: a stable order whatever the dictionary's.
    static func sortedFields(_ b: BundleReport) -> [(name: String, value: BundleReport.FieldDisagreements)] {
        b.disagreementsByField.map { (name: $0.key, value: $0.value) }
            .sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.name < $1.name }
    }

    /// `since → until UTC`, as dates when both fall on UTC midnight, otherwise with hours and minutes.
    static func windowText(since: Int64, until: Int64) -> String {
        let dateOnly = since % 86_400_000 == 0 && until % 86_400_000 == 0
        return "\(windowPoint(since, dateOnly: dateOnly)) → \(windowPoint(until, dateOnly: dateOnly)) UTC"
    }

    /// `2025-06-01`, or `2025-06-01 12:30` when `dateOnly` is false.
    static func windowPoint(_ ms: Int64, dateOnly: Bool) -> String {
        dateOnly ? utcDate(ms) : String(utcDateTime(ms).prefix(16).map { $0 == "T" ? " " : $0 })
    }

    /// `YYYY-MM-DD` (UTC) of a millisecond timestamp.
    static func utcDate(_ ms: Int64) -> String { UTCTime(milliseconds: ms).date }

    /// `YYYY-MM-DDTHH:MM:SSZ` (UTC) of a millisecond timestamp.
    static func utcDateTime(_ ms: Int64) -> String { UTCTime(milliseconds: ms).iso8601 }

    /// Untrusted text made safe for a terminal: control characters and bidirectional overrides become U+FFFD.
    static func plain(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            let bidi = (0x202A...0x202E).contains(u.value) || (0x2066...0x2069).contains(u.value)
            out.append(u.properties.generalCategory == .control || bidi ? "\u{FFFD}" : u)
        }
        return String(out)
    }

    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }

    static func leftPad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }
}
