/// The payload of an app receipt (or an Xcode one): its top-level attributes and its in-app purchases, as read;
/// nil for what the receipt does not carry or carries empty. Dates are ms since the epoch. Attribute numbers are
/// those of docs/architecture.md ("The receipt reader").
public struct AppReceipt: Sendable, Hashable {
    /// 0: `Production`, `ProductionSandbox`, `ProductionVPP`, `ProductionVPPSandbox`, `Xcode`.
    public var receiptType: String?
    /// 2.
    public var bundleID: String?
    /// 3 (CFBundleVersion on iOS).
    public var applicationVersion: String?
    /// 19.
    public var originalApplicationVersion: String?
    /// 1: verifyReceipt's `app_item_id` and `adam_id` (0 in sandbox).
    public var appItemID: Int64?
    /// 15: verifyReceipt's `download_id` (our reading: Apple does not document the number; see docs/architecture.md).
    public var downloadID: Int64?
    /// 16: verifyReceipt's `version_external_identifier` (our reading, as ``downloadID``).
    public var versionExternalIdentifier: Int64?
    /// 12: when Apple made the receipt; the signature's chain is judged at this time.
    public var creationDate: Int64?
    /// 18 (always 2013-08-01T07:00:00Z in sandbox).
    public var originalPurchaseDate: Int64?
    /// 21 (Volume Purchase Program receipts; 4001-01-01 in Xcode ones).
    public var expirationDate: Int64?
    /// Every type-17 attribute, in the receipt's encoded order (DER sorts a SET by encoding: not chronological).
    public var inApp: [ReceiptPurchase]

    public init(
        receiptType: String? = nil,
        bundleID: String? = nil,
        applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil,
        appItemID: Int64? = nil,
        downloadID: Int64? = nil,
        versionExternalIdentifier: Int64? = nil,
        creationDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil,
        expirationDate: Int64? = nil,
        inApp: [ReceiptPurchase] = []
    ) {
        self.receiptType = receiptType
        self.bundleID = bundleID
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.appItemID = appItemID
        self.downloadID = downloadID
        self.versionExternalIdentifier = versionExternalIdentifier
        self.creationDate = creationDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expirationDate = expirationDate
        self.inApp = inApp
    }

    /// True for the receipt types of Apple's sandbox: `ProductionSandbox` and `ProductionVPPSandbox` (every type
    /// ending in `Sandbox`). `Production`, `ProductionVPP`, `Xcode`, an unknown type and no type at all are not.
    public var isSandbox: Bool { receiptType?.hasSuffix("Sandbox") ?? false }
}
