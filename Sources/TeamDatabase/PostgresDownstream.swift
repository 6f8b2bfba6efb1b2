internal import Canonical
internal import Postgres
internal import Rows
import Synchronization
internal import WireJSON

/// A `database` downstream into the team's PostgreSQL (docs/database-downstream.md): `events`, `subscriptions` and
/// `schema_version` in one schema of their own (created when missing).
///
/// The connection string goes to libpq untouched and never into an error or a log. A small pool (one session per
/// delivery in flight) is opened on the first write and kept; it reconnects by itself after the server restarts or
/// the network drops, and while the server is down every write fails fast with a connection error (the delivery is
/// retried with backoff). Each write runs in one transaction with `statement_timeout` set, so a lock held by the
/// team's own code cannot hold a delivery for ever.
public final class PostgresDownstream: DownstreamDatabase {
    public struct Options: Sendable {
        /// Sessions at most (deliveries in flight to this downstream at once).
        public var connections = 4
        /// `statement_timeout` of each write, and how long a write waits for a free session.
        public var timeoutMillis: Int64 = 15_000
        public init() {}
    }

    public let schema: String
    private let conninfo: String
    private let label: String
    private let options: Options
    private let names: DownstreamSchema.Names
    private let insertEvent: String
    private let upsertSubscription: String
    private let state = Mutex<State>(State())

    private struct State {
        var pool: PostgresPool?
        /// The tables were found at this gateway's version on the current pool.
        var schemaReady = false
    }

    /// Checks that the connection string parses (without connecting): for `serve`'s start-up checks. The error names
    /// `label`, never the string.
    public static func validate(connectionString: String, label: String) throws(DownstreamDatabaseError) {
        do throws(PostgresError) {
            try PostgresConnection.validate(connectionString, label: label)
        } catch {
            throw DownstreamDatabaseError("\(label): the connection string does not parse")
        }
    }

    /// Nothing is connected yet. `schema`: a ``DownstreamNames/isValid(_:)`` name.
    public init(
        connectionString: String,
        schema: String = DownstreamNames.defaultSchema,
        label: String,
        options: Options = .init()
    ) {
        (self.conninfo, self.schema, self.label, self.options) = (connectionString, schema, label, options)
        names = .postgres(schema: schema)
        let count = DownstreamSchema.eventColumns.count
        insertEvent = DownstreamSchema.insertEvent(into: names.events, placeholders: (1...count).map { "$\($0)" })
        upsertSubscription = DownstreamSchema.upsertSubscription(
            into: names.subscriptions,
            alias: "s",
            placeholders: (1...DownstreamSchema.subscriptionColumns.count).map { "$\($0)" },
            collate: " COLLATE \"C\""
        )
    }

    public var description: String { "PostgreSQL schema \(schema)" }

    public func write(_ event: DownstreamEvent) throws(DownstreamDatabaseError) -> DownstreamWrite {
        let eventRow = DownstreamRows.event(event).map(Self.value)
        let subscriptionRow = DownstreamRows.subscription(event)?.map(Self.value)
        let timeout = max(1, options.timeoutMillis)
        return try use { pool in
            try pool.transaction { c in
                try c.execute("SET LOCAL statement_timeout = \(timeout)")
                let inserted = try c.run(insertEvent, eventRow) > 0
                let updated = try subscriptionRow.map { try c.run(upsertSubscription, $0) > 0 } ?? false
                return DownstreamWrite(eventInserted: inserted, subscriptionUpdated: updated)
            }
        }
    }

    public func contents() throws(DownstreamDatabaseError) -> DownstreamContents {
        let names = self.names
        return try use { pool in
            try pool.transaction(isolation: .repeatableRead) { c in
                let version = try SchemaVersions.applied(in: names.schemaVersion) { try c.query($0) }.max()
                let events = try c.query(
                    DownstreamSchema.selectEvents(
                        from: names.events,
                        eventAsText: "event::text",
                        collate: " COLLATE \"C\""
                    )
                ).map(DownstreamEventRow.init(row:))
                let subscriptions = try c.query(
                    DownstreamSchema.selectSubscriptions(from: names.subscriptions, collate: " COLLATE \"C\"")
                )
                .map(DownstreamSubscriptionRow.init(row:))
                return DownstreamContents(schemaVersion: version, events: events, subscriptions: subscriptions)
            }
        }
    }

    public func close() {
        let pool = state.withLock { s in
            defer { (s.pool, s.schemaReady) = (nil, false) }
            return s.pool
        }
        pool?.close()
    }

    /// Runs `body` with the pool (made first, and the tables checked or created, when needed). A failure makes the
    /// next call check the tables again; the pool itself reconnects broken sessions.
    private func use<T>(_ body: (PostgresPool) throws -> T) throws(DownstreamDatabaseError) -> T {
        do {
            let (pool, ready) = try state.withLock { s in
                if s.pool == nil {
                    var o = PostgresPool.Options()
                    o.size = max(1, min(options.connections, 16))
                    o.borrowTimeout = .milliseconds(max(1, options.timeoutMillis))
                    o.label = label
                    s.pool = try PostgresPool(conninfo, options: o)
                    s.schemaReady = false
                }
                return (s.pool!, s.schemaReady)
            }
            if !ready {
                try pool.withConnection { c in try ensureSchema(c) }
                state.withLock { s in if s.pool === pool { s.schemaReady = true } }
            }
            do {
                return try body(pool)
            } catch {
                state.withLock { s in if s.pool === pool { s.schemaReady = false } }
                throw error
            }
        } catch {
            throw DownstreamDatabaseError("\(label): PostgreSQL: \(redacted(Self.describe(error)))")
        }
    }

    /// Creates the schema and the tables when missing and applies newer versions, under an advisory lock (several
    /// gateway instances may start at once). Refuses a schema whose `events` or `subscriptions` table was not made by
    /// the gateway (no `schema_version` beside it), or that a newer gateway wrote. Tables at this version already: one
    /// catalog query, no DDL (so a role with no CREATE privilege can write into tables a DBA made from the docs).
    private func ensureSchema(_ c: PostgresConnection) throws {
        if try currentVersion(c) == DownstreamSchema.version { return }
        let (schema, names) = (self.schema, self.names)
        try c.transaction { c in
            _ = try c.query(
                "SELECT pg_advisory_xact_lock(hashtext($1))",
                [.text("iap-gateway database downstream " + schema)]
            )
            let current = try currentVersion(c)
            guard current <= DownstreamSchema.version else {
                throw DownstreamDatabaseError(
                    "schema \(schema) is at version \(current), newer than this gateway's \(DownstreamSchema.version)"
                )
            }
            guard current < DownstreamSchema.version else { return }
            if try c.queryOne("SELECT 1 AS y FROM pg_namespace WHERE nspname = $1", [.text(schema)]) == nil {
                try c.execute(DownstreamSchema.postgresSchemaStatement(schema))
            }
            try c.execute(names.apply(DownstreamSchema.postgresVersionTable))
            for (index, migration) in DownstreamSchema.migrations.enumerated() where index + 1 > current {
                try c.execute(names.apply(migration.postgres))
                try c.run(
                    "INSERT INTO \(names.schemaVersion) (version, applied_at) VALUES ($1, (extract(epoch FROM now()) * 1000)::bigint)",
                    [.int64(Int64(index + 1))]
                )
            }
        }
    }

    /// The version recorded in `schema_version`, 0 when there is none; throws when `events` or `subscriptions`
    /// exists without it (someone else's tables).
    private func currentVersion(_ c: PostgresConnection) throws -> Int {
        let present = Set(
            try c.query(
                """
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relname IN ('events', 'subscriptions', 'schema_version')
                """,
                [.text(schema)]
            ).compactMap { $0.string("relname") }
        )
        if present.contains("schema_version") {
            return try SchemaVersions.applied(in: names.schemaVersion) { try c.query($0) }.max() ?? 0
        }
        if let foreign = ["events", "subscriptions"].first(where: present.contains) {
            throw DownstreamDatabaseError(
                "a table \(schema).\(foreign) exists that iap-gateway did not create (no \(schema).schema_version beside it); "
                    + "choose another schema (downstreams[].schema)"
            )
        }
        return 0
    }

    /// PostgreSQL text cannot hold NUL: a NUL in a text value is written as U+FFFD, and a `\u0000` escape in the event
    /// JSON (which `jsonb` refuses) as `\ufffd`, so one odd value cannot make an event undeliverable.
    private static func value(_ cell: DownstreamCell) -> PostgresValue {
        switch cell {
        case .text(let v): PostgresValue(v.map(withoutNUL))
        case .integer(let v): PostgresValue(v)
        case .bool(let v): PostgresValue(v)
        case .json(let v): .text(jsonWithoutNUL(v))
        }
    }

    static func withoutNUL(_ text: String) -> String {
        text.utf8.contains(0) ? text.replacing("\u{0}", with: "\u{FFFD}") : text
    }

    /// `\u0000` escapes replaced by `\ufffd` (an escaped backslash followed by `u0000` is left alone).
    static func jsonWithoutNUL(_ json: String) -> String {
        guard json.contains("\\u0000") else { return withoutNUL(json) }
        var out = String.UnicodeScalarView()
        var scalars = withoutNUL(json).unicodeScalars.makeIterator()
        while let ch = scalars.next() {
            out.append(ch)
            guard ch == "\\", let next = scalars.next() else { continue }
            guard next == "u" else {
                out.append(next)  // \\, \", \n, …: the pair is one escape
                continue
            }
            var digits = String.UnicodeScalarView()
            for _ in 0..<4 { if let d = scalars.next() { digits.append(d) } }
            out.append("u")
            out.append(contentsOf: String(digits) == "0000" ? "fffd".unicodeScalars : digits)
        }
        return String(out)
    }

    /// The connection string, should any message ever quote it, replaced (the wrapper's messages never do).
    private func redacted(_ message: String) -> String {
        conninfo.isEmpty ? message : message.replacing(conninfo, with: "[connection string]")
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case let e as DownstreamDatabaseError: e.message
        case let e as PostgresError: e.message
        default: "\(error)"
        }
    }
}
