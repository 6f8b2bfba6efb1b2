public import Canonical
public import ServiceKit
internal import V2Adapter

/// The App Store Server API as the V2 path (Get All Subscription Statuses, every signed item verified like a
/// notification) and as Apple's notification history for the sweep.
extension AppStoreAPIClients: V2PathSource, NotificationHistorySource {
    public func notificationHistoryPage(
        bundleID: String,
        environment: AppStoreEnvironment,
        startDate: Int64,
        endDate: Int64,
        paginationToken: String?
    ) async throws(PathFetchError) -> NotificationHistorySlice {
        guard let client = clients[bundleID] else {
            throw PathFetchError(
                code: "no_app_store_api",
                message: "no App Store Server API client for \(bundleID)",
                retryable: false
            )
        }
        do {
            let page = try await client.notificationHistory(
                NotificationHistoryRequest(startDate: startDate, endDate: endDate),
                environment: environment,
                paginationToken: paginationToken
            )
            return NotificationHistorySlice(
                signedPayloads: page.items.map(\.signedPayload),
                nextPaginationToken: page.nextPaginationToken,
                byteCount: page.byteCount
            )
        } catch {
            throw PathFetchError(error)
        }
    }

    public func status(
        bundleID: String,
        environment: AppStoreEnvironment,
        originalTransactionID: String,
        observedAt: Int64
    )
        async throws(PathFetchError) -> V2PathStatus?
    {
        guard let client = clients[bundleID] else {
            throw PathFetchError(
                code: "no_app_store_api",
                message: "no App Store Server API client for \(bundleID)",
                retryable: false
            )
        }
        let statuses: AppStoreAPIClient.SubscriptionStatuses
        do {
            statuses = try await client.subscriptionStatuses(
                transactionID: originalTransactionID,
                environment: environment
            )
        } catch {
            if error.code == .notFound { return nil }
            throw PathFetchError(error)
        }
        guard let item = statuses.items.first(where: { $0.originalTransactionID == originalTransactionID }) else {
            return nil
        }
        return V2PathStatus(
            snapshot: item.snapshot(observedAt: observedAt, bundleID: bundleID, environment: environment),
            transaction: item.transaction.payload,
            renewal: item.renewalInfo?.payload
        )
    }
}
