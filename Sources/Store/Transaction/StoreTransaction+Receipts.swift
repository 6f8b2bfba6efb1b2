internal import Canonical

extension SQLTransaction {
    func receiptHistory(_ key: ReceiptHistoryKey) throws -> StoredReceiptHistory? {
        try c.queryOne(.receiptHistory, historyKey(key)).map { row in
            StoredReceiptHistory(
                json: try row.compressible("json", as: .receiptHistory),
                fetchedAt: try row.nullableInt64("fetched_at"),
                claimedBy: try row.nullableString("claimed_by"),
                claimedUntil: try row.nullableInt64("claimed_until"),
                calls: try row.requiredInt("calls"),
                callsSince: try row.nullableInt64("calls_since")
            )
        }
    }

    func claimReceiptHistory(
        _ key: ReceiptHistoryKey,
        owner: String,
        until: Int64,
        now: Int64,
        freshSince: Int64
    ) throws -> Bool {
        try c.run(
            .claimReceiptHistory,
            historyKey(key) + [.text(owner), .int64(until), .int64(now), .int64(freshSince)]
        ) > 0
    }

    func settleReceiptHistory(_ key: ReceiptHistoryKey, json: [UInt8]?, fetchedAt: Int64, owner: String) throws {
        if let json {
            try c.run(.putReceiptHistory, historyKey(key) + [.compressible(json, .receiptHistory), .int64(fetchedAt)])
            try dropReceiptHistoryPages(key)
        } else {
            try c.run(.releaseReceiptHistory, historyKey(key) + [.text(owner)])
        }
    }

    func receiptHistoryPages(_ key: ReceiptHistoryKey) throws -> [StoredReceiptHistoryPage] {
        try c.query(.receiptHistoryPages, historyKey(key)).map { row in
            StoredReceiptHistoryPage(
                page: try row.requiredInt("page"),
                askedWith: try row.nullableString("asked_with"),
                revision: try row.nullableString("revision"),
                hasMore: try row.requiredBool("has_more"),
                askedAt: try row.requiredInt64("asked_at"),
                json: try row.compressible("json", as: .receiptHistory) ?? []
            )
        }
    }

    func addReceiptHistoryPage(
        _ key: ReceiptHistoryKey,
        _ page: StoredReceiptHistoryPage,
        owner: String,
        until: Int64
    ) throws -> Bool {
        // The claim's row is written first: on PostgreSQL it stays locked until the commit, so no other owner takes
        // the fetch over between the check and the page.
        guard try c.run(.holdReceiptHistory, historyKey(key) + [.text(owner), .int64(until)]) > 0 else { return false }
        try c.run(
            .putReceiptHistoryPage,
            historyKey(key) + [
                .int64(Int64(page.page)), StoreValue(page.askedWith), StoreValue(page.revision), .bool(page.hasMore),
                .int64(page.askedAt), .compressible(page.json, .receiptHistory),
            ]
        )
        return true
    }

    func dropReceiptHistoryPages(_ key: ReceiptHistoryKey) throws {
        try c.run(.dropReceiptHistoryPages, historyKey(key))
    }

    func countReceiptHistoryCall(_ key: ReceiptHistoryKey, now: Int64, limit: Int) throws -> Bool {
        try c.run(
            .countReceiptHistoryCall,
            // The window is an hour.
            historyKey(key) + [.int64(now.clampedSubtracting(3_600_000)), .int64(now), .limit(limit)]
        ) > 0
    }

    func purgeReceiptHistories(fetchedBefore before: Int64, limit: Int) throws -> Int {
        let pages = try c.run(.purgeReceiptHistoryPages, [.int64(before), .limit(limit)])
        return max(pages, try c.run(.purgeReceiptHistories, [.int64(before), .limit(limit)]))
    }

    func recordReceiptComparison(_ e: ReceiptLedgerEntry) throws {
        try c.run(
            .recordReceiptComparison,
            keyValues(e.subscription) + [
                .int64(e.comparedAt), .text(e.outcome.rawValue),
                e.fields.isEmpty ? .null : .text(e.fields.joined(separator: ",")),
                e.apple.map { .compressible(ReceiptOutcomeJSON.encode($0)) } ?? .null,
                e.api.map { .compressible(ReceiptOutcomeJSON.encode($0)) } ?? .null,
            ]
        )
    }

    func receiptLedger(
        bundleID: String?,
        environment: AppStoreEnvironment?,
        from: Int64,
        to: Int64
    ) throws -> [ReceiptLedgerEntry] {
        try c.query(.receiptLedger, [StoreValue(bundleID), StoreValue(environment), .int64(from), .int64(to)])
            .compactMap { row in
                // An outcome this build does not know (a newer gateway's row) is left out.
                guard let outcome = CompareOutcome(rawValue: try row.requiredString("outcome")) else { return nil }
                return ReceiptLedgerEntry(
                    subscription: try row.subscriptionKey(),
                    comparedAt: try row.requiredInt64("compared_at"),
                    outcome: outcome,
                    fields: try row.nullableString("fields")?.split(separator: ",").map(String.init) ?? [],
                    apple: ReceiptOutcomeJSON.decode(try row.compressible("v1_json", as: .snapshot)),
                    api: ReceiptOutcomeJSON.decode(try row.compressible("v2_json", as: .snapshot))
                )
            }
    }

    private func historyKey(_ key: ReceiptHistoryKey) -> [StoreValue] {
        [.text(key.bundleID), .text(key.environment.rawValue), .text(key.customer)]
    }
}

extension SQL {
    fileprivate static let receiptHistory = SQL(
        """
        SELECT json, fetched_at, claimed_by, claimed_until, calls, calls_since FROM receipt_histories
        WHERE bundle_id = $1 AND environment = $2 AND customer = $3
        """
    )

    /// The row is made when missing; the claim is taken when nobody holds it now and no fresh history is there.
    fileprivate static let claimReceiptHistory = SQL(
        """
        INSERT INTO receipt_histories AS h (bundle_id, environment, customer, claimed_by, claimed_until) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (bundle_id, environment, customer) DO UPDATE SET claimed_by = excluded.claimed_by,
            claimed_until = excluded.claimed_until
        WHERE (h.claimed_until IS NULL OR h.claimed_until <= $6 OR h.claimed_by = $4)
          AND (h.fetched_at IS NULL OR h.fetched_at < $7)
        """
    )

    fileprivate static let putReceiptHistory = SQL(
        """
        UPDATE receipt_histories SET json = $4, fetched_at = $5, claimed_by = NULL, claimed_until = NULL
        WHERE bundle_id = $1 AND environment = $2 AND customer = $3
        """
    )

    /// The claim held longer, by the owner that holds it.
    fileprivate static let holdReceiptHistory = SQL(
        """
        UPDATE receipt_histories SET claimed_until = $5
        WHERE bundle_id = $1 AND environment = $2 AND customer = $3 AND claimed_by = $4
        """
    )

    fileprivate static let putReceiptHistoryPage = SQL(
        """
        INSERT INTO receipt_history_pages AS p (bundle_id, environment, customer, page, asked_with, revision, has_more, asked_at, json)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (bundle_id, environment, customer, page) DO UPDATE SET asked_with = excluded.asked_with,
            revision = excluded.revision, has_more = excluded.has_more, asked_at = excluded.asked_at, json = excluded.json
        """
    )

    fileprivate static let receiptHistoryPages = SQL(
        """
        SELECT page, asked_with, revision, has_more, asked_at, json FROM receipt_history_pages
        WHERE bundle_id = $1 AND environment = $2 AND customer = $3 ORDER BY page
        """
    )

    fileprivate static let dropReceiptHistoryPages = SQL(
        "DELETE FROM receipt_history_pages WHERE bundle_id = $1 AND environment = $2 AND customer = $3"
    )

    /// A new hour begins when the last began an hour ago or more; otherwise the call is counted while under the limit.
    fileprivate static let countReceiptHistoryCall = SQL(
        """
        UPDATE receipt_histories SET
            calls = CASE WHEN calls_since IS NULL OR calls_since <= $4 THEN 1 ELSE calls + 1 END,
            calls_since = CASE WHEN calls_since IS NULL OR calls_since <= $4 THEN $5::bigint ELSE calls_since END
        WHERE bundle_id = $1 AND environment = $2 AND customer = $3
          AND (calls_since IS NULL OR calls_since <= $4 OR calls < $6)
        """
    )

    /// Pages asked before the cut (a fetch never finished), oldest first.
    fileprivate static let purgeReceiptHistoryPages = SQL(
        """
        DELETE FROM receipt_history_pages WHERE (bundle_id, environment, customer, page) IN (
            SELECT bundle_id, environment, customer, page FROM receipt_history_pages
            WHERE asked_at < $1 ORDER BY asked_at LIMIT $2)
        """
    )

    fileprivate static let releaseReceiptHistory = SQL(
        """
        UPDATE receipt_histories SET claimed_by = NULL, claimed_until = NULL
        WHERE bundle_id = $1 AND environment = $2 AND customer = $3 AND claimed_by = $4
        """
    )

    /// Oldest first, on `receipt_histories_fetched`; rows never fetched (a claim that failed) go too once old.
    fileprivate static let purgeReceiptHistories = SQL(
        """
        DELETE FROM receipt_histories WHERE (bundle_id, environment, customer) IN (
            SELECT bundle_id, environment, customer FROM receipt_histories
            WHERE fetched_at < $1 OR (fetched_at IS NULL AND (claimed_until IS NULL OR claimed_until < $1))
            ORDER BY fetched_at LIMIT $2)
        """
    )

    fileprivate static let recordReceiptComparison = SQL(
        """
        INSERT INTO receipt_ledger (bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        """
    )

    fileprivate static let receiptLedger = SQL(
        """
        SELECT bundle_id, environment, original_transaction_id, compared_at, outcome, fields, v1_json, v2_json FROM receipt_ledger
        WHERE ($1::text IS NULL OR bundle_id = $1) AND ($2::text IS NULL OR environment = $2) AND compared_at >= $3 AND compared_at < $4
        ORDER BY compared_at, id
        """
    )
}
