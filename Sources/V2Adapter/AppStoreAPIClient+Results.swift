public import Canonical

extension AppStoreAPIClient {
    /// Get All Subscription Statuses, every signed item verified.
    public struct SubscriptionStatuses: Sendable, Hashable {
        /// The environment the answer came from (the one asked).
        public let environment: AppStoreEnvironment
        /// As Apple's answer states it (unsigned; the signed transactions carry their own).
        public let bundleID: String?
        public let appAppleID: Int64?
        /// One per subscription (original transaction), in Apple's order: groups, then their last transactions.
        public let items: [SubscriptionStatus]

        public init(
            environment: AppStoreEnvironment,
            bundleID: String?,
            appAppleID: Int64?,
            items: [SubscriptionStatus]
        ) {
            (self.environment, self.bundleID, self.appAppleID, self.items) = (environment, bundleID, appAppleID, items)
        }

        /// What the App Store Server API says about each subscription, observed at `observedAt` (ms): source
        /// `v2-api`, facts from the signed transaction and renewal info only (never from the unsigned wrapper, except
        /// the original transaction id when the signed transaction lacks it).
        public func snapshots(observedAt: Int64) -> [OutcomeSnapshot] {
            items.map { $0.snapshot(observedAt: observedAt, bundleID: bundleID, environment: environment) }
        }
    }

    /// One `lastTransactions` item: the subscription's status and its verified latest transaction and renewal info.
    public struct SubscriptionStatus: Sendable, Hashable {
        public let subscriptionGroupIdentifier: String?
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked (others kept as they come).
        public let status: Int
        public let originalTransactionID: String
        public let transaction: VerifiedTokenV2<TransactionPayload>
        /// Nil when Apple sent no `signedRenewalInfo`.
        public let renewalInfo: VerifiedTokenV2<RenewalInfoPayload>?

        /// The comparison snapshot of this subscription at `observedAt` (ms).
        public func snapshot(
            observedAt: Int64,
            bundleID: String? = nil,
            environment: AppStoreEnvironment? = nil
        )
            -> OutcomeSnapshot
        {
            let tx = transaction.payload
            let ri = renewalInfo?.payload
            return OutcomeSnapshot(
                source: .v2API,
                bundleID: tx.bundleID ?? bundleID,
                environment: transaction.environment ?? environment,
                originalTransactionID: tx.originalTransactionID ?? originalTransactionID,
                productID: tx.productID,
                transactionID: tx.transactionID,
                expiresDate: tx.expiresDate,
                revocationDate: tx.revocationDate,
                gracePeriodExpiresDate: ri?.gracePeriodExpiresDate,
                autoRenew: ri?.autoRenewStatus.map { $0 == 1 },
                autoRenewProductID: ri?.autoRenewProductID,
                inBillingRetry: ri?.isInBillingRetryPeriod,
                expirationIntent: ri?.expirationIntent.map(AppleCodes.expirationIntent),
                observedAt: observedAt
            )
        }
    }

    /// One page of Get Transaction History, every transaction verified.
    public struct TransactionHistoryPage: Sendable, Hashable {
        public let transactions: [VerifiedTokenV2<TransactionPayload>]
        /// Apple's token for the page after this one (on the last page: for what is added or changed later); nil
        /// when Apple gave none.
        public let revision: String?
        /// Whether Apple has more pages now.
        public let hasMore: Bool

        public init(transactions: [VerifiedTokenV2<TransactionPayload>], revision: String?, hasMore: Bool) {
            (self.transactions, self.revision, self.hasMore) = (transactions, revision, hasMore)
        }
    }

    /// One page of Get Notification History. The `signedPayload`s are *not* verified here: they go through the
    /// gateway's notification pipeline like live traffic.
    public struct NotificationHistoryPage: Sendable, Hashable {
        public let items: [NotificationHistoryResponse.Item]
        /// The token for the next page; nil when this is the last one.
        public let nextPaginationToken: String?
        /// The size of Apple's answer (bytes), for callers that bound what one run reads.
        public let byteCount: Int

        public init(items: [NotificationHistoryResponse.Item], nextPaginationToken: String?, byteCount: Int = 0) {
            (self.items, self.nextPaginationToken, self.byteCount) = (items, nextPaginationToken, byteCount)
        }
    }
}
