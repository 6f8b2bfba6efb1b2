internal import Postgres
internal import SQLite

/// One change of the gateway's tables, written once for both databases, and the version each database records it
/// under. The two numberings agree up to 6; then PostgreSQL took a migration of its own (7: the claims' indexes), so
/// each later step has PostgreSQL's number one above SQLite's. Versions a store has recorded are never renumbered:
/// existing stores upgrade exactly as before. A step one database never runs has no version there.
struct SchemaStep: Sendable {
    /// `schema_migrations.version` in an SQLite store; nil: SQLite never runs it.
    var sqlite: Int?
    /// `schema_migrations.version` in a PostgreSQL store; nil: PostgreSQL never runs it.
    var postgres: Int?
    /// PostgreSQL: the step is recorded once the rows stored before it are compressed (``PostgresCompaction``); its
    /// DDL runs again at each open until then, so it is idempotent.
    var compactsPostgresRows = false
    /// The DDL, in the dialect's types (``Dialect`` below).
    var sql: @Sendable (Dialect) -> String
}

/// The gateway's tables, as one list of migrations both stores follow, applied at open (docs/architecture.md, "The
/// store"). Never edit a shipped step: add one, with the next version of each database that runs it. The types differ
/// by name only (SQLite: `INTEGER`, `BLOB`, 0/1 flags, the rowid; PostgreSQL: `bigserial` ids, `bytea`, `bigint`
/// milliseconds, `boolean` flags); what only PostgreSQL has — the job tables' claims (several instances share the
/// store), `events.seq` (the arrival order SQLite's rowid gives), the partial unique index that keeps one plain
/// comparison fetch pending across instances, the claims' indexes, the quarantine_usage trigger in PL/pgSQL — is
/// marked where it stands.
enum StoreSchema {
    static let steps: [SchemaStep] = [
        SchemaStep(sqlite: 1, postgres: 1) { d in
            """
            -- Every accepted notification, in arrival order. V1 bodies have the password replaced by a marker.
            CREATE TABLE journal (
                id \(d.id),
                notification_key TEXT NOT NULL UNIQUE,   -- V2 notificationUUID, V1 "v1:" + SHA-256: the dedupe key
                version TEXT NOT NULL,                   -- v1 | v2
                received_at \(d.bigint) NOT NULL,             -- ms since the epoch
                origin TEXT NOT NULL DEFAULT 'live',     -- live | quarantine_replay | backfill
                bundle_id TEXT,
                environment TEXT,
                notification_type TEXT,
                subtype TEXT,
                secret_name TEXT,                        -- V1: the configured secret that matched (its variable name)
                leaf_serial TEXT,                        -- V2: outer token's leaf certificate serial
                body \(d.bytes),                               -- NULL once past raw-body retention
                body_purged_at \(d.bigint)
            );
            CREATE INDEX journal_received ON journal(received_at);

            -- Canonical events (JSON as delivered). The arrival order that breaks event_date ties: SQLite's rowid,
            -- PostgreSQL's seq.
            CREATE TABLE events (
                id TEXT PRIMARY KEY,\(d.postgresOnly("\n    seq bigserial NOT NULL UNIQUE,"))
                journal_id \(d.bigint) REFERENCES journal(id),
                path TEXT NOT NULL,                      -- v1 | v2 (which generation's path produced it)
                source TEXT NOT NULL,
                kind TEXT NOT NULL,
                reason TEXT,
                bundle_id TEXT,
                environment TEXT,
                original_transaction_id TEXT,
                event_date \(d.bigint) NOT NULL,
                authoritative \(d.bool) NOT NULL,
                created_at \(d.bigint) NOT NULL,
                json \(d.bytes) NOT NULL
            );
            CREATE INDEX events_subscription ON events(original_transaction_id, event_date);
            CREATE INDEX events_created ON events(created_at);
            CREATE INDEX events_journal ON events(journal_id);

            -- Durable delivery queue: one row per (downstream, event) or (downstream, V1 body) for pass-through.
            CREATE TABLE outbox (
                id \(d.id),
                downstream TEXT NOT NULL,
                event_id TEXT REFERENCES events(id),
                journal_id \(d.bigint) REFERENCES journal(id),
                state TEXT NOT NULL DEFAULT 'pending',   -- pending | delivered | dead
                attempts \(d.int) NOT NULL DEFAULT 0,
                next_attempt_at \(d.bigint) NOT NULL,
                created_at \(d.bigint) NOT NULL,
                delivered_at \(d.bigint),
                last_status \(d.int),
                last_error TEXT\(d.claims),
                UNIQUE (downstream, event_id),
                UNIQUE (downstream, journal_id)
            );
            CREATE INDEX outbox_due ON outbox(state, next_attempt_at);

            -- V1 notifications waiting for Apple's verifyReceipt answer.
            CREATE TABLE receipt_jobs (
                journal_id \(d.bigint) PRIMARY KEY REFERENCES journal(id),
                state TEXT NOT NULL DEFAULT 'pending',   -- pending | done | failed
                attempts \(d.int) NOT NULL DEFAULT 0,
                next_attempt_at \(d.bigint) NOT NULL,
                last_error TEXT,
                apple_status \(d.int),
                updated_at \(d.bigint) NOT NULL\(d.claims)
            );
            CREATE INDEX receipt_jobs_due ON receipt_jobs(state, next_attempt_at);

            -- Refused bodies in two lanes with their own caps: forged/malformed (untrusted) and Apple-signed or
            -- secret-authenticated but unservable (genuine). V1 bodies never keep the password.
            CREATE TABLE quarantine (
                id \(d.id),
                lane TEXT NOT NULL,                      -- untrusted | genuine
                received_at \(d.bigint) NOT NULL,
                version TEXT,
                code TEXT NOT NULL,
                message TEXT,
                bundle_id TEXT,
                environment TEXT,
                password_fingerprint TEXT,               -- V1: SHA-256 of the presented password
                body \(d.bytes)
            );
            CREATE INDEX quarantine_lane ON quarantine(lane, id);

            -- Each subscription's latest state per path: last write wins on (event_date, arrival order).
            CREATE TABLE subscription_state (
                path TEXT NOT NULL,
                environment TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                bundle_id TEXT,
                event_id TEXT NOT NULL,
                event_date \(d.bigint) NOT NULL,
                event_seq \(d.bigint) NOT NULL,               -- the event's arrival order
                json \(d.bytes) NOT NULL,
                updated_at \(d.bigint) NOT NULL,
                PRIMARY KEY (path, environment, original_transaction_id)
            );

            -- Which generation is authoritative per bundle and environment. The config seeds it; a cutover
            -- (origin 'cutover') wins over the config on restart.
            CREATE TABLE authority (
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                authority TEXT NOT NULL,                 -- v1 | v2
                origin TEXT NOT NULL,                    -- config | cutover
                updated_at \(d.bigint) NOT NULL,
                PRIMARY KEY (bundle_id, environment)
            );
            """
        },
        SchemaStep(sqlite: 2, postgres: 2) { d in
            """
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
                updated_at \(d.bigint) NOT NULL,
                PRIMARY KEY (bundle_id, environment, original_transaction_id)
            );

            -- Each path's latest outcome snapshot per subscription (compare: true bundles).
            CREATE TABLE snapshots (
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                path TEXT NOT NULL,                      -- v1 | v2
                source TEXT NOT NULL,                    -- v1-receipt | v2 | v2-api
                observed_at \(d.bigint) NOT NULL,
                json \(d.bytes) NOT NULL,
                PRIMARY KEY (bundle_id, environment, original_transaction_id, path)
            );

            -- Fetches of the other path's view, off the request path: 'v2' asks the App Store Server API (and, with
            -- v1_event_id, derives the v2-api event), 'v1' asks verifyReceipt with the stored receipt. ("fetch" is
            -- a reserved word in PostgreSQL: always quoted.)
            CREATE TABLE compare_jobs (
                id \(d.id),
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                "fetch" TEXT NOT NULL,                   -- v1 | v2
                v1_event_id TEXT,                        -- derive a v2-api event from this V1 event
                authority TEXT,                          -- the notification's authority (journal.authority)
                compare \(d.bool) NOT NULL,                -- record the pair in the ledger
                state TEXT NOT NULL DEFAULT 'pending',   -- pending | done | failed
                attempts \(d.int) NOT NULL DEFAULT 0,
                next_attempt_at \(d.bigint) NOT NULL,
                created_at \(d.bigint) NOT NULL,
                updated_at \(d.bigint) NOT NULL,
                last_error TEXT\(d.claims)
            );
            CREATE INDEX compare_jobs_due ON compare_jobs(state, next_attempt_at);
            \(d.postgresOnly(oneFetchPending))

            -- The compare ledger: one row per comparison of the two paths' snapshots of a subscription, or per
            -- subscription one path never saw within the grace window.
            CREATE TABLE compare_ledger (
                id \(d.id),
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                compared_at \(d.bigint) NOT NULL,
                outcome TEXT NOT NULL,                   -- agree | disagree | v1_only | v2_only
                fields TEXT,                             -- disagreeing fields, comma-separated
                v1_json \(d.bytes),
                v2_json \(d.bytes)
            );
            CREATE INDEX compare_ledger_bundle ON compare_ledger(bundle_id, environment, compared_at);

            -- Every authority change: when, who, from, to, why, and the verdict at the time.
            CREATE TABLE cutover_log (
                id \(d.id),
                at \(d.bigint) NOT NULL,
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                from_authority TEXT NOT NULL,
                to_authority TEXT NOT NULL,
                who TEXT NOT NULL,
                reason TEXT,
                verdict TEXT NOT NULL,
                forced \(d.bool) NOT NULL
            );
            """
        },
        SchemaStep(sqlite: 3, postgres: 3) { _ in
            """
            -- The silence alert asks every minute for each bundle's latest event per path, and the report counts
            -- events per bundle over a window: without this both scan the whole events table.
            CREATE INDEX events_bundle_path ON events(bundle_id, environment, path, created_at);
            """
        },
        SchemaStep(sqlite: 4, postgres: 4) { d in
            """
            -- A disagreement between snapshots observed at different times may only be the subscription changing
            -- between the two observations: it is confirmed by fetching the older side again (at most twice)
            -- before the ledger records it. `confirms` counts the refetches that led to this job.
            ALTER TABLE compare_jobs ADD COLUMN confirms \(d.int) NOT NULL DEFAULT 0;
            -- Deliveries are read per downstream, so a slow one never holds back the others.
            CREATE INDEX outbox_downstream_due ON outbox(downstream, state, next_attempt_at);
            """
        },
        SchemaStep(sqlite: 5, postgres: 5) { d in
            """
            -- Quarantine lanes are capped in bytes, not only in rows: forged traffic can send 1 MiB bodies. Each
            -- row carries its size (body plus the text stored beside it); quarantine_usage keeps each lane's
            -- total, maintained by triggers so every insert and delete (eviction, replay, retention) counts.
            ALTER TABLE quarantine ADD COLUMN size \(d.bigint) NOT NULL DEFAULT 0;
            UPDATE quarantine SET size = (256 + COALESCE(\(d.byteLength("body")), 0) + COALESCE(\(d.byteLength("message")), 0)
                + \(d.byteLength("code")) + COALESCE(\(d.byteLength("bundle_id")), 0) + COALESCE(\(d.byteLength("environment")), 0)
                + 4091) / 4092 * 4096;
            -- Replay bookkeeping: a row that fails replay stays, with its outcome; replay_started_at is set while
            -- a replay of the row runs, so a row that ever took the process down is skipped afterwards (reported
            -- as replay_interrupted) instead of blocking every replay behind it.
            ALTER TABLE quarantine ADD COLUMN replay_attempts \(d.int) NOT NULL DEFAULT 0;
            ALTER TABLE quarantine ADD COLUMN replay_started_at \(d.bigint);
            ALTER TABLE quarantine ADD COLUMN last_replay_at \(d.bigint);
            ALTER TABLE quarantine ADD COLUMN last_replay_code TEXT;
            CREATE TABLE quarantine_usage (
                lane TEXT PRIMARY KEY,
                rows \(d.bigint) NOT NULL,
                bytes \(d.bigint) NOT NULL
            );
            INSERT INTO quarantine_usage (lane, rows, bytes)
                SELECT lane, COUNT(*), SUM(size) FROM quarantine GROUP BY lane;
            \(d == .sqlite ? sqliteUsageTriggers : postgresUsageTriggers)
            """
        },
        SchemaStep(sqlite: 6, postgres: 6) { d in
            """
            -- Recovery (reconciliation and the notification-history sweep): how an event was recovered, when
            -- each subscription's path expires and was last checked against Apple, and the scheduled runs.
            ALTER TABLE events ADD COLUMN recovered_by TEXT;         -- reconciliation | history; NULL when live
            CREATE INDEX events_recovered ON events(created_at) WHERE recovered_by IS NOT NULL;
            ALTER TABLE subscription_state ADD COLUMN expires_date \(d.bigint);
            ALTER TABLE subscription_state ADD COLUMN reconciled_at \(d.bigint);
            UPDATE subscription_state SET expires_date = \(d == .sqlite
                ? "json_extract(CAST(json AS TEXT), '$.expires_date')" : "(convert_from(json, 'UTF8')::jsonb ->> 'expires_date')::bigint");
            CREATE INDEX subscription_state_expiry ON subscription_state(bundle_id, environment, path, expires_date);
            CREATE TABLE reconcile_runs (
                id \(d.id),
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                kind TEXT NOT NULL,                                  -- subscriptions | receipts | history
                next_run_at \(d.bigint) NOT NULL,
                watermark \(d.bigint),                                    -- history: end of the last window swept
                attempts \(d.int) NOT NULL DEFAULT 0,
                last_run_at \(d.bigint),
                last_error TEXT,
                checked \(d.bigint) NOT NULL DEFAULT 0,
                recovered \(d.bigint) NOT NULL DEFAULT 0,
                calls \(d.bigint) NOT NULL DEFAULT 0\(d.claims),
                UNIQUE (bundle_id, environment, kind)
            );
            """
        },
        // PostgreSQL only: a claim there reads a queue's due rows in order and stops at its limit; SQLite reads its
        // due jobs without a claim and kept outbox_downstream_due.
        SchemaStep(sqlite: nil, postgres: 7) { _ in
            """
            -- A claim reads a queue's due rows in order and stops at its limit: indexes of the pending rows alone,
            -- in the claim's order (next_attempt_at, then id), so that it reads the rows it takes instead of
            -- every pending row, sorted (behind a backlog of thousands of deliveries, each claim read and sorted
            -- them all, and a burst drained ever slower).
            CREATE INDEX outbox_pending ON outbox(downstream, next_attempt_at, id) WHERE state = 'pending';
            DROP INDEX outbox_downstream_due;
            CREATE INDEX receipt_jobs_pending ON receipt_jobs(next_attempt_at, journal_id) WHERE state = 'pending';
            CREATE INDEX compare_jobs_pending ON compare_jobs(next_attempt_at, id) WHERE state = 'pending';
            """
        },
        SchemaStep(sqlite: 7, postgres: 8) { _ in
            """
            -- A subscription's states by its original transaction id (`iap-gateway subscription`, the admin API):
            -- the primary key starts with the path and the environment, so the lookup read every state.
            CREATE INDEX subscription_state_subscription ON subscription_state(original_transaction_id);
            """
        },
        SchemaStep(sqlite: 8, postgres: 9) { d in
            """
            -- A quarantined body has every configured secret replaced before it is stored. Rows stored before that
            -- (not redacted) are scrubbed once with the configured secrets at the next start (QuarantineScrub).
            ALTER TABLE quarantine ADD COLUMN redacted \(d.bool) NOT NULL DEFAULT \(d.false);
            CREATE INDEX quarantine_unredacted ON quarantine(id) WHERE \(d.unredacted);
            """
        },
        SchemaStep(sqlite: 9, postgres: 10) { d in
            """
            -- The switch of Apple's notification version (`migrate`): per app and environment, Apple's settings as
            -- last read or set and the switch in progress or last finished (each step stored before it acts); the
            -- log of every step; and which authority changes a switch made.
            CREATE TABLE apple_switches (
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                app_id TEXT,                             -- App Store Connect's id of the app
                apple_version TEXT,                      -- v1 | v2: Apple's setting as last read or set
                apple_url TEXT,
                read_at \(d.bigint),
                migration_id TEXT,
                target TEXT,                             -- v1 | v2
                previous TEXT,                           -- Apple's version before the switch: what a revert restores
                step TEXT,                               -- preflight | patching | probing | authority | reverting | done | reverted
                probe_token TEXT,
                who TEXT,
                reason TEXT,
                forced \(d.bool) NOT NULL DEFAULT \(d.false),
                started_at \(d.bigint),
                updated_at \(d.bigint),
                error TEXT,
                PRIMARY KEY (bundle_id, environment)
            );
            CREATE TABLE apple_switch_log (
                id \(d.id),
                at \(d.bigint) NOT NULL,
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
        },
        SchemaStep(sqlite: 10, postgres: 11) { _ in
            """
            -- Every read over a big table is bounded by an index that answers it (docs/operations.md, "Size").
            -- The report counts a bundle's pairs per outcome and day and its events per source as index range
            -- counts, groups only the disagreements by field, and reads examples in order, a page at a time.
            CREATE INDEX compare_ledger_outcome ON compare_ledger(bundle_id, environment, outcome, compared_at, id, fields);
            CREATE INDEX events_bundle_source ON events(bundle_id, environment, source, created_at);
            -- `replay --since` re-arms deliveries by creation time, in pages.
            CREATE INDEX outbox_created ON outbox(created_at, id);
            -- Retention drops raw bodies in pages, oldest first, reading only the rows that still hold one.
            CREATE INDEX journal_unpurged ON journal(received_at, id) WHERE body IS NOT NULL;
            """
        },
        // SQLite only (PostgreSQL compressed them itself then, with TOAST; since its step 17 it does as SQLite).
        SchemaStep(sqlite: 11, postgres: nil) { _ in sqliteCompressRows },
        // SQLite only: the outer JWS headers whose preset dictionaries V2 bodies are compressed with
        // (``BlobDictionaries``). Rows are only added, never changed or deleted: a body names its header's id.
        SchemaStep(sqlite: 12, postgres: nil) { _ in
            """
            CREATE TABLE blob_dictionaries (
                id INTEGER PRIMARY KEY,
                header_digest BLOB NOT NULL UNIQUE,
                header BLOB NOT NULL
            );
            """
        },
        SchemaStep(sqlite: 13, postgres: 12) { d in
            """
            -- Each index is written with every notification, and at 500/s each notification is its own commit: one
            -- page more of the log, and on PostgreSQL one index insert more, per index. No statement reads these
            -- four: the events by creation time (the report counts on events_bundle_source, the recovered ones on
            -- events_recovered) or by journal row, the journal by arrival time (retention reads journal_unpurged),
            -- the outbox by state.
            DROP INDEX journal_received;
            DROP INDEX events_created;
            DROP INDEX events_journal;
            DROP INDEX outbox_due;
            -- The outbox's rows by state only where a state is looked for, so that a delivered row (nearly every
            -- row) is in no state index: the pending ones in the claim's order (PostgreSQL has had it since its
            -- step 7), the dead letters in id order (listing and replaying them).
            \(d.sqliteOnly("DROP INDEX outbox_downstream_due;"))
            \(d.sqliteOnly("CREATE INDEX outbox_pending ON outbox(downstream, next_attempt_at, id) WHERE state = 'pending';"))
            CREATE INDEX outbox_dead ON outbox(id) WHERE state = 'dead';
            """
        },
        SchemaStep(sqlite: 14, postgres: 13) { _ in
            """
            -- An event's path is its source's generation, so the newest event of a path is the newest of its
            -- sources, each found on events_bundle_source: one index fewer written with every event.
            DROP INDEX events_bundle_path;
            """
        },
        SchemaStep(sqlite: 15, postgres: 14) { d in
            """
            -- The verifyReceipt endpoint (docs/operations.md, "Moving the receipt path"): how each bundle and
            -- environment is answered, each customer's history as the App Store Server API last gave it, and the
            -- comparison of Apple's answers with the gateway's.
            CREATE TABLE receipt_modes (
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                mode TEXT NOT NULL,                      -- apple | shadow | api
                origin TEXT NOT NULL,                    -- config | cutover
                updated_at \(d.bigint) NOT NULL,
                PRIMARY KEY (bundle_id, environment)
            );
            CREATE TABLE receipt_histories (
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                customer TEXT NOT NULL,                  -- the original transaction id the history was asked for
                fetched_at \(d.bigint),
                json \(d.bytes),                         -- the verified transactions and renewal infos
                claimed_by TEXT,                         -- the instance asking Apple now, until claimed_until
                claimed_until \(d.bigint),
                PRIMARY KEY (bundle_id, environment, customer)
            );
            CREATE INDEX receipt_histories_fetched ON receipt_histories(fetched_at);
            CREATE TABLE receipt_ledger (
                id \(d.id),
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                compared_at \(d.bigint) NOT NULL,
                outcome TEXT NOT NULL,                   -- agree | disagree | v1_only (Apple's alone) | v2_only (the gateway's)
                fields TEXT,                             -- disagreeing fields, comma-separated
                v1_json \(d.bytes),                      -- what Apple's verifyReceipt said
                v2_json \(d.bytes)                       -- what the gateway's answer said
            );
            CREATE INDEX receipt_ledger_outcome ON receipt_ledger(bundle_id, environment, outcome, compared_at, id, fields);
            """
        },
        SchemaStep(sqlite: 16, postgres: 15) { d in
            """
            -- The delivery log (docs/operations.md, "The delivery log"): each delivery's attempts, the newest 20 kept
            -- (the older removed in the transaction that logs one): when, how long, the status or error, and the
            -- first 1 KiB of the answer as received. Nothing of the request is kept.
            CREATE TABLE delivery_attempts (
                id \(d.id),
                outbox_id \(d.bigint) NOT NULL REFERENCES outbox(id),
                attempt \(d.int) NOT NULL,                 -- the delivery's attempt count after it
                started_at \(d.bigint) NOT NULL,             -- ms since the epoch
                latency_ms \(d.bigint) NOT NULL,
                status \(d.int),                             -- HTTP status; NULL: none arrived
                error TEXT,                              -- HTTP <status> | a transport error code | NULL: delivered
                response_head \(d.bytes),                    -- at most 1024 bytes
                replay \(d.bool) NOT NULL DEFAULT \(d.false)     -- made after an operator's replay of the delivery
            );
            CREATE INDEX delivery_attempts_outbox ON delivery_attempts(outbox_id, id);
            -- When an operator last re-armed the delivery (replay): its later attempts are logged as replays.
            ALTER TABLE outbox ADD COLUMN replayed_at \(d.bigint);
            -- One downstream's deliveries in a state, in creation order, a page at a time (GET /admin/deliveries):
            -- the delivered ones (nearly every row) and the others apart, so that no statement counting or listing
            -- the pending rows or the dead letters finds these indexes in place of their own.
            CREATE INDEX outbox_delivered_created ON outbox(downstream, created_at, id) WHERE state = 'delivered';
            CREATE INDEX outbox_undelivered_created ON outbox(downstream, created_at, id) WHERE state <> 'delivered';
            """
        },
        SchemaStep(sqlite: 17, postgres: 16) { d in
            """
            -- The consumption responder (docs/operations.md, "Refund requests"): one row per refund request Apple asked
            -- about (a CONSUMPTION_REQUEST of an app with consumption.respond), from the notification's transaction
            -- until its answer is sent, refused, declined or past its deadline; Apple's decision recorded when it comes.
            CREATE TABLE consumption_jobs (
                id \(d.id),
                event_id TEXT NOT NULL UNIQUE,           -- the request's canonical event
                journal_id \(d.bigint) REFERENCES journal(id),
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                transaction_id TEXT NOT NULL,            -- the purchase (Send Consumption Information's path)
                original_transaction_id TEXT,
                product_type TEXT,
                reason TEXT,                             -- Apple's consumptionRequestReason, canonical spelling
                requested_at \(d.bigint) NOT NULL,           -- Apple's signedDate (ms)
                deadline_at \(d.bigint) NOT NULL,            -- no answer is sent after it
                state TEXT NOT NULL DEFAULT 'pending',   -- pending | sent | declined | no_consent | unanswered | rejected | dead | expired
                asks \(d.int) NOT NULL DEFAULT 0,            -- requests to the team's service
                sends \(d.int) NOT NULL DEFAULT 0,           -- requests to Apple
                next_attempt_at \(d.bigint) NOT NULL,
                answer TEXT,                             -- the consumption information chosen (JSON), kept for retries
                answer_source TEXT,                      -- team | default
                refund_preference TEXT,                  -- the answer's refundPreference
                sent_at \(d.bigint),                         -- when Apple took it
                apple_status \(d.int),
                apple_error_code \(d.bigint),
                last_error TEXT,
                created_at \(d.bigint) NOT NULL,
                updated_at \(d.bigint) NOT NULL,
                decision TEXT,                           -- Apple's since: refund | refund_declined
                decided_at \(d.bigint)\(d.claims)
            );
            CREATE INDEX consumption_jobs_due ON consumption_jobs(next_attempt_at, id) WHERE state = 'pending';
            CREATE INDEX consumption_jobs_state ON consumption_jobs(state, id);
            CREATE INDEX consumption_jobs_requested ON consumption_jobs(requested_at);
            CREATE INDEX consumption_jobs_transaction ON consumption_jobs(bundle_id, environment, transaction_id);
            """
        },
        // PostgreSQL only: its bodies and JSON stored compressed in the gateway, as SQLite's are (its steps 11 and
        // 12). The rows stored before are compressed at the first open (``PostgresCompaction``), which records the
        // step when done.
        SchemaStep(sqlite: nil, postgres: 17, compactsPostgresRows: true) { _ in postgresCompression },
        SchemaStep(sqlite: 18, postgres: 18) { d in
            """
            -- A customer's history is fetched page by page (docs/operations.md, "Moving the receipt path"): each page
            -- verified is kept until the history is whole, so a fetch cut short (a request's deadline, a restart,
            -- Apple's 429, another instance) goes on from Apple's revision instead of starting over. The pages lie
            -- over the stored history (`receipt_histories.json`), whose last revision the first page was asked with.
            CREATE TABLE receipt_history_pages (
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                customer TEXT NOT NULL,
                page \(d.int) NOT NULL,                     -- 0, 1, 2, … in the order asked
                asked_with TEXT,                         -- the revision the page was asked with; NULL: from the start
                revision TEXT,                           -- Apple's revision for the next page
                has_more \(d.bool) NOT NULL,
                asked_at \(d.bigint) NOT NULL,              -- when it was asked (ms)
                json \(d.bytes) NOT NULL,                    -- the page's verified transactions
                PRIMARY KEY (bundle_id, environment, customer, page)
            );
            CREATE INDEX receipt_history_pages_asked ON receipt_history_pages(asked_at);
            -- Calls to Apple for the customer in the hour that began at calls_since (receipts.customer_calls_per_hour).
            ALTER TABLE receipt_histories ADD COLUMN calls \(d.int) NOT NULL DEFAULT 0;
            ALTER TABLE receipt_histories ADD COLUMN calls_since \(d.bigint);
            """
        },
        SchemaStep(sqlite: 19, postgres: 19) { d in
            """
            -- Group (multiseat) subscriptions (docs/architecture.md, "Group subscriptions"): a subscription's seats in
            -- its current period beside its state, and the seat events, each on an index of their own so that the
            -- report counts groups, seats and seat events without reading anything else.
            ALTER TABLE subscription_state ADD COLUMN seats \(d.bigint);
            CREATE INDEX subscription_state_groups ON subscription_state(bundle_id, environment, path, expires_date)
                WHERE seats IS NOT NULL;
            CREATE INDEX events_seats ON events(bundle_id, environment, created_at)
                WHERE kind IN ('seats_changed', 'seats_refunded', 'seats_unclaimed');
            """
        },
        SchemaStep(sqlite: 20, postgres: 20) { d in
            """
            -- A logged answer's head has every configured secret and the request's own signatures replaced before it
            -- is stored (a downstream that echoes its request would put them there). Attempts logged before that (not
            -- redacted) whose head could hold one are scrubbed once with the configured secrets at the next start
            -- (DeliveryLogScrub), read off this index, which holds only them.
            ALTER TABLE delivery_attempts ADD COLUMN redacted \(d.bool) NOT NULL DEFAULT \(d.false);
            CREATE INDEX delivery_attempts_unredacted ON delivery_attempts(id) WHERE \(d.unredactedHead);
            """
        },
        SchemaStep(sqlite: nil, postgres: 21) { _ in sharedAPIBudget },
        SchemaStep(sqlite: 21, postgres: 22) { _ in
            """
            -- `receipts prefetch` (docs/commands.md) walks an app's customers in the order of their original
            -- transaction ids, a page at a time, from the journaled subscriptions and the receipt ledger.
            CREATE INDEX subscription_state_customers ON subscription_state(bundle_id, environment, original_transaction_id);
            CREATE INDEX receipt_ledger_customers ON receipt_ledger(bundle_id, environment, original_transaction_id);
            """
        },
    ]

    /// PostgreSQL only: the App Store Server API budget every instance of the store shares (``APIBudgetTransaction``,
    /// docs/operations.md, "Apple's rate limits"). One process owns an SQLite store and keeps its budget in memory.
    private static let sharedAPIBudget = """
        -- Per app × environment × endpoint one token bucket, in billionths of a turn, that each instance leases a few
        -- turns at a time from; a 429 pauses it for every instance until Apple's Retry-After.
        CREATE TABLE api_budget (
            bundle_id TEXT NOT NULL,
            environment TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            tokens bigint NOT NULL,                  -- billionths of a turn gathered as of updated_at
            updated_at bigint NOT NULL,              -- ms since the epoch
            paused_until bigint NOT NULL DEFAULT 0,  -- Apple's Retry-After of the last 429, ms since the epoch
            last_lease bigint NOT NULL DEFAULT 0,    -- turns the last lease took
            leased bigint NOT NULL DEFAULT 0,        -- turns leased since the row was made
            PRIMARY KEY (bundle_id, environment, endpoint)
        );
        """

    /// PostgreSQL stores bodies and JSON compressed (``StoredBlob``, with the preset dictionaries of
    /// ``BlobDictionaries``): its own compression (TOAST) would only try again on each such value, and is turned off
    /// for them (`EXTERNAL`: a value too large for its row still goes to the TOAST table, as it is). Idempotent: it
    /// runs again at each open until the old rows are compressed.
    private static let postgresCompression = """
        -- The outer JWS headers and the JSON dictionaries the compressed values name by id. Rows are only added, never
        -- changed or deleted.
        CREATE TABLE IF NOT EXISTS blob_dictionaries (
            id bigserial PRIMARY KEY,
            header_digest bytea NOT NULL UNIQUE,
            header bytea NOT NULL
        );
        ALTER TABLE journal ALTER COLUMN body SET STORAGE EXTERNAL;
        ALTER TABLE events ALTER COLUMN json SET STORAGE EXTERNAL;
        ALTER TABLE subscription_state ALTER COLUMN json SET STORAGE EXTERNAL;
        ALTER TABLE snapshots ALTER COLUMN json SET STORAGE EXTERNAL;
        ALTER TABLE compare_ledger ALTER COLUMN v1_json SET STORAGE EXTERNAL, ALTER COLUMN v2_json SET STORAGE EXTERNAL;
        ALTER TABLE receipt_ledger ALTER COLUMN v1_json SET STORAGE EXTERNAL, ALTER COLUMN v2_json SET STORAGE EXTERNAL;
        ALTER TABLE receipt_histories ALTER COLUMN json SET STORAGE EXTERNAL;
        """

    /// SQLite stores bodies and JSON compressed (``StoredBlob``): the rows written before are compressed once, by
    /// `iapgw_deflate` (registered on the store's connections). A value that starts with 0x78 is compressed already.
    /// Each UPDATE streams its rows, one value in memory at a time, whatever the size of the store.
    private static let sqliteCompressRows = """
        -- Bodies and JSON are stored compressed (when smaller): the rows stored before are compressed once.
        UPDATE journal SET body = iapgw_deflate(body) WHERE substr(body, 1, 1) <> x'78';
        UPDATE events SET json = iapgw_deflate(json) WHERE substr(json, 1, 1) <> x'78';
        UPDATE subscription_state SET json = iapgw_deflate(json) WHERE substr(json, 1, 1) <> x'78';
        UPDATE snapshots SET json = iapgw_deflate(json) WHERE substr(json, 1, 1) <> x'78';
        UPDATE compare_ledger SET v1_json = iapgw_deflate(v1_json), v2_json = iapgw_deflate(v2_json)
            WHERE substr(v1_json, 1, 1) <> x'78' OR substr(v2_json, 1, 1) <> x'78';
        """

    /// PostgreSQL only: a plain comparison fetch is queued once per subscription and path while one is pending, also
    /// when two instances queue it at the same moment (INSERT … ON CONFLICT DO NOTHING). SQLite looks first.
    private static let oneFetchPending = """
        CREATE UNIQUE INDEX compare_jobs_one_pending ON compare_jobs(bundle_id, environment, original_transaction_id, "fetch")
            WHERE state = 'pending' AND v1_event_id IS NULL;
        """

    /// quarantine_usage kept by triggers on every insert, delete and update of a quarantine row.
    private static let sqliteUsageTriggers = """
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

    /// The same in PL/pgSQL. search_path pinned to the schema the function was created in, so the trigger counts in
    /// the quarantine_usage beside its quarantine whatever the session's path.
    private static let postgresUsageTriggers = """
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

    /// SQLite's migrations: the steps it runs, under its versions.
    static let sqlite: [SQLiteMigration] = steps.compactMap { step in
        step.sqlite.map { SQLiteMigration(version: $0, sql: step.sql(.sqlite)) }
    }

    /// PostgreSQL's migrations: the steps it runs, under its versions.
    static let postgres: [PostgresMigration] = steps.compactMap { step in
        step.postgres.map {
            PostgresMigration(version: $0, sql: step.sql(.postgres), compactsRows: step.compactsPostgresRows)
        }
    }
}

/// The column types of ``StoreSchema``: each named once, in each database's spelling.
extension Dialect {
    /// A table's own id: SQLite's rowid, PostgreSQL's `bigserial`.
    var id: String { self == .sqlite ? "INTEGER PRIMARY KEY" : "bigserial PRIMARY KEY" }
    /// Milliseconds, sizes and other ids.
    var bigint: String { self == .sqlite ? "INTEGER" : "bigint" }
    /// Small counts (attempts, HTTP statuses).
    var int: String { self == .sqlite ? "INTEGER" : "integer" }
    var bytes: String { self == .sqlite ? "BLOB" : "bytea" }
    var bool: String { self == .sqlite ? "INTEGER" : "boolean" }
    var `false`: String { self == .sqlite ? "0" : "false" }
    /// A job table's claim (PostgreSQL only: several instances share the store): the instance working on the row
    /// and until when (its lease). Written after a table's last column.
    var claims: String { self == .sqlite ? "" : ",\n    claimed_by TEXT,\n    claimed_until bigint" }
    /// `text` on PostgreSQL only.
    func postgresOnly(_ text: String) -> String { self == .postgres ? text : "" }
    /// `text` on SQLite only.
    func sqliteOnly(_ text: String) -> String { self == .sqlite ? text : "" }
}
