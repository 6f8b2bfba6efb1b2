internal import Canonical
internal import Crypto
internal import ServiceKit
public import Store
public import V1Adapter
public import WireJSON

/// Operator actions shared by the CLI (`replay`, `quarantine`, `subscription`) and the admin API.
public struct Operations: Sendable {
    let store: any GatewayStore
    let now: @Sendable () -> Int64
    /// The configured downstreams' names, which a replay to one downstream must name; nil: not checked.
    let downstreams: Set<String>?
    /// The configured downstreams, as `/admin/status` shows them (what each takes, its limits).
    let downstreamSettings: [GatewayConfig.Downstream]

    public init(
        store: any GatewayStore,
        now: @escaping @Sendable () -> Int64,
        downstreams: [String]? = nil,
        downstreamSettings: [GatewayConfig.Downstream] = []
    ) {
        (self.store, self.now, self.downstreams) = (store, now, downstreams.map(Set.init))
        self.downstreamSettings = downstreamSettings
    }

    public typealias ReplaySelection = RedeliverySelection

    /// A replay to a downstream the config does not have (`bad_request` on the admin API, exit 2 on the command line).
    public struct UnknownDownstream: Error, CustomStringConvertible {
        public var name: String
        public var description: String { "no downstream named \(name) in the config" }
    }

    /// Queues one event's delivery to one downstream again (attempts reset, its next attempts logged as replays): the
    /// same outbox row, so the same `webhook-id`. Returns how many rows were re-armed (0: the event has no delivery
    /// to it). Throws ``UnknownDownstream`` for a name the config does not have.
    public func replay(eventID: String, downstream: String) throws -> Int {
        if let downstreams, !downstreams.contains(downstream) { throw UnknownDownstream(name: downstream) }
        let time = now()
        return try store.write { tx in try tx.redeliver(eventID: eventID, downstream: downstream, now: time) }
    }

    /// Every delivery of the event (and of its notification's body to pass-through downstreams), each with its
    /// logged attempts, newest first (docs/operations.md, "The delivery log"); nil when no such event is stored.
    public func deliveryLog(eventID: String) throws -> JSONValue? {
        guard let entries = try store.read({ tx in try tx.deliveryLog(eventID: eventID) }) else { return nil }
        return .object(
            JSONObject([
                ("event_id", .string(eventID)),
                ("deliveries", .array(entries.map { Self.json($0, attempts: "attempt_log") })),
            ])
        )
    }

    /// A page of one downstream's deliveries in `state`, in creation order, each with its newest attempt; `next_cursor`
    /// continues it (null on the last page).
    public func deliveryPage(
        downstream: String,
        state: DeliveryState,
        after cursor: DeliveryCursor,
        limit: Int
    ) throws -> JSONValue {
        let entries = try store.read { tx in
            try tx.deliveryPage(downstream: downstream, state: state, after: cursor, limit: limit)
        }
        let next = entries.count < limit ? nil : entries.last.map { "\($0.delivery.createdAt).\($0.delivery.id)" }
        return .object(
            JSONObject([
                ("deliveries", .array(entries.map { Self.json($0, attempts: "last_attempt") })),
                ("next_cursor", next.map { .string($0) } ?? .null),
            ])
        )
    }

    /// A delivery with its attempts under `key`: all of them (`attempt_log`), or the newest alone (`last_attempt`).
    static func json(_ entry: DeliveryLogEntry, attempts key: String) -> JSONValue {
        let d = entry.delivery
        func number(_ n: (some BinaryInteger)?) -> JSONValue { n.map { .number(String($0)) } ?? .null }
        let attempts = entry.attempts.map { a in
            .object(
                JSONObject([
                    ("attempt", number(a.attempt)), ("started_at", number(a.startedAt)),
                    ("latency_ms", number(a.latencyMillis)), ("status", number(a.status)),
                    ("error", a.error.map { .string($0) } ?? .null),
                    // Outside bytes: shown as text (invalid UTF-8 replaced), escaped by the JSON writer.
                    ("response_head", .string(String(decoding: a.responseHead, as: UTF8.self))),
                    ("replay", .bool(a.replay)),
                ])
            ) as JSONValue
        }
        return .object(
            JSONObject([
                ("id", number(d.id)), ("downstream", .string(d.downstream)),
                ("event_id", d.eventID.map { .string($0) } ?? .null), ("journal_id", number(d.journalID)),
                ("state", .string(d.state.rawValue)), ("attempts", number(d.attempts)),
                ("created_at", number(d.createdAt)), ("next_attempt_at", number(d.nextAttemptAt)),
                ("delivered_at", number(d.deliveredAt)), ("last_status", number(d.lastStatus)),
                ("last_error", d.lastError.map { .string($0) } ?? .null),
                (key, key == "last_attempt" ? attempts.first ?? .null : .array(attempts)),
            ])
        )
    }

    /// Queues the selected deliveries again (attempts reset): returns how many outbox rows were re-armed.
    /// Delivered events are sent again too when selected by id or time — replay means "send again".
    /// A range or the dead letters are re-armed a page at a time, each its own transaction: memory and the writer's
    /// hold stay bounded whatever the range holds.
    public func replay(_ selection: ReplaySelection) throws -> Int {
        let time = now()
        let page = 5_000
        switch selection {
        case .eventID: return try store.write { tx in try tx.redeliver(selection, now: time) }
        case .deadLetters:
            var total = 0
            while true {
                let n = try store.write { tx in try tx.redeliverDeadLetters(limit: page, now: time) }
                total += n
                if n < page { return total }
            }
        case .range(let since, let until):
            var (total, after) = (0, (createdAt: since, id: Int64.min))
            while true {
                let cursor = after
                let (n, last) = try store.write { tx in
                    try tx.redeliverPage(since: since, until: until, after: cursor, limit: page, now: time)
                }
                total += n
                guard let last else { return total }
                after = last
            }
        }
    }

    /// Refund requests (docs/operations.md, "Refund requests"), newest first, optionally of one state: each with
    /// what was chosen and sent, Apple's answer and Apple's decision since.
    /// The answer is the JSON object Send Consumption Information took (or is to take), not its text.
    public func refundRequests(state: ConsumptionState? = nil, limit: Int = 100) throws -> JSONValue {
        let rows = try store.read { tx in try tx.consumptionJobs(state: state, limit: max(1, min(limit, 1_000))) }
        guard case .array(let items)? = try? JSONParser.parse(JSONOutput.encode(rows)) else { return .array([]) }
        return .array(
            items.map { item in
                guard case .object(let row) = item, case .string(let text)? = row["answer"],
                    let answer = try? JSONParser.parse(Array(text.utf8))
                else { return item }
                return .object(JSONObject(row.members.map { ($0.key, $0.key == "answer" ? answer : $0.value) }))
            }
        )
    }

    /// Dead-lettered deliveries, oldest first.
    public func deadLetters(limit: Int = 100) throws -> JSONValue {
        let rows = try store.read { tx in try tx.deliveries(state: .dead, downstream: nil, eventID: nil, limit: limit) }
        return .array(
            rows.map { d in
                .object(
                    JSONObject([
                        ("id", .number(String(d.id))), ("downstream", .string(d.downstream)),
                        ("event_id", d.eventID.map { .string($0) } ?? .null),
                        ("journal_id", d.journalID.map { .number(String($0)) } ?? .null),
                        ("attempts", .number(String(d.attempts))),
                        ("last_status", d.lastStatus.map { .number(String($0)) } ?? .null),
                        ("last_error", d.lastError.map { .string($0) } ?? .null),
                        ("created_at", .number(String(d.createdAt))),
                    ])
                )
            }
        )
    }

    /// One subscription: its state on each path (with which one is authoritative) and its event history, within
    /// `maxEvents` events and `maxBytes` of stored JSON (docs/commands.md, "subscription"). `complete` says whether the
    /// history is whole; when it is not, `stopped_by` names the cap (`max_events`, `max_bytes`) and the events shown
    /// are the oldest. A state or an event whose stored JSON reads as damaged is shown with its `damaged` code
    /// (``StoredValueDamage``) in place of its JSON, and counted in `damaged`.
    public func subscription(
        _ otid: String,
        maxEvents: Int = SubscriptionHistory.defaultMaxEvents,
        maxBytes: Int = SubscriptionHistory.defaultMaxBytes
    ) throws -> JSONValue {
        let time = now()
        let history = try store.read { tx in
            try tx.subscriptionHistory(originalTransactionID: otid, maxEvents: maxEvents, maxBytes: maxBytes)
        }
        var damaged = 0
        let stateValues: [JSONValue] = history.states.map { row in
            var members: [(key: String, value: JSONValue)] = [
                ("path", .string(row.path.rawValue)), ("environment", .string(row.environment.rawValue)),
                ("authoritative", .bool(row.authoritative)),
            ]
            guard row.damage == nil, let v = try? JSONParser.parse(row.json) else {
                damaged += 1
                members.append(("event_id", .string(row.eventID)))
                members.append(("damaged", .string((row.damage ?? .unreadable).rawValue)))
                return .object(JSONObject(members))
            }
            members.append(("state", v))
            // Where the subscription stands now if nothing has happened since its latest event.
            if let e = v.objectValue?["entitlement"]?.objectValue, let state = e["state"]?.stringValue {
                let now = Entitlement(state: Entitlement.State(rawValue: state), until: e["until"]?.int64Value)
                    .projected(at: time)
                members.append(
                    (
                        "entitlement_now",
                        .object(
                            JSONObject([
                                ("state", .string(now.state.rawValue)),
                                ("until", now.until.map { .number(String($0)) } ?? .null),
                            ])
                        )
                    )
                )
            }
            return .object(JSONObject(members))
        }
        let eventValues: [JSONValue] = history.events.map { row in
            let members: [(key: String, value: JSONValue)] = [
                ("path", .string(row.path.rawValue)), ("authoritative", .bool(row.authoritative)),
            ]
            guard let event = row.event, let v = try? JSONParser.parse(event.json) else {
                damaged += 1
                return .object(
                    JSONObject(
                        members + [
                            ("event_id", .string(row.id)),
                            ("damaged", .string((row.damage ?? .unreadable).rawValue)),
                        ]
                    )
                )
            }
            return .object(JSONObject(members + [("event", v)]))
        }
        var members: [(key: String, value: JSONValue)] = [
            ("original_transaction_id", .string(otid)), ("states", .array(stateValues)),
            ("events", .array(eventValues)), ("complete", .bool(history.stoppedBy == nil)),
            ("damaged", .number(String(damaged))),
        ]
        if let cap = history.stoppedBy { members.append(("stopped_by", .string(cap.rawValue))) }
        return .object(JSONObject(members))
    }

    /// Counts for `GET /admin/status`, with the gateway's version (``GatewayVersion``).
    public func status() throws -> JSONValue {
        try store.read { tx in
            let counts = try tx.statusCounts()
            let outbox = counts.deliveries
            let receipts = try tx.receiptJobCounts()
            let lanes = try tx.quarantineUsage()
            let authority = try tx.authorities()
            let receiptModes = try tx.receiptModes()
            let apple = try tx.appleSwitches()
            func number(_ n: some BinaryInteger) -> JSONValue { .number(String(n)) }
            func text(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
            return .object(
                JSONObject([
                    ("version", .string(GatewayVersion.string)),
                    ("journal", number(counts.journal)),
                    ("events", number(counts.events)),
                    // journal, events and outbox are read off the newest ids: bounds from above on PostgreSQL.
                    ("counts", .string(counts.exact ? "exact" : "upper_bound")),
                    (
                        "outbox",
                        .object(JSONObject(outbox.map { ($0.key.rawValue, number($0.value)) }.sorted { $0.0 < $1.0 }))
                    ),
                    (
                        "receipt_jobs",
                        .object(JSONObject(receipts.map { ($0.key.rawValue, number($0.value)) }.sorted { $0.0 < $1.0 }))
                    ),
                    (
                        "quarantine",
                        .object(
                            JSONObject(
                                lanes.filter { $0.value.rows > 0 }.map { ($0.key.rawValue, number($0.value.rows)) }
                                    .sorted { $0.0 < $1.0 }
                            )
                        )
                    ),
                    (
                        "authority",
                        .array(
                            authority.map { a in
                                .object(
                                    JSONObject([
                                        ("bundle_id", .string(a.bundleID)),
                                        ("environment", .string(a.environment.rawValue)),
                                        ("authority", .string(a.authority.rawValue)),
                                        ("origin", .string(a.origin.rawValue)),
                                    ])
                                )
                            }
                        )
                    ),
                    // How `/verifyReceipt` is answered, per app and environment (docs/operations.md, "Moving the receipt
                    // path"): the mode in force and whether the config or a cutover set it.
                    (
                        "receipts",
                        .array(
                            receiptModes.map { r in
                                .object(
                                    JSONObject([
                                        ("bundle_id", .string(r.bundleID)),
                                        ("environment", .string(r.environment.rawValue)),
                                        ("mode", .string(r.mode.rawValue)),
                                        ("origin", .string(r.origin.rawValue)),
                                    ])
                                )
                            }
                        )
                    ),
                    // What Apple sends, per app and environment, as the gateway last read it from App Store Connect, and the
                    // switch in progress or last finished (docs/operations.md, "Migrating a bundle").
                    (
                        "apple",
                        .array(
                            apple.map { a in
                                .object(
                                    JSONObject([
                                        ("bundle_id", .string(a.bundleID)),
                                        ("environment", .string(a.environment.rawValue)),
                                        ("version", text(a.appleVersion?.rawValue)), ("url", text(a.appleURL)),
                                        ("read_at", a.readAt.map(number) ?? .null),
                                        (
                                            "switch",
                                            a.migrationID == nil
                                                ? .null
                                                : .object(
                                                    JSONObject([
                                                        ("migration_id", text(a.migrationID)),
                                                        ("target", text(a.target?.rawValue)),
                                                        ("previous", text(a.previous?.rawValue)),
                                                        ("step", text(a.step?.rawValue)),
                                                        ("updated_at", a.updatedAt.map(number) ?? .null),
                                                        ("error", text(a.error)),
                                                    ])
                                                )
                                        ),
                                    ])
                                )
                            }
                        )
                    ),
                    ("downstreams", .array(downstreamSettings.map(Self.status(of:)))),
                ])
            )
        }
    }

    /// A downstream as `/admin/status` shows it: its kind, environments, `shadow`, limits and `filter` (null: it takes
    /// every event its apps and environments give it).
    static func status(of d: GatewayConfig.Downstream) -> JSONValue {
        func strings(_ s: some Sequence<String>) -> JSONValue { .array(s.sorted().map { .string($0) }) }
        let f = d.filter
        return .object(
            JSONObject([
                ("name", .string(d.name)),
                ("kind", .string(d.kind.rawValue)),
                ("environments", strings(d.environments.map(\.rawValue))),
                ("shadow", .bool(d.shadow)),
                ("concurrency", .number(String(d.concurrency))),
                ("max_per_second", d.maxPerSecond.map { .number(String($0)) } ?? .null),
                (
                    "filter",
                    f.takesEverything
                        ? .null
                        : .object(
                            JSONObject([
                                ("kinds", strings(f.kinds.map(\.rawValue))),
                                ("types", strings(f.types)),
                                ("bundles", strings(f.bundles)),
                                ("authoritative", f.authoritative.map { .bool($0) } ?? .null),
                            ])
                        )
                ),
            ])
        )
    }

    /// Quarantined rows (without bodies), with each lane's usage.
    public func quarantineList(lane: QuarantineRecord.Lane? = nil, limit: Int = 100) throws -> JSONValue {
        let rows = try store.read { tx in try tx.quarantined(lane: lane, id: nil, limit: limit) }
        return .array(
            rows.map { r in
                .object(
                    JSONObject([
                        ("id", .number(String(r.id))), ("lane", .string(r.lane.rawValue)),
                        ("received_at", .number(String(r.receivedAt))),
                        ("version", r.version.map { .string($0.rawValue) } ?? .null), ("code", .string(r.code)),
                        ("message", .string(r.message)),
                        ("bundle_id", r.bundleID.map { .string($0) } ?? .null),
                        ("environment", r.environment.map { .string($0) } ?? .null),
                        ("size", .number(String(r.storedSize))), ("replay_attempts", .number(String(r.replayAttempts))),
                        ("last_replay_at", r.lastReplayAt.map { .number(String($0)) } ?? .null),
                        ("last_replay_code", r.lastReplayCode.map { .string($0) } ?? .null),
                    ])
                )
            }
        )
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
    /// (docs/operations.md). A row now accepted (or a duplicate) leaves the quarantine; one that still fails stays, with
    /// its outcome recorded on it, and never stops the rows after it. V1 rows get back the secret whose SHA-256
    /// matches the fingerprint they kept, if one is configured now.
    ///
    /// Each row is marked as being replayed, durably, before it runs. A row still marked from an earlier replay
    /// took that process down: it is skipped (`replay_interrupted`) unless selected by id, so one poisonous row can
    /// never block the others for good.
    public func quarantineReplay(
        ingest: NotificationIngest,
        secrets: [SharedSecret],
        selection: QuarantineSelection = .init()
    )
        throws -> JSONValue
    {
        let rows = try store.read { tx in
            try tx.quarantined(lane: selection.lane, id: selection.id, limit: selection.limit)
        }
        var results: [JSONValue] = []
        for row in rows {
            let id = row.id
            if row.replayStartedAt != nil, selection.id == nil {
                results.append(Self.replayResult(id, status: nil, code: "replay_interrupted"))
                continue
            }
            var body = row.body
            if row.version == .v1 {
                guard let fingerprint = row.passwordFingerprint,
                    let secret = secrets.first(where: { SHA256.hex(Array($0.revealedValue.utf8)) == fingerprint }),
                    case .object(let o)? = try? JSONParser.parse(body)
                else {
                    try? record(id, code: "no_matching_secret")
                    results.append(Self.replayResult(id, status: nil, code: "no_matching_secret"))
                    continue
                }
                body = JSONValue.object(JSONObject(o.members + [("password", .string(secret.revealedValue))]))
                    .canonicalBytes()
            }
            let started = now()
            do {
                try store.write { tx in try tx.beginReplay(id: id, now: started) }
            } catch {
                results.append(Self.replayResult(id, status: nil, code: OutcomeCode.storeUnavailable.rawValue))
                continue
            }
            let result = ingest.handle(body, origin: .quarantineReplay(arrivedAt: row.receivedAt))
            do {
                if result.status == 200 {
                    try store.write { tx in try tx.removeQuarantined(id: id) }
                } else {
                    try record(id, code: result.code ?? "status_\(result.status)")
                }
                results.append(Self.replayResult(id, status: result.status, code: result.code))
            } catch {
                results.append(
                    Self.replayResult(id, status: result.status, code: OutcomeCode.storeUnavailable.rawValue)
                )
            }
        }
        return .array(results)
    }

    private func record(_ id: Int64, code: String) throws {
        let time = now()
        try store.write { tx in try tx.finishReplay(id: id, code: code, now: time) }
    }

    static func replayResult(_ id: Int64, status: Int?, code: String?) -> JSONValue {
        .object(
            JSONObject([
                ("id", .number(String(id))), ("status", status.map { .number(String($0)) } ?? .null),
                ("code", code.map { .string($0) } ?? .null),
            ])
        )
    }
}
