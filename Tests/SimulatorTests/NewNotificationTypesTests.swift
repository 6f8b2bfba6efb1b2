import Canonical
import Foundation
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V2Adapter

/// Apple's newest V2 types as the simulator signs them, read by the gateway's V2 adapter (the simulator's root
/// trusted for sandbox): RESCIND_CONSENT, EXTERNAL_PURCHASE_TOKEN and the Advanced Commerce API's METADATA_UPDATE,
/// MIGRATION and PRICE_CHANGE map to their canonical kinds with the fields they carry.
@Suite struct NewNotificationTypesTests {
    static let at = Sim.t0 + 86_400_000

    static func event(_ token: String, pki: SimulatorPKI, at: Int64 = at) throws -> CanonicalEvent {
        let verified = try Sim.adapter(trusting: pki).verifyNotification(signedPayload: Array(token.utf8), now: at)
        let events = verified.canonicalEvents()
        try #require(events.count == 1)
        return events[0]
    }

    @Test func rescindConsentIsConsentRescindedWithTheAppTransaction() throws {
        try Sim.withPKI { pki throws in
            let token = try Emitter(pki: pki).rescindConsent(
                bundleID: Sim.bundleID,
                appTransactionID: "704000000000000042",
                uuid: "00000000-0000-4000-8000-0000000c0c01",
                at: Self.at
            )
            let payload = try Sim.payload(token, as: NotificationPayloadV2.self)
            #expect(payload.data == nil && payload.appData?.signedAppTransactionInfo != nil)
            let e = try Self.event(token, pki: pki)
            #expect(e.kind == .consentRescinded && e.reason == nil)
            #expect(e.rawType == "RESCIND_CONSENT")
            #expect(e.appTransactionID == "704000000000000042")
            #expect(e.bundleID == Sim.bundleID && e.environment == .sandbox && e.verified)
            #expect(e.originalTransactionID == nil && e.entitlement == nil)
        }
    }

    @Test(arguments: [
        ("UNREPORTED", EventReason.unreported), ("CREATED", .created), ("ACTIVE_TOKEN_REMINDER", .activeTokenReminder),
    ])
    func externalPurchaseTokenIsExternalPurchaseTokenWithItsFields(_ subtype: String, _ reason: EventReason) throws {
        try Sim.withPKI { pki throws in
            let token = try Emitter(pki: pki, appAppleID: 1_234_567_890).externalPurchaseToken(
                subtype: subtype,
                bundleID: Sim.bundleID,
                externalPurchaseID: "SANDBOX_0d9c3b8e-4a7f-4c1e-9b2d-6f5e4d3c2b1a",
                tokenCreationDate: Self.at - 60_000,
                uuid: "00000000-0000-4000-8000-0000000e0e01",
                at: Self.at
            )
            let payload = try Sim.payload(token, as: NotificationPayloadV2.self)
            #expect(payload.data == nil && payload.externalPurchaseToken?.bundleID == Sim.bundleID)
            let e = try Self.event(token, pki: pki)
            #expect(e.kind == .externalPurchaseToken && e.reason == reason)
            #expect(e.rawType == "EXTERNAL_PURCHASE_TOKEN" && e.rawSubtype == subtype)
            #expect(e.externalPurchaseID == "SANDBOX_0d9c3b8e-4a7f-4c1e-9b2d-6f5e4d3c2b1a")
            #expect(e.externalPurchaseTokenCreationDate == Self.at - 60_000)
            #expect(e.appAppleID == 1_234_567_890 && e.environment == .sandbox && e.verified)
            #expect(e.transactionID == nil && e.entitlement == nil)
        }
    }

    @Test(arguments: [
        ("METADATA_UPDATE", EventKind.metadataUpdate), ("MIGRATION", .migration), ("PRICE_CHANGE", .priceChange),
    ])
    func advancedCommerceStepsCarryTheSubscription(_ type: String, _ kind: EventKind) throws {
        try Sim.withPKI { pki throws in
            let story = Lifecycle("advanced-commerce", "buy, then an Advanced Commerce notification", final: [.active])
            {
                c in
                let s = try c.buy(Catalogue.monthly)
                c.advance(months: 0.2)
                try c.advancedCommerce(s, type: type)
            }
            let plan = try story.plan(
                bundleID: Sim.bundleID,
                sharedSecret: Sim.secret,
                emitter: Emitter(pki: pki),
                start: Sim.t0,
                monthMillis: Sim.month
            )
            let step = try #require(plan.emissions.last)
            #expect(step.v2Type == type && step.v1Bodies.isEmpty && step.expectedV1.isEmpty)
            #expect(step.expectedV2 == ExpectedEvent(kind))
            let payload = try Sim.payload(try #require(step.v2SignedPayload), as: NotificationPayloadV2.self)
            #expect(payload.data?.signedTransactionInfo != nil && payload.data?.signedRenewalInfo != nil)
            let e = try Self.event(try #require(step.v2SignedPayload), pki: pki, at: step.at)
            #expect(e.kind == kind && e.reason == nil && e.rawType == type)
            let latest = try #require(step.subscription.latest)
            #expect(e.transactionID == latest.transactionID && e.originalTransactionID == step.originalTransactionID)
            #expect(e.productID == Catalogue.monthly.id && e.productType == .autoRenewable)
            #expect(e.entitlement?.state == .active)
        }
    }

    @Test func anotherTypeIsNotAnAdvancedCommerceStep() throws {
        try Sim.withPKI { pki throws in
            let story = Lifecycle("x", "y", final: [.active]) { c in
                let s = try c.buy(Catalogue.monthly)
                try c.advancedCommerce(s, type: "DID_RENEW")
            }
            #expect(throws: SimulatorError.self) {
                try story.plan(
                    bundleID: Sim.bundleID,
                    sharedSecret: Sim.secret,
                    emitter: Emitter(pki: pki),
                    start: Sim.t0,
                    monthMillis: Sim.month
                )
            }
        }
    }
}
