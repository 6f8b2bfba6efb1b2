internal import Canonical
internal import FoundationEssentials
internal import Postgres
internal import SQLite

/// A result row as both implementations read it: each typed row of the store is decoded from one in one place
/// (below), so the SQLite and the PostgreSQL statements that select the same columns give the same values.
protocol StoreRow {
    func string(_ column: String) -> String?
    func int64(_ column: String) -> Int64?
    func int(_ column: String) -> Int?
    /// SQLite: an integer other than 0; PostgreSQL: a `boolean`.
    func bool(_ column: String) -> Bool?
    func bytes(_ column: String) -> [UInt8]?
    /// A column of `kind` (written as ``StoreValue/compressible(_:)`` or by the journal's inserts) as a read finds it:
    /// SQLite's compressed values decompressed, PostgreSQL's as they are, either damaged when over the column's cap
    /// (``StoredColumn/maxPlainBytes``) or, compressed, when it does not decompress (``StoredBlob/read(_:as:dictionaries:)``).
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead
}

extension StoreRow {
    /// ``stored(_:as:)``'s plain bytes; nil when the value is missing or damaged.
    func compressible(_ column: String, as kind: StoredColumn) -> [UInt8]? { stored(column, as: kind).bytes }
}

extension SQLiteRow: StoreRow {
    func bytes(_ column: String) -> [UInt8]? { blob(column) }
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead {
        blob(column).map { StoredBlob.read($0, as: kind) } ?? .missing
    }
}

extension PostgresRow: StoreRow {
    /// A value over the cap is damaged. A statement that selects the column through ``Dialect/capped(_:as:_:)`` leaves
    /// such a value in the database: the column reads NULL, and its `<column>_bytes` tells it from a missing one.
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead {
        guard let value = bytes(column) else { return int64(column + "_bytes") == nil ? .missing : .damaged(.tooLarge) }
        return value.count <= kind.maxPlainBytes ? .value(value) : .damaged(.tooLarge)
    }
}

extension StoreRow {
    func generation(_ column: String) -> Generation? { string(column).flatMap(Generation.init(rawValue:)) }
    func environment(_ column: String) -> AppStoreEnvironment? {
        string(column).map(AppStoreEnvironment.init(rawValue:))
    }

    /// `(bundle_id, environment, original_transaction_id)`.
    var subscriptionKey: SubscriptionKey {
        SubscriptionKey(
            bundleID: string("bundle_id") ?? "",
            environment: environment("environment") ?? .production,
            originalTransactionID: string("original_transaction_id") ?? ""
        )
    }
}

/// Rows of `(state, n)`: how many rows a table holds per state.
func stateCounts<State: RawRepresentable & Hashable>(_ rows: [some StoreRow], as _: State.Type) -> [State: Int]
where State.RawValue == String {
    var counts: [State: Int] = [:]
    for row in rows {
        guard let state = row.string("state").flatMap(State.init(rawValue:)) else { continue }
        counts[state] = row.int("n") ?? 0
    }
    return counts
}

// MARK: Journal and events

extension JournalEntry {
    init(row: some StoreRow) {
        self.init(
            id: row.int64("id") ?? 0,
            key: row.string("notification_key") ?? "",
            version: row.generation("version") ?? .v1,
            receivedAt: row.int64("received_at") ?? 0,
            origin: row.string("origin").flatMap(JournalOrigin.init(rawValue:)) ?? .live,
            bundleID: row.string("bundle_id"),
            environment: row.environment("environment"),
            secretName: row.string("secret_name"),
            authority: row.generation("authority"),
            body: row.compressible("body", as: .body)
        )
    }
}

extension StoredEvent {
    /// nil when the stored JSON does not decode.
    init?(row: some StoreRow) {
        guard case .event(let event) = Self.read(row) else { return nil }
        self = event
    }

    /// The row's event, or how its stored JSON is damaged.
    static func read(_ row: some StoreRow) -> Read {
        let json: [UInt8]
        switch row.stored("json", as: .event) {
        case .value(let bytes): json = bytes
        case .damaged(let damage): return .damaged(damage)
        case .missing: return .damaged(.unreadable)
        }
        guard let event = try? JSONDecoder().decode(CanonicalEvent.self, from: Data(json)) else {
            return .damaged(.unreadable)
        }
        return .event(
            StoredEvent(
                event: event,
                json: json,
                path: row.generation("path") ?? .v1,
                authoritative: row.bool("authoritative") ?? false,
                journalID: row.int64("journal_id"),
                createdAt: row.int64("created_at") ?? 0
            )
        )
    }

    enum Read {
        case event(StoredEvent)
        case damaged(StoredValueDamage)
    }
}

extension SubscriptionHistory.Row {
    /// A row of `SQL.subscriptionHistoryPage`.
    init(row: some StoreRow) {
        let (event, damage): (StoredEvent?, StoredValueDamage?) =
            switch StoredEvent.read(row) {
            case .event(let e): (e, nil)
            case .damaged(let d): (nil, d)
            }
        self.init(
            id: row.string("id") ?? "",
            path: row.generation("path") ?? .v1,
            authoritative: row.bool("authoritative") ?? false,
            createdAt: row.int64("created_at") ?? 0,
            event: event,
            damage: damage
        )
    }
}

extension StoredSubscriptionState {
    /// A `subscription_state` row with the bundle's current `authority`.
    init(row: some StoreRow) {
        let path = row.generation("path") ?? .v1
        let json = row.stored("json", as: .state)
        var damage: StoredValueDamage?
        if case .damaged(let d) = json { damage = d }
        self.init(
            path: path,
            environment: row.environment("environment") ?? .production,
            bundleID: row.string("bundle_id"),
            eventID: row.string("event_id") ?? "",
            json: json.bytes ?? [],
            authoritative: row.generation("authority") == path,
            updatedAt: row.int64("updated_at") ?? 0,
            damage: damage
        )
    }
}

// MARK: Authority

extension AuthorityEntry {
    init(row: some StoreRow) {
        self.init(
            bundleID: row.string("bundle_id") ?? "",
            environment: row.environment("environment") ?? .production,
            authority: row.generation("authority") ?? .v1,
            origin: row.string("origin").flatMap(AuthorityOrigin.init(rawValue:)) ?? .config
        )
    }
}

extension CutoverRecord {
    init(row: some StoreRow, bundleID: String, environment: AppStoreEnvironment) {
        self.init(
            at: row.int64("at") ?? 0,
            bundleID: bundleID,
            environment: environment.rawValue,
            from: row.string("from_authority") ?? "",
            to: row.string("to_authority") ?? "",
            who: row.string("who") ?? "",
            reason: row.string("reason"),
            verdict: row.string("verdict") ?? "",
            forced: row.bool("forced") ?? false,
            origin: row.string("origin") ?? "cutover"
        )
    }
}

extension EventSource {
    /// Every source of the events the gateway stores.
    static let written: [EventSource] = [.v1, .v2, .v2API, .v1Receipt]
}

extension AuthorityActivity {
    /// From a row of `SQL.authorityActivity`.
    init?(row: some StoreRow) {
        guard let bundle = row.string("bundle_id"), let env = row.environment("environment"),
            let authority = row.generation("authority")
        else { return nil }
        var newest: [Generation: Int64] = [:]
        for (i, source) in EventSource.written.enumerated() {
            guard let at = row.int64("last_\(i)") else { continue }
            newest[source.generation] = max(newest[source.generation] ?? at, at)
        }
        self.init(
            bundleID: bundle,
            environment: env,
            authority: authority,
            lastAuthoritative: newest[authority],
            lastOther: newest[authority.other]
        )
    }
}

// MARK: Quarantine

extension QuarantineRecord {
    init(row: some StoreRow) {
        self.init(
            lane: QuarantineRecord.Lane(rawValue: row.string("lane") ?? "") ?? .untrusted,
            receivedAt: row.int64("received_at") ?? 0,
            version: row.generation("version"),
            code: row.string("code") ?? "",
            message: row.string("message") ?? "",
            bundleID: row.string("bundle_id"),
            environment: row.string("environment"),
            passwordFingerprint: row.string("password_fingerprint"),
            body: row.bytes("body") ?? []
        )
        id = row.int64("id") ?? 0
        replayAttempts = row.int("replay_attempts") ?? 0
        replayStartedAt = row.int64("replay_started_at")
        lastReplayAt = row.int64("last_replay_at")
        lastReplayCode = row.string("last_replay_code")
    }
}

/// Rows of `(lane, rows, bytes)` from quarantine_usage.
func quarantineUsage(_ rows: [some StoreRow]) -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
    var usage: [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] = [:]
    for row in rows {
        guard let lane = row.string("lane").flatMap(QuarantineRecord.Lane.init(rawValue:)) else { continue }
        usage[lane] = (row.int64("rows") ?? 0, row.int64("bytes") ?? 0)
    }
    return usage
}

// MARK: Outbox

extension DeliveryJob {
    /// The outbox row, and its payload's columns (``DeliveryPayload/init(row:)``) when `payload` asked for them.
    init?(row: some StoreRow, payload: PayloadRead = .none) {
        guard let id = row.int64("id"), let name = row.string("downstream") else { return nil }
        self.init(
            id: id,
            downstream: name,
            attempts: row.int("attempts") ?? 0,
            eventID: row.string("event_id"),
            journalID: row.int64("journal_id"),
            createdAt: row.int64("created_at") ?? 0,
            payload: payload.wantsEvent ? DeliveryPayload(row: row) : nil
        )
    }
}

/// The column `state` of a delivery's payload in both stores' statements (the same SQL in both dialects): the
/// subscription's state on the event's authoritative path, found by the state's whole primary key (`path = (SELECT
/// authority …)`: joined to `authority` instead, PostgreSQL used only the key's last two columns and read the whole
/// key per delivery). The event is `e`.
let authoritativeStateColumn = """
    (SELECT s.json FROM subscription_state s
     WHERE s.path = (SELECT a.authority FROM authority a WHERE a.bundle_id = e.bundle_id AND a.environment = e.environment)
       AND s.environment = e.environment AND s.original_transaction_id = e.original_transaction_id) AS state
    """

extension DeliveryPayload {
    /// `(json, authoritative, body, state)`: the event, its notification's body and the authoritative path's state.
    init?(row: some StoreRow) {
        guard let json = row.compressible("json", as: .event) else { return nil }
        self.init(
            eventJSON: json,
            authoritative: row.bool("authoritative") ?? false,
            stateJSON: row.compressible("state", as: .state),
            rawBody: row.compressible("body", as: .body)
        )
    }
}

extension Delivery {
    init(row: some StoreRow) {
        self.init(
            id: row.int64("id") ?? 0,
            downstream: row.string("downstream") ?? "",
            eventID: row.string("event_id"),
            journalID: row.int64("journal_id"),
            state: row.string("state").flatMap(DeliveryState.init(rawValue:)) ?? .pending,
            attempts: row.int("attempts") ?? 0,
            nextAttemptAt: row.int64("next_attempt_at") ?? 0,
            createdAt: row.int64("created_at") ?? 0,
            deliveredAt: row.int64("delivered_at"),
            lastStatus: row.int("last_status"),
            lastError: row.string("last_error")
        )
    }
}

extension PendingDeliveries {
    init?(row: some StoreRow) {
        guard let name = row.string("downstream") else { return nil }
        self.init(downstream: name, count: row.int("n") ?? 0, oldestCreatedAt: row.int64("oldest") ?? 0)
    }
}

// MARK: verifyReceipt jobs

extension ReceiptJob {
    /// A receipt_jobs row joined with its journal row; `time`: the claim's, for a row without `received_at`.
    init?(row: some StoreRow, time: Int64) {
        guard let id = row.int64("journal_id") else { return nil }
        self.init(
            journalID: id,
            attempts: row.int("attempts") ?? 0,
            body: row.compressible("body", as: .body) ?? [],
            bundleID: row.string("bundle_id") ?? "",
            secretName: row.string("secret_name") ?? "",
            receivedAt: row.int64("received_at") ?? time,
            key: row.string("notification_key") ?? "",
            authority: row.generation("authority"),
            version: row.generation("version") ?? .v1,
            environment: row.environment("environment")
        )
    }
}

extension ReceiptJobStatus {
    init(row: some StoreRow) {
        self.init(
            journalID: row.int64("journal_id") ?? 0,
            state: row.string("state").flatMap(JobState.init(rawValue:)) ?? .pending,
            attempts: row.int("attempts") ?? 0,
            nextAttemptAt: row.int64("next_attempt_at") ?? 0,
            lastError: row.string("last_error"),
            appleStatus: row.int("apple_status")
        )
    }
}

// MARK: Comparison

extension StoredReceipt {
    init?(row: some StoreRow) {
        guard let receipt = row.string("receipt"), let secretName = row.string("secret_name") else { return nil }
        self.init(receipt: receipt, secretName: secretName, updatedAt: row.int64("updated_at") ?? 0)
    }
}

extension FetchJob {
    init?(row: some StoreRow) {
        guard let id = row.int64("id") else { return nil }
        self.init(
            id: id,
            subscription: row.subscriptionKey,
            fetch: row.generation("fetch") ?? .v1,
            v1EventID: row.string("v1_event_id"),
            authority: row.generation("authority"),
            compare: row.bool("compare") ?? false,
            attempts: row.int("attempts") ?? 0,
            createdAt: row.int64("created_at") ?? 0,
            confirms: row.int("confirms") ?? 0,
            state: row.string("state").flatMap(JobState.init(rawValue:)) ?? .pending,
            nextAttemptAt: row.int64("next_attempt_at") ?? 0,
            lastError: row.string("last_error")
        )
    }
}

extension LedgerEntry {
    init?(row: some StoreRow) {
        guard let outcome = row.string("outcome").flatMap(CompareOutcome.init(rawValue:)) else { return nil }
        self.init(
            subscription: row.subscriptionKey,
            comparedAt: row.int64("compared_at") ?? 0,
            outcome: outcome,
            fields: (row.string("fields") ?? "").split(separator: ",").map(String.init),
            v1: SnapshotJSON.decode(row.compressible("v1_json", as: .snapshot)),
            v2: SnapshotJSON.decode(row.compressible("v2_json", as: .snapshot))
        )
    }
}

/// Outcome snapshots are stored as sorted-key JSON.
enum SnapshotJSON {
    static func encode(_ s: OutcomeSnapshot) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(s)).map(Array.init) ?? []
    }

    static func decode(_ bytes: [UInt8]?) -> OutcomeSnapshot? {
        guard let bytes else { return nil }
        return try? JSONDecoder().decode(OutcomeSnapshot.self, from: Data(bytes))
    }
}

// MARK: Recovery runs

extension ReconcileRun {
    /// nil for a kind this build does not know (a newer gateway's row).
    init?(row: some StoreRow) {
        guard let kind = row.string("kind").flatMap(ReconcileKind.init(rawValue:)) else { return nil }
        self.init(
            id: row.int64("id") ?? 0,
            key: ReconcileRunKey(
                bundleID: row.string("bundle_id") ?? "",
                environment: row.environment("environment") ?? .production,
                kind: kind
            ),
            nextRunAt: row.int64("next_run_at") ?? 0,
            watermark: row.int64("watermark"),
            attempts: row.int("attempts") ?? 0,
            lastRunAt: row.int64("last_run_at"),
            lastError: row.string("last_error"),
            checked: row.int64("checked") ?? 0,
            recovered: row.int64("recovered") ?? 0,
            calls: row.int64("calls") ?? 0
        )
    }
}

extension ReconcileCandidate {
    init(row: some StoreRow) {
        self.init(
            originalTransactionID: row.string("original_transaction_id") ?? "",
            eventID: row.string("event_id") ?? "",
            expiresDate: row.int64("expires_date")
        )
    }
}

extension RecoveredCount {
    init(row: some StoreRow) {
        self.init(
            bundleID: row.string("bundle_id") ?? "",
            environment: row.environment("environment") ?? .production,
            mechanism: RecoveryMechanism(rawValue: row.string("recovered_by") ?? ""),
            day: row.int64("day") ?? 0,
            count: row.int("n") ?? 0
        )
    }
}

/// The columns a recovery run is read with.
let reconcileRunColumns =
    "id, bundle_id, environment, kind, next_run_at, watermark, attempts, last_run_at, last_error, checked, recovered, calls"

// MARK: The switch

extension AppleSwitchState {
    init?(row: some StoreRow) {
        guard let bundle = row.string("bundle_id"), let env = row.environment("environment") else { return nil }
        self.init(bundleID: bundle, environment: env)
        appID = row.string("app_id")
        appleVersion = row.generation("apple_version")
        appleURL = row.string("apple_url")
        readAt = row.int64("read_at")
        migrationID = row.string("migration_id")
        target = row.generation("target")
        previous = row.generation("previous")
        step = row.string("step").map(AppleSwitchStep.init(rawValue:))
        probeToken = row.string("probe_token")
        who = row.string("who")
        reason = row.string("reason")
        forced = row.bool("forced") ?? false
        startedAt = row.int64("started_at")
        updatedAt = row.int64("updated_at")
        error = row.string("error")
    }
}

extension AppleSwitchLogEntry {
    init?(row: some StoreRow) {
        guard let bundle = row.string("bundle_id"), let env = row.environment("environment"),
            let id = row.string("migration_id"),
            let step = row.string("step")
        else { return nil }
        self.init(
            at: row.int64("at") ?? 0,
            bundleID: bundle,
            environment: env,
            migrationID: id,
            step: AppleSwitchStep(rawValue: step),
            outcome: row.string("outcome") ?? "",
            detail: row.string("detail")
        )
    }
}
