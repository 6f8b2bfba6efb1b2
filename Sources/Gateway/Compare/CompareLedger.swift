internal import Canonical
internal import FoundationEssentials
public import ReportModel
public import ServiceKit
public import Store

/// Why a cutover was refused, with a stable code.
public struct CutoverError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case unknownBundle = "unknown_bundle"
        case unknownEnvironment = "unknown_environment"
        case badTarget = "bad_target"
        /// Apple may send V1 and the App Store Server API is not configured: V2 would have no path.
        case noV2Path = "no_v2_path"
        /// The verdict is not `ready` and the cutover was not forced.
        case notReady = "not_ready"
        case unchanged

        /// The admin API's status: 409 when the request is well formed but the bundle's state refuses it.
        public var status: Int {
            switch self {
            case .notReady, .unchanged: 409
            case .unknownBundle, .unknownEnvironment, .badTarget, .noV2Path: 400
            }
        }
    }

    public var code: Code
    public var message: String
    public var reasons: [String]
    public init(_ code: Code, _ message: String, reasons: [String] = []) {
        (self.code, self.message, self.reasons) = (code, message, reasons)
    }
    public var description: String {
        "\(code.rawValue): \(message)" + (reasons.isEmpty ? "" : " (" + reasons.joined(separator: "; ") + ")")
    }
}

/// Reads the compare ledger into the report, and flips authority (docs/operations.md, "cutover").
public struct CompareLedger: Sendable {
    let store: any GatewayStore
    let config: GatewayConfig
    /// Whether the V2 path can be fetched (the App Store Server API, or a stand-in given to the service).
    let v2PathAvailable: Bool

    public init(store: any GatewayStore, config: GatewayConfig, v2PathAvailable: Bool? = nil) {
        (self.store, self.config) = (store, config)
        self.v2PathAvailable = v2PathAvailable ?? config.hasAppStoreAPICredentials
    }

    /// Every configured bundle and environment (optionally one bundle), counts over [since, until), the verdict over
    /// the rule's window ending at `until`.
    /// The log line of a cutover, whoever made it (the admin API, `iap-gateway cutover`): the authority or the receipt
    /// mode changed, from what to what, forced or not.
    public static func logCutover(_ record: CutoverRecord, receipts: Bool, to log: Log) {
        log.warn(
            receipts ? "receipt mode changed" : "authority changed",
            [
                "bundle": .string(record.bundleID), "environment": .string(record.environment),
                "from": .string(record.from), "to": .string(record.to), "forced": .bool(record.forced),
                "who": .string(record.who),
            ]
        )
    }

    public func report(bundleID: String? = nil, since: Int64, until: Int64, examples: Int = 3) throws -> CompareReport {
        let rule = config.compareSettings.rule
        var bundles: [BundleReport] = []
        try store.read { tx in
            for app in config.apps where bundleID == nil || app.bundleID == bundleID {
                for env in app.environments.sorted(by: { $0.rawValue < $1.rawValue }) {
                    bundles.append(
                        try bundleReport(
                            app: app,
                            environment: env,
                            since: since,
                            until: until,
                            rule: rule,
                            examples: examples,
                            in: tx
                        )
                    )
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

    /// The ledger of a bundle over [from, to): counts from the store (``StoreTransaction/ledgerTally``), and up to
    /// `examples` original transaction ids per disagreeing field and for one-sided rows — the first in ledger order,
    /// read a page at a time, so memory stays bounded whatever the ledger holds.
    /// A ledger's tally over what the report shows, with `examples`, and over the verdict's window (the same when the
    /// two are one).
    private func shownAndWindow(
        _ bundle: String,
        _ environment: AppStoreEnvironment,
        since: Int64,
        until: Int64,
        rule: ReadinessRule,
        examples: Int,
        ledger: ComparisonLedger,
        in tx: any StoreTransaction
    ) throws -> (shown: Tally, window: Tally) {
        let shown = try tally(
            bundle: bundle,
            environment: environment,
            from: since,
            to: until,
            examples: examples,
            ledger: ledger,
            in: tx
        )
        guard since != until - rule.windowMillis else { return (shown, shown) }
        let window = try tally(
            bundle: bundle,
            environment: environment,
            from: until - rule.windowMillis,
            to: until,
            examples: 0,
            ledger: ledger,
            in: tx
        )
        return (shown, window)
    }

    func tally(
        bundle: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        examples: Int,
        ledger: ComparisonLedger = .notifications,
        in tx: any StoreTransaction
    ) throws
        -> Tally
    {
        let counts = try tx.ledgerTally(
            bundleID: bundle,
            environment: environment,
            from: from,
            to: to,
            byDay: examples > 0,
            in: ledger
        )
        var t = Tally()
        t.agreements = counts.outcomes[.agree] ?? 0
        t.pairs = t.agreements + (counts.outcomes[.disagree] ?? 0)
        t.v1Only = counts.outcomes[.v1Only] ?? 0
        t.v2Only = counts.outcomes[.v2Only] ?? 0
        for day in counts.daily {
            t.daily[TimeText.day(day.start)] = (day.agreements + day.disagreements, day.agreements)
        }
        for (set, n) in counts.fieldSets {
            for field in set.split(separator: ",").map(String.init) { t.fields[field, default: (0, [])].count += n }
        }
        guard examples > 0 else { return t }
        // Each field's first `examples` subscriptions among the disagreements, in ledger order.
        var wanted = Set(t.fields.keys)
        if !wanted.isEmpty {
            try page(.disagree, bundle, environment, from, to, ledger, in: tx) { row in
                for field in row.fields where wanted.contains(field) {
                    var e = t.fields[field] ?? (0, [])
                    if !e.examples.contains(row.originalTransactionID) { e.examples.append(row.originalTransactionID) }
                    t.fields[field] = e
                    if e.examples.count >= examples { wanted.remove(field) }
                }
                return !wanted.isEmpty
            }
        }
        // The first `examples` subscriptions seen by one path only: each outcome's first ones, merged in ledger order.
        var oneSided: [LedgerExample] = []
        for outcome in [CompareOutcome.v1Only, .v2Only] where (counts.outcomes[outcome] ?? 0) > 0 {
            var seen: [String] = []
            try page(outcome, bundle, environment, from, to, ledger, in: tx) { row in
                if !seen.contains(row.originalTransactionID) {
                    seen.append(row.originalTransactionID)
                    oneSided.append(row)
                }
                return seen.count < examples
            }
        }
        for row in oneSided.sorted(by: { ($0.comparedAt, $0.id) < ($1.comparedAt, $1.id) })
        where t.oneSidedExamples.count < examples && !t.oneSidedExamples.contains(row.originalTransactionID) {
            t.oneSidedExamples.append(row.originalTransactionID)
        }
        return t
    }

    /// Walks one outcome's ledger rows in [from, to) in ledger order, a page at a time, while `each` returns true.
    private func page(
        _ outcome: CompareOutcome,
        _ bundle: String,
        _ environment: AppStoreEnvironment,
        _ from: Int64,
        _ to: Int64,
        _ ledger: ComparisonLedger,
        in tx: any StoreTransaction,
        _ each: (LedgerExample) -> Bool
    ) throws {
        var after = (comparedAt: from, id: Int64.min)
        while true {
            let rows = try tx.ledgerExamples(
                bundleID: bundle,
                environment: environment,
                outcome: outcome,
                to: to,
                after: after,
                limit: 500,
                in: ledger
            )
            for row in rows where !each(row) { return }
            guard let last = rows.last, rows.count == 500 else { return }
            after = (last.comparedAt, last.id)
        }
    }

    func bundleReport(
        app: GatewayConfig.App,
        environment env: AppStoreEnvironment,
        since: Int64,
        until: Int64,
        rule: ReadinessRule,
        examples: Int,
        in tx: any StoreTransaction
    ) throws -> BundleReport {
        let (shown, window) = try shownAndWindow(
            app.bundleID,
            env,
            since: since,
            until: until,
            rule: rule,
            examples: examples,
            ledger: .notifications,
            in: tx
        )
        let (verdict, reasons) = Self.verdict(window, rule: rule, compare: app.compare)
        let receipts = try receiptsSection(
            app: app,
            environment: env,
            since: since,
            until: until,
            rule: rule,
            examples: examples,
            in: tx
        )
        let events = try tx.eventCountsBySource(bundleID: app.bundleID, environment: env, since: since, until: until)
        let recorded = try tx.authorities().first { $0.bundleID == app.bundleID && $0.environment == env }?.authority
        let authority = recorded ?? app.authority(for: env)
        return BundleReport(
            bundleID: app.bundleID,
            environment: env.rawValue,
            authority: authority.rawValue,
            eventsBySource: Dictionary(events.map { ($0.key.rawValue, $0.value) }, uniquingKeysWith: +),
            pairs: shown.pairs,
            agreements: shown.agreements,
            disagreementsByField: shown.fields.mapValues {
                BundleReport.FieldDisagreements(count: $0.count, examples: $0.examples)
            },
            oneSided: BundleReport.OneSided(
                v1Only: shown.v1Only,
                v2Only: shown.v2Only,
                examples: shown.oneSidedExamples
            ),
            daily: shown.daily.keys.sorted().map {
                BundleReport.DayPoint(day: $0, pairs: shown.daily[$0]!.pairs, agreements: shown.daily[$0]!.agreements)
            },
            verdict: verdict,
            rule: rule.text,
            reasons: reasons,
            cutovers: try tx.cutovers(bundleID: app.bundleID, environment: env),
            recovered: try tx.recoveredEventCounts(since: since, until: until)
                .filter { $0.bundleID == app.bundleID && $0.environment == env }
                .map {
                    BundleReport.RecoveredDay(
                        day: TimeText.day($0.day),
                        mechanism: $0.mechanism.rawValue,
                        count: $0.count
                    )
                },
            appleSwitches: try tx.appleSwitchLog(bundleID: app.bundleID, environment: env, limit: 200).compactMap {
                entry in
                switch entry.step.rawValue {
                case "authority": BundleReport.AppleSwitchEnd(at: entry.at, outcome: "done", detail: entry.detail)
                case "revert": BundleReport.AppleSwitchEnd(at: entry.at, outcome: "reverted", detail: entry.detail)
                default: nil
                }
            },
            receipts: receipts,
            refundRequests: try refundRequestsSection(app: app, environment: env, since: since, until: until, in: tx),
            groups: try groupsSection(bundleID: app.bundleID, environment: env, since: since, until: until, in: tx)
        )
    }

    /// A bundle's group (multiseat) subscriptions: those whose period runs at the end of the window and their seats,
    /// and the window's seat events; nil when it has none.
    func groupsSection(
        bundleID: String,
        environment env: AppStoreEnvironment,
        since: Int64,
        until: Int64,
        in tx: any StoreTransaction
    ) throws -> BundleReport.GroupsSection? {
        let c = try tx.groupCounts(bundleID: bundleID, environment: env, now: until, since: since, until: until)
        guard c.groups > 0 || !c.events.isEmpty else { return nil }
        return BundleReport.GroupsSection(
            groups: c.groups,
            seats: c.seats,
            seatsAdded: c.events["seats_changed/increase"] ?? 0,
            seatsReduced: c.events["seats_changed/decrease"] ?? 0,
            seatRefunds: c.events["seats_refunded"] ?? 0,
            unclaims: c.events["seats_unclaimed"] ?? 0
        )
    }

    /// Apple's refund requests of a bundle and environment signed in [since, until); nil when the app does not
    /// answer them and none is stored.
    func refundRequestsSection(
        app: GatewayConfig.App,
        environment env: AppStoreEnvironment,
        since: Int64,
        until: Int64,
        in tx: any StoreTransaction
    ) throws -> BundleReport.RefundRequestsSection? {
        let rows = try tx.refundRequestCounts(since: since, until: until).filter {
            $0.bundleID == app.bundleID && $0.environment == env
        }
        guard app.consumption?.respond == true || !rows.isEmpty else { return nil }
        var section = BundleReport.RefundRequestsSection(
            requests: 0,
            answeredInTime: 0,
            byState: [:],
            bySource: [:],
            outcomes: [:]
        )
        for row in rows {
            section.requests += row.count
            if row.inTime == true { section.answeredInTime += row.count }
            section.byState[row.state.rawValue, default: 0] += row.count
            let sent = row.state == .sent
            if sent, let source = row.answerSource { section.bySource[source.rawValue, default: 0] += row.count }
            let key = sent ? (row.refundPreference ?? "none") : "not_sent"
            var outcome = section.outcomes[key] ?? .init()
            outcome.requests += row.count
            switch row.decision {
            case "refund": outcome.refunded += row.count
            case "refund_declined": outcome.declined += row.count
            default: outcome.undecided += row.count
            }
            section.outcomes[key] = outcome
        }
        return section
    }

    /// The receipt comparison of a bundle and environment: counts over [since, until) and the verdict over the rule's
    /// window, from the receipt ledger.
    func receiptsSection(
        app: GatewayConfig.App,
        environment env: AppStoreEnvironment,
        since: Int64,
        until: Int64,
        rule: ReadinessRule,
        examples: Int,
        in tx: any StoreTransaction
    ) throws -> BundleReport.ReceiptsSection {
        let (shown, window) = try shownAndWindow(
            app.bundleID,
            env,
            since: since,
            until: until,
            rule: rule,
            examples: examples,
            ledger: .receipts,
            in: tx
        )
        // The stored mode; the config's where the store has none yet (a store no `serve` has seeded).
        let mode =
            try tx.receiptModes().first { $0.bundleID == app.bundleID && $0.environment == env }?.mode
            ?? app.receipts(for: env)
        let (verdict, reasons) = Self.receiptVerdict(window, rule: rule)
        return BundleReport.ReceiptsSection(
            mode: mode.rawValue,
            pairs: shown.pairs,
            agreements: shown.agreements,
            disagreementsByField: shown.fields.mapValues {
                BundleReport.FieldDisagreements(count: $0.count, examples: $0.examples)
            },
            appleOnly: shown.v1Only,
            gatewayOnly: shown.v2Only,
            oneSidedExamples: shown.oneSidedExamples,
            daily: shown.daily.keys.sorted().map {
                BundleReport.DayPoint(day: $0, pairs: shown.daily[$0]!.pairs, agreements: shown.daily[$0]!.agreements)
            },
            verdict: verdict,
            reasons: reasons
        )
    }

    /// The receipt path's readiness: the comparison rule's thresholds over the receipt ledger.
    static func receiptVerdict(_ t: Tally, rule: ReadinessRule) -> (BundleReport.Verdict, [String]) {
        var reasons: [String] = []
        if t.pairs < rule.minimumPairs {
            reasons.append(
                "\(t.pairs) receipt answers compared in the window (shadow); the rule needs \(rule.minimumPairs)"
            )
        }
        if t.pairs > 0, Double(t.agreements) / Double(t.pairs) < rule.minimumAgreementRate {
            reasons.append(
                "receipt agreement \(CompareReport.percentText(t.agreements, of: t.pairs) ?? "—"); the rule needs "
                    + rule.thresholdText
            )
        }
        if !rule.allowOneSided, t.v1Only + t.v2Only > 0 {
            reasons.append("\(t.v1Only) subscriptions only Apple's answers listed and \(t.v2Only) only the gateway's")
        }
        return (reasons.isEmpty ? .ready : .notReady, reasons)
    }

    static func verdict(_ t: Tally, rule: ReadinessRule, compare: Bool) -> (BundleReport.Verdict, [String]) {
        var reasons: [String] = []
        if !compare { reasons.append("compare is off for this bundle: nothing is compared") }
        if t.pairs < rule.minimumPairs {
            reasons.append("\(t.pairs) pairs compared in the window; the rule needs \(rule.minimumPairs)")
        }
        if t.pairs > 0 {
            let rate = Double(t.agreements) / Double(t.pairs)
            if rate < rule.minimumAgreementRate {
                reasons.append(
                    "agreement \(CompareReport.percentText(t.agreements, of: t.pairs) ?? "—"); the rule needs \(rule.thresholdText)"
                )
            }
        }
        if !rule.allowOneSided, t.v1Only + t.v2Only > 0 {
            reasons.append("\(t.v1Only) subscriptions seen by V1 only and \(t.v2Only) by V2 only")
        }
        return (reasons.isEmpty ? .ready : .notReady, reasons)
    }

    // MARK: Cutover

    /// Flips the authority of `bundleID` in `environment` for events of notifications arriving from now on, stored so
    /// it survives restarts, and logged with who, why and the verdict at the time. Moving to V2 needs a `ready`
    /// verdict unless `force`; moving back to V1 (the undo) is always allowed. Refused when V2 would have no path
    /// (Apple may send V1 and the App Store Server API is not configured).
    @discardableResult
    public func cutover(
        bundleID: String,
        environment: String,
        to target: String,
        who: String,
        reason: String?,
        force: Bool,
        now: Int64
    ) throws
        -> CutoverRecord
    {
        guard let app = config.apps.first(where: { $0.bundleID == bundleID }) else {
            throw CutoverError(.unknownBundle, "\(bundleID) is not configured")
        }
        guard app.environments.contains(AppStoreEnvironment(rawValue: environment)) else {
            throw CutoverError(.unknownEnvironment, "\(bundleID) does not take \(environment) notifications")
        }
        guard let target = Generation(rawValue: target) else { throw CutoverError(.badTarget, "--to must be v1 or v2") }
        if target == .v2, app.acceptsV1, !v2PathAvailable {
            throw CutoverError(
                .noV2Path,
                "Apple may send V1 for \(bundleID): V2's path needs app_store_api to be configured"
            )
        }
        let report = try self.report(
            bundleID: bundleID,
            since: now - config.compareSettings.rule.windowMillis,
            until: now
        )
        let verdict = report.bundles.first { $0.environment == environment }
        let ready = verdict?.verdict == .ready
        if target == .v2, !ready, !force {
            throw CutoverError(
                .notReady,
                "the verdict for \(bundleID) (\(environment)) is not ready; --force overrides",
                reasons: verdict?.reasons ?? []
            )
        }
        return try move(
            AppSettings.authority,
            bundleID: bundleID,
            environment: AppStoreEnvironment(rawValue: environment),
            to: target,
            unchanged: "\(bundleID) (\(environment)) is already \(target.rawValue)",
            who: who,
            reason: reason,
            ready: ready,
            forced: target == .v2 && !ready,
            now: now
        )
    }

    /// Moves how verifyReceipt is answered for `bundleID` in `environment` (docs/operations.md, "Moving the receipt
    /// path"), stored so it survives restarts and logged in the cutover log (`origin: receipts`) with who, why and the
    /// receipt verdict at the time. Moving to `api` needs a `ready` receipt verdict unless `force`; `apple` (the undo)
    /// and `shadow` are always allowed. `shadow` and `api` need the App Store Server API.
    @discardableResult
    public func cutoverReceipts(
        bundleID: String,
        environment: String,
        to target: String,
        who: String,
        reason: String?,
        force: Bool,
        now: Int64
    ) throws -> CutoverRecord {
        guard let app = config.apps.first(where: { $0.bundleID == bundleID }) else {
            throw CutoverError(.unknownBundle, "\(bundleID) is not configured")
        }
        let env = AppStoreEnvironment(rawValue: environment)
        guard app.environments.contains(env) else {
            throw CutoverError(.unknownEnvironment, "\(bundleID) does not take \(environment) receipts")
        }
        guard let mode = ReceiptMode(rawValue: target) else {
            throw CutoverError(.badTarget, "--receipts must be apple, shadow or api")
        }
        if mode != .apple, !v2PathAvailable {
            throw CutoverError(
                .noV2Path,
                "\(mode.rawValue) answers from the App Store Server API: configure app_store_api"
            )
        }
        let section = try store.read { tx in
            try receiptsSection(
                app: app,
                environment: env,
                since: now - config.compareSettings.rule.windowMillis,
                until: now,
                rule: config.compareSettings.rule,
                examples: 0,
                in: tx
            )
        }
        let ready = section.verdict == .ready
        if mode == .api, !ready, !force {
            throw CutoverError(
                .notReady,
                "the receipt verdict for \(bundleID) (\(environment)) is not ready; --force overrides",
                reasons: section.reasons
            )
        }
        return try move(
            AppSettings.receiptMode,
            bundleID: bundleID,
            environment: env,
            to: mode,
            unchanged: "\(bundleID) (\(environment)) receipts are already \(mode.rawValue)",
            who: who,
            reason: reason,
            ready: ready,
            forced: mode == .api && !ready,
            now: now
        )
    }

    /// Moves `setting` of `bundleID` in `environment` to `target` in one transaction with the cutover log's record
    /// (with the verdict at the time): refused `unchanged` when it is there already.
    private func move<V>(
        _ setting: AppSetting<V>,
        bundleID: String,
        environment: AppStoreEnvironment,
        to target: V,
        unchanged: String,
        who: String,
        reason: String?,
        ready: Bool,
        forced: Bool,
        now: Int64
    ) throws -> CutoverRecord {
        try store.write { tx in
            let current = try tx.value(setting, bundleID: bundleID, environment: environment)
            guard current != target else { throw CutoverError(.unchanged, unchanged) }
            let record = CutoverRecord(
                at: now,
                bundleID: bundleID,
                environment: environment.rawValue,
                from: current.rawValue,
                to: target.rawValue,
                who: who,
                reason: reason,
                verdict: ready ? "ready" : "not_ready",
                forced: forced,
                origin: setting.logOrigin ?? "cutover"
            )
            try tx.move(setting, record, to: target)
            return record
        }
    }
}
