public import Canonical
public import V1Adapter

/// What the receipt path knows of one configured app: its environments, the receipt mode the config seeds per
/// environment (a cutover stored in the database wins over it), whether iOS 6 transaction receipts are taken, and what
/// a group member's transaction says as its V1 ownership (docs/configuration.md, `apps[]`).
public struct ReceiptPathApp: Sendable, Hashable {
    public var bundleID: String
    public var environments: Set<AppStoreEnvironment>
    /// `receipts`: the mode for every environment without its own.
    public var receipts: ReceiptMode
    public var receiptsByEnvironment: [AppStoreEnvironment: ReceiptMode]
    public var legacyTransactionReceipts: Bool
    public var v1AssignedOwnership: String

    public init(
        bundleID: String,
        environments: Set<AppStoreEnvironment>,
        receipts: ReceiptMode,
        receiptsByEnvironment: [AppStoreEnvironment: ReceiptMode] = [:],
        legacyTransactionReceipts: Bool = false,
        v1AssignedOwnership: String = V1App.defaultAssignedOwnership
    ) {
        (self.bundleID, self.environments, self.receipts) = (bundleID, environments, receipts)
        (self.receiptsByEnvironment, self.legacyTransactionReceipts) = (
            receiptsByEnvironment, legacyTransactionReceipts
        )
        self.v1AssignedOwnership = v1AssignedOwnership
    }

    public func receipts(for environment: AppStoreEnvironment) -> ReceiptMode {
        receiptsByEnvironment[environment] ?? receipts
    }
}

/// Apple's verifyReceipt endpoints (`verify_receipt` in the config).
public struct VerifyReceiptURLs: Sendable, Hashable {
    public var production: String
    public var sandbox: String
    public init(production: String, sandbox: String) { (self.production, self.sandbox) = (production, sandbox) }
}
