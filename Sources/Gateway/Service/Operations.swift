public import SQLite
internal import Canonical
internal import Crypto
public import V1Adapter
public import WireJSON

/// Operator actions shared by the CLI (`replay`, `quarantine`, `subscription`) and the admin API. Reads use reader
/// connections; writes go through the journal writer like everything else.
public struct Operations: Sendable {
    let db: SQLiteDatabase
    let writer: JournalWriter
    let now: @Sendable () -> Int64

    public init(db: SQLiteDatabase, writer: JournalWriter, now: @escaping @Sendable () -> Int64) {
        (self.db, self.writer, self.now) = (db, writer, now)
    }

    public enum ReplaySelection: Sendable {
        case eventID(String)
        /// Events created in [since, until) (ms).
        case range(since: Int64, until: Int64)
        case deadLetters
    }

    /// Queues the selected deliveries again (attempts reset): returns how many outbox rows were re-armed.
    /// Delivered events are sent again too when selected by id or time — replay means "send again".
    public func replay(_ selection: ReplaySelection) throws -> Int {
        let time = now()
        return try writer.perform { c in
            switch selection {
            case .eventID(let id):
                return try c.run(
                    "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE event_id = ? OR journal_id = (SELECT journal_id FROM events WHERE id = ?)",
                    [.integer(time), .text(id), .text(id)])
            case .range(let since, let until):
                return try c.run(
                    "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE created_at >= ? AND created_at < ?",
                    [.integer(time), .integer(since), .integer(until)])
            case .deadLetters:
                return try c.run(
                    "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL WHERE state = 'dead'",
                    [.integer(time)])
            }
        }
    }

    /// Dead-lettered deliveries, oldest first.
    public func deadLetters(limit: Int = 100) throws -> JSONValue {
        let rows = try db.read { c in
            try c.query(
                "SELECT id, downstream, event_id, journal_id, attempts, last_status, last_error, created_at FROM outbox WHERE state = 'dead' ORDER BY id LIMIT ?",
                [.integer(Int64(limit))])
        }
        return .array(rows.map { Self.object($0, ["id", "downstream", "event_id", "journal_id", "attempts", "last_status", "last_error", "created_at"]) })
    }

    /// One subscription: its state on each path (with which one is authoritative) and its event history.
    public func subscription(_ otid: String) throws -> JSONValue {
        let time = now()
        return try db.readTransaction { c in
            let states = try c.query(
                """
                SELECT s.path, s.environment, s.bundle_id, s.json, s.updated_at,
                       (SELECT authority FROM authority a WHERE a.bundle_id = s.bundle_id AND a.environment = s.environment) AS authority
                FROM subscription_state s WHERE s.original_transaction_id = ? ORDER BY s.environment, s.path
                """, [.text(otid)])
            let events = try c.query(
                "SELECT json, path, authoritative FROM events WHERE original_transaction_id = ? ORDER BY event_date, rowid", [.text(otid)])
            let stateValues: [JSONValue] = states.map { row in
                var members: [(key: String, value: JSONValue)] = [
                    ("path", .string(row.string("path") ?? "")), ("environment", .string(row.string("environment") ?? "")),
                    ("authoritative", .bool(row.string("authority") == row.string("path"))),
                ]
                if let json = row.blob("json"), let v = try? JSONParser.parse(json) {
                    members.append(("state", v))
                    // Where the subscription stands now if nothing has happened since its latest event.
                    if let e = v.objectValue?["entitlement"]?.objectValue, let state = e["state"]?.stringValue {
                        let now = Entitlement(state: Entitlement.State(rawValue: state), until: e["until"]?.int64Value).projected(at: time)
                        members.append(("entitlement_now", .object(JSONObject([
                            ("state", .string(now.state.rawValue)), ("until", now.until.map { .number(String($0)) } ?? .null),
                        ]))))
                    }
                }
                return .object(JSONObject(members))
            }
            let eventValues: [JSONValue] = events.compactMap { row in
                guard let json = row.blob("json"), let v = try? JSONParser.parse(json) else { return nil }
                return .object(JSONObject([("path", .string(row.string("path") ?? "")), ("authoritative", .bool(row.bool("authoritative") ?? false)),
                                           ("event", v)]))
            }
            return .object(JSONObject([("original_transaction_id", .string(otid)), ("states", .array(stateValues)),
                                       ("events", .array(eventValues))]))
        }
    }

    /// Counts for `GET /admin/status`.
    public func status() throws -> JSONValue {
        try db.readTransaction { c in
            func count(_ sql: String) throws -> Int64 { try c.queryOne(sql)?.int64("n") ?? 0 }
            let outbox = try c.query("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")
            let receipts = try c.query("SELECT state, COUNT(*) AS n FROM receipt_jobs GROUP BY state")
            let lanes = try c.query("SELECT lane, COUNT(*) AS n FROM quarantine GROUP BY lane")
            let authority = try c.query("SELECT bundle_id, environment, authority, origin FROM authority ORDER BY bundle_id, environment")
            func grouped(_ rows: [SQLiteRow], _ key: String) -> JSONValue {
                .object(JSONObject(rows.map { ($0.string(key) ?? "", JSONValue.number(String($0.int64("n") ?? 0))) }))
            }
            return .object(JSONObject([
                ("journal", .number(String(try count("SELECT COUNT(*) AS n FROM journal")))),
                ("events", .number(String(try count("SELECT COUNT(*) AS n FROM events")))),
                ("outbox", grouped(outbox, "state")),
                ("receipt_jobs", grouped(receipts, "state")),
                ("quarantine", grouped(lanes, "lane")),
                ("authority", .array(authority.map { Self.object($0, ["bundle_id", "environment", "authority", "origin"]) })),
            ]))
        }
    }

    /// Quarantined rows (without bodies), with each lane's usage.
    public func quarantineList(lane: QuarantineRecord.Lane? = nil, limit: Int = 100) throws -> JSONValue {
        let rows = try db.read { c in try GatewayStore.quarantined(lane: lane, limit: limit, in: c) }
        return .array(rows.map { r in
            .object(JSONObject([
                ("id", .number(String(r.id))), ("lane", .string(r.lane.rawValue)), ("received_at", .number(String(r.receivedAt))),
                ("version", r.version.map { .string($0) } ?? .null), ("code", .string(r.code)), ("message", .string(r.message)),
                ("bundle_id", r.bundleID.map { .string($0) } ?? .null), ("environment", r.environment.map { .string($0) } ?? .null),
                ("size", .number(String(r.storedSize))), ("replay_attempts", .number(String(r.replayAttempts))),
                ("last_replay_at", r.lastReplayAt.map { .number(String($0)) } ?? .null),
                ("last_replay_code", r.lastReplayCode.map { .string($0) } ?? .null),
            ]))
        })
    }

    /// Which quarantined rows a replay runs: one row, one lane, or every row.
    public struct QuarantineSelection: Sendable {
        public var id: Int64?
        public var lane: QuarantineRecord.Lane?
        public var limit: Int
        public init(id: Int64? = nil, lane: QuarantineRecord.Lane? = nil, limit: Int = 1_000) {
            (self.id, self.lane, self.limit) = (id, lane, limit)
        }
    }

    /// Re-runs quarantined bodies through `ingest` (after a config fix), each judged as of its arrival: the freshness
    /// window is measured from when the row arrived, so a replay never accepts what live traffic refused at the time
    /// (DESIGN ch. 1). A row now accepted (or a duplicate) leaves the quarantine; one that still fails stays, with
    /// its outcome recorded on it, and never stops the rows after it. V1 rows get back the secret whose SHA-256
    /// matches the fingerprint they kept, if one is configured now.
    ///
    /// Each row is marked as being replayed, durably, before it runs. A row still marked from an earlier replay
    /// took that process down: it is skipped (`replay_interrupted`) unless selected by id, so one poisonous row can
    /// never block the others for good.
    public func quarantineReplay(ingest: NotificationIngest, secrets: [SharedSecret], selection: QuarantineSelection = .init())
        throws -> JSONValue
    {
        let rows = try db.read { c in
            try GatewayStore.quarantined(lane: selection.lane, id: selection.id, limit: selection.limit, in: c)
        }
        var results: [JSONValue] = []
        for row in rows {
            let id = row.id
            if row.replayStartedAt != nil, selection.id == nil {
                results.append(Self.replayResult(id, status: nil, code: "replay_interrupted"))
                continue
            }
            var body = row.body
            if row.version == "v1" {
                guard let fingerprint = row.passwordFingerprint,
                    let secret = secrets.first(where: { SHA256.hex(Array($0.revealedValue.utf8)) == fingerprint }),
                    case .object(let o)? = try? JSONParser.parse(body)
                else {
                    try? record(id, code: "no_matching_secret")
                    results.append(Self.replayResult(id, status: nil, code: "no_matching_secret"))
                    continue
                }
                body = JSONValue.object(JSONObject(o.members + [("password", .string(secret.revealedValue))])).canonicalBytes()
            }
            let started = now()
            do {
                try writer.perform { c in try GatewayStore.beginReplay(id: id, now: started, in: c) }
            } catch {
                results.append(Self.replayResult(id, status: nil, code: "store_unavailable"))
                continue
            }
            let result = ingest.handle(body, origin: .quarantineReplay(arrivedAt: row.receivedAt))
            do {
                if result.status == 200 {
                    try writer.perform { c in try GatewayStore.removeQuarantined(id: id, in: c) }
                } else {
                    try record(id, code: result.code ?? "status_\(result.status)")
                }
                results.append(Self.replayResult(id, status: result.status, code: result.code))
            } catch {
                results.append(Self.replayResult(id, status: result.status, code: "store_unavailable"))
            }
        }
        return .array(results)
    }

    private func record(_ id: Int64, code: String) throws {
        let time = now()
        try writer.perform { c in try GatewayStore.finishReplay(id: id, code: code, now: time, in: c) }
    }

    static func replayResult(_ id: Int64, status: Int?, code: String?) -> JSONValue {
        .object(JSONObject([("id", .number(String(id))), ("status", status.map { .number(String($0)) } ?? .null),
                            ("code", code.map { .string($0) } ?? .null)]))
    }

    static func object(_ row: SQLiteRow, _ columns: [String]) -> JSONValue {
        .object(JSONObject(columns.map { name in
            switch row[name] {
            case .null: (name, .null)
            case .integer(let i): (name, .number(String(i)))
            case .real(let d): (name, .number(String(d)))
            case .text(let s): (name, .string(s))
            case .blob: (name, .null)
            }
        }))
    }
}
