internal import Canonical
internal import Rows
internal import SQLite
import Synchronization
internal import WireJSON

/// A `database` downstream into a SQLite file (docs/database-downstream.md): `events`, `subscriptions` and
/// `schema_version`, named `PREFIX_events` … when a prefix is given.
///
/// The file is opened on the first write and kept (WAL mode, which the SQLite wrapper requires, so the team's
/// readers read while the gateway writes; every commit synced); its folder must exist. A write that fails closes it,
/// and the next write opens it again.
public final class SQLiteDownstream: DownstreamDatabase {
    public let path: String
    public let prefix: String
    /// "downstream warehouse", for error messages.
    private let label: String
    private let names: DownstreamSchema.Names
    private let insertEvent: String
    private let upsertSubscription: String
    private let database = Mutex<SQLiteDatabase?>(nil)

    /// Nothing is opened yet. `prefix`: "" for the bare table names, else a ``DownstreamNames/isValid(_:)`` name.
    public init(path: String, prefix: String = "", label: String) {
        (self.path, self.prefix, self.label) = (path, prefix, label)
        names = .sqlite(prefix: prefix)
        insertEvent = DownstreamSchema.insertEvent(
            into: names.events,
            placeholders: DownstreamSchema.eventColumns.map { _ in "?" }
        )
        upsertSubscription = DownstreamSchema.upsertSubscription(
            into: names.subscriptions,
            alias: nil,
            placeholders: DownstreamSchema.subscriptionColumns.map { _ in "?" },
            collate: ""
        )
    }

    public var description: String { "SQLite file \(path)" }

    public func write(_ event: DownstreamEvent) throws(DownstreamDatabaseError) -> DownstreamWrite {
        let eventRow = DownstreamRows.event(event).map(Self.value)
        let subscriptionRow = DownstreamRows.subscription(event)?.map(Self.value)
        let (insertEvent, upsertSubscription) = (self.insertEvent, self.upsertSubscription)
        return try use { db in
            try db.write { c in
                let inserted = try c.run(insertEvent, eventRow) > 0
                let updated = try subscriptionRow.map { try c.run(upsertSubscription, $0) > 0 } ?? false
                return DownstreamWrite(eventInserted: inserted, subscriptionUpdated: updated)
            }
        }
    }

    public func contents() throws(DownstreamDatabaseError) -> DownstreamContents {
        let names = self.names
        return try use { db in
            try db.readTransaction { c in
                let version = try SchemaVersions.applied(in: names.schemaVersion) { try c.query($0) }.max()
                let events = try c.query(
                    DownstreamSchema.selectEvents(from: names.events, eventAsText: "event", collate: "")
                ).map(DownstreamEventRow.init(row:))
                let subscriptions = try c.query(
                    DownstreamSchema.selectSubscriptions(from: names.subscriptions, collate: "")
                ).map(DownstreamSubscriptionRow.init(row:))
                return DownstreamContents(schemaVersion: version, events: events, subscriptions: subscriptions)
            }
        }
    }

    public func close() {
        let db = database.withLock { db in
            defer { db = nil }
            return db
        }
        db?.close()
    }

    /// Runs `body` with the open database (opening it, and creating or upgrading the tables, first); on failure the
    /// database is closed so that the next call opens it afresh.
    private func use<T>(_ body: (SQLiteDatabase) throws -> T) throws(DownstreamDatabaseError) -> T {
        let db: SQLiteDatabase
        do {
            db = try database.withLock { current in
                if let current { return current }
                let opened = try open()
                current = opened
                return opened
            }
        } catch {
            throw DownstreamDatabaseError("\(label): cannot open the SQLite file: \(Self.describe(error))")
        }
        do {
            return try body(db)
        } catch {
            let failed = database.withLock { current in
                guard current === db else { return false }
                current = nil
                return true
            }
            if failed { db.close() }
            throw DownstreamDatabaseError("\(label): SQLite: \(Self.describe(error))")
        }
    }

    private func open() throws -> SQLiteDatabase {
        var options = SQLiteDatabase.Options()
        options.readerCount = 1
        options.synchronous = .full
        let db = try SQLiteDatabase(path: path, options: options)
        do {
            try ensureSchema(db)
        } catch {
            db.close()
            throw error
        }
        return db
    }

    /// Creates the tables when missing and applies newer versions, in one write transaction. Refuses a file whose
    /// `events` or `subscriptions` table was not made by the gateway (no `schema_version` beside it), or that a newer
    /// gateway wrote.
    private func ensureSchema(_ db: SQLiteDatabase) throws {
        let names = self.names
        try db.write { c in
            let present = Set(
                try c.query(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)",
                    [.text(names.bare.events), .text(names.bare.subscriptions), .text(names.bare.schemaVersion)]
                ).compactMap { $0.string("name") }
            )
            var current = 0
            if present.contains(names.bare.schemaVersion) {
                current = try SchemaVersions.applied(in: names.schemaVersion) { try c.query($0) }.max() ?? 0
            } else if let foreign = [names.bare.events, names.bare.subscriptions].first(where: present.contains) {
                throw DownstreamDatabaseError(
                    "a table \(foreign) exists that iap-gateway did not create (no \(names.bare.schemaVersion) beside it); "
                        + "choose another file or a prefix (downstreams[].schema)"
                )
            }
            guard current <= DownstreamSchema.version else {
                throw DownstreamDatabaseError(
                    "the tables are at schema version \(current), newer than this gateway's \(DownstreamSchema.version)"
                )
            }
            guard current < DownstreamSchema.version else { return }
            try c.execute(names.apply(DownstreamSchema.sqliteVersionTable))
            for (index, migration) in DownstreamSchema.migrations.enumerated() where index + 1 > current {
                try c.execute(names.apply(migration.sqlite))
                try c.run(
                    "INSERT INTO \(names.schemaVersion) (version, applied_at) VALUES (?, CAST(strftime('%s', 'now') AS INTEGER) * 1000)",
                    [.integer(Int64(index + 1))]
                )
            }
        }
    }

    private static func value(_ cell: DownstreamCell) -> SQLiteValue {
        switch cell {
        case .text(let v): SQLiteValue(v)
        case .integer(let v): SQLiteValue(v)
        case .bool(let v): SQLiteValue(v)
        case .json(let v): .text(v)
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case let e as DownstreamDatabaseError: e.message
        case let e as SQLiteError: e.message
        default: "\(error)"
        }
    }
}
