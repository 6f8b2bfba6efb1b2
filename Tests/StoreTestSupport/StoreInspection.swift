public import Canonical
public import Store

/// What tests look at in the store, in the store's own terms (typed rows, never SQL): every row of a table, oldest
/// first, for the test to filter.
extension GatewayStore {
    public func journal() throws -> [JournalEntry] {
        try read { try $0.journalEntries(id: nil, key: nil, limit: .max) }
    }

    public func events() throws -> [StoredEvent] {
        try read { try $0.events(id: nil, originalTransactionID: nil, limit: .max) }
    }

    public func deliveries() throws -> [Delivery] {
        try read { try $0.deliveries(state: nil, downstream: nil, eventID: nil, limit: .max) }
    }

    public func quarantined() throws -> [QuarantineRecord] {
        try read { try $0.quarantined(lane: nil, id: nil, limit: .max) }
    }

    public func receiptJobs() throws -> [ReceiptJobStatus] { try read { try $0.receiptJobs(state: nil) } }

    public func fetchJobs() throws -> [FetchJob] { try read { try $0.fetchJobs(state: nil) } }

    public func ledger() throws -> [LedgerEntry] {
        try read { try $0.ledger(bundleID: nil, environment: nil, from: .min, to: .max) }
    }

    public func subscriptionStates(_ otid: String) throws -> [StoredSubscriptionState] {
        try read { try $0.subscriptionStates(originalTransactionID: otid) }
    }

    public func snapshot(_ key: SubscriptionKey, path: Generation) throws -> OutcomeSnapshot? {
        try read { try $0.snapshot(of: key, path: path) }
    }
}
