public import SQLite
internal import FoundationEssentials
internal import Canonical

/// Why a cutover was refused, with a stable code.
public struct CutoverError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var reasons: [String]
    public init(_ code: String, _ message: String, reasons: [String] = []) { (self.code, self.message, self.reasons) = (code, message, reasons) }
    public var description: String { "\(code): \(message)" + (reasons.isEmpty ? "" : " (" + reasons.joined(separator: "; ") + ")") }
}

/// Reads the compare ledger into the report, and flips authority (DESIGN ch. 5).
public struct CompareLedger: Sendable {
    let db: SQLiteDatabase
    let writer: JournalWriter
    let config: GatewayConfig
    /// Whether the V2 path can be fetched (the App Store Server API, or a stand-in given to the service).
    let v2PathAvailable: Bool

    public init(db: SQLiteDatabase, writer: JournalWriter, config: GatewayConfig, v2PathAvailable: Bool? = nil) {
        (self.db, self.writer, self.config) = (db, writer, config)
        self.v2PathAvailable = v2PathAvailable ?? config.hasAppStoreAPICredentials
    }

    /// Every configured bundle and environment (optionally one bundle), counts over [since, until), the verdict over
    /// the rule's window ending at `until`.
    public func report(bundleID: String? = nil, since: Int64, until: Int64, examples: Int = 3) throws -> CompareReport {
        let rule = config.compareSettings.rule
        var bundles: [BundleReport] = []
        try db.readTransaction { c in
            for app in config.apps where bundleID == nil || app.bundleID == bundleID {
                for env in app.environments.map(\.rawValue).sorted() {
                    bundles.append(try bundleReport(app: app, environment: env, since: since, until: until, rule: rule, examples: examples, in: c))
                }
            }
        }
        return CompareReport(generatedAt: until, since: since, until: until, rule: rule, bundles: bundles)
    }

    struct Tally {
        var pairs = 0
        var agreements = 0
        var fields: [String: (count: Int, examples: [String])] = [:]
        var v1Only = 0
        var v2Only = 0
        var oneSidedExamples: [String] = []
        var daily: [String: (pairs: Int, agreements: Int)] = [:]
    }

    func tally(bundle: String, environment: String, from: Int64, to: Int64, examples: Int, in c: SQLiteConnection) throws -> Tally {
        var t = Tally()
        let rows = try c.query(
            """
            SELECT outcome, fields, original_transaction_id, compared_at FROM compare_ledger
            WHERE bundle_id = ? AND environment = ? AND compared_at >= ? AND compared_at < ? ORDER BY compared_at, id
            """, [.text(bundle), .text(environment), .integer(from), .integer(to)])
        for row in rows {
            let otid = row.string("original_transaction_id") ?? ""
            let day = TimeText.day(row.int64("compared_at") ?? 0)
            switch row.string("outcome") {
            case "agree", "disagree":
                let agree = row.string("outcome") == "agree"
                t.pairs += 1
                if agree { t.agreements += 1 }
                t.daily[day, default: (0, 0)].pairs += 1
                if agree { t.daily[day, default: (0, 0)].agreements += 1 }
                for field in (row.string("fields") ?? "").split(separator: ",").map(String.init) {
                    var entry = t.fields[field] ?? (0, [])
                    entry.count += 1
                    if entry.examples.count < examples, !entry.examples.contains(otid) { entry.examples.append(otid) }
                    t.fields[field] = entry
                }
            case "v1_only", "v2_only":
                if row.string("outcome") == "v1_only" { t.v1Only += 1 } else { t.v2Only += 1 }
                if t.oneSidedExamples.count < examples, !t.oneSidedExamples.contains(otid) { t.oneSidedExamples.append(otid) }
            default:
                continue
            }
        }
        return t
    }

    func bundleReport(app: GatewayConfig.App, environment env: String, since: Int64, until: Int64, rule: ReadinessRule, examples: Int,
                      in c: SQLiteConnection) throws -> BundleReport {
        let shown = try tally(bundle: app.bundleID, environment: env, from: since, to: until, examples: examples, in: c)
        let window = try tally(bundle: app.bundleID, environment: env, from: until - rule.windowMillis, to: until, examples: 0, in: c)
        let (verdict, reasons) = Self.verdict(window, rule: rule, compare: app.compare)
        var events: [String: Int] = [:]
        for row in try c.query(
            "SELECT source, COUNT(*) AS n FROM events WHERE bundle_id = ? AND environment = ? AND created_at >= ? AND created_at < ? GROUP BY source",
            [.text(app.bundleID), .text(env), .integer(since), .integer(until)])
        {
            events[row.string("source") ?? ""] = row.int("n") ?? 0
        }
        let authority = try c.queryOne("SELECT authority FROM authority WHERE bundle_id = ? AND environment = ?",
                                       [.text(app.bundleID), .text(env)])?.string("authority")
            ?? app.authority(for: AppStoreEnvironment(rawValue: env)).rawValue
        return BundleReport(
            bundleID: app.bundleID, environment: env, authority: authority, eventsBySource: events, pairs: shown.pairs,
            agreements: shown.agreements,
            disagreementsByField: shown.fields.mapValues { BundleReport.FieldDisagreements(count: $0.count, examples: $0.examples) },
            oneSided: BundleReport.OneSided(v1Only: shown.v1Only, v2Only: shown.v2Only, examples: shown.oneSidedExamples),
            daily: shown.daily.keys.sorted().map { BundleReport.DayPoint(day: $0, pairs: shown.daily[$0]!.pairs, agreements: shown.daily[$0]!.agreements) },
            verdict: verdict, rule: rule.text, reasons: reasons,
            cutovers: try cutovers(bundleID: app.bundleID, environment: env, in: c))
    }

    static func verdict(_ t: Tally, rule: ReadinessRule, compare: Bool) -> (BundleReport.Verdict, [String]) {
        var reasons: [String] = []
        if !compare { reasons.append("compare is off for this bundle: nothing is compared") }
        if t.pairs < rule.minimumPairs { reasons.append("\(t.pairs) pairs compared in the window; the rule needs \(rule.minimumPairs)") }
        if t.pairs > 0 {
            let rate = Double(t.agreements) / Double(t.pairs)
            if rate < rule.minimumAgreementRate {
                reasons.append("agreement \(CompareReport.percentText(t.agreements, of: t.pairs) ?? "—"); the rule needs \(rule.thresholdText)")
            }
        }
        if !rule.allowOneSided, t.v1Only + t.v2Only > 0 {
            reasons.append("\(t.v1Only) subscriptions seen by V1 only and \(t.v2Only) by V2 only")
        }
        return (reasons.isEmpty ? .ready : .notReady, reasons)
    }

    func cutovers(bundleID: String, environment: String, in c: SQLiteConnection) throws -> [CutoverRecord] {
        try c.query(
            "SELECT * FROM cutover_log WHERE bundle_id = ? AND environment = ? ORDER BY at, id", [.text(bundleID), .text(environment)]
        ).map { row in
            CutoverRecord(
                at: row.int64("at") ?? 0, bundleID: bundleID, environment: environment, from: row.string("from_authority") ?? "",
                to: row.string("to_authority") ?? "", who: row.string("who") ?? "", reason: row.string("reason"),
                verdict: row.string("verdict") ?? "", forced: row.bool("forced") ?? false)
        }
    }

    // MARK: Cutover

    /// Flips the authority of `bundleID` in `environment` for events of notifications arriving from now on, stored so
    /// it survives restarts, and logged with who, why and the verdict at the time. Moving to V2 needs a `ready`
    /// verdict unless `force`; moving back to V1 (the undo) is always allowed. Refused when V2 would have no path
    /// (Apple may send V1 and the App Store Server API is not configured).
    @discardableResult
    public func cutover(bundleID: String, environment: String, to target: String, who: String, reason: String?, force: Bool, now: Int64) throws
        -> CutoverRecord
    {
        guard let app = config.apps.first(where: { $0.bundleID == bundleID }) else {
            throw CutoverError("unknown_bundle", "\(bundleID) is not configured")
        }
        guard app.environments.contains(AppStoreEnvironment(rawValue: environment)) else {
            throw CutoverError("unknown_environment", "\(bundleID) does not take \(environment) notifications")
        }
        guard target == "v1" || target == "v2" else { throw CutoverError("bad_target", "--to must be v1 or v2") }
        if target == "v2", app.acceptsV1, !v2PathAvailable {
            throw CutoverError("no_v2_path", "Apple may send V1 for \(bundleID): V2's path needs app_store_api to be configured")
        }
        let report = try self.report(bundleID: bundleID, since: now - config.compareSettings.rule.windowMillis, until: now)
        let verdict = report.bundles.first { $0.environment == environment }
        let ready = verdict?.verdict == .ready
        if target == "v2", !ready, !force {
            throw CutoverError("not_ready", "the verdict for \(bundleID) (\(environment)) is not ready; --force overrides",
                               reasons: verdict?.reasons ?? [])
        }
        return try writer.perform { c in
            let current = try GatewayStore.authority(bundleID: bundleID, environment: AppStoreEnvironment(rawValue: environment), in: c)
            guard current != target else { throw CutoverError("unchanged", "\(bundleID) (\(environment)) is already \(target)") }
            try c.run(
                """
                INSERT INTO authority (bundle_id, environment, authority, origin, updated_at) VALUES (?, ?, ?, 'cutover', ?)
                ON CONFLICT(bundle_id, environment) DO UPDATE SET authority = excluded.authority, origin = 'cutover', updated_at = excluded.updated_at
                """, [.text(bundleID), .text(environment), .text(target), .integer(now)])
            let record = CutoverRecord(
                at: now, bundleID: bundleID, environment: environment, from: current, to: target, who: who, reason: reason,
                verdict: ready ? "ready" : "not_ready", forced: target == "v2" && !ready)
            try c.run(
                """
                INSERT INTO cutover_log (at, bundle_id, environment, from_authority, to_authority, who, reason, verdict, forced)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.integer(now), .text(bundleID), .text(environment), .text(current), .text(target), .text(who), SQLiteValue(reason),
                 .text(record.verdict), .integer(record.forced ? 1 : 0)])
            return record
        }
    }
}
