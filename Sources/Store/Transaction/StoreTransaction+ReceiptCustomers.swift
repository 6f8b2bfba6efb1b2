internal import Canonical

extension SQLTransaction {
    func receiptCustomers(
        bundleID: String,
        environment: AppStoreEnvironment,
        after: String,
        limit: Int
    ) throws -> [ReceiptCustomer] {
        try c.query(.receiptCustomers, [.text(bundleID), .text(environment.rawValue), .text(after), .limit(limit)])
            .map { row in
                ReceiptCustomer(
                    originalTransactionID: try row.requiredString("otid"),
                    historyFetchedAt: try row.nullableInt64("fetched_at")
                )
            }
    }

    func receiptCustomerCount(bundleID: String, environment: AppStoreEnvironment, after: String) throws -> Int {
        try c.queryOne(.receiptCustomerCount, [.text(bundleID), .text(environment.rawValue), .text(after)])?
            .requiredInt("n") ?? 0
    }
}

extension SQL {
    /// Each table gives its first `limit` ids after the cursor, in order, off its index on (bundle_id, environment,
    /// original_transaction_id) (schema step 21): the first `limit` of their union are the page, whatever the size
    /// of the tables, and what each database holds in memory is two pages.
    fileprivate static let receiptCustomers = SQL(
        """
        SELECT u.otid AS otid, h.fetched_at AS fetched_at FROM (
            SELECT otid FROM (
                SELECT DISTINCT original_transaction_id AS otid FROM subscription_state
                WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id > $3
                ORDER BY otid LIMIT $4) AS s
            UNION
            SELECT otid FROM (
                SELECT DISTINCT original_transaction_id AS otid FROM receipt_ledger
                WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id > $3
                ORDER BY otid LIMIT $4) AS r
        ) AS u
        LEFT JOIN receipt_histories h ON h.bundle_id = $1 AND h.environment = $2 AND h.customer = u.otid
        ORDER BY u.otid LIMIT $4
        """
    )

    fileprivate static let receiptCustomerCount = SQL(
        """
        SELECT COUNT(*) AS n FROM (
            SELECT original_transaction_id FROM subscription_state
            WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id > $3
            UNION
            SELECT original_transaction_id FROM receipt_ledger
            WHERE bundle_id = $1 AND environment = $2 AND original_transaction_id > $3
        ) AS u
        """
    )
}
