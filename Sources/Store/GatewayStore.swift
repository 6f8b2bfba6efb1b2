public import Canonical
public import Policy

/// The gateway's durable state — journal, events, subscription state, outbox, quarantine, authority, job tables and
/// the comparison ledger — behind one interface. Every change runs in a transaction through ``write(bytes:_:)``;
/// the operations themselves are the ``StoreTransaction`` the closure receives, so what must commit together (a
/// notification and its events, deliveries and jobs) is written in one closure. One implementation per database:
/// ``SQLiteStore`` (the embedded default) and ``PostgresStore`` (several instances on one database). No SQL lives
/// outside them (docs/architecture.md).
public protocol GatewayStore: Sendable {
    /// Runs `body` in a write transaction and returns once it is durable, or throws (the body's error, or the
    /// commit's: nothing of it is then stored). Blocking: for server threads. `bytes`: about how much the body
    /// writes when that is a notification body, so an implementation that batches transactions can bound a batch.
    func write<T: Sendable>(bytes: Int, _ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T
    /// The same for async callers, without holding a thread while waiting for the commit.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Runs `body`, which runs exactly one statement, as one read: a server database runs it without a transaction
    /// around it (one statement sees one snapshot anyway), one round trip instead of three.
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Runs `body` on one consistent snapshot; writes inside it fail. Blocking.
    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// The same for async callers, off Swift's cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
    /// Whether ``close()`` was called: no more writes are taken.
    var isClosing: Bool { get }
    /// Whether several gateway instances may work on this store at once: background jobs must then be claimed in a
    /// write transaction (``StoreTransaction/claimDueDeliveries(downstream:at:limit:lease:)`` and its kin), so that
    /// each job runs on one instance until its lease runs out. A store that one process owns (SQLite) answers false:
    /// its jobs are read in a read transaction and the process keeps track of what it runs.
    var sharedByInstances: Bool { get }
    /// Commits what is queued, refuses new work and closes.
    func close()
    /// (transactions committed, writes committed) since open: how well commits are batched.
    var commitStatistics: (batches: Int, items: Int) { get }
    /// Leaves nothing of deleted or overwritten rows in the store's free space or log: after a scrub
    /// (``GatewayStore/scrubQuarantine(_:)``) rewrote rows that held a secret. Slow; for that one-time cleanup only.
    func eraseFreedSpace() throws
}

extension GatewayStore {
    public func eraseFreedSpace() throws {}

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) throws -> T {
        try write(bytes: 0, body)
    }

    public func readStatement<T: Sendable>(
        _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        try await read(body)
    }
}

extension StoreTransaction {
    /// Adds a row to its lane within `cap`, whatever the lane holds already.
    public func quarantine(_ record: QuarantineRecord, cap: QuarantineCap) throws -> QuarantineOutcome {
        try quarantine(record, cap: cap, once: false)
    }

    /// The due deliveries alone, without their payloads.
    public func claimDueDeliveries(downstream: String, at time: Int64, limit: Int, lease: Lease) throws -> [DeliveryJob]
    {
        try claimDueDeliveries(downstream: downstream, at: time, limit: limit, lease: lease, payload: .none)
    }
}

/// The operations on the store, valid only inside the ``GatewayStore`` closure that received them (never keep one).
/// In a read transaction the writing operations throw.
public protocol StoreTransaction {
    // MARK: Journal and events

    /// Journals `item` with its events, state updates, deliveries and jobs: accepted, or a duplicate of an earlier
    /// notification with the same key. The authority in force now decides which path the events are authoritative on.
    func journal(_ item: JournalItem, routing: Routing, now: Int64) throws -> JournalOutcome
    /// Stores events (ids already stored are ignored), updates each subscription's state on the event's path (last
    /// write wins on event date, then arrival order) and queues their deliveries, as the rule plans them
    /// (``NotificationPolicy/events(_:authority:routing:)``). `authority`: the authority the events' notification
    /// arrived under (the current one when nil).
    /// Returns how many of them were new (an event whose id is stored already changes nothing).
    @discardableResult
    func storeEvents(
        _ events: [CanonicalEvent],
        journalID: Int64?,
        routing: Routing,
        now: Int64,
        authority: Generation?
    ) throws -> Int
    /// Carries out a plan of the notification rule in order: its writes, then, when it asks whether the notification
    /// stands alone (``standsAlone(_:bundleID:environment:now:)``), the writes for the answer. `journalID`: the
    /// notification's journal row, which receipt jobs and body deliveries need. Returns how many events were new.
    @discardableResult
    func execute(_ plan: Plan, journalID: Int64?, now: Int64) throws -> Int
    /// Journaled notifications, oldest first (bodies included); optionally one row or those with a key.
    func journalEntries(id: Int64?, key: String?, limit: Int) throws -> [JournalEntry]
    /// Whether a notification of `version` is the only notification of its event, so that it must yield an authoritative
    /// event (and a V1 body for the old backend) whatever the authority (docs/architecture.md, "One authoritative event
    /// per notification"). Apple sends each notification in one version: once the gateway has switched Apple for the
    /// app and environment (`migrate`), always. Before that the gateway cannot tell Apple's traffic from the
    /// simulator's paired traffic (each event in both versions), so only while the other version has been silent for
    /// a day. One statement (a round trip on PostgreSQL, on the path of every such notification).
    func standsAlone(
        _ version: Generation,
        bundleID: String,
        environment: AppStoreEnvironment,
        now: Int64
    ) throws -> Bool
    /// Stored events in arrival order: one by id, one subscription's, or all (`limit` newest-last).
    func events(id: String?, originalTransactionID: String?, limit: Int) throws -> [StoredEvent]
    /// A subscription's events dated at or before `through`, newest first (event date, then arrival), at most `limit`:
    /// what was known of it at that moment.
    func subscriptionEvents(originalTransactionID: String, through: Int64, limit: Int) throws -> [StoredEvent]
    /// A subscription's events stored after `createdAfter` (arrival time), newest first (event date, then arrival), at
    /// most `limit`: what the gateway learnt of it since a moment.
    func subscriptionEvents(originalTransactionID: String, createdAfter: Int64, limit: Int) throws -> [StoredEvent]
    /// A subscription's state on each path it has one on.
    func subscriptionStates(originalTransactionID: String) throws -> [StoredSubscriptionState]
    /// A subscription's states and its events (in ``events(id:originalTransactionID:limit:)``'s order) for an
    /// operator: the events read a page at a time until `maxEvents` rows or `maxBytes` of JSON (each row counting
    /// ``SubscriptionHistory/rowBytes`` more), whichever comes first; a value that reads as damaged is a row with its
    /// ``StoredValueDamage``, never left out. On PostgreSQL a value over its column's cap stays in the database.
    func subscriptionHistory(
        originalTransactionID: String,
        maxEvents: Int,
        maxBytes: Int
    ) throws
        -> SubscriptionHistory
    /// Events per source of a bundle and environment created in [since, until).
    func eventCountsBySource(
        bundleID: String,
        environment: AppStoreEnvironment,
        since: Int64,
        until: Int64
    ) throws -> [EventSource: Int]
    /// Rows in the journal and in the events table (counted: proportional to the rows).
    func counts() throws -> (journal: Int, events: Int)
    /// What `/admin/status` shows, read without counting the big tables (``StatusCounts``).
    func statusCounts() throws -> StatusCounts

    // MARK: Authority

    /// The authoritative generation of a bundle in an environment: V1 when nothing is recorded.
    func authority(bundleID: String?, environment: AppStoreEnvironment?) throws -> Generation
    /// Seeds authority from the config: rows that came from the config follow it; rows set by a cutover are kept.
    /// Returns every recorded authority.
    func seedAuthority(_ wanted: [AuthorityEntry], now: Int64) throws -> [AuthorityEntry]
    /// Every recorded authority, by bundle and environment.
    func authorities() throws -> [AuthorityEntry]
    /// Sets a bundle's authority by a cutover and logs it.
    func recordCutover(_ record: CutoverRecord, to authority: Generation) throws
    /// A bundle's cutovers, oldest first.
    func cutovers(bundleID: String, environment: AppStoreEnvironment) throws -> [CutoverRecord]
    /// When each bundle's paths last produced an event.
    func authorityActivity() throws -> [AuthorityActivity]

    // MARK: The switch of Apple's notification version

    /// The switch's record of an app and environment, nil when the gateway never read or switched it.
    func appleSwitch(bundleID: String, environment: AppStoreEnvironment) throws -> AppleSwitchState?
    /// Every app and environment the switch knows, by bundle and environment.
    func appleSwitches() throws -> [AppleSwitchState]
    /// Stores the record whole when the switch on record is still the one `expected` names (its migration id; nil:
    /// none) — the claim, every save and the release of a run — and returns whether it did. False, writing nothing,
    /// when another run took the app and environment since: one statement, so two runs (on one instance or several)
    /// never both hold it.
    func replaceAppleSwitch(_ state: AppleSwitchState, ifMigrationIs expected: String?) throws -> Bool
    /// Records Apple's settings as just read (app id, version, URL, when), leaving the switch on record as it is.
    func recordAppleRead(
        bundleID: String,
        environment: AppStoreEnvironment,
        appID: String?,
        version: Generation?,
        url: String?,
        at: Int64
    ) throws
    /// Renews the lease of the run `migrationID` (its record's `updated_at`); false when that run no longer holds the
    /// record.
    func renewAppleSwitch(
        bundleID: String,
        environment: AppStoreEnvironment,
        migrationID: String,
        at: Int64
    ) throws
        -> Bool
    /// Appends a step to the switch log.
    func logAppleSwitch(_ entry: AppleSwitchLogEntry) throws
    /// The switch log of an app and environment, oldest first, the last `limit` entries.
    func appleSwitchLog(bundleID: String, environment: AppStoreEnvironment, limit: Int) throws -> [AppleSwitchLogEntry]

    // MARK: Quarantine

    /// Adds a row to its lane within `cap`; the check, any eviction and the insert are one step. `once`: not when the
    /// lane already holds a row with the same body, code and claimed bundle (``QuarantineOutcome/held(id:)``) — for
    /// what Apple's notification history lists again on every run that covers it. Part of the same step, so two
    /// instances quarantining the same body at once store one row.
    func quarantine(_ record: QuarantineRecord, cap: QuarantineCap, once: Bool) throws -> QuarantineOutcome
    /// Quarantined rows, oldest first: of one lane, or one row, or all.
    func quarantined(lane: QuarantineRecord.Lane?, id: Int64?, limit: Int) throws -> [QuarantineRecord]
    /// Each lane's rows and bytes.
    func quarantineUsage() throws -> [QuarantineRecord.Lane: (rows: Int64, bytes: Int64)]
    func removeQuarantined(id: Int64) throws
    /// Marks a row as being replayed now (committed before the replay runs).
    func beginReplay(id: Int64, now: Int64) throws
    /// Records a replay that did not journal the row: the row stays, with its outcome.
    func finishReplay(id: Int64, code: String, now: Int64) throws
    /// Up to `limit` rows stored before quarantined bodies were redacted, oldest first.
    func unredactedQuarantine(limit: Int) throws -> [QuarantineRecord]
    /// Stores a row's scrubbed body and text (`record.id` names it; its size is counted again) and marks it redacted.
    func rewriteQuarantined(_ record: QuarantineRecord) throws

    // MARK: Outbox

    /// At most `limit` deliveries of `downstream` due at `time`, in the order they should start, claimed for `lease`
    /// where the store is shared by instances (a job claimed by another instance whose lease has not run out is not
    /// due; settling a job ends its claim); each with what it sends (``DeliveryJob/payload``) as `payload` asks, read
    /// in the same statement — the payload's own read was a round trip per delivery.
    func claimDueDeliveries(
        downstream: String,
        at time: Int64,
        limit: Int,
        lease: Lease,
        payload: PayloadRead
    ) throws -> [DeliveryJob]
    /// What a webhook delivery of `eventID` sends — its notification's body only `withBody` (a downstream that wants
    /// the raw notification): bodies are the largest thing stored; nil when the event is no longer stored.
    func deliveryPayload(eventID: String, withBody: Bool) throws -> DeliveryPayload?
    /// Records an attempt's outcome; a row no longer pending (replayed or dead-lettered meanwhile) is left alone.
    func settleDelivery(id: Int64, _ outcome: DeliveryOutcome) throws
    /// Dead-letters pending deliveries to downstreams not in `configured`; returns how many.
    func deadLetterDeliveries(notTo configured: [String], error: String) throws -> Int
    /// Re-arms the selected deliveries (attempts reset, due at `now`); returns how many.
    func redeliver(_ selection: RedeliverySelection, now: Int64) throws -> Int
    /// Re-arms up to `limit` deliveries created in [since, until) after `after`, in creation order (created_at,
    /// id): how many, and where the page ended (nil: nothing is left).
    func redeliverPage(
        since: Int64,
        until: Int64,
        after: (createdAt: Int64, id: Int64),
        limit: Int,
        now: Int64
    ) throws -> (count: Int, last: (createdAt: Int64, id: Int64)?)
    /// Re-arms up to `limit` dead letters, oldest first; returns how many.
    func redeliverDeadLetters(limit: Int, now: Int64) throws -> Int
    /// Outbox rows, oldest first, optionally of one state, downstream or event.
    func deliveries(state: DeliveryState?, downstream: String?, eventID: String?, limit: Int) throws -> [Delivery]
    /// Pending deliveries per downstream.
    func pendingDeliveries() throws -> [PendingDeliveries]
    /// Outbox rows per state.
    func deliveryCounts() throws -> [DeliveryState: Int]

    // MARK: verifyReceipt jobs

    /// At most `limit` verifyReceipt jobs due at `time`, oldest due first, with their journaled bodies; claimed like
    /// deliveries.
    func claimDueReceiptJobs(at time: Int64, limit: Int, lease: Lease) throws -> [ReceiptJob]
    /// Records an attempt: the job's state, attempts, when it is due again, and what Apple said.
    func settleReceiptJob(
        journalID: Int64,
        state: JobState,
        attempts: Int,
        nextAttemptAt: Int64,
        error: String?,
        appleStatus: Int?,
        now: Int64
    ) throws
    /// verifyReceipt jobs, oldest first, optionally of one state.
    func receiptJobs(state: JobState?) throws -> [ReceiptJobStatus]
    /// verifyReceipt jobs still owed work, per state (pending, failed), each counted on its index: the done ones, one per
    /// verified V1 notification, grow with the journal and are not counted.
    func receiptJobCounts() throws -> [JobState: Int]
    /// Pending verifyReceipt jobs, counted on the index of pending rows (the gauge reads it every pass).
    func pendingReceiptJobs() throws -> Int

    // MARK: Comparison

    /// Keeps the newest snapshot per subscription and path.
    func putSnapshot(_ snapshot: OutcomeSnapshot, path: Generation) throws
    func snapshot(of subscription: SubscriptionKey, path: Generation) throws -> OutcomeSnapshot?
    /// The receipt kept for a subscription; nil while no V1 notification for it was verified.
    func receipt(of subscription: SubscriptionKey) throws -> StoredReceipt?
    /// Keeps the latest receipt of a subscription and makes its pending V1 fetches due now: a comparison waiting
    /// for V1 to know this subscription runs at once. Both in one place, so a receipt is never stored without it.
    func putReceipt(_ receipt: StoredReceipt, of subscription: SubscriptionKey) throws
    /// Queues a fetch at `time`, due then or at `due`. A plain comparison fetch (no `v1EventID`) is not queued
    /// again while one for the same subscription and path is pending.
    func enqueueFetch(_ request: FetchRequest, at time: Int64, due: Int64?) throws
    /// At most `limit` fetches due at `time`, oldest due first; claimed like deliveries.
    func claimDueFetches(at time: Int64, limit: Int, lease: Lease) throws -> [FetchJob]
    /// Records a fetch's attempt: its state, attempts, when it is due again, and why.
    func settleFetch(
        id: Int64,
        state: JobState,
        attempts: Int,
        nextAttemptAt: Int64?,
        error: String?,
        now: Int64
    ) throws
    /// Fetches, oldest first, optionally of one state.
    func fetchJobs(state: JobState?) throws -> [FetchJob]
    /// Fetches per state.
    func fetchJobCounts() throws -> [JobState: Int]
    /// Pending fetches, counted on the index of pending rows (the gauge reads it every pass).
    func pendingFetches() throws -> Int
    /// Records a comparison (or a one-sided observation) in the ledger.
    func recordComparison(_ entry: LedgerEntry) throws
    /// A bundle's ledger over [from, to) counted in the store: rows per outcome, agreements and disagreements per UTC
    /// day (`byDay`), disagreements per set of fields. Index range counts: bounded whatever the ledger holds.
    func ledgerTally(
        bundleID: String,
        environment: AppStoreEnvironment,
        from: Int64,
        to: Int64,
        byDay: Bool,
        in ledger: ComparisonLedger
    ) throws
        -> LedgerTally
    /// Up to `limit` rows of one outcome compared before `to` and after `after` (ledger order: compared_at, id).
    func ledgerExamples(
        bundleID: String,
        environment: AppStoreEnvironment,
        outcome: CompareOutcome,
        to: Int64,
        after: (comparedAt: Int64, id: Int64),
        limit: Int,
        in ledger: ComparisonLedger
    ) throws -> [LedgerExample]
    /// Ledger rows of a bundle and environment compared in [from, to), oldest first (all bundles when nil).
    func ledger(bundleID: String?, environment: AppStoreEnvironment?, from: Int64, to: Int64) throws -> [LedgerEntry]

    // MARK: The receipt path (docs/operations.md, "Moving the receipt path")

    /// How verifyReceipt is answered for a bundle and environment (`apple` when nothing set it).
    func receiptMode(bundleID: String, environment: AppStoreEnvironment) throws -> ReceiptMode
    /// Seeds each bundle and environment's mode from the config, keeping those a cutover set; returns every entry.
    @discardableResult
    func seedReceiptModes(_ wanted: [ReceiptModeEntry], now: Int64) throws -> [ReceiptModeEntry]
    /// Every bundle and environment's mode.
    func receiptModes() throws -> [ReceiptModeEntry]
    /// Moves a bundle and environment to `mode` and logs it in the cutover log (`origin` `receipts`).
    func recordReceiptCutover(_ record: CutoverRecord, to mode: ReceiptMode) throws
    /// A customer's history as last fetched (nil when never asked).
    func receiptHistory(_ key: ReceiptHistoryKey) throws -> StoredReceiptHistory?
    /// Takes the fetch of a customer's history for `owner` until `until`, unless another owner holds it now or a
    /// history fetched at or after `freshSince` is there (another instance just fetched it): several instances (or
    /// requests) asking about one customer at once make one call to Apple.
    func claimReceiptHistory(
        _ key: ReceiptHistoryKey,
        owner: String,
        until: Int64,
        now: Int64,
        freshSince: Int64
    )
        throws -> Bool
    /// Stores a fetched history and ends the claim (`json` nil: the fetch failed; the history stays as it was).
    func settleReceiptHistory(_ key: ReceiptHistoryKey, json: [UInt8]?, fetchedAt: Int64, owner: String) throws
    /// Drops histories fetched before `before`, at most `limit`; how many.
    func purgeReceiptHistories(fetchedBefore before: Int64, limit: Int) throws -> Int
    /// Records one subscription's comparison of Apple's verifyReceipt answer with the gateway's.
    func recordReceiptComparison(_ entry: ReceiptLedgerEntry) throws
    /// Receipt ledger rows of a bundle and environment compared in [from, to), oldest first.
    func receiptLedger(
        bundleID: String?,
        environment: AppStoreEnvironment?,
        from: Int64,
        to: Int64
    ) throws
        -> [ReceiptLedgerEntry]

    // MARK: Recovery runs (docs/operations.md, "Reconciliation")

    /// Adds the runs not scheduled yet, each first due at its `firstRunAt`; rows already there keep their schedule.
    func scheduleReconcileRuns(_ runs: [(key: ReconcileRunKey, firstRunAt: Int64)]) throws
    /// Claims the due runs, like every job (several instances: one runs each).
    func claimDueReconcileRuns(at time: Int64, limit: Int, lease: Lease) throws -> [ReconcileRun]
    /// Extends to `lease.until` the claims `lease.owner` holds on the jobs `ids` of `jobs` — the jobs it is still
    /// running, so that no other instance takes one over while it runs longer than its lease. A job no longer claimed
    /// by the owner (settled, or taken over already) is left alone. A store one process owns records no claims.
    func renewClaims(_ jobs: ClaimedJobs, ids: [Int64], lease: Lease) throws
    /// Records what a run did and when it runs next; releases the claim.
    func settleReconcileRun(id: Int64, _ outcome: ReconcileRunOutcome, now: Int64) throws
    /// Moves the runs of an app and environment due before `until` to `until` (Apple asked it to wait).
    func deferReconcileRuns(bundleID: String, environment: AppStoreEnvironment, until: Int64) throws
    /// Every scheduled run.
    func reconcileRuns() throws -> [ReconcileRun]
    /// The subscriptions the reconciliation rule selects, soonest expiry first.
    func reconcileCandidates(_ selection: ReconcileSelection) throws -> [ReconcileCandidate]
    /// Notes that a subscription's path was checked at `time` (it is not selected again before `checkedBefore` passes it).
    func markReconciled(
        path: Generation,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        at time: Int64
    ) throws
    /// Recovered events per app, environment, mechanism and UTC day, created in [since, until).
    func recoveredEventCounts(since: Int64, until: Int64) throws -> [RecoveredCount]

    // MARK: Retention

    /// Drops raw bodies received before `cutoff` whose jobs and pass-through deliveries are finished; their events
    /// and delivery history stay. Returns how many.
    func purgeBodies(olderThan cutoff: Int64, now: Int64) throws -> Int
    /// The same for at most `limit` bodies, oldest first (`journal_unpurged`): a page of the retention pass.
    func purgeBodies(olderThan cutoff: Int64, now: Int64, limit: Int) throws -> Int
    /// Deletes finished fetches last due before `cutoff` (bookkeeping only: each outcome is in the ledger).
    func purgeFinishedFetches(olderThan cutoff: Int64) throws -> Int
}
