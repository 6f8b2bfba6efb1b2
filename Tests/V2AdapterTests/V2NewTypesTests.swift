import Canonical
import TestSupport
import Testing
import V2Adapter

/// Apple's newest V2 types, from tokens built and signed in code (``TestCA``, ``TestNotification``): verified like
/// every notification, then mapped to their canonical kinds with the fields they carry — RESCIND_CONSENT (a signed app
/// transaction), EXTERNAL_PURCHASE_TOKEN (the token's fields), the Advanced Commerce API's METADATA_UPDATE, MIGRATION
/// and PRICE_CHANGE (a subscription's transaction and renewal info) — and types or subtypes Apple adds later kept
/// with their raw strings.
@Suite struct V2NewTypesTests {
    let ca: TestCA
    let signer: TestSigner

    init() throws {
        ca = try TestCA()
        signer = try ca.chain.signer()
    }

    // MARK: Building tokens

    /// A `JWSAppTransactionDecodedPayload` for com.example.gateway, signed at `signedDate`.
    static func appTransactionJSON(bundleID: String = "com.example.gateway", receiptType: String = "Sandbox") -> String
    {
        TestJSON.object([
            "receiptType": .string(receiptType), "appAppleId": .int(1_234_567_890), "bundleId": .string(bundleID),
            "applicationVersion": .string("42"), "receiptCreationDate": .int(TestCA.signedDate - 86_400_000),
            "originalPurchaseDate": .int(TestCA.signedDate - 90 * 86_400_000),
            "originalApplicationVersion": .string("1"), "appTransactionId": .string("704000000000012345"),
            "originalPlatform": .string("iOS"), "signedDate": .int(TestCA.signedDate),
        ])
    }

    /// A RESCIND_CONSENT payload whose `appData` carries `appTransaction` (a token, verbatim).
    static func rescindConsentJSON(appTransaction: String, subtype: String? = nil) -> String {
        let appData = TestJSON.object([
            "appAppleId": .int(1_234_567_890), "bundleId": .string("com.example.gateway"),
            "environment": .string("Sandbox"), "signedAppTransactionInfo": .string(appTransaction),
        ])
        return TestJSON.object([
            "notificationType": .string("RESCIND_CONSENT"), "subtype": subtype.map(TestJSON.string),
            "notificationUUID": .string("00000000-0000-4000-8000-00000000c0c0"), "appData": .raw(appData),
            "version": .string("2.0"), "signedDate": .int(TestCA.signedDate),
        ])
    }

    /// An EXTERNAL_PURCHASE_TOKEN payload (Sandbox: the id's `SANDBOX` prefix); `tokenType` / `expiration` nil are
    /// left out, as in tokens from before Apple added them.
    static func externalPurchaseTokenJSON(subtype: String, tokenType: String?, expiration: Int64?) -> String {
        let token = TestJSON.object([
            "externalPurchaseId": .string("SANDBOX_6f1e3c55-7f9b-4d2a-9a51-0e4a5c1b2d3e"),
            "tokenCreationDate": .int(TestCA.signedDate - 60_000), "appAppleId": .int(1_234_567_890),
            "bundleId": .string("com.example.gateway"), "tokenType": tokenType.map(TestJSON.string),
            "tokenExpirationDate": expiration.map(TestJSON.int),
        ])
        return TestJSON.object([
            "notificationType": .string("EXTERNAL_PURCHASE_TOKEN"), "subtype": .string(subtype),
            "notificationUUID": .string("00000000-0000-4000-8000-00000000e0e0"), "externalPurchaseToken": .raw(token),
            "version": .string("2.0"), "signedDate": .int(TestCA.signedDate),
        ])
    }

    /// The one canonical event of `token`, verified with the fixtures' setup (this CA's root pinned as Apple's).
    func event(_ token: String) throws -> CanonicalEvent {
        let verified = try ca.adapter().verifyNotification(signedPayload: Array(token.utf8), now: TestPKI.now)
        let events = verified.canonicalEvents()
        try #require(events.count == 1)
        return events[0]
    }

    // MARK: RESCIND_CONSENT

    @Test func rescindConsentIsConsentRescindedWithItsVerifiedAppTransaction() throws {
        let app = try signer.sign(Self.appTransactionJSON())
        let e = try event(try signer.sign(Self.rescindConsentJSON(appTransaction: app)))
        #expect(e.kind == .consentRescinded)
        #expect(e.reason == nil)
        #expect(e.rawType == "RESCIND_CONSENT" && e.rawSubtype == nil)
        #expect(e.appTransactionID == "704000000000012345")
        #expect(e.bundleID == "com.example.gateway" && e.appAppleID == 1_234_567_890 && e.environment == .sandbox)
        #expect(e.verified && e.eventDate == TestCA.signedDate && e.eventDateSource == .signedDate)
        // About the app, not a subscription: no transaction, no entitlement.
        #expect(e.originalTransactionID == nil && e.productID == nil && e.entitlement == nil)
        #expect(e.externalPurchaseID == nil)
    }

    @Test func rescindConsentWithATamperedAppTransactionIsRefused() throws {
        let app = try signer.sign(Self.appTransactionJSON())
        let forged = TestJWS.replacingPayload(
            of: app,
            with: Self.appTransactionJSON().replacingOccurrences(of: "704000000000012345", with: "704000000000099999")
        )
        let token = try signer.sign(Self.rescindConsentJSON(appTransaction: forged))
        #expect(try ca.failure(verifying: token) == V2Failure("nested_jws_invalid", cause: "bad_signature"))
    }

    @Test func rescindConsentWithAnAppTransactionOfAnotherRootIsRefused() throws {
        let app = try TestCA().chain.signer().sign(Self.appTransactionJSON())
        let token = try signer.sign(Self.rescindConsentJSON(appTransaction: app))
        #expect(try ca.failure(verifying: token) == V2Failure("nested_jws_invalid", cause: "untrusted_root"))
    }

    @Test func rescindConsentWithAnAppTransactionOfAnotherBundleOrEnvironmentIsRefused() throws {
        let otherBundle = try signer.sign(Self.appTransactionJSON(bundleID: "com.example.other"))
        #expect(
            try ca.failure(verifying: try signer.sign(Self.rescindConsentJSON(appTransaction: otherBundle)))
                == V2Failure("nested_jws_invalid", cause: "unknown_bundle")
        )
        let production = try signer.sign(Self.appTransactionJSON(receiptType: "Production"))
        #expect(
            try ca.failure(verifying: try signer.sign(Self.rescindConsentJSON(appTransaction: production)))
                == V2Failure("nested_jws_invalid", cause: "environment_mismatch")
        )
    }

    @Test func rescindConsentWithAMalformedAppTransactionIsRefused() throws {
        let token = try signer.sign(Self.rescindConsentJSON(appTransaction: "not.a-token"))
        #expect(try ca.failure(verifying: token) == V2Failure("nested_jws_invalid", cause: "malformed"))
    }

    // MARK: EXTERNAL_PURCHASE_TOKEN

    struct TokenCase: Sendable, CustomTestStringConvertible {
        var subtype: String
        var reason: EventReason?
        var tokenType: String?
        var expiration: Int64?
        var testDescription: String { subtype }
    }

    static let tokenCases: [TokenCase] = [
        TokenCase(subtype: "CREATED", reason: .created, tokenType: "ACQUISITION", expiration: TestCA.signedDate + 1),
        TokenCase(
            subtype: "ACTIVE_TOKEN_REMINDER",
            reason: .activeTokenReminder,
            tokenType: "SERVICES",
            expiration: TestCA.signedDate + 30 * 86_400_000
        ),
        // Tokens that are not custom link tokens carry neither tokenType nor tokenExpirationDate.
        TokenCase(subtype: "UNREPORTED", reason: .unreported, tokenType: nil, expiration: nil),
        // A subtype Apple adds later: the kind stays, the raw subtype is kept, no reason.
        TokenCase(subtype: "SOMETHING_NEW", reason: nil, tokenType: "IN_APP", expiration: nil),
    ]

    @Test(arguments: tokenCases)
    func externalPurchaseTokenKeepsTheTokensFields(_ c: TokenCase) throws {
        let json = Self.externalPurchaseTokenJSON(subtype: c.subtype, tokenType: c.tokenType, expiration: c.expiration)
        let e = try event(try signer.sign(json))
        #expect(e.kind == .externalPurchaseToken)
        #expect(e.reason == c.reason)
        #expect(e.rawType == "EXTERNAL_PURCHASE_TOKEN" && e.rawSubtype == c.subtype)
        #expect(e.externalPurchaseID == "SANDBOX_6f1e3c55-7f9b-4d2a-9a51-0e4a5c1b2d3e")
        #expect(e.externalPurchaseTokenCreationDate == TestCA.signedDate - 60_000)
        #expect(e.externalPurchaseTokenType == c.tokenType)
        #expect(e.externalPurchaseTokenExpirationDate == c.expiration)
        #expect(e.bundleID == "com.example.gateway" && e.appAppleID == 1_234_567_890 && e.environment == .sandbox)
        #expect(e.verified && e.transactionID == nil && e.entitlement == nil && e.appTransactionID == nil)
    }

    // MARK: Advanced Commerce API

    @Test(arguments: [
        ("METADATA_UPDATE", EventKind.metadataUpdate), ("MIGRATION", .migration), ("PRICE_CHANGE", .priceChange),
    ])
    func advancedCommerceTypesMapTheSubscriptionLikeTheOthers(_ type: String, _ kind: EventKind) throws {
        var n = TestNotification.didRenew()
        n.notificationType = type
        n.notificationUUID = "00000000-0000-4000-8000-00000000ac01"
        let e = try event(try n.signed(by: signer))
        #expect(e.kind == kind)
        #expect(e.reason == nil)
        #expect(e.rawType == type && e.rawSubtype == nil)
        let tx = TestTransaction()
        #expect(e.transactionID == tx.transactionID && e.originalTransactionID == tx.originalTransactionID)
        #expect(e.productID == tx.productID && e.productType == .autoRenewable)
        #expect(e.purchaseDate == tx.purchaseDate && e.expiresDate == tx.expiresDate)
        #expect(e.priceMilli == tx.price && e.currency == "USD")
        #expect(e.autoRenew == true && e.autoRenewProductID == "com.example.gateway.monthly")
        #expect(e.entitlement == Entitlement(state: .active, until: tx.expiresDate))
        #expect(e.appTransactionID == nil && e.externalPurchaseID == nil)
    }

    @Test func anAdvancedCommerceTypeWithATamperedTransactionIsRefused() throws {
        let n = {
            var n = TestNotification.didRenew()
            n.notificationType = "PRICE_CHANGE"
            return n
        }()
        var changed = TestTransaction()
        changed.price = 1
        let forged = TestJWS.replacingPayload(of: try signer.sign(TestTransaction().json), with: changed.json)
        let token = try n.signed(by: signer, transactionToken: forged)
        #expect(try ca.failure(verifying: token) == V2Failure("nested_jws_invalid", cause: "bad_signature"))
    }

    // MARK: What Apple adds later

    @Test func aTypeThisBuildDoesNotKnowIsOtherWithItsRawStringsAndFields() throws {
        var n = TestNotification.didRenew()
        n.notificationType = "SOMETHING_APPLE_ADDS_IN_2027"
        n.subtype = "BRAND_NEW"
        let e = try event(try n.signed(by: signer))
        #expect(e.kind == .other)
        #expect(e.reason == nil)
        #expect(e.rawType == "SOMETHING_APPLE_ADDS_IN_2027" && e.rawSubtype == "BRAND_NEW")
        #expect(e.transactionID == TestTransaction().transactionID && e.entitlement?.state == .active)
    }

    @Test func aSubtypeThisBuildDoesNotKnowKeepsItsTypesKind() throws {
        var n = TestNotification.didRenew()
        n.notificationType = "MIGRATION"
        n.subtype = "BRAND_NEW"
        let migration = try event(try n.signed(by: signer))
        #expect(migration.kind == .migration && migration.reason == nil && migration.rawSubtype == "BRAND_NEW")

        let app = try signer.sign(Self.appTransactionJSON())
        let rescind = try event(try signer.sign(Self.rescindConsentJSON(appTransaction: app, subtype: "BRAND_NEW")))
        #expect(rescind.kind == .consentRescinded && rescind.reason == nil && rescind.rawSubtype == "BRAND_NEW")
        #expect(rescind.appTransactionID == "704000000000012345")
    }
}
