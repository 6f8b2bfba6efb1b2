import Postgres
import SQLite

@testable import Store

/// The migration lists as they shipped before the schema was written once (`StoreSchema`), frozen: the stores on disk
/// were made by them, so the list written once must give every database the same tables, columns, indexes and
/// triggers, at every version (`StoreSchemaTests`). Never edit them.
enum ShippedSchema {
    static let sqlite: [SQLiteMigration] = [
        SQLiteMigration(
            version: 1,
            sql: """
                -- Every accepted notification, in arrival order. V1 bodies have the password replaced by a marker.
                CREATE TABLE journal (
                    id INTEGER PRIMARY KEY,
                    notification_key TEXT NOT NULL UNIQUE,   -- V2 notificationUUID, V1 "v1:" + SHA-256: the dedupe key
                    version TEXT NOT NULL,                   -- v1 | v2
                    received_at INTEGER NOT NULL,            -- ms since the epoch
                    origin TEXT NOT NULL DEFAULT 'live',     -- live | quarantine_replay | backfill
                    bundle_id TEXT,
                    environment TEXT,
                    notification_type TEXT,
                    subtype TEXT,
                    secret_name TEXT,                        -- V1: the configured secret that matched (its variable name)
                    leaf_serial TEXT,                        -- V2: outer token's leaf certificate serial
                    body BLOB,                               -- NULL once past raw-body retention
                    body_purged_at INTEGER
                );
                CREATE INDEX journal_received ON journal(received_at);

                -- Canonical events (JSON as delivered). rowid is the arrival order that breaks event_date ties.
                CREATE TABLE events (
                    id TEXT PRIMARY KEY,
                    journal_id INTEGER REFERENCES journal(id),
                    path TEXT NOT NULL,                      -- v1 | v2 (which generation's path produced it)
                    source TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    reason TEXT,
                    bundle_id TEXT,
                    environment TEXT,
                    original_transaction_id TEXT,
                    event_date INTEGER NOT NULL,
                    authoritative INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    json BLOB NOT NULL
                );
                CREATE INDEX events_subscription ON events(original_transaction_id, event_date);
                CREATE INDEX events_created ON events(created_at);
                CREATE INDEX events_journal ON events(journal_id);

                -- Durable delivery queue: one row per (downstream, event) or (downstream, V1 body) for pass-through.
                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY,
                    downstream TEXT NOT NULL,
                    event_id TEXT REFERENCES events(id),
                    journal_id INTEGER REFERENCES journal(id),
                    state TEXT NOT NULL DEFAULT 'pending',   -- pending | delivered | dead
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    delivered_at INTEGER,
                    last_status INTEGER,
                    last_error TEXT,
                    UNIQUE (downstream, event_id),
                    UNIQUE (downstream, journal_id)
                );
                CREATE INDEX outbox_due ON outbox(state, next_attempt_at);

                -- V1 notifications waiting for Apple's verifyReceipt answer.
                CREATE TABLE receipt_jobs (
                    journal_id INTEGER PRIMARY KEY REFERENCES journal(id),
                    state TEXT NOT NULL DEFAULT 'pending',   -- pending | done | failed
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL,
                    last_error TEXT,
                    apple_status INTEGER,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX receipt_jobs_due ON receipt_jobs(state, next_attempt_at);

                -- Refused bodies in two lanes with their own caps: forged/malformed (untrusted) and Apple-signed or
                -- secret-authenticated but unservable (genuine). V1 bodies never keep the password.
                CREATE TABLE quarantine (
                    id INTEGER PRIMARY KEY,
                    lane TEXT NOT NULL,                      -- untrusted | genuine
                    received_at INTEGER NOT NULL,
                    version TEXT,
                    code TEXT NOT NULL,
                    message TEXT,
                    bundle_id TEXT,
                    environment TEXT,
                    password_fingerprint TEXT,               -- V1: SHA-256 of the presented password
                    body BLOB
                );
                CREATE INDEX quarantine_lane ON quarantine(lane, id);

                -- Each subscription's latest state per path: last write wins on (event_date, arrival order).
                CREATE TABLE subscription_state (
                    path TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    bundle_id TEXT,
                    event_id TEXT NOT NULL,
                    event_date INTEGER NOT NULL,
                    event_seq INTEGER NOT NULL,
                    json BLOB NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (path, environment, original_transaction_id)
                );

                -- Which generation is authoritative per bundle and environment. The config seeds it; a cutover
                -- (origin 'cutover') wins over the config on restart.
                CREATE TABLE authority (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    authority TEXT NOT NULL,                 -- v1 | v2
                    origin TEXT NOT NULL,                    -- config | cutover
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, environment)
                );
                """
        ),
        SQLiteMigration(
            version: 2,
            sql: """
                -- The authority in force when the notification arrived: its own events and the events derived from it
                -- (v2-api from a V1 notification) are authoritative on exactly one path, whatever a cutover does
                -- meanwhile — nothing is lost or doubled across a switch.
                ALTER TABLE journal ADD COLUMN authority TEXT;
                CREATE INDEX journal_generation ON journal(bundle_id, environment, version, received_at);

                -- The latest receipt seen per subscription (V1 notifications' latest_receipt): the V1 path's view of a
                -- subscription Apple reports in V2 is verifyReceipt of it.
                CREATE TABLE v1_receipts (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    receipt TEXT NOT NULL,
                    secret_name TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, environment, original_transaction_id)
                );

                -- Each path's latest outcome snapshot per subscription (compare: true bundles).
                CREATE TABLE snapshots (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    path TEXT NOT NULL,                      -- v1 | v2
                    source TEXT NOT NULL,                    -- v1-receipt | v2 | v2-api
                    observed_at INTEGER NOT NULL,
                    json BLOB NOT NULL,
                    PRIMARY KEY (bundle_id, environment, original_transaction_id, path)
                );

                -- Fetches of the other path's view, off the request path: 'v2' asks the App Store Server API (and, with
                -- v1_event_id, derives the v2-api event), 'v1' asks verifyReceipt with the stored receipt.
                CREATE TABLE compare_jobs (
                    id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    fetch TEXT NOT NULL,                     -- v1 | v2
                    v1_event_id TEXT,                        -- derive a v2-api event from this V1 event
                    authority TEXT,                          -- the notification's authority (journal.authority)
                    compare INTEGER NOT NULL,                -- record the pair in the ledger
                    state TEXT NOT NULL DEFAULT 'pending',   -- pending | done | failed
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    last_error TEXT
                );
                CREATE INDEX compare_jobs_due ON compare_jobs(state, next_attempt_at);

                -- The compare ledger: one row per comparison of the two paths' snapshots of a subscription, or per
                -- subscription one path never saw within the grace window.
                CREATE TABLE compare_ledger (
                    id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    compared_at INTEGER NOT NULL,
                    outcome TEXT NOT NULL,                   -- agree | disagree | v1_only | v2_only
                    fields TEXT,                             -- disagreeing fields, comma-separated
                    v1_json BLOB,
                    v2_json BLOB
                );
                CREATE INDEX compare_ledger_bundle ON compare_ledger(bundle_id, environment, compared_at);

                -- Every authority change: when, who, from, to, why, and the verdict at the time.
                CREATE TABLE cutover_log (
                    id INTEGER PRIMARY KEY,
                    at INTEGER NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    from_authority TEXT NOT NULL,
                    to_authority TEXT NOT NULL,
                    who TEXT NOT NULL,
                    reason TEXT,
                    verdict TEXT NOT NULL,
                    forced INTEGER NOT NULL
                );
                """
        ),
        SQLiteMigration(
            version: 3,
            sql: """
                -- The silence alert asks every minute for each bundle's latest event per path, and the report counts
                -- events per bundle over a window: without this both scan the whole events table.
                CREATE INDEX events_bundle_path ON events(bundle_id, environment, path, created_at);
                """
        ),
        SQLiteMigration(
            version: 4,
            sql: """
                -- A disagreement between snapshots observed at different times may only be the subscription changing
                -- between the two observations: it is confirmed by fetching the older side again (at most twice)
                -- before the ledger records it. `confirms` counts the refetches that led to this job.
                ALTER TABLE compare_jobs ADD COLUMN confirms INTEGER NOT NULL DEFAULT 0;
                -- Deliveries are read per downstream, so a slow one never holds back the others.
                CREATE INDEX outbox_downstream_due ON outbox(downstream, state, next_attempt_at);
                """
        ),
        SQLiteMigration(
            version: 5,
            sql: """
                -- Quarantine lanes are capped in bytes, not only in rows: forged traffic can send 1 MiB bodies. Each
                -- row carries its size (body plus the text stored beside it); quarantine_usage keeps each lane's
                -- total, maintained by triggers so every insert and delete (eviction, replay, retention) counts.
                ALTER TABLE quarantine ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                UPDATE quarantine SET size = (256 + COALESCE(length(body), 0) + COALESCE(length(message), 0)
                    + length(code) + COALESCE(length(bundle_id), 0) + COALESCE(length(environment), 0) + 4091) / 4092 * 4096;
                -- Replay bookkeeping: a row that fails replay stays, with its outcome; replay_started_at is set while
                -- a replay of the row runs, so a row that ever took the process down is skipped afterwards (reported
                -- as replay_interrupted) instead of blocking every replay behind it.
                ALTER TABLE quarantine ADD COLUMN replay_attempts INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE quarantine ADD COLUMN replay_started_at INTEGER;
                ALTER TABLE quarantine ADD COLUMN last_replay_at INTEGER;
                ALTER TABLE quarantine ADD COLUMN last_replay_code TEXT;
                CREATE TABLE quarantine_usage (
                    lane TEXT PRIMARY KEY,
                    rows INTEGER NOT NULL,
                    bytes INTEGER NOT NULL
                );
                INSERT INTO quarantine_usage (lane, rows, bytes)
                    SELECT lane, COUNT(*), SUM(size) FROM quarantine GROUP BY lane;
                CREATE TRIGGER quarantine_usage_insert AFTER INSERT ON quarantine BEGIN
                    INSERT INTO quarantine_usage (lane, rows, bytes) VALUES (NEW.lane, 1, NEW.size)
                    ON CONFLICT(lane) DO UPDATE SET rows = rows + 1, bytes = bytes + NEW.size;
                END;
                CREATE TRIGGER quarantine_usage_delete AFTER DELETE ON quarantine BEGIN
                    UPDATE quarantine_usage SET rows = rows - 1, bytes = bytes - OLD.size WHERE lane = OLD.lane;
                END;
                CREATE TRIGGER quarantine_usage_update AFTER UPDATE OF size, lane ON quarantine BEGIN
                    UPDATE quarantine_usage SET rows = rows - 1, bytes = bytes - OLD.size WHERE lane = OLD.lane;
                    INSERT INTO quarantine_usage (lane, rows, bytes) VALUES (NEW.lane, 1, NEW.size)
                    ON CONFLICT(lane) DO UPDATE SET rows = rows + 1, bytes = bytes + NEW.size;
                END;
                """
        ),
        SQLiteMigration(
            version: 6,
            sql: """
                -- Recovery (reconciliation and the notification-history sweep): how an event was recovered, when
                -- each subscription's path expires and was last checked against Apple, and the scheduled runs.
                ALTER TABLE events ADD COLUMN recovered_by TEXT;         -- reconciliation | history; NULL when live
                CREATE INDEX events_recovered ON events(created_at) WHERE recovered_by IS NOT NULL;
                ALTER TABLE subscription_state ADD COLUMN expires_date INTEGER;
                ALTER TABLE subscription_state ADD COLUMN reconciled_at INTEGER;
                UPDATE subscription_state SET expires_date = json_extract(CAST(json AS TEXT), '$.expires_date');
                CREATE INDEX subscription_state_expiry ON subscription_state(bundle_id, environment, path, expires_date);
                CREATE TABLE reconcile_runs (
                    id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    kind TEXT NOT NULL,                                  -- subscriptions | receipts | history
                    next_run_at INTEGER NOT NULL,
                    watermark INTEGER,                                   -- history: end of the last window swept
                    attempts INTEGER NOT NULL DEFAULT 0,
                    last_run_at INTEGER,
                    last_error TEXT,
                    checked INTEGER NOT NULL DEFAULT 0,
                    recovered INTEGER NOT NULL DEFAULT 0,
                    calls INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (bundle_id, environment, kind)
                );
                """
        ),
        SQLiteMigration(
            version: 7,
            sql: """
                -- A subscription's states by its original transaction id (`iap-gateway subscription`, the admin API):
                -- the primary key starts with the path and the environment, so the lookup read every state.
                CREATE INDEX subscription_state_subscription ON subscription_state(original_transaction_id);
                """
        ),
        SQLiteMigration(
            version: 8,
            sql: """
                -- A quarantined body has every configured secret replaced before it is stored. Rows stored before that
                -- (redacted = 0) are scrubbed once with the configured secrets at the next start (QuarantineScrub).
                ALTER TABLE quarantine ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX quarantine_unredacted ON quarantine(id) WHERE redacted = 0;
                """
        ),
        SQLiteMigration(
            version: 9,
            sql: """
                -- The switch of Apple's notification version (`migrate`): per app and environment, Apple's settings as
                -- last read or set and the switch in progress or last finished (each step stored before it acts); the
                -- log of every step; and which authority changes a switch made.
                CREATE TABLE apple_switches (
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    app_id TEXT,                             -- App Store Connect's id of the app
                    apple_version TEXT,                      -- v1 | v2: Apple's setting as last read or set
                    apple_url TEXT,
                    read_at INTEGER,
                    migration_id TEXT,
                    target TEXT,                             -- v1 | v2
                    previous TEXT,                           -- Apple's version before the switch: what a revert restores
                    step TEXT,                               -- preflight | patching | probing | authority | reverting | done | reverted
                    probe_token TEXT,
                    who TEXT,
                    reason TEXT,
                    forced INTEGER NOT NULL DEFAULT 0,
                    started_at INTEGER,
                    updated_at INTEGER,
                    error TEXT,
                    PRIMARY KEY (bundle_id, environment)
                );
                CREATE TABLE apple_switch_log (
                    id INTEGER PRIMARY KEY,
                    at INTEGER NOT NULL,
                    bundle_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    migration_id TEXT NOT NULL,
                    step TEXT NOT NULL,
                    outcome TEXT NOT NULL,                   -- ok | failed | refused
                    detail TEXT
                );
                CREATE INDEX apple_switch_log_app ON apple_switch_log(bundle_id, environment, id);
                ALTER TABLE cutover_log ADD COLUMN origin TEXT NOT NULL DEFAULT 'cutover';   -- cutover | migrate
                """
        ),
    ]

    static let postgres: [PostgresMigration] = [
        PostgresMigration(
            version: 1,
            sql: """
                -- Every accepted notification, in arrival order. V1 bodies have the password replaced by a marker.
                CREATE TABLE journal (
                    id bigserial PRIMARY KEY,
                    notification_key text NOT NULL UNIQUE,   -- V2 notificationUUID, V1 "v1:" + SHA-256: the dedupe key
                    version text NOT NULL,                   -- v1 | v2
                    received_at bigint NOT NULL,             -- ms since the epoch
                    origin text NOT NULL DEFAULT 'live',     -- live | quarantine_replay | backfill
                    bundle_id text,
                    environment text,
                    notification_type text,
                    subtype text,
                    secret_name text,                        -- V1: the configured secret that matched (its variable name)
                    leaf_serial text,                        -- V2: outer token's leaf certificate serial
                    body bytea,                              -- NULL once past raw-body retention
                    body_purged_at bigint
                );
                CREATE INDEX journal_received ON journal(received_at);

                -- Canonical events (JSON as delivered). seq is the arrival order that breaks event_date ties.
                CREATE TABLE events (
                    id text PRIMARY KEY,
                    seq bigserial NOT NULL UNIQUE,
                    journal_id bigint REFERENCES journal(id),
                    path text NOT NULL,                      -- v1 | v2 (which generation's path produced it)
                    source text NOT NULL,
                    kind text NOT NULL,
                    reason text,
                    bundle_id text,
                    environment text,
                    original_transaction_id text,
                    event_date bigint NOT NULL,
                    authoritative boolean NOT NULL,
                    created_at bigint NOT NULL,
                    json bytea NOT NULL
                );
                CREATE INDEX events_subscription ON events(original_transaction_id, event_date);
                CREATE INDEX events_created ON events(created_at);
                CREATE INDEX events_journal ON events(journal_id);

                -- Durable delivery queue: one row per (downstream, event) or (downstream, V1 body) for pass-through.
                -- claimed_by / claimed_until: the instance working on the row and until when (its lease).
                CREATE TABLE outbox (
                    id bigserial PRIMARY KEY,
                    downstream text NOT NULL,
                    event_id text REFERENCES events(id),
                    journal_id bigint REFERENCES journal(id),
                    state text NOT NULL DEFAULT 'pending',   -- pending | delivered | dead
                    attempts integer NOT NULL DEFAULT 0,
                    next_attempt_at bigint NOT NULL,
                    created_at bigint NOT NULL,
                    delivered_at bigint,
                    last_status integer,
                    last_error text,
                    claimed_by text,
                    claimed_until bigint,
                    UNIQUE (downstream, event_id),
                    UNIQUE (downstream, journal_id)
                );
                CREATE INDEX outbox_due ON outbox(state, next_attempt_at);

                -- V1 notifications waiting for Apple's verifyReceipt answer.
                CREATE TABLE receipt_jobs (
                    journal_id bigint PRIMARY KEY REFERENCES journal(id),
                    state text NOT NULL DEFAULT 'pending',   -- pending | done | failed
                    attempts integer NOT NULL DEFAULT 0,
                    next_attempt_at bigint NOT NULL,
                    last_error text,
                    apple_status integer,
                    updated_at bigint NOT NULL,
                    claimed_by text,
                    claimed_until bigint
                );
                CREATE INDEX receipt_jobs_due ON receipt_jobs(state, next_attempt_at);

                -- Refused bodies in two lanes with their own caps: forged/malformed (untrusted) and Apple-signed or
                -- secret-authenticated but unservable (genuine). V1 bodies never keep the password.
                CREATE TABLE quarantine (
                    id bigserial PRIMARY KEY,
                    lane text NOT NULL,                      -- untrusted | genuine
                    received_at bigint NOT NULL,
                    version text,
                    code text NOT NULL,
                    message text,
                    bundle_id text,
                    environment text,
                    password_fingerprint text,               -- V1: SHA-256 of the presented password
                    body bytea
                );
                CREATE INDEX quarantine_lane ON quarantine(lane, id);

                -- Each subscription's latest state per path: last write wins on (event_date, arrival order).
                CREATE TABLE subscription_state (
                    path text NOT NULL,
                    environment text NOT NULL,
                    original_transaction_id text NOT NULL,
                    bundle_id text,
                    event_id text NOT NULL,
                    event_date bigint NOT NULL,
                    event_seq bigint NOT NULL,               -- events.seq
                    json bytea NOT NULL,
                    updated_at bigint NOT NULL,
                    PRIMARY KEY (path, environment, original_transaction_id)
                );

                -- Which generation is authoritative per bundle and environment. The config seeds it; a cutover
                -- (origin 'cutover') wins over the config on restart.
                CREATE TABLE authority (
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    authority text NOT NULL,                 -- v1 | v2
                    origin text NOT NULL,                    -- config | cutover
                    updated_at bigint NOT NULL,
                    PRIMARY KEY (bundle_id, environment)
                );
                """
        ),
        PostgresMigration(
            version: 2,
            sql: """
                -- The authority in force when the notification arrived: its own events and the events derived from it
                -- (v2-api from a V1 notification) are authoritative on exactly one path, whatever a cutover does
                -- meanwhile — nothing is lost or doubled across a switch.
                ALTER TABLE journal ADD COLUMN authority text;
                CREATE INDEX journal_generation ON journal(bundle_id, environment, version, received_at);

                -- The latest receipt seen per subscription (V1 notifications' latest_receipt): the V1 path's view of a
                -- subscription Apple reports in V2 is verifyReceipt of it.
                CREATE TABLE v1_receipts (
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    original_transaction_id text NOT NULL,
                    receipt text NOT NULL,
                    secret_name text NOT NULL,
                    updated_at bigint NOT NULL,
                    PRIMARY KEY (bundle_id, environment, original_transaction_id)
                );

                -- Each path's latest outcome snapshot per subscription (compare: true bundles).
                CREATE TABLE snapshots (
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    original_transaction_id text NOT NULL,
                    path text NOT NULL,                      -- v1 | v2
                    source text NOT NULL,                    -- v1-receipt | v2 | v2-api
                    observed_at bigint NOT NULL,
                    json bytea NOT NULL,
                    PRIMARY KEY (bundle_id, environment, original_transaction_id, path)
                );

                -- Fetches of the other path's view, off the request path: 'v2' asks the App Store Server API (and, with
                -- v1_event_id, derives the v2-api event), 'v1' asks verifyReceipt with the stored receipt. ("fetch" is
                -- a reserved word in PostgreSQL: always quoted.)
                CREATE TABLE compare_jobs (
                    id bigserial PRIMARY KEY,
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    original_transaction_id text NOT NULL,
                    "fetch" text NOT NULL,                   -- v1 | v2
                    v1_event_id text,                        -- derive a v2-api event from this V1 event
                    authority text,                          -- the notification's authority (journal.authority)
                    compare boolean NOT NULL,                -- record the pair in the ledger
                    state text NOT NULL DEFAULT 'pending',   -- pending | done | failed
                    attempts integer NOT NULL DEFAULT 0,
                    next_attempt_at bigint NOT NULL,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL,
                    last_error text,
                    claimed_by text,
                    claimed_until bigint
                );
                CREATE INDEX compare_jobs_due ON compare_jobs(state, next_attempt_at);
                -- A plain comparison fetch is queued once per subscription and path while one is pending, also when two
                -- instances queue it at the same moment (INSERT … ON CONFLICT DO NOTHING).
                CREATE UNIQUE INDEX compare_jobs_one_pending ON compare_jobs(bundle_id, environment, original_transaction_id, "fetch")
                    WHERE state = 'pending' AND v1_event_id IS NULL;

                -- The compare ledger: one row per comparison of the two paths' snapshots of a subscription, or per
                -- subscription one path never saw within the grace window.
                CREATE TABLE compare_ledger (
                    id bigserial PRIMARY KEY,
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    original_transaction_id text NOT NULL,
                    compared_at bigint NOT NULL,
                    outcome text NOT NULL,                   -- agree | disagree | v1_only | v2_only
                    fields text,                             -- disagreeing fields, comma-separated
                    v1_json bytea,
                    v2_json bytea
                );
                CREATE INDEX compare_ledger_bundle ON compare_ledger(bundle_id, environment, compared_at);

                -- Every authority change: when, who, from, to, why, and the verdict at the time.
                CREATE TABLE cutover_log (
                    id bigserial PRIMARY KEY,
                    at bigint NOT NULL,
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    from_authority text NOT NULL,
                    to_authority text NOT NULL,
                    who text NOT NULL,
                    reason text,
                    verdict text NOT NULL,
                    forced boolean NOT NULL
                );
                """
        ),
        PostgresMigration(
            version: 3,
            sql: """
                -- The silence alert asks every minute for each bundle's latest event per path, and the report counts
                -- events per bundle over a window: without this both scan the whole events table.
                CREATE INDEX events_bundle_path ON events(bundle_id, environment, path, created_at);
                """
        ),
        PostgresMigration(
            version: 4,
            sql: """
                -- A disagreement between snapshots observed at different times may only be the subscription changing
                -- between the two observations: it is confirmed by fetching the older side again (at most twice)
                -- before the ledger records it. `confirms` counts the refetches that led to this job.
                ALTER TABLE compare_jobs ADD COLUMN confirms integer NOT NULL DEFAULT 0;
                -- Deliveries are read per downstream, so a slow one never holds back the others.
                CREATE INDEX outbox_downstream_due ON outbox(downstream, state, next_attempt_at);
                """
        ),
        PostgresMigration(
            version: 5,
            sql: """
                -- Quarantine lanes are capped in bytes, not only in rows: forged traffic can send 1 MiB bodies. Each
                -- row carries its size (body plus the text stored beside it); quarantine_usage keeps each lane's
                -- total, maintained by a trigger so every insert and delete (eviction, replay, retention) counts.
                ALTER TABLE quarantine ADD COLUMN size bigint NOT NULL DEFAULT 0;
                UPDATE quarantine SET size = (256 + COALESCE(octet_length(body), 0) + COALESCE(octet_length(message), 0)
                    + octet_length(code) + COALESCE(octet_length(bundle_id), 0) + COALESCE(octet_length(environment), 0)
                    + 4091) / 4092 * 4096;
                -- Replay bookkeeping: a row that fails replay stays, with its outcome; replay_started_at is set while
                -- a replay of the row runs, so a row that ever took the process down is skipped afterwards (reported
                -- as replay_interrupted) instead of blocking every replay behind it.
                ALTER TABLE quarantine ADD COLUMN replay_attempts integer NOT NULL DEFAULT 0;
                ALTER TABLE quarantine ADD COLUMN replay_started_at bigint;
                ALTER TABLE quarantine ADD COLUMN last_replay_at bigint;
                ALTER TABLE quarantine ADD COLUMN last_replay_code text;
                CREATE TABLE quarantine_usage (
                    lane text PRIMARY KEY,
                    rows bigint NOT NULL,
                    bytes bigint NOT NULL
                );
                INSERT INTO quarantine_usage (lane, rows, bytes)
                    SELECT lane, COUNT(*), SUM(size) FROM quarantine GROUP BY lane;
                -- search_path pinned to the schema the function was created in, so the trigger counts in the
                -- quarantine_usage beside its quarantine whatever the session's path.
                CREATE FUNCTION quarantine_usage_count() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
                BEGIN
                    IF TG_OP = 'DELETE' OR TG_OP = 'UPDATE' THEN
                        UPDATE quarantine_usage SET rows = rows - 1, bytes = bytes - OLD.size WHERE lane = OLD.lane;
                    END IF;
                    IF TG_OP = 'INSERT' OR TG_OP = 'UPDATE' THEN
                        INSERT INTO quarantine_usage AS u (lane, rows, bytes) VALUES (NEW.lane, 1, NEW.size)
                        ON CONFLICT (lane) DO UPDATE SET rows = u.rows + 1, bytes = u.bytes + NEW.size;
                    END IF;
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER quarantine_usage_insert AFTER INSERT ON quarantine
                    FOR EACH ROW EXECUTE FUNCTION quarantine_usage_count();
                CREATE TRIGGER quarantine_usage_delete AFTER DELETE ON quarantine
                    FOR EACH ROW EXECUTE FUNCTION quarantine_usage_count();
                CREATE TRIGGER quarantine_usage_update AFTER UPDATE OF size, lane ON quarantine
                    FOR EACH ROW EXECUTE FUNCTION quarantine_usage_count();
                """
        ),
        PostgresMigration(
            version: 6,
            sql: """
                -- Recovery (reconciliation and the notification-history sweep): how an event was recovered, when
                -- each subscription's path expires and was last checked against Apple, and the scheduled runs.
                ALTER TABLE events ADD COLUMN recovered_by text;         -- reconciliation | history; NULL when live
                CREATE INDEX events_recovered ON events(created_at) WHERE recovered_by IS NOT NULL;
                ALTER TABLE subscription_state ADD COLUMN expires_date bigint;
                ALTER TABLE subscription_state ADD COLUMN reconciled_at bigint;
                UPDATE subscription_state SET expires_date = (convert_from(json, 'UTF8')::jsonb ->> 'expires_date')::bigint;
                CREATE INDEX subscription_state_expiry ON subscription_state(bundle_id, environment, path, expires_date);
                CREATE TABLE reconcile_runs (
                    id bigserial PRIMARY KEY,
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    kind text NOT NULL,                                  -- subscriptions | receipts | history
                    next_run_at bigint NOT NULL,
                    watermark bigint,                                    -- history: end of the last window swept
                    attempts integer NOT NULL DEFAULT 0,
                    last_run_at bigint,
                    last_error text,
                    checked bigint NOT NULL DEFAULT 0,
                    recovered bigint NOT NULL DEFAULT 0,
                    calls bigint NOT NULL DEFAULT 0,
                    claimed_by text,
                    claimed_until bigint,
                    UNIQUE (bundle_id, environment, kind)
                );
                """
        ),
        PostgresMigration(
            version: 7,
            sql: """
                -- A claim reads a queue's due rows in order and stops at its limit: indexes of the pending rows alone,
                -- in the claim's order (next_attempt_at, then id), so that it reads the rows it takes instead of
                -- every pending row, sorted (behind a backlog of thousands of deliveries, each claim read and sorted
                -- them all, and a burst drained ever slower).
                CREATE INDEX outbox_pending ON outbox(downstream, next_attempt_at, id) WHERE state = 'pending';
                DROP INDEX outbox_downstream_due;
                CREATE INDEX receipt_jobs_pending ON receipt_jobs(next_attempt_at, journal_id) WHERE state = 'pending';
                CREATE INDEX compare_jobs_pending ON compare_jobs(next_attempt_at, id) WHERE state = 'pending';
                """
        ),
        PostgresMigration(
            version: 8,
            sql: """
                -- A subscription's states by its original transaction id (`iap-gateway subscription`, the admin API):
                -- the primary key starts with the path and the environment, so the lookup read every state.
                CREATE INDEX subscription_state_subscription ON subscription_state(original_transaction_id);
                """
        ),
        PostgresMigration(
            version: 9,
            sql: """
                -- A quarantined body has every configured secret replaced before it is stored. Rows stored before that
                -- (redacted = false) are scrubbed once with the configured secrets at the next start (QuarantineScrub).
                ALTER TABLE quarantine ADD COLUMN redacted boolean NOT NULL DEFAULT false;
                CREATE INDEX quarantine_unredacted ON quarantine(id) WHERE NOT redacted;
                """
        ),
        PostgresMigration(
            version: 10,
            sql: """
                -- The switch of Apple's notification version (`migrate`): per app and environment, Apple's settings as
                -- last read or set and the switch in progress or last finished (each step stored before it acts); the
                -- log of every step; and which authority changes a switch made.
                CREATE TABLE apple_switches (
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    app_id text,
                    apple_version text,
                    apple_url text,
                    read_at bigint,
                    migration_id text,
                    target text,
                    previous text,
                    step text,
                    probe_token text,
                    who text,
                    reason text,
                    forced boolean NOT NULL DEFAULT false,
                    started_at bigint,
                    updated_at bigint,
                    error text,
                    PRIMARY KEY (bundle_id, environment)
                );
                CREATE TABLE apple_switch_log (
                    id bigserial PRIMARY KEY,
                    at bigint NOT NULL,
                    bundle_id text NOT NULL,
                    environment text NOT NULL,
                    migration_id text NOT NULL,
                    step text NOT NULL,
                    outcome text NOT NULL,
                    detail text
                );
                CREATE INDEX apple_switch_log_app ON apple_switch_log(bundle_id, environment, id);
                ALTER TABLE cutover_log ADD COLUMN origin text NOT NULL DEFAULT 'cutover';
                """
        ),
    ]

}
