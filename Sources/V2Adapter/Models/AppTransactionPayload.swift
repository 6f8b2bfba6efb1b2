/// A decoded `signedAppTransactionInfo` (Apple's `AppTransaction`). Its environment is `receiptType`.
public struct AppTransactionPayload: Codable, Sendable, Hashable {
    public var receiptType: String?
    public var appAppleID: Int64?
    public var bundleID: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: Int64?
    public var originalPurchaseDate: Int64?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: Int64?
    public var appTransactionID: String?
    public var originalPlatform: String?
    public var signedDate: Int64?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case receiptType
        case appAppleID = "appAppleId"
        case bundleID = "bundleId"
        case applicationVersion, versionExternalIdentifier, receiptCreationDate, originalPurchaseDate
        case originalApplicationVersion, deviceVerification, deviceVerificationNonce, preorderDate
        case appTransactionID = "appTransactionId"
        case originalPlatform, signedDate
    }
}
