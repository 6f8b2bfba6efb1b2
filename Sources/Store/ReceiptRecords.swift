public import Canonical
internal import FoundationEssentials

/// Which comparison ledger a report reads: the notifications' (V1 path against V2 path per subscription) or the
/// receipts' (Apple's verifyReceipt answer against the gateway's, per subscription).
public enum ComparisonLedger: String, Sendable, Hashable, CaseIterable {
    case notifications, receipts
}

/// One customer's history as the receipt path keeps it: the bundle, the environment and the original transaction id it
/// was asked for.
public struct ReceiptHistoryKey: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var customer: String
    public init(bundleID: String, environment: AppStoreEnvironment, customer: String) {
        (self.bundleID, self.environment, self.customer) = (bundleID, environment, customer)
    }
}

/// A customer's history as stored: the gateway's own JSON of what the App Store Server API said (nil while never
/// fetched), when, who is fetching it now, and the calls made to Apple for it in the hour that began at `callsSince`.
public struct StoredReceiptHistory: Sendable, Hashable {
    public var json: [UInt8]?
    public var fetchedAt: Int64?
    public var claimedBy: String?
    public var claimedUntil: Int64?
    public var calls: Int
    public var callsSince: Int64?
    public init(
        json: [UInt8]?,
        fetchedAt: Int64?,
        claimedBy: String?,
        claimedUntil: Int64?,
        calls: Int = 0,
        callsSince: Int64? = nil
    ) {
        (self.json, self.fetchedAt, self.claimedBy, self.claimedUntil) = (json, fetchedAt, claimedBy, claimedUntil)
        (self.calls, self.callsSince) = (calls, callsSince)
    }
}

/// One page of a customer's history fetched and verified while the whole is not yet (docs/operations.md, "Moving the
/// receipt path"): the gateway's JSON of its transactions, the revision it was asked with (nil: from the start), and
/// Apple's revision for the page after it.
public struct StoredReceiptHistoryPage: Sendable, Hashable {
    public var page: Int
    public var askedWith: String?
    public var revision: String?
    public var hasMore: Bool
    public var askedAt: Int64
    public var json: [UInt8]
    public init(page: Int, askedWith: String?, revision: String?, hasMore: Bool, askedAt: Int64, json: [UInt8]) {
        (self.page, self.askedWith, self.revision, self.hasMore, self.askedAt, self.json) = (
            page, askedWith, revision, hasMore, askedAt, json
        )
    }
}

/// One row of the receipt ledger: a subscription as Apple's verifyReceipt answer and the gateway's described it.
/// `v1Only`: only Apple's answer listed it; `v2Only`: only the gateway's.
public struct ReceiptLedgerEntry: Sendable, Hashable {
    public var subscription: SubscriptionKey
    public var comparedAt: Int64
    public var outcome: CompareOutcome
    public var fields: [String]
    public var apple: ReceiptOutcome?
    public var api: ReceiptOutcome?
    public init(
        subscription: SubscriptionKey,
        comparedAt: Int64,
        outcome: CompareOutcome,
        fields: [String],
        apple: ReceiptOutcome?,
        api: ReceiptOutcome?
    ) {
        (self.subscription, self.comparedAt, self.outcome, self.fields, self.apple, self.api) =
            (subscription, comparedAt, outcome, fields, apple, api)
    }
}

/// Receipt outcomes are stored as sorted-key JSON, like outcome snapshots.
enum ReceiptOutcomeJSON {
    static func encode(_ o: ReceiptOutcome) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(o)).map(Array.init) ?? []
    }

    static func decode(_ bytes: [UInt8]?) -> ReceiptOutcome? {
        guard let bytes else { return nil }
        return try? JSONDecoder().decode(ReceiptOutcome.self, from: Data(bytes))
    }
}
