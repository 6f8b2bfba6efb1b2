internal import Canonical
public import V2Adapter

/// Apple's V2 notifications that are about the app rather than one of its subscriptions: RESCIND_CONSENT (`appData`
/// with a signed app transaction) and EXTERNAL_PURCHASE_TOKEN (an `externalPurchaseToken` instead of `data`). The
/// Advanced Commerce API's METADATA_UPDATE, MIGRATION and PRICE_CHANGE are about a subscription and come from a
/// lifecycle step (``LifecycleContext/advancedCommerce(_:type:)``).
extension Emitter {
    /// The app transaction of the simulated app (Apple's `JWSAppTransactionDecodedPayload`), Sandbox.
    public func appTransactionPayload(
        bundleID: String,
        appTransactionID: String,
        at time: Int64
    ) -> AppTransactionPayload {
        var p = AppTransactionPayload()
        p.receiptType = "Sandbox"
        p.appAppleID = appAppleID
        p.bundleID = bundleID
        p.applicationVersion = "1"
        p.receiptCreationDate = time
        p.originalPurchaseDate = time
        p.originalApplicationVersion = "1"
        p.appTransactionID = appTransactionID
        p.originalPlatform = "iOS"
        p.signedDate = time
        return p
    }

    /// The `signedPayload` of a RESCIND_CONSENT: the customer withdrew consent for the app; `appData` carries the
    /// app's signed app transaction.
    public func rescindConsent(
        bundleID: String,
        appTransactionID: String,
        uuid: String,
        at time: Int64,
        subtype: String? = nil
    ) throws -> String {
        let signed = try sign(appTransactionPayload(bundleID: bundleID, appTransactionID: appTransactionID, at: time))
        let payload = NotificationPayloadV2(
            notificationType: "RESCIND_CONSENT",
            subtype: subtype,
            notificationUUID: uuid,
            appData: AppData(
                appAppleID: appAppleID,
                bundleID: bundleID,
                environment: "Sandbox",
                signedAppTransactionInfo: signed
            ),
            signedDate: time
        )
        return try sign(payload)
    }

    /// The `signedPayload` of an EXTERNAL_PURCHASE_TOKEN (`subtype` UNREPORTED, CREATED or ACTIVE_TOKEN_REMINDER):
    /// `externalPurchaseID` should start with `SANDBOX` (Apple's sandbox tokens do, and say so no other way).
    /// `tokenType` and `tokenExpirationDate` are custom link tokens' only.
    public func externalPurchaseToken(
        subtype: String,
        bundleID: String,
        externalPurchaseID: String,
        tokenCreationDate: Int64,
        uuid: String,
        at time: Int64,
        tokenType: String? = nil,
        tokenExpirationDate: Int64? = nil
    ) throws -> String {
        let payload = NotificationPayloadV2(
            notificationType: "EXTERNAL_PURCHASE_TOKEN",
            subtype: subtype,
            notificationUUID: uuid,
            externalPurchaseToken: ExternalPurchaseToken(
                externalPurchaseID: externalPurchaseID,
                tokenCreationDate: tokenCreationDate,
                appAppleID: appAppleID,
                bundleID: bundleID,
                tokenType: tokenType,
                tokenExpirationDate: tokenExpirationDate
            ),
            signedDate: time
        )
        return try sign(payload)
    }
}

extension LifecycleContext {
    /// The Advanced Commerce API's notifications about a subscription (`METADATA_UPDATE`, `MIGRATION`,
    /// `PRICE_CHANGE`): `data` with its signed transaction and renewal info, as for every subscription notification.
    /// V1 has none of them.
    public mutating func advancedCommerce(_ otid: String, type: String) throws {
        let kind: EventKind
        switch type {
        case "METADATA_UPDATE": kind = .metadataUpdate
        case "MIGRATION": kind = .migration
        case "PRICE_CHANGE": kind = .priceChange
        default: throw SimulatorError("bad_step", "\(type) is not an Advanced Commerce notification")
        }
        _ = try sub(otid)
        try emit(
            String(type.lowercased().map { $0 == "_" ? " " : $0 }),
            otid,
            v2: (type, nil),
            v1: [],
            expectV2: ExpectedEvent(kind),
            expectV1: []
        )
    }
}
