internal import Canonical
internal import FoundationEssentials
internal import Postgres
internal import Rows
internal import SQLite

/// A result row as both implementations read it: the one row protocol (`ResultRow`, docs/architecture.md, "Rows")
/// and the store's compressed columns. Each typed row of the store is decoded from one in one place (below), so the
/// SQLite and the PostgreSQL statements that select the same columns give the same values. A column that is NOT NULL
/// in the schema (``StoreSchema``) is read with the strict `required…` accessors, a nullable one with `nullable…`:
/// a column the statement does not select, NULL where the schema forbids it, or a value of another type throws
/// `RowError` naming the column, instead of decoding as "" or 0.
protocol StoreRow: ResultRow {
    /// A column of `kind` (written as ``StoreValue/compressible(_:)`` or by the journal's inserts) as a read finds it:
    /// the compressed values decompressed (both stores write them so, ``StoredBlob``), either damaged when over the column's cap
    /// (``StoredColumn/maxPlainBytes``) or, compressed, when it does not decompress (``StoredBlob/read(_:as:dictionaries:)``).
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead
}

extension StoreRow {
    /// ``stored(_:as:)``, and `RowError` when the row has no such column (NULL reads as ``StoredRead/missing``).
    func storedColumn(
        _ column: String,
        as kind: StoredColumn,
        file: String = #fileID,
        line: Int = #line
    ) throws
        -> StoredRead
    {
        try requireColumn(column, file: file, line: line)
        return stored(column, as: kind)
    }

    /// ``stored(_:as:)``'s plain bytes; nil when the value is NULL or damaged, `RowError` when the row has no such
    /// column.
    func compressible(
        _ column: String,
        as kind: StoredColumn,
        file: String = #fileID,
        line: Int = #line
    ) throws
        -> [UInt8]?
    {
        try storedColumn(column, as: kind, file: file, line: line).bytes
    }
}

extension SQLiteRow: StoreRow {
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead {
        blob(column).map { StoredBlob.read($0, as: kind) } ?? .missing
    }
}

extension PostgresRow: StoreRow {
    /// As ``PostgresStoreRow`` reads it, without dictionaries: a value that names one reads as damaged.
    func stored(_ column: String, as kind: StoredColumn) -> StoredRead {
        stored(column, as: kind, dictionaries: [:])
    }
}

extension StoreRow {
    /// A generation column that is NOT NULL (`v1` or `v2`).
    func generation(_ column: String, file: String = #fileID, line: Int = #line) throws -> Generation {
        try required(column, as: Generation.self, file: file, line: line)
    }

    /// A nullable generation column.
    func nullableGeneration(_ column: String, file: String = #fileID, line: Int = #line) throws -> Generation? {
        try nullable(column, as: Generation.self, file: file, line: line)
    }

    /// An environment column that is NOT NULL.
    func environment(_ column: String, file: String = #fileID, line: Int = #line) throws -> AppStoreEnvironment {
        AppStoreEnvironment(rawValue: try requiredString(column, file: file, line: line))
    }

    /// A nullable environment column.
    func nullableEnvironment(
        _ column: String,
        file: String = #fileID,
        line: Int = #line
    ) throws
        -> AppStoreEnvironment?
    {
        try nullableString(column, file: file, line: line).map(AppStoreEnvironment.init(rawValue:))
    }

    /// `(bundle_id, environment, original_transaction_id)`, each NOT NULL where a subscription key is stored.
    func subscriptionKey() throws -> SubscriptionKey {
        SubscriptionKey(
            bundleID: try requiredString("bundle_id"),
            environment: try environment("environment"),
            originalTransactionID: try requiredString("original_transaction_id")
        )
    }
}

/// Rows of `(state, n)`: how many rows a table holds per state (a state this build does not know is left out).
func stateCounts<State: RawRepresentable & Hashable>(_ rows: [some StoreRow], as _: State.Type) throws -> [State: Int]
where State.RawValue == String {
    var counts: [State: Int] = [:]
    for row in rows {
        guard let state = State(rawValue: try row.requiredString("state")) else { continue }
        counts[state] = try row.requiredInt("n")
    }
    return counts
}

// MARK: Journal and events

extension JournalEntry {
    init(row: some StoreRow) throws {
        self.init(
            id: try row.requiredInt64("id"),
            key: try row.requiredString("notification_key"),
            version: try row.generation("version"),
            receivedAt: try row.requiredInt64("received_at"),
            origin: try row.required("origin", as: JournalOrigin.self),
            bundleID: try row.nullableString("bundle_id"),
            environment: try row.nullableEnvironment("environment"),
            secretName: try row.nullableString("secret_name"),
            authority: try row.nullableGeneration("authority"),
            body: try row.compressible("body", as: .body)
        )
    }
}

extension StoredEvent {
    /// nil when the stored JSON does not decode.
    init?(row: some StoreRow) throws {
        guard case .event(let event) = try Self.read(row) else { return nil }
        self = event
    }

    /// The row's event, or how its stored JSON is damaged.
    static func read(_ row: some StoreRow) throws -> Read {
        let json: [UInt8]
        switch try row.storedColumn("json", as: .event) {
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
                path: try row.generation("path"),
                authoritative: try row.requiredBool("authoritative"),
                journalID: try row.nullableInt64("journal_id"),
                createdAt: try row.requiredInt64("created_at")
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
    init(row: some StoreRow) throws {
        let (event, damage): (StoredEvent?, StoredValueDamage?) =
            switch try StoredEvent.read(row) {
            case .event(let e): (e, nil)
            case .damaged(let d): (nil, d)
            }
        self.init(
            id: try row.requiredString("id"),
            path: try row.generation("path"),
            authoritative: try row.requiredBool("authoritative"),
            createdAt: try row.requiredInt64("created_at"),
            event: event,
            damage: damage
        )
    }
}

extension StoredSubscriptionState {
    /// A `subscription_state` row with the bundle's current `authority` (NULL when the bundle has none).
    init(row: some StoreRow) throws {
        let path = try row.generation("path")
        let json = try row.storedColumn("json", as: .state)
        var damage: StoredValueDamage?
        if case .damaged(let d) = json { damage = d }
        self.init(
            path: path,
            environment: try row.environment("environment"),
            bundleID: try row.nullableString("bundle_id"),
            eventID: try row.requiredString("event_id"),
            json: json.bytes ?? [],
            authoritative: try row.nullableGeneration("authority") == path,
            updatedAt: try row.requiredInt64("updated_at"),
            damage: damage
        )
    }
}

// MARK: Authority

extension CutoverRecord {
    init(row: some StoreRow, bundleID: String, environment: AppStoreEnvironment) throws {
        self.init(
            at: try row.requiredInt64("at"),
            bundleID: bundleID,
            environment: environment.rawValue,
            from: try row.requiredString("from_authority"),
            to: try row.requiredString("to_authority"),
            who: try row.requiredString("who"),
            reason: try row.nullableString("reason"),
            verdict: try row.requiredString("verdict"),
            forced: try row.requiredBool("forced"),
            origin: try row.requiredString("origin")
        )
    }
}

extension EventSource {
    /// Every source of the events the gateway stores.
    static let written: [EventSource] = [.v1, .v2, .v2API, .v1Receipt]
}

extension AuthorityActivity {
    /// From a row of `SQL.authorityActivity`.
    init(row: some StoreRow) throws {
        let authority = try row.generation("authority")
        var newest: [Generation: Int64] = [:]
        for (i, source) in EventSource.written.enumerated() {
            guard let at = try row.nullableInt64("last_\(i)") else { continue }
            newest[source.generation] = max(newest[source.generation] ?? at, at)
        }
        self.init(
            bundleID: try row.requiredString("bundle_id"),
            environment: try row.environment("environment"),
            authority: authority,
            lastAuthoritative: newest[authority],
            lastOther: newest[authority.other]
        )
    }
}

// MARK: Quarantine

extension QuarantineRecord {
    init(row: some StoreRow) throws {
        self.init(
            lane: try row.required("lane", as: QuarantineRecord.Lane.self),
            receivedAt: try row.requiredInt64("received_at"),
            version: try row.nullableGeneration("version"),
            code: try row.requiredString("code"),
            message: try row.nullableString("message") ?? "",
            bundleID: try row.nullableString("bundle_id"),
            environment: try row.nullableString("environment"),
            passwordFingerprint: try row.nullableString("password_fingerprint"),
            body: try row.nullableBytes("body") ?? []
        )
        id = try row.requiredInt64("id")
        replayAttempts = try row.requiredInt("replay_attempts")
        replayStartedAt = try row.nullableInt64("replay_started_at")
        lastReplayAt = try row.nullableInt64("last_replay_at")
        lastReplayCode = try row.nullableString("last_replay_code")
    }
}

/// Rows of `(lane, rows, bytes)` from quarantine_usage (a lane this build does not know is left out).
func quarantineUsage(_ rows: [some StoreRow]) throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
    var usage: [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] = [:]
    for row in rows {
        guard let lane = QuarantineRecord.Lane(rawValue: try row.requiredString("lane")) else { continue }
        usage[lane] = (try row.requiredInt64("rows"), try row.requiredInt64("bytes"))
    }
    return usage
}

// MARK: Outbox

extension DeliveryJob {
    /// The outbox row, and its payload's columns (``DeliveryPayload/init(row:)``) when `payload` asked for them.
    init(row: some StoreRow, payload: PayloadRead = .none) throws {
        self.init(
            id: try row.requiredInt64("id"),
            downstream: try row.requiredString("downstream"),
            attempts: try row.requiredInt("attempts"),
            eventID: try row.nullableString("event_id"),
            journalID: try row.nullableInt64("journal_id"),
            createdAt: try row.requiredInt64("created_at"),
            payload: payload.wantsEvent ? try DeliveryPayload(row: row) : nil
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
    /// `(json, authoritative, body, state)`: the event, its notification's body and the authoritative path's state;
    /// nil when the event's JSON is damaged.
    init?(row: some StoreRow) throws {
        guard let json = try row.compressible("json", as: .event) else { return nil }
        self.init(
            eventJSON: json,
            authoritative: try row.requiredBool("authoritative"),
            stateJSON: try row.compressible("state", as: .state),
            rawBody: try row.compressible("body", as: .body)
        )
    }
}

extension Delivery {
    init(row: some StoreRow) throws {
        self.init(
            id: try row.requiredInt64("id"),
            downstream: try row.requiredString("downstream"),
            eventID: try row.nullableString("event_id"),
            journalID: try row.nullableInt64("journal_id"),
            state: try row.required("state", as: DeliveryState.self),
            attempts: try row.requiredInt("attempts"),
            nextAttemptAt: try row.requiredInt64("next_attempt_at"),
            createdAt: try row.requiredInt64("created_at"),
            deliveredAt: try row.nullableInt64("delivered_at"),
            lastStatus: try row.nullableInt("last_status"),
            lastError: try row.nullableString("last_error")
        )
    }
}

extension LoggedAttempt {
    /// The `a_`-named columns of a logged attempt; nil when the row has none (a delivery not yet attempted).
    init?(row: some StoreRow) throws {
        guard let attempt = try row.nullableInt("a_attempt") else { return nil }
        self.init(
            attempt: attempt,
            startedAt: try row.requiredInt64("a_started_at"),
            latencyMillis: try row.requiredInt64("a_latency_ms"),
            status: try row.nullableInt("a_status"),
            error: try row.nullableString("a_error"),
            responseHead: try row.nullableBytes("a_response_head") ?? [],
            replay: try row.requiredBool("a_replay")
        )
    }
}

extension PendingDeliveries {
    /// A row of `(downstream, n, oldest)`: one downstream's pending deliveries.
    init(row: some StoreRow) throws {
        self.init(
            downstream: try row.requiredString("downstream"),
            count: try row.requiredInt("n"),
            oldestCreatedAt: try row.requiredInt64("oldest")
        )
    }
}

// MARK: verifyReceipt jobs

extension ReceiptJob {
    /// A receipt_jobs row joined with its journal row (a V1 notification's journal row holds a secret name and a
    /// bundle; the raw body is NULL once past retention).
    init(row: some StoreRow) throws {
        self.init(
            journalID: try row.requiredInt64("journal_id"),
            attempts: try row.requiredInt("attempts"),
            body: try row.compressible("body", as: .body) ?? [],
            bundleID: try row.nullableString("bundle_id") ?? "",
            secretName: try row.nullableString("secret_name") ?? "",
            receivedAt: try row.requiredInt64("received_at"),
            key: try row.requiredString("notification_key"),
            authority: try row.nullableGeneration("authority"),
            version: try row.generation("version"),
            environment: try row.nullableEnvironment("environment")
        )
    }
}

extension ReceiptJobStatus {
    init(row: some StoreRow) throws {
        self.init(
            journalID: try row.requiredInt64("journal_id"),
            state: try row.required("state", as: JobState.self),
            attempts: try row.requiredInt("attempts"),
            nextAttemptAt: try row.requiredInt64("next_attempt_at"),
            lastError: try row.nullableString("last_error"),
            appleStatus: try row.nullableInt("apple_status")
        )
    }
}

// MARK: Comparison

extension StoredReceipt {
    init(row: some StoreRow) throws {
        self.init(
            receipt: try row.requiredString("receipt"),
            secretName: try row.requiredString("secret_name"),
            updatedAt: try row.requiredInt64("updated_at")
        )
    }
}

extension FetchJob {
    init(row: some StoreRow) throws {
        self.init(
            id: try row.requiredInt64("id"),
            subscription: try row.subscriptionKey(),
            fetch: try row.generation("fetch"),
            v1EventID: try row.nullableString("v1_event_id"),
            authority: try row.nullableGeneration("authority"),
            compare: try row.requiredBool("compare"),
            attempts: try row.requiredInt("attempts"),
            createdAt: try row.requiredInt64("created_at"),
            confirms: try row.requiredInt("confirms"),
            state: try row.required("state", as: JobState.self),
            nextAttemptAt: try row.requiredInt64("next_attempt_at"),
            lastError: try row.nullableString("last_error")
        )
    }
}

extension LedgerEntry {
    /// nil for an outcome this build does not know (a newer gateway's row).
    init?(row: some StoreRow) throws {
        guard let outcome = CompareOutcome(rawValue: try row.requiredString("outcome")) else { return nil }
        self.init(
            subscription: try row.subscriptionKey(),
            comparedAt: try row.requiredInt64("compared_at"),
            outcome: outcome,
            fields: try row.nullableString("fields")?.split(separator: ",").map(String.init) ?? [],
            v1: SnapshotJSON.decode(try row.compressible("v1_json", as: .snapshot)),
            v2: SnapshotJSON.decode(try row.compressible("v2_json", as: .snapshot))
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
    init?(row: some StoreRow) throws {
        guard let kind = ReconcileKind(rawValue: try row.requiredString("kind")) else { return nil }
        self.init(
            id: try row.requiredInt64("id"),
            key: ReconcileRunKey(
                bundleID: try row.requiredString("bundle_id"),
                environment: try row.environment("environment"),
                kind: kind
            ),
            nextRunAt: try row.requiredInt64("next_run_at"),
            watermark: try row.nullableInt64("watermark"),
            attempts: try row.requiredInt("attempts"),
            lastRunAt: try row.nullableInt64("last_run_at"),
            lastError: try row.nullableString("last_error"),
            checked: try row.requiredInt64("checked"),
            recovered: try row.requiredInt64("recovered"),
            calls: try row.requiredInt64("calls")
        )
    }
}

extension ReconcileCandidate {
    init(row: some StoreRow) throws {
        self.init(
            originalTransactionID: try row.requiredString("original_transaction_id"),
            eventID: try row.requiredString("event_id"),
            expiresDate: try row.nullableInt64("expires_date")
        )
    }
}

extension RecoveredCount {
    /// A row of `SQL.recoveredEventCounts` (an event's bundle and environment are nullable, its `recovered_by` is
    /// selected where it is not NULL).
    init(row: some StoreRow) throws {
        self.init(
            bundleID: try row.nullableString("bundle_id") ?? "",
            environment: try row.nullableEnvironment("environment") ?? .production,
            mechanism: RecoveryMechanism(rawValue: try row.requiredString("recovered_by")),
            day: try row.requiredInt64("day"),
            count: try row.requiredInt("n")
        )
    }
}

/// The columns a recovery run is read with.
let reconcileRunColumns =
    "id, bundle_id, environment, kind, next_run_at, watermark, attempts, last_run_at, last_error, checked, recovered, calls"

// MARK: The switch

extension AppleSwitchState {
    init(row: some StoreRow) throws {
        self.init(bundleID: try row.requiredString("bundle_id"), environment: try row.environment("environment"))
        appID = try row.nullableString("app_id")
        appleVersion = try row.nullableGeneration("apple_version")
        appleURL = try row.nullableString("apple_url")
        readAt = try row.nullableInt64("read_at")
        migrationID = try row.nullableString("migration_id")
        target = try row.nullableGeneration("target")
        previous = try row.nullableGeneration("previous")
        step = try row.nullable("step", as: AppleSwitchStep.self)
        probeToken = try row.nullableString("probe_token")
        who = try row.nullableString("who")
        reason = try row.nullableString("reason")
        forced = try row.requiredBool("forced")
        startedAt = try row.nullableInt64("started_at")
        updatedAt = try row.nullableInt64("updated_at")
        error = try row.nullableString("error")
    }
}

extension AppleSwitchLogEntry {
    init(row: some StoreRow) throws {
        self.init(
            at: try row.requiredInt64("at"),
            bundleID: try row.requiredString("bundle_id"),
            environment: try row.environment("environment"),
            migrationID: try row.requiredString("migration_id"),
            step: try row.required("step", as: AppleSwitchStep.self),
            outcome: try row.requiredString("outcome"),
            detail: try row.nullableString("detail")
        )
    }
}
