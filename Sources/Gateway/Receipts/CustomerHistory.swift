public import Canonical
internal import FoundationEssentials
public import V2Adapter

/// One customer's purchases as the App Store Server API gave them (docs/architecture.md, "The receipt path"): every
/// transaction Get Transaction History returned and each subscription's renewal info from Get All Subscription
/// Statuses, each verified like a notification's. Kept in the store as JSON so a later answer needs no call.
public struct CustomerHistory: Codable, Sendable, Hashable {
    public var fetchedAt: Int64
    public var transactions: [TransactionPayload]
    public var renewals: [RenewalInfoPayload]

    public init(fetchedAt: Int64, transactions: [TransactionPayload], renewals: [RenewalInfoPayload]) {
        (self.fetchedAt, self.transactions, self.renewals) = (fetchedAt, transactions, renewals)
    }

    enum CodingKeys: String, CodingKey {
        case fetchedAt = "fetched_at"
        case transactions, renewals
    }

    /// Every original transaction id it holds.
    public var originalTransactionIDs: [String] {
        Array(Set(transactions.compactMap { $0.originalTransactionID ?? $0.transactionID })).sorted()
    }

    /// Its facts as canonical events (source `v2-api`): each transaction dated by when Apple signed it (else the
    /// fetch), then each subscription's newest transaction with its renewal info, dated no earlier — so that, merged
    /// with later notifications' events, the newest view of a transaction wins (``V1BodySynthesizer``).
    public func events(bundleID: String, environment: AppStoreEnvironment) -> [CanonicalEvent] {
        var events: [CanonicalEvent] = []
        var newest: [String: CanonicalEvent] = [:]
        for tx in transactions {
            var e = CanonicalEvent(
                id: "receipt-history:" + (tx.transactionID ?? ""),
                source: .v2API,
                kind: .other,
                rawType: "",
                eventDate: tx.signedDate ?? fetchedAt,
                eventDateSource: .signedDate,
                verified: true
            )
            (e.bundleID, e.environment, e.productID) = (bundleID, environment, tx.productID)
            e.apply(tx)
            events.append(e)
            let otid = tx.originalTransactionID ?? tx.transactionID ?? ""
            if let seen = newest[otid], (seen.purchaseDate ?? .min) >= (tx.purchaseDate ?? .min) { continue }
            newest[otid] = e
        }
        for ri in renewals {
            guard let otid = ri.originalTransactionID, var e = newest[otid] else { continue }
            e.apply(ri)
            e.eventDate = max(e.eventDate, ri.signedDate ?? fetchedAt)
            events.append(e)
        }
        return events
    }

    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map(Array.init) ?? []
    }

    static func decode(_ bytes: [UInt8]) -> CustomerHistory? {
        try? JSONDecoder().decode(CustomerHistory.self, from: Data(bytes))
    }
}

/// Where a customer's history comes from: the App Store Server API (``AppStoreAPIPathSource``), or a stand-in in tests.
public protocol ReceiptHistorySource: Sendable {
    /// The customer's whole history for the app, found through any of its transaction ids: Get Transaction History
    /// (every page) and Get All Subscription Statuses. A transaction Apple does not know gives an empty history.
    func history(
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String,
        now: Int64
    ) async throws(PathFetchError) -> CustomerHistory
}

extension AppStoreAPIPathSource: ReceiptHistorySource {
    public func history(
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String,
        now: Int64
    ) async throws(PathFetchError) -> CustomerHistory {
        guard let client = client(for: bundleID) else {
            throw PathFetchError(
                code: "no_app_store_api",
                message: "no App Store Server API client for \(bundleID)",
                retryable: false
            )
        }
        let transactions: [TransactionPayload]
        do {
            transactions = try await client.transactionHistory(transactionID: transactionID, environment: environment)
                .map(\.payload)
        } catch  where error.code == .notFound {
            return CustomerHistory(fetchedAt: now, transactions: [], renewals: [])
        } catch {
            throw PathFetchError(error)
        }
        // Renewal info exists only for auto-renewable subscriptions.
        guard transactions.contains(where: { $0.type == "Auto-Renewable Subscription" }) else {
            return CustomerHistory(fetchedAt: now, transactions: transactions, renewals: [])
        }
        do {
            let statuses = try await client.subscriptionStatuses(transactionID: transactionID, environment: environment)
            return CustomerHistory(
                fetchedAt: now,
                transactions: transactions,
                renewals: statuses.items.compactMap { $0.renewalInfo?.payload }
            )
        } catch  where error.code == .notFound {
            return CustomerHistory(fetchedAt: now, transactions: transactions, renewals: [])
        } catch {
            throw PathFetchError(error)
        }
    }
}
