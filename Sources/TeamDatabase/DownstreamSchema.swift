/// The public schema of a `database` downstream (docs/database-downstream.md shows the same DDL; a test holds them
/// equal): `events`, `subscriptions` and `schema_version`, for PostgreSQL (in a schema of their own) and SQLite
/// (optionally behind a table-name prefix). Versioned: ``migrations`` lists each version's DDL; a shipped version is
/// never edited, a change is a new version that only adds. The gateway never drops or alters anything else.
public enum DownstreamSchema {
    /// The newest version this gateway writes.
    public static var version: Int { migrations.count }

    /// `events` columns, in the order of ``DownstreamRows/event(_:)``.
    static let eventColumns = [
        "id", "source", "kind", "reason", "raw_type", "raw_subtype", "bundle_id", "environment",
        "original_transaction_id",
        "transaction_id", "product_id", "product_type", "purchase_date", "expires_date", "revocation_date",
        "grace_period_expires_date", "event_date", "entitlement_state", "entitlement_until", "auto_renew",
        "auto_renew_product_id", "in_billing_retry", "verified", "authoritative", "event", "delivered_at",
    ]

    /// `subscriptions` columns, in the order of ``DownstreamRows/subscription(_:)``.
    static let subscriptionColumns = [
        "original_transaction_id", "environment", "bundle_id", "product_id", "entitlement_state", "entitlement_until",
        "expires_date", "auto_renew", "auto_renew_product_id", "last_event_id", "last_event_kind", "last_event_date",
        "updated_at",
    ]

    /// The columns an accepted newer event replaces (all but the key).
    static var subscriptionUpdates: [String] { Array(subscriptionColumns.dropFirst(2)) }

    /// Both databases' DDL of one version, with `{events}`, `{subscriptions}` and `{index}` standing for the
    /// (qualified) names.
    struct Migration {
        var postgres: String
        var sqlite: String
    }

    static let migrations: [Migration] = [
        Migration(
            postgres: """
                CREATE TABLE IF NOT EXISTS {events} (
                    id                        text PRIMARY KEY,
                    source                    text NOT NULL,
                    kind                      text NOT NULL,
                    reason                    text,
                    raw_type                  text NOT NULL,
                    raw_subtype               text,
                    bundle_id                 text,
                    environment               text,
                    original_transaction_id   text,
                    transaction_id            text,
                    product_id                text,
                    product_type              text,
                    purchase_date             bigint,
                    expires_date              bigint,
                    revocation_date           bigint,
                    grace_period_expires_date bigint,
                    event_date                bigint NOT NULL,
                    entitlement_state         text,
                    entitlement_until         bigint,
                    auto_renew                boolean,
                    auto_renew_product_id     text,
                    in_billing_retry          boolean,
                    verified                  boolean NOT NULL,
                    authoritative             boolean NOT NULL,
                    event                     jsonb NOT NULL,
                    delivered_at              bigint NOT NULL
                );
                CREATE INDEX IF NOT EXISTS {index} ON {events} (original_transaction_id, environment, event_date);
                CREATE TABLE IF NOT EXISTS {subscriptions} (
                    original_transaction_id   text NOT NULL,
                    environment               text NOT NULL,
                    bundle_id                 text,
                    product_id                text,
                    entitlement_state         text,
                    entitlement_until         bigint,
                    expires_date              bigint,
                    auto_renew                boolean,
                    auto_renew_product_id     text,
                    last_event_id             text NOT NULL,
                    last_event_kind           text NOT NULL,
                    last_event_date           bigint NOT NULL,
                    updated_at                bigint NOT NULL,
                    PRIMARY KEY (original_transaction_id, environment)
                );
                """,
            sqlite: """
                CREATE TABLE IF NOT EXISTS {events} (
                    id                        TEXT PRIMARY KEY,
                    source                    TEXT NOT NULL,
                    kind                      TEXT NOT NULL,
                    reason                    TEXT,
                    raw_type                  TEXT NOT NULL,
                    raw_subtype               TEXT,
                    bundle_id                 TEXT,
                    environment               TEXT,
                    original_transaction_id   TEXT,
                    transaction_id            TEXT,
                    product_id                TEXT,
                    product_type              TEXT,
                    purchase_date             INTEGER,
                    expires_date              INTEGER,
                    revocation_date           INTEGER,
                    grace_period_expires_date INTEGER,
                    event_date                INTEGER NOT NULL,
                    entitlement_state         TEXT,
                    entitlement_until         INTEGER,
                    auto_renew                INTEGER,
                    auto_renew_product_id     TEXT,
                    in_billing_retry          INTEGER,
                    verified                  INTEGER NOT NULL,
                    authoritative             INTEGER NOT NULL,
                    event                     TEXT NOT NULL,
                    delivered_at              INTEGER NOT NULL
                );
                CREATE INDEX IF NOT EXISTS {index} ON {events} (original_transaction_id, environment, event_date);
                CREATE TABLE IF NOT EXISTS {subscriptions} (
                    original_transaction_id   TEXT NOT NULL,
                    environment               TEXT NOT NULL,
                    bundle_id                 TEXT,
                    product_id                TEXT,
                    entitlement_state         TEXT,
                    entitlement_until         INTEGER,
                    expires_date              INTEGER,
                    auto_renew                INTEGER,
                    auto_renew_product_id     TEXT,
                    last_event_id             TEXT NOT NULL,
                    last_event_kind           TEXT NOT NULL,
                    last_event_date           INTEGER NOT NULL,
                    updated_at                INTEGER NOT NULL,
                    PRIMARY KEY (original_transaction_id, environment)
                );
                """
        )
    ]

    static let postgresVersionTable = """
        CREATE TABLE IF NOT EXISTS {schema_version} (
            version    integer PRIMARY KEY,
            applied_at bigint NOT NULL
        );
        """

    static let sqliteVersionTable = """
        CREATE TABLE IF NOT EXISTS {schema_version} (
            version    INTEGER PRIMARY KEY,
            applied_at INTEGER NOT NULL
        );
        """

    /// The tables' names in one database.
    struct Names {
        var events: String
        var subscriptions: String
        var schemaVersion: String
        var index: String
        /// The bare names, as the catalog lists them (`events`, or `iap_events` with a SQLite prefix).
        var bare: (events: String, subscriptions: String, schemaVersion: String)

        /// PostgreSQL: schema-qualified, quoted.
        static func postgres(schema: String) -> Names {
            Names(
                events: "\"\(schema)\".events",
                subscriptions: "\"\(schema)\".subscriptions",
                schemaVersion: "\"\(schema)\".schema_version",
                index: "events_by_subscription",
                bare: ("events", "subscriptions", "schema_version")
            )
        }

        /// SQLite: `prefix_events` with a prefix, `events` without; quoted.
        static func sqlite(prefix: String) -> Names {
            let p = prefix.isEmpty ? "" : prefix + "_"
            return Names(
                events: "\"\(p)events\"",
                subscriptions: "\"\(p)subscriptions\"",
                schemaVersion: "\"\(p)schema_version\"",
                index: "\"\(p)events_by_subscription\"",
                bare: (p + "events", p + "subscriptions", p + "schema_version")
            )
        }

        func apply(_ ddl: String) -> String {
            ddl.replacing("{events}", with: events).replacing("{subscriptions}", with: subscriptions)
                .replacing("{schema_version}", with: schemaVersion).replacing("{index}", with: index)
        }
    }

    /// The whole DDL of the newest version for PostgreSQL, as docs/database-downstream.md shows it.
    public static func postgresDDL(schema: String) -> String {
        let names = Names.postgres(schema: schema)
        return
            ([postgresSchemaStatement(schema), names.apply(postgresVersionTable)]
            + migrations.map { names.apply($0.postgres) })
            .joined(separator: "\n")
    }

    /// The whole DDL of the newest version for SQLite, as docs/database-downstream.md shows it.
    public static func sqliteDDL(prefix: String) -> String {
        let names = Names.sqlite(prefix: prefix)
        return ([names.apply(sqliteVersionTable)] + migrations.map { names.apply($0.sqlite) }).joined(separator: "\n")
    }

    static func postgresSchemaStatement(_ schema: String) -> String { "CREATE SCHEMA IF NOT EXISTS \"\(schema)\";" }

    // MARK: Statements

    static func insertEvent(into table: String, placeholders: [String]) -> String {
        "INSERT INTO \(table) (\(eventColumns.joined(separator: ", "))) VALUES (\(placeholders.joined(separator: ", "))) "
            + "ON CONFLICT (id) DO NOTHING"
    }

    /// Last write wins on `event_date`, ties broken by the event id in byte order (`collate`: PostgreSQL's `"C"`,
    /// SQLite's default is already binary): an older or equal event is a no-op, so any delivery order converges.
    static func upsertSubscription(
        into table: String,
        alias: String?,
        placeholders: [String],
        collate: String
    ) -> String {
        let target = alias ?? table
        let sets = subscriptionUpdates.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        return
            "INSERT INTO \(table)\(alias.map { " AS \($0)" } ?? "") (\(subscriptionColumns.joined(separator: ", "))) "
            + "VALUES (\(placeholders.joined(separator: ", "))) "
            + "ON CONFLICT (original_transaction_id, environment) DO UPDATE SET \(sets) "
            + "WHERE excluded.last_event_date > \(target).last_event_date "
            + "OR (excluded.last_event_date = \(target).last_event_date "
            + "AND excluded.last_event_id\(collate) > \(target).last_event_id\(collate))"
    }

    static func selectEvents(from table: String, eventAsText: String, collate: String) -> String {
        """
        SELECT id, source, kind, reason, bundle_id, environment, original_transaction_id, transaction_id, product_id, event_date,
               expires_date, entitlement_state, entitlement_until, auto_renew, authoritative, \(eventAsText) AS event, delivered_at
        FROM \(table) ORDER BY id\(collate)
        """
    }

    static func selectSubscriptions(from table: String, collate: String) -> String {
        "SELECT \(subscriptionColumns.joined(separator: ", ")) FROM \(table) "
            + "ORDER BY original_transaction_id\(collate), environment\(collate)"
    }
}
