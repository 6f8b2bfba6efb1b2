/// A V2 notification payload built in code, in the shape of the frozen `Fixtures/v2-synthetic` ones (Apple's member
/// order, compact JSON), with the nested `signedTransactionInfo` / `signedRenewalInfo` signed when the whole is:
///
/// ```swift
/// var n = TestNotification.didRenew()                 // DID_RENEW, Sandbox, com.example.gateway, signedDate T
/// n.transaction?.environment = "Production"           // any member, outer or nested
/// let token = try n.signed(by: ca.chain.signer())     // nested tokens signed by the same signer, then the outer one
/// let forged = try n.signed(by: signer, renewalToken: tampered)   // or bring a (defective) nested token yourself
/// ```
///
/// The JSON is written here, member by member, not by the code under test.
public struct TestNotification: Sendable {
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    /// `data.appAppleId` (the fixtures' app 1 has 1234567890; production requires it).
    public var appAppleID: Int64?
    public var bundleID: String
    /// `data.bundleVersion`.
    public var bundleVersion: String?
    public var environment: String
    public var status: Int?
    /// Outer `signedDate` (ms); nil leaves it out.
    public var signedDate: Int64?
    /// Signed into `data.signedTransactionInfo`; nil leaves it out.
    public var transaction: TestTransaction?
    /// Signed into `data.signedRenewalInfo`; nil leaves it out.
    public var renewalInfo: TestRenewalInfo?
    /// `data.consumptionRequestReason` (a CONSUMPTION_REQUEST's); nil leaves it out.
    public var consumptionRequestReason: String?
    /// `unclaimInfo.unclaimSeatIds` (an UNCLAIM_SEATS'); nil leaves `unclaimInfo` out.
    public var unclaimSeatIDs: [String]?

    public init(
        notificationType: String,
        subtype: String? = nil,
        notificationUUID: String = "00000000-0000-4000-8000-000000000001",
        appAppleID: Int64? = nil,
        bundleID: String = "com.example.gateway",
        bundleVersion: String? = nil,
        environment: String = "Sandbox",
        status: Int? = nil,
        signedDate: Int64? = TestCA.signedDate,
        transaction: TestTransaction? = nil,
        renewalInfo: TestRenewalInfo? = nil
    ) {
        (self.notificationType, self.subtype, self.notificationUUID) = (notificationType, subtype, notificationUUID)
        (self.appAppleID, self.bundleID, self.bundleVersion, self.environment) = (
            appAppleID, bundleID, bundleVersion, environment
        )
        (self.status, self.signedDate, self.transaction, self.renewalInfo) = (
            status, signedDate, transaction, renewalInfo
        )
    }

    /// A monthly subscription renewed a minute before `signedDate` (status 1), for com.example.gateway (appAppleId
    /// 1234567890), with signed transaction and renewal info in the same `environment`: the negatives' base.
    public static func didRenew(environment: String = "Sandbox") -> TestNotification {
        var transaction = TestTransaction()
        transaction.environment = environment
        var renewal = TestRenewalInfo()
        renewal.environment = environment
        return TestNotification(
            notificationType: "DID_RENEW",
            notificationUUID: "00000000-0000-4000-8000-00000000d1d2",
            appAppleID: 1_234_567_890,
            bundleVersion: "42",
            environment: environment,
            status: 1,
            transaction: transaction,
            renewalInfo: renewal
        )
    }

    /// A TEST notification: `data` has only `bundleId` and `environment`, like Apple's.
    public static func test(
        bundleID: String = "com.example.gateway",
        environment: String = "Sandbox",
        signedDate: Int64 = TestCA.signedDate,
        uuid: String = "00000000-0000-4000-8000-000000000001"
    ) -> TestNotification {
        TestNotification(
            notificationType: "TEST",
            notificationUUID: uuid,
            bundleID: bundleID,
            environment: environment,
            signedDate: signedDate
        )
    }

    /// The payload with the given nested tokens in `data` (nil: left out).
    public func payloadJSON(signedTransactionInfo: String? = nil, signedRenewalInfo: String? = nil) -> String {
        let data = TestJSON.object([
            "appAppleId": appAppleID.map(TestJSON.int), "bundleId": .string(bundleID),
            "bundleVersion": bundleVersion.map(TestJSON.string),
            "environment": .string(environment), "signedTransactionInfo": signedTransactionInfo.map(TestJSON.string),
            "signedRenewalInfo": signedRenewalInfo.map(TestJSON.string), "status": status.map { .int(Int64($0)) },
            "consumptionRequestReason": consumptionRequestReason.map(TestJSON.string),
        ])
        let unclaim = unclaimSeatIDs.map { ids in
            TestJSON.object([
                "unclaimSeatIds": .raw("[" + ids.map { TestJSON.string($0).text }.joined(separator: ",") + "]")
            ])
        }
        return TestJSON.object([
            "notificationType": .string(notificationType), "subtype": subtype.map(TestJSON.string),
            "notificationUUID": .string(notificationUUID), "data": .raw(data),
            "unclaimInfo": unclaim.map(TestJSON.raw), "version": .string("2.0"),
            "signedDate": signedDate.map(TestJSON.int),
        ])
    }

    /// Signs ``transaction`` and ``renewalInfo`` with `nestedSigner` (default: `signer`) unless a token is given for
    /// them, then the payload with `signer`.
    public func signed(
        by signer: TestSigner,
        nestedSigner: TestSigner? = nil,
        transactionToken: String? = nil,
        renewalToken: String? = nil
    ) throws -> String {
        try signer.sign(
            payloadJSON(
                nestedSignedBy: nestedSigner ?? signer,
                transactionToken: transactionToken,
                renewalToken: renewalToken
            )
        )
    }

    /// The payload with ``transaction`` and ``renewalInfo`` signed by `signer`, or the tokens given instead.
    public func payloadJSON(
        nestedSignedBy signer: TestSigner,
        transactionToken: String? = nil,
        renewalToken: String? = nil
    ) throws -> String {
        let tx = try transactionToken ?? transaction.map { try signer.sign($0.json) }
        let renewal = try renewalToken ?? renewalInfo.map { try signer.sign($0.json) }
        return payloadJSON(signedTransactionInfo: tx, signedRenewalInfo: renewal)
    }
}

/// A `JWSTransactionDecodedPayload` (an auto-renewable monthly subscription, renewed a minute before `signedDate`).
public struct TestTransaction: Sendable {
    public var transactionID = "2000000900101004"
    public var originalTransactionID = "2000000900101001"
    public var bundleID = "com.example.gateway"
    public var productID = "com.example.gateway.monthly"
    public var purchaseDate = TestCA.signedDate - 60_000
    public var originalPurchaseDate = TestCA.signedDate - 90 * 86_400_000
    public var expiresDate = TestCA.signedDate - 60_000 + 30 * 86_400_000
    public var type = "Auto-Renewable Subscription"
    public var signedDate: Int64? = TestCA.signedDate
    public var environment = "Sandbox"
    public var transactionReason = "RENEWAL"
    public var price: Int64 = 9990
    public var quantity: Int64 = 1
    public var ownership = "PURCHASED"
    public var revocationDate: Int64?
    public var revocationReason: Int64?
    // Multiseat (group) purchases: `multiSeatInfo` as JSON text, and the members Apple may put beside it.
    public var multiSeatInfo: String?
    public var revokedSeatQuantity: Int64?
    public var invitationManagement: String?
    public var additionalTransactionReason: String?

    public init() {}

    /// A `multiSeatInfo` object: tiers of (price in milliunits, seats), and optionally the revoked seats and the
    /// invitation model inside it.
    public static func multiSeatInfo(
        tiers: [(price: Int64, quantity: Int64)],
        revoked: Int64? = nil,
        invitations: String? = nil
    ) -> String {
        let list = tiers.map { TestJSON.object(["price": .int($0.price), "quantity": .int($0.quantity)]) }
        return TestJSON.object([
            "priceTiers": .raw("[" + list.joined(separator: ",") + "]"),
            "revokedSeatQuantity": revoked.map(TestJSON.int),
            "invitationManagement": invitations.map(TestJSON.string),
        ])
    }

    public var json: String {
        TestJSON.object([
            "transactionId": .string(transactionID), "originalTransactionId": .string(originalTransactionID),
            "bundleId": .string(bundleID), "productId": .string(productID),
            "subscriptionGroupIdentifier": .string("21000001"),
            "purchaseDate": .int(purchaseDate), "originalPurchaseDate": .int(originalPurchaseDate),
            "expiresDate": .int(expiresDate),
            "quantity": .int(quantity), "type": .string(type), "inAppOwnershipType": .string(ownership),
            "signedDate": signedDate.map(TestJSON.int), "environment": .string(environment),
            "transactionReason": .string(transactionReason), "storefront": .string("USA"),
            "storefrontId": .string("143441"),
            "price": .int(price), "currency": .string("USD"),
            "revocationDate": revocationDate.map(TestJSON.int), "revocationReason": revocationReason.map(TestJSON.int),
            "multiSeatInfo": multiSeatInfo.map(TestJSON.raw),
            "revokedSeatQuantity": revokedSeatQuantity.map(TestJSON.int),
            "invitationManagement": invitationManagement.map(TestJSON.string),
            "additionalTransactionReason": additionalTransactionReason.map(TestJSON.string),
        ])
    }
}

/// A `JWSRenewalInfoDecodedPayload` for ``TestTransaction``'s subscription (auto-renew on).
public struct TestRenewalInfo: Sendable {
    public var originalTransactionID = "2000000900101001"
    public var productID = "com.example.gateway.monthly"
    public var autoRenewProductID = "com.example.gateway.monthly"
    public var autoRenewStatus = 1
    public var signedDate: Int64? = TestCA.signedDate
    public var environment = "Sandbox"
    public var recentSubscriptionStartDate = TestCA.signedDate - 90 * 86_400_000
    public var renewalDate = TestCA.signedDate - 60_000 + 30 * 86_400_000
    /// Multiseat: the seats at the next renewal, and the renewal's `multiSeatInfo` as JSON text.
    public var renewalQuantity: Int64?
    public var multiSeatInfo: String?

    public init() {}

    public var json: String {
        TestJSON.object([
            "originalTransactionId": .string(originalTransactionID), "autoRenewProductId": .string(autoRenewProductID),
            "productId": .string(productID), "autoRenewStatus": .int(Int64(autoRenewStatus)),
            "renewalPrice": autoRenewStatus == 1 ? .int(9990) : nil,
            "currency": autoRenewStatus == 1 ? .string("USD") : nil,
            "signedDate": signedDate.map(TestJSON.int), "environment": .string(environment),
            "recentSubscriptionStartDate": .int(recentSubscriptionStartDate), "renewalDate": .int(renewalDate),
            "renewalQuantity": renewalQuantity.map(TestJSON.int), "multiSeatInfo": multiSeatInfo.map(TestJSON.raw),
        ])
    }
}

/// Compact JSON text with members in a fixed order (Apple's), written without the code under test.
public enum TestJSON: Sendable {
    case string(String)
    case int(Int64)
    /// Already JSON text (a nested object).
    case raw(String)

    /// `{"name":value,…}` in the given order; nil values are left out.
    public static func object(_ members: KeyValuePairs<String, TestJSON?>) -> String {
        "{" + members.compactMap { name, value in value.map { quote(name) + ":" + $0.text } }.joined(separator: ",")
            + "}"
    }

    public var text: String {
        switch self {
        case .string(let s): Self.quote(s)
        case .int(let n): String(n)
        case .raw(let json): json
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
