public import Canonical

/// A V1 notification waiting for verifyReceipt: the job and the journaled body it is about.
public struct ReceiptJob: Sendable, Hashable {
    public var journalID: Int64
    public var attempts: Int
    public var body: [UInt8]
    public var bundleID: String
    public var secretName: String
    public var receivedAt: Int64
    public var key: String
    /// The authority the notification arrived under.
    public var authority: Generation?
    /// The notification's version: a V1 body's receipt, or the V1 view of a V2 notification (docs/architecture.md,
    /// "The V1 shape of a V2 notification").
    public var version: Generation = .v1
    public var environment: AppStoreEnvironment?
}

/// A verifyReceipt job's bookkeeping, as an operator (or a test) looks at it.
public struct ReceiptJobStatus: Sendable, Hashable {
    public var journalID: Int64
    public var state: JobState
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var lastError: String?
    public var appleStatus: Int?
}
