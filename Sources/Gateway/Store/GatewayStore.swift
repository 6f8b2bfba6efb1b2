public import SQLite
public import Canonical
internal import FoundationEssentials
internal import WireJSON

/// A notification ready to be journaled, with everything that must be committed in the same transaction.
public struct JournalItem: Sendable {
    public var key: String
    public var version: String
    public var receivedAt: Int64
    public var origin: String = "live"
    public var bundleID: String?
    public var environment: AppStoreEnvironment?
    public var notificationType: String?
    public var subtype: String?
    public var secretName: String?
    public var leafSerial: String?
    public var body: [UInt8]
    /// Events known now (V2; V1 of bundles that skip verifyReceipt).
    public var events: [CanonicalEvent] = []
    /// V1 waiting for verifyReceipt.
    public var needsReceipt = false

    public init(key: String, version: String, receivedAt: Int64, body: [UInt8]) {
        (self.key, self.version, self.receivedAt, self.body) = (key, version, receivedAt, body)
    }
}

public enum JournalOutcome: Sendable, Equatable {
    case accepted(journalID: Int64)
    case duplicate(journalID: Int64)
}

/// One quarantined body.
public struct QuarantineRecord: Sendable {
    public enum Lane: String, Sendable { case untrusted, genuine }
    public var id: Int64 = 0
    public var lane: Lane
    public var receivedAt: Int64
    public var version: String?
    public var code: String
    public var message: String
    public var bundleID: String?
    public var environment: String?
    public var passwordFingerprint: String?
    public var body: [UInt8]
    /// Replays tried, when the last one ran and what it answered (nil: never replayed).
    public var replayAttempts = 0
    public var lastReplayAt: Int64?
    public var lastReplayCode: String?
    /// Set while a replay of this row runs; still set afterwards only if that replay never finished.
    public var replayStartedAt: Int64?

    /// The bytes the row counts against its lane's cap: what it takes on disk, conservatively — the body and the text
    /// stored beside it plus a fixed overhead for the row, rounded up to whole 4 KiB pages of which SQLite uses 4,092
    /// bytes each for a large value's overflow chain.
    public var storedSize: Int64 {
        let content = Int64(256 + body.count + message.utf8.count + code.utf8.count + (bundleID?.utf8.count ?? 0)
                            + (environment?.utf8.count ?? 0))
        return (content + 4_091) / 4_092 * 4_096
    }

    public init(lane: Lane, receivedAt: Int64, version: String?, code: String, message: String, bundleID: String? = nil,
                environment: String? = nil, passwordFingerprint: String? = nil, body: [UInt8]) {
        self.lane = lane
        self.receivedAt = receivedAt
        self.version = version
        self.code = code
        self.message = message
        self.bundleID = bundleID
        self.environment = environment
        self.passwordFingerprint = passwordFingerprint
        self.body = body
    }
}

/// The SQL of the gateway: every read and write of the tables in ``Schema``. Write operations take the writer
/// connection handed out by ``JournalWriter`` (one transaction per batch); reads use reader connections.
public enum GatewayStore {
    /// Opens (creating) the store file and applies migrations.
    public static func open(path: String, synchronous: SQLiteDatabase.Synchronous = .full, faults: StorageFaults? = nil) throws
        -> SQLiteDatabase
    {
        let dir = URL(filePath: path).deletingLastPathComponent().path()
        if !dir.isEmpty { try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        var options = SQLiteDatabase.Options()
        options.synchronous = synchronous
        options.faults = faults
        let db = try SQLiteDatabase(path: path, options: options)
        try db.migrate(Schema.migrations)
        return db
    }

    // MARK: Journal

    /// Journals `item` (and its events, state updates and outbox rows): accepted, or a duplicate of an earlier one.
    public static func journal(_ item: JournalItem, router: Router, now: Int64, in c: SQLiteConnection) throws -> JournalOutcome {
        // The authority in force now decides, once, which path this notification's events are authoritative on.
        let authority = try authority(bundleID: item.bundleID, environment: item.environment, in: c)
        let inserted = try c.run(
            """
            INSERT INTO journal (notification_key, version, received_at, origin, bundle_id, environment, notification_type,
                                 subtype, secret_name, leaf_serial, body, authority)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(notification_key) DO NOTHING
            """,
            [.text(item.key), .text(item.version), .integer(item.receivedAt), .text(item.origin), SQLiteValue(item.bundleID),
             SQLiteValue(item.environment?.rawValue), SQLiteValue(item.notificationType), SQLiteValue(item.subtype),
             SQLiteValue(item.secretName), SQLiteValue(item.leafSerial), .blob(item.body), .text(authority)])
        if inserted == 0 {
            let id = try c.queryOne("SELECT id FROM journal WHERE notification_key = ?", [.text(item.key)])?.int64("id") ?? 0
            return .duplicate(journalID: id)
        }
        let journalID = c.lastInsertRowID
        try storeEvents(item.events, journalID: journalID, router: router, now: now, authority: authority, in: c)
        if item.version == "v2" {
            // Compared bundles: the signed data is the V2 path's snapshot; the V1 path's comes from verifyReceipt.
            for e in item.events where router.compares(e.bundleID) && e.isSubscription {
                guard let bundle = e.bundleID, let env = e.environment?.rawValue, let otid = e.originalTransactionID else { continue }
                try CompareStore.putSnapshot(OutcomeSnapshot(event: e, source: .v2, observedAt: e.eventDate), path: "v2", in: c)
                try CompareStore.enqueue(bundleID: bundle, environment: env, otid: otid, fetch: "v1", v1EventID: nil, authority: nil,
                                         compare: true, at: now, in: c)
            }
        }
        if item.needsReceipt {
            try c.run(
                "INSERT INTO receipt_jobs (journal_id, next_attempt_at, updated_at) VALUES (?, ?, ?)",
                [.integer(journalID), .integer(now), .integer(now)])
        }
        if item.version == "v1" {
            for name in router.passthroughTargets(bundleID: item.bundleID, environment: item.environment) {
                try c.run(
                    "INSERT OR IGNORE INTO outbox (downstream, journal_id, next_attempt_at, created_at) VALUES (?, ?, ?, ?)",
                    [.text(name), .integer(journalID), .integer(now), .integer(now)])
            }
        }
        return .accepted(journalID: journalID)
    }

    /// The path an event belongs to: V1 notifications and verifyReceipt → v1; V2 notifications and the API → v2.
    public static func path(of event: CanonicalEvent) -> String {
        event.source == .v1 || event.source == .v1Receipt ? "v1" : "v2"
    }

    /// Stores events (ignoring ids already stored), updates each subscription's state on the event's path
    /// (last write wins on event date, then arrival) and queues deliveries.
    /// `authority` is the authority the events' notification arrived under (looked up now when not given).
    public static func storeEvents(_ events: [CanonicalEvent], journalID: Int64?, router: Router, now: Int64, authority: String? = nil,
                                   in c: SQLiteConnection) throws {
        for event in events {
            let path = path(of: event)
            let authoritative = try (authority ?? self.authority(bundleID: event.bundleID, environment: event.environment, in: c)) == path
            let inserted = try c.run(
                """
                INSERT INTO events (id, journal_id, path, source, kind, reason, bundle_id, environment, original_transaction_id,
                                    event_date, authoritative, created_at, json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING
                """,
                [.text(event.id), SQLiteValue(journalID), .text(path), .text(event.source.rawValue), .text(event.kind.rawValue),
                 SQLiteValue(event.reason?.rawValue), SQLiteValue(event.bundleID), SQLiteValue(event.environment?.rawValue),
                 SQLiteValue(event.originalTransactionID), .integer(event.eventDate), SQLiteValue(authoritative), .integer(now),
                 .blob(CanonicalJSON.encode(event))])
            guard inserted > 0 else { continue }
            let seq = c.lastInsertRowID
            if let otid = event.originalTransactionID, let env = event.environment {
                try updateState(path: path, environment: env.rawValue, otid: otid, event: event, seq: seq, now: now, in: c)
            }
            for name in router.eventTargets(bundleID: event.bundleID, environment: event.environment, authoritative: authoritative) {
                try c.run(
                    "INSERT OR IGNORE INTO outbox (downstream, event_id, next_attempt_at, created_at) VALUES (?, ?, ?, ?)",
                    [.text(name), .text(event.id), .integer(now), .integer(now)])
            }
        }
    }

    /// Last write wins on (event_date, arrival order): an older event arriving late never overwrites a newer one.
    static func updateState(path: String, environment: String, otid: String, event: CanonicalEvent, seq: Int64, now: Int64,
                            in c: SQLiteConnection) throws {
        let state = SubscriptionState(path: path, event: event)
        try c.run(
            """
            INSERT INTO subscription_state (path, environment, original_transaction_id, bundle_id, event_id, event_date,
                                            event_seq, json, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(path, environment, original_transaction_id) DO UPDATE SET
                bundle_id = excluded.bundle_id, event_id = excluded.event_id, event_date = excluded.event_date,
                event_seq = excluded.event_seq, json = excluded.json, updated_at = excluded.updated_at
            WHERE excluded.event_date > subscription_state.event_date
               OR (excluded.event_date = subscription_state.event_date AND excluded.event_seq > subscription_state.event_seq)
            """,
            [.text(path), .text(environment), .text(otid), SQLiteValue(event.bundleID), .text(event.id), .integer(event.eventDate),
             .integer(seq), .blob(CanonicalJSON.encode(state)), .integer(now)])
    }

    // MARK: Authority

    /// The authoritative generation (`v1` / `v2`) for a bundle and environment; `v1` when nothing is recorded.
    public static func authority(bundleID: String?, environment: AppStoreEnvironment?, in c: SQLiteConnection) throws -> String {
        guard let bundleID, let environment else { return "v1" }
        return try c.queryOne(
            "SELECT authority FROM authority WHERE bundle_id = ? AND environment = ?", [.text(bundleID), .text(environment.rawValue)]
        )?.string("authority") ?? "v1"
    }

    /// Seeds authority from the config: rows that came from the config follow it; rows set by a cutover are kept.
    /// Returns the effective authority per (bundle, environment).
    @discardableResult
    public static func seedAuthority(_ config: GatewayConfig, now: Int64, in c: SQLiteConnection) throws -> [(bundle: String, environment: String, authority: String, origin: String)] {
        for app in config.apps {
            for env in app.environments {
                try c.run(
                    """
                    INSERT INTO authority (bundle_id, environment, authority, origin, updated_at) VALUES (?, ?, ?, 'config', ?)
                    ON CONFLICT(bundle_id, environment) DO UPDATE SET authority = excluded.authority, updated_at = excluded.updated_at
                    WHERE authority.origin = 'config'
                    """,
                    [.text(app.bundleID), .text(env.rawValue), .text(app.authority(for: env).rawValue), .integer(now)])
            }
        }
        return try c.query("SELECT bundle_id, environment, authority, origin FROM authority ORDER BY bundle_id, environment").map {
            ($0.string("bundle_id") ?? "", $0.string("environment") ?? "", $0.string("authority") ?? "", $0.string("origin") ?? "")
        }
    }

    // MARK: Quarantine

    /// What storing a quarantined body did.
    public enum QuarantineOutcome: Sendable, Equatable {
        /// Stored; `evicted` older rows of the same lane were dropped to make room.
        case stored(id: Int64, evicted: Int)
        /// Not stored: the lane is full and does not evict (the genuine lane), or the row alone exceeds the lane.
        case full
    }

    /// A lane's bounds. The untrusted lane drops its oldest rows to make room; the genuine lane never drops a
    /// genuine notification to make room for another and refuses instead (DESIGN ch. 1; docs/operations.md).
    public struct QuarantineCap: Sendable, Equatable {
        public var rows: Int
        public var bytes: Int64
        public var evictsOldest: Bool
        public init(rows: Int, bytes: Int64, evictsOldest: Bool) {
            (self.rows, self.bytes, self.evictsOldest) = (rows, bytes, evictsOldest)
        }
    }

    /// Adds a row to its lane within `cap`. Runs in the caller's transaction, so the check, the eviction and the
    /// insert are one step for concurrent writers.
    public static func quarantine(_ r: QuarantineRecord, cap: QuarantineCap, in c: SQLiteConnection) throws -> QuarantineOutcome {
        let size = r.storedSize
        guard size <= cap.bytes, cap.rows >= 1 else { return .full }
        let lane = SQLiteValue.text(r.lane.rawValue)
        let usage = try c.queryOne("SELECT rows, bytes FROM quarantine_usage WHERE lane = ?", [lane])
        var rows = usage?.int64("rows") ?? 0
        var bytes = usage?.int64("bytes") ?? 0
        var evicted = 0
        if rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes {
            guard cap.evictsOldest else { return .full }
            // Oldest first, in small pages, until the new row fits. Evicting before inserting lets SQLite reuse the
            // freed pages for the new body, so a flood does not grow the file.
            var lastID: Int64 = 0
            scan: while true {
                let page = try c.query(
                    "SELECT id, size FROM quarantine WHERE lane = ? AND id > ? ORDER BY id LIMIT 64", [lane, .integer(lastID)])
                if page.isEmpty { break }
                for row in page {
                    guard rows + 1 > Int64(cap.rows) || bytes + size > cap.bytes else { break scan }
                    lastID = row.int64("id") ?? lastID
                    rows -= 1
                    bytes -= row.int64("size") ?? 0
                    evicted += 1
                }
            }
            try c.run("DELETE FROM quarantine WHERE lane = ? AND id <= ?", [lane, .integer(lastID)])
        }
        try c.run(
            """
            INSERT INTO quarantine (lane, received_at, version, code, message, bundle_id, environment, password_fingerprint, body, size)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [lane, .integer(r.receivedAt), SQLiteValue(r.version), .text(r.code), .text(r.message), SQLiteValue(r.bundleID),
             SQLiteValue(r.environment), SQLiteValue(r.passwordFingerprint), .blob(r.body), .integer(size)])
        return .stored(id: c.lastInsertRowID, evicted: evicted)
    }

    /// Quarantined rows, oldest first: of one lane, or one row, or all.
    public static func quarantined(lane: QuarantineRecord.Lane?, id: Int64? = nil, limit: Int, in c: SQLiteConnection) throws
        -> [QuarantineRecord]
    {
        let rows = try c.query(
            "SELECT * FROM quarantine WHERE (? IS NULL OR lane = ?) AND (? IS NULL OR id = ?) ORDER BY id LIMIT ?",
            [SQLiteValue(lane?.rawValue), SQLiteValue(lane?.rawValue), SQLiteValue(id), SQLiteValue(id),
             .integer(Int64(max(0, limit)))])
        return rows.map { row in
            var r = QuarantineRecord(
                lane: QuarantineRecord.Lane(rawValue: row.string("lane") ?? "") ?? .untrusted, receivedAt: row.int64("received_at") ?? 0,
                version: row.string("version"), code: row.string("code") ?? "", message: row.string("message") ?? "",
                bundleID: row.string("bundle_id"), environment: row.string("environment"),
                passwordFingerprint: row.string("password_fingerprint"), body: row.blob("body") ?? [])
            r.id = row.int64("id") ?? 0
            r.replayAttempts = row.int("replay_attempts") ?? 0
            r.replayStartedAt = row.int64("replay_started_at")
            r.lastReplayAt = row.int64("last_replay_at")
            r.lastReplayCode = row.string("last_replay_code")
            return r
        }
    }

    /// Each lane's rows and bytes.
    public static func quarantineUsage(in c: SQLiteConnection) throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] {
        var usage: [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)] = [:]
        for row in try c.query("SELECT lane, rows, bytes FROM quarantine_usage") {
            guard let lane = row.string("lane").flatMap(QuarantineRecord.Lane.init(rawValue:)) else { continue }
            usage[lane] = (row.int64("rows") ?? 0, row.int64("bytes") ?? 0)
        }
        return usage
    }

    public static func removeQuarantined(id: Int64, in c: SQLiteConnection) throws {
        try c.run("DELETE FROM quarantine WHERE id = ?", [.integer(id)])
    }

    /// Marks a row as being replayed now (committed before the replay runs: see migration 5).
    public static func beginReplay(id: Int64, now: Int64, in c: SQLiteConnection) throws {
        try c.run(
            "UPDATE quarantine SET replay_started_at = ?, replay_attempts = replay_attempts + 1 WHERE id = ?",
            [.integer(now), .integer(id)])
    }

    /// Records a replay that did not journal the row: the row stays, with its outcome.
    public static func finishReplay(id: Int64, code: String, now: Int64, in c: SQLiteConnection) throws {
        try c.run(
            "UPDATE quarantine SET replay_started_at = NULL, last_replay_at = ?, last_replay_code = ? WHERE id = ?",
            [.integer(now), .text(code), .integer(id)])
    }

    // MARK: Retention

    /// Drops raw bodies older than `cutoff` (ms); their events and delivery history stay.
    @discardableResult
    public static func purgeBodies(olderThan cutoff: Int64, now: Int64, in c: SQLiteConnection) throws -> Int {
        try c.run(
            """
            UPDATE journal SET body = NULL, body_purged_at = ? WHERE body IS NOT NULL AND received_at < ?
              AND id NOT IN (SELECT journal_id FROM receipt_jobs WHERE state = 'pending')
              AND id NOT IN (SELECT journal_id FROM outbox WHERE journal_id IS NOT NULL AND state = 'pending')
            """,
            [.integer(now), .integer(cutoff)])
    }

    /// Finished comparison fetches last due before `cutoff`: bookkeeping only (each outcome is in the ledger), and a
    /// compared bundle queues several per notification, so they do not stay forever.
    public static func purgeFinishedFetches(olderThan cutoff: Int64, in c: SQLiteConnection) throws -> Int {
        try c.run("DELETE FROM compare_jobs WHERE state IN ('done', 'failed') AND next_attempt_at < ?", [.integer(cutoff)])
    }
}
