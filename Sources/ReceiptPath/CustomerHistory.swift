public import Canonical
internal import FoundationEssentials
public import ServiceKit
public import V2Adapter

/// One customer's purchases as the App Store Server API gave them (docs/architecture.md, "The receipt path"): the
/// transactions Get Transaction History returned for the product types a verifyReceipt answer lists
/// (``answeredProductTypes``) and each subscription's renewal info from Get All Subscription Statuses, each verified
/// like a notification's. Kept in the store as JSON so a later answer needs no call.
public struct CustomerHistory: Codable, Sendable, Hashable {
    /// When the fetch that made it began (its first page was asked): events journaled since are laid over it.
    public var fetchedAt: Int64
    public var transactions: [TransactionPayload]
    public var renewals: [RenewalInfoPayload]

    public init(fetchedAt: Int64, transactions: [TransactionPayload], renewals: [RenewalInfoPayload]) {
        (self.fetchedAt, self.transactions, self.renewals) = (fetchedAt, transactions, renewals)
    }

    package enum CodingKeys: String, CodingKey {
        case fetchedAt = "fetched_at"
        case transactions, renewals
    }

    /// Apple's `productType` values a verifyReceipt answer lists: it leaves consumables out (``ReceiptAnswer``, Apple
    /// listed only unfinished ones), so Get Transaction History is asked without them.
    public static let answeredProductTypes = ["AUTO_RENEWABLE", "NON_RENEWABLE", "NON_CONSUMABLE"]

    /// The pages' transactions in Apple's order, each once: one Apple changed during the walk (a refund, an upgrade)
    /// comes again on a later page, and that later view replaces the earlier one in its place.
    package static func latestViews(_ transactions: [TransactionPayload]) -> [TransactionPayload] {
        var merged: [TransactionPayload] = []
        var index: [String: Int] = [:]
        for tx in transactions {
            if let id = tx.transactionID, let i = index[id] {
                merged[i] = tx
            } else {
                if let id = tx.transactionID { index[id] = merged.count }
                merged.append(tx)
            }
        }
        return merged
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

    package static func decode(_ bytes: [UInt8]) -> CustomerHistory? {
        try? JSONDecoder().decode(CustomerHistory.self, from: Data(bytes))
    }
}

/// One page of a customer's history: its verified transactions, Apple's revision for the next page, and whether
/// Apple has more.
public struct ReceiptHistoryPage: Sendable, Hashable {
    public var transactions: [TransactionPayload]
    public var revision: String?
    public var hasMore: Bool

    public init(transactions: [TransactionPayload], revision: String?, hasMore: Bool) {
        (self.transactions, self.revision, self.hasMore) = (transactions, revision, hasMore)
    }
}

/// Where a customer's history comes from, one call at a time (``ReceiptHistories`` keeps each page as it comes): the
/// App Store Server API (``AppStoreAPIClients``), or a stand-in in tests.
public protocol ReceiptHistorySource: Sendable {
    /// One page of Get Transaction History for the customer found through `transactionID`, after `revision` (nil:
    /// the first page), of the product types in ``CustomerHistory/answeredProductTypes`` only. A transaction Apple
    /// does not know gives an empty last page.
    func historyPage(
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String,
        revision: String?
    ) async throws(PathFetchError) -> ReceiptHistoryPage

    /// Each of the customer's subscriptions' renewal info (Get All Subscription Statuses); none when Apple does not
    /// know the transaction.
    func renewals(
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String
    ) async throws(PathFetchError) -> [RenewalInfoPayload]
}

extension AppStoreAPIClients: ReceiptHistorySource {
    public func historyPage(
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String,
        revision: String?
    ) async throws(PathFetchError) -> ReceiptHistoryPage {
        let client = try receiptClient(bundleID)
        do {
            let page = try await client.transactionHistoryPage(
                transactionID: transactionID,
                environment: environment,
                revision: revision,
                productTypes: CustomerHistory.answeredProductTypes
            )
            return ReceiptHistoryPage(
                transactions: page.transactions.map(\.payload),
                revision: page.revision,
                hasMore: page.hasMore
            )
        } catch  where error.code == .notFound {
            return ReceiptHistoryPage(transactions: [], revision: nil, hasMore: false)
        } catch {
            throw PathFetchError(error)
        }
    }

    public func renewals(
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String
    ) async throws(PathFetchError) -> [RenewalInfoPayload] {
        let client = try receiptClient(bundleID)
        do {
            let statuses = try await client.subscriptionStatuses(transactionID: transactionID, environment: environment)
            return statuses.items.compactMap { $0.renewalInfo?.payload }
        } catch  where error.code == .notFound {
            return []
        } catch {
            throw PathFetchError(error)
        }
    }

    private func receiptClient(_ bundleID: String) throws(PathFetchError) -> AppStoreAPIClient {
        guard let client = client(for: bundleID) else {
            throw PathFetchError(
                code: "no_app_store_api",
                message: "no App Store Server API client for \(bundleID)",
                retryable: false
            )
        }
        return client
    }
}
