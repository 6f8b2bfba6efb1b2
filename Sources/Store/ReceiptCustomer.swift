/// A customer the gateway knows for an app and environment (``ReceiptPathTransaction/receiptCustomers(bundleID:environment:after:limit:)``):
/// an original transaction id, and when the history stored under it was fetched (nil: none stored).
public struct ReceiptCustomer: Sendable, Hashable {
    public var originalTransactionID: String
    public var historyFetchedAt: Int64?

    public init(originalTransactionID: String, historyFetchedAt: Int64?) {
        (self.originalTransactionID, self.historyFetchedAt) = (originalTransactionID, historyFetchedAt)
    }
}
