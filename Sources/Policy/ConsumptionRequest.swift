public import Canonical

/// A customer's refund request Apple asks the developer about (a CONSUMPTION_REQUEST), as the consumption responder's
/// job keeps it (docs/operations.md, "Refund requests"): the purchase, Apple's reason, when Apple signed the request
/// and by when the answer must reach Apple.
public struct ConsumptionRequest: Sendable, Hashable {
    /// The canonical event of the request (the notification's UUID).
    public var eventID: String
    public var bundleID: String
    public var environment: AppStoreEnvironment
    /// The purchase the customer asked a refund of: the path parameter of Send Consumption Information.
    public var transactionID: String
    public var originalTransactionID: String?
    /// The purchase's product type (`auto_renewable`, `consumable`, …) when the request carried it.
    public var productType: String?
    /// Apple's `consumptionRequestReason` as the event has it (`unintended_purchase`, …), nil when absent.
    public var reason: String?
    /// Apple's `signedDate` of the request (ms).
    public var requestedAt: Int64
    /// `requestedAt` plus the app's `consumption.deadline`: no answer is sent after it.
    public var deadlineAt: Int64
    /// The purchase is a group member's (`ASSIGNED`): Apple takes no consumption information for it
    /// (`InvalidAssignedTransactionNotSupportedError`, 4000227), so the request is kept, final, never asked or sent.
    public var assigned = false

    public init(
        eventID: String,
        bundleID: String,
        environment: AppStoreEnvironment,
        transactionID: String,
        originalTransactionID: String?,
        productType: String?,
        reason: String?,
        requestedAt: Int64,
        deadlineAt: Int64
    ) {
        (self.eventID, self.bundleID, self.environment, self.transactionID) = (
            eventID, bundleID, environment, transactionID
        )
        (self.originalTransactionID, self.productType, self.reason) = (originalTransactionID, productType, reason)
        (self.requestedAt, self.deadlineAt) = (requestedAt, deadlineAt)
    }
}

/// Apple's decision on a refund request, seen in a later notification of the same purchase: REFUND (granted) or
/// REFUND_DECLINED. Recorded on the purchase's refund request, for the report.
public struct RefundDecision: Sendable, Hashable {
    public var bundleID: String
    public var environment: AppStoreEnvironment
    public var transactionID: String
    /// `refund` or `refund_declined`.
    public var kind: EventKind
    /// The decision's event date (ms).
    public var at: Int64

    public init(bundleID: String, environment: AppStoreEnvironment, transactionID: String, kind: EventKind, at: Int64) {
        (self.bundleID, self.environment, self.transactionID, self.kind, self.at) = (
            bundleID, environment, transactionID, kind, at
        )
    }
}
