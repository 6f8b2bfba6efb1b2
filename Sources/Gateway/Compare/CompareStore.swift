internal import SQLite
public import Canonical
internal import FoundationEssentials
public import V2Adapter

/// What the V2 path says about a subscription right now: Get All Subscription Statuses, verified.
public struct V2PathStatus: Sendable {
    public var snapshot: OutcomeSnapshot
    public var transaction: TransactionPayload
    public var renewal: RenewalInfoPayload?
    public init(snapshot: OutcomeSnapshot, transaction: TransactionPayload, renewal: RenewalInfoPayload?) {
        (self.snapshot, self.transaction, self.renewal) = (snapshot, transaction, renewal)
    }
}

/// Why a fetch of one path's view failed; `retryable` failures are tried again later.
public struct PathFetchError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var retryable: Bool
    public init(code: String, message: String, retryable: Bool) { (self.code, self.message, self.retryable) = (code, message, retryable) }
    public var description: String { "\(code): \(message)" }
}

/// The V2 path's view of a subscription (the App Store Server API in the service; a fake in tests).
public protocol V2PathSource: Sendable {
    /// nil when Apple's V2 path does not know the subscription.
    func status(bundleID: String, environment: AppStoreEnvironment, originalTransactionID: String, observedAt: Int64) async throws(PathFetchError)
        -> V2PathStatus?
}

/// The SQL of the comparison: snapshots, stored receipts, fetch jobs, the ledger and the cutover log.
public enum CompareStore {
    static func encode(_ s: OutcomeSnapshot) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(s)).map(Array.init) ?? []
    }

    static func decode(_ bytes: [UInt8]?) -> OutcomeSnapshot? {
        guard let bytes else { return nil }
        return try? JSONDecoder().decode(OutcomeSnapshot.self, from: Data(bytes))
    }

    /// Keeps the newest snapshot per (subscription, path).
    static func putSnapshot(_ s: OutcomeSnapshot, path: String, in c: SQLiteConnection) throws {
        guard let bundle = s.bundleID, let env = s.environment, !s.originalTransactionID.isEmpty else { return }
        try c.run(
            """
            INSERT INTO snapshots (bundle_id, environment, original_transaction_id, path, source, observed_at, json)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(bundle_id, environment, original_transaction_id, path) DO UPDATE SET
                source = excluded.source, observed_at = excluded.observed_at, json = excluded.json
            WHERE excluded.observed_at >= snapshots.observed_at
            """,
            [.text(bundle), .text(env.rawValue), .text(s.originalTransactionID), .text(path), .text(s.source.rawValue),
             .integer(s.observedAt), .blob(encode(s))])
    }

    static func snapshot(bundleID: String, environment: String, otid: String, path: String, in c: SQLiteConnection) throws -> OutcomeSnapshot? {
        decode(try c.queryOne(
            "SELECT json FROM snapshots WHERE bundle_id = ? AND environment = ? AND original_transaction_id = ? AND path = ?",
            [.text(bundleID), .text(environment), .text(otid), .text(path)])?.blob("json"))
    }

    /// The receipt kept for a subscription, as a V1 fetch reads it: what it asks verifyReceipt about.
    struct StoredReceipt: Equatable, Sendable {
        var receipt: String
        var secretName: String
        var updatedAt: Int64
    }

    /// The receipt kept for a subscription; nil while no V1 notification for it was verified.
    static func receipt(bundleID: String, environment: String, otid: String, in c: SQLiteConnection) throws -> StoredReceipt? {
        guard let row = try c.queryOne(
            "SELECT receipt, secret_name, updated_at FROM v1_receipts WHERE bundle_id = ? AND environment = ? AND original_transaction_id = ?",
            [.text(bundleID), .text(environment), .text(otid)]),
            let receipt = row.string("receipt"), let secretName = row.string("secret_name")
        else { return nil }
        return StoredReceipt(receipt: receipt, secretName: secretName, updatedAt: row.int64("updated_at") ?? 0)
    }

    /// Keeps the latest receipt of a subscription and wakes the V1 fetches of it that are pending: a comparison that
    /// was waiting for V1 to know this subscription can run now, not when its retry comes due. Both happen in one
    /// place so a receipt is never stored without the wake-up. A fetch in flight at this moment is pending too, and
    /// its own outcome would overwrite the wake-up: `CompareWorker.notSeen` therefore looks at the receipt again in
    /// the transaction that settles it.
    static func putReceipt(bundleID: String, environment: String, otid: String, receipt: String, secretName: String, now: Int64,
                           in c: SQLiteConnection) throws {
        try c.run(
            """
            INSERT INTO v1_receipts (bundle_id, environment, original_transaction_id, receipt, secret_name, updated_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(bundle_id, environment, original_transaction_id) DO UPDATE SET
                receipt = excluded.receipt, secret_name = excluded.secret_name, updated_at = excluded.updated_at
            """,
            [.text(bundleID), .text(environment), .text(otid), .text(receipt), .text(secretName), .integer(now)])
        try c.run(
            """
            UPDATE compare_jobs SET next_attempt_at = ? WHERE state = 'pending' AND fetch = 'v1' AND bundle_id = ? AND environment = ?
              AND original_transaction_id = ? AND next_attempt_at > ?
            """, [.integer(now), .text(bundleID), .text(environment), .text(otid), .integer(now)])
    }

    /// Queues at `time` a fetch of one path's view, due then or at `due`. A plain comparison fetch is not queued twice
    /// while one is pending; `confirms` counts the refetches made to confirm a disagreement.
    static func enqueue(bundleID: String, environment: String, otid: String, fetch: String, v1EventID: String?, authority: String?,
                        compare: Bool, confirms: Int = 0, at time: Int64, due: Int64? = nil, in c: SQLiteConnection) throws {
        if v1EventID == nil {
            let pending = try c.queryOne(
                """
                SELECT id FROM compare_jobs WHERE state = 'pending' AND bundle_id = ? AND environment = ? AND original_transaction_id = ?
                  AND fetch = ? AND v1_event_id IS NULL
                """, [.text(bundleID), .text(environment), .text(otid), .text(fetch)])
            if pending != nil { return }
        }
        try c.run(
            """
            INSERT INTO compare_jobs (bundle_id, environment, original_transaction_id, fetch, v1_event_id, authority, compare, confirms,
                                      next_attempt_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(bundleID), .text(environment), .text(otid), .text(fetch), SQLiteValue(v1EventID), SQLiteValue(authority),
             .integer(compare ? 1 : 0), .integer(Int64(confirms)), .integer(due ?? time), .integer(time), .integer(time)])
    }

    /// Records one comparison (or a one-sided observation) in the ledger.
    static func record(bundleID: String, environment: String, otid: String, outcome: String, fields: [String], v1: OutcomeSnapshot?,
                       v2: OutcomeSnapshot?, at time: Int64, in c: SQLiteConnection) throws {
        try c.run(
            """
            INSERT INTO compare_ledger (bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(bundleID), .text(environment), .text(otid), .integer(time), .text(outcome),
             fields.isEmpty ? .null : .text(fields.joined(separator: ",")), v1.map { .blob(encode($0)) } ?? .null,
             v2.map { .blob(encode($0)) } ?? .null])
    }

    /// Refetches a disagreement survives before the ledger records it: the older side once, then the other.
    static let maxConfirmations = 2

    /// What `compareIfReady` did.
    enum Comparison: String {
        /// A path has no snapshot yet.
        case waiting
        /// The snapshots were observed too far apart: the older side is fetched again first.
        case stale
        /// They disagree but were observed at different times: the older side is fetched again (after `confirmDelay`)
        /// before anything is recorded, since the subscription may have changed between the two observations.
        case unconfirmed
        case agree, disagree
    }

    /// Compares the stored snapshots of both paths when both exist and were observed within `tolerance`; when one is
    /// older, queues a fresh fetch of it instead. A disagreement between observations made at different times is
    /// recorded only once it has survived `maxConfirmations` refetches of the then older side (`confirms` is how many
    /// led here): two observations that straddle a renewal, a billing retry or an expiry are not a disagreement.
    @discardableResult
    static func compareIfReady(bundleID: String, environment: String, otid: String, tolerance: Int64, confirms: Int,
                               confirmDelay: Int64, at time: Int64, in c: SQLiteConnection) throws -> Comparison {
        guard let v1 = try snapshot(bundleID: bundleID, environment: environment, otid: otid, path: "v1", in: c),
              let v2 = try snapshot(bundleID: bundleID, environment: environment, otid: otid, path: "v2", in: c)
        else { return .waiting }
        let older = v1.observedAt < v2.observedAt ? "v1" : "v2"
        if v1.observedAt.clampedSubtracting(v2.observedAt).magnitude > UInt64(max(0, tolerance)) {
            try enqueue(bundleID: bundleID, environment: environment, otid: otid, fetch: older, v1EventID: nil, authority: nil,
                        compare: true, confirms: confirms, at: time, in: c)
            return .stale
        }
        let fields = OutcomeComparison.disagreements(v1: v1, v2: v2)
        if !fields.isEmpty, confirms < maxConfirmations, v1.observedAt != v2.observedAt {
            try enqueue(bundleID: bundleID, environment: environment, otid: otid, fetch: older, v1EventID: nil, authority: nil,
                        compare: true, confirms: confirms + 1, at: time, due: time.clampedAdding(confirmDelay), in: c)
            return .unconfirmed
        }
        let outcome: Comparison = fields.isEmpty ? .agree : .disagree
        try record(bundleID: bundleID, environment: environment, otid: otid, outcome: outcome.rawValue, fields: fields, v1: v1, v2: v2,
                   at: time, in: c)
        return outcome
    }
}
