import Canonical
import Simulator
import SimulatorTestSupport
import TestSupport
import Testing
import V1Adapter
import V2Adapter
import WireJSON

/// The V2→V1 shim over every simulated lifecycle: each step's V2 notification, verified against the simulator's PKI,
/// becomes a V1-shaped body when its type has a V1 counterpart; the body, with its secret restored as a delivery
/// restores it, passes the V1 adapter and reads back (from the body alone, as the opted-out path reads it) into the
/// same kind, reason, entitlement and expiry as the V2 event.
@Suite struct LifecycleV1ShapeTests {
    static let secret = SharedSecret(name: "SIM_SHARED_SECRET", value: Sim.secret)
    static let v1 = V1Adapter(apps: [
        V1App(bundleID: Sim.bundleID, environments: [.sandbox], sharedSecrets: [secret], verifyReceipt: false)
    ])

    /// Bodies synthesized per V1 type, and V2 notifications without a counterpart per type/subtype.
    struct Tally: Equatable {
        var sent: [String: Int] = [:]
        var skipped: [String: Int] = [:]

        mutating func add(_ other: Tally) {
            sent.merge(other.sent, uniquingKeysWith: +)
            skipped.merge(other.skipped, uniquingKeysWith: +)
        }
    }

    /// The members every `unified_receipt.latest_receipt_info` entry of Apple's real V1 notifications has
    /// (`Fixtures/v1`): a synthesized subscription entry has them all too.
    static let membersOfEveryRealEntry: Set<String> = {
        var common: Set<String>?
        for name in Fixtures.names(in: "v1") where name.hasPrefix("v1-notif-") {
            guard let bytes = try? Fixtures.bytes("v1/\(name)"), let body = try? JSONParser.parse(bytes).objectValue,
                let entries = body["unified_receipt"]?.objectValue?["latest_receipt_info"]?.arrayValue
            else { continue }
            for entry in entries.compactMap(\.objectValue) {
                common = common.map { $0.intersection(entry.keys) } ?? Set(entry.keys)
            }
        }
        return common ?? []
    }()

    /// Plays `name` and sends each of its V2 notifications through the shim and back.
    static func roundTrip(_ name: String, pki: SimulatorPKI) throws -> Tally {
        let plan = try Sim.plan(name, pki: pki)
        let adapter = try Sim.adapter(trusting: pki)
        let marker = V1Adapter.secretMarker(secret.name)
        var tally = Tally()
        var earlier: [String: [CanonicalEvent]] = [:]
        for e in plan.emissions {
            guard let token = e.v2SignedPayload else { continue }
            let n = try adapter.verifyNotification(signedPayload: Array(token.utf8), now: e.at)
            for unsettled in n.canonicalEvents() {
                let step = "\(name) '\(e.step)'"
                let subscription = try #require(unsettled.originalTransactionID)
                let history = earlier[subscription] ?? []
                // A group purchaser's event as the gateway's store settles it against its period before anything is
                // built from it: one transaction of a period that goes on revoked is no cancellation.
                let event = GroupPeriod.settle(unsettled, earlier: history)
                defer { earlier[subscription, default: []].append(event) }
                let pair = event.rawType + (event.rawSubtype.map { "/" + $0 } ?? "")
                let appleSent = e.v1Bodies.compactMap(\.notificationType)

                guard let v1Type = V1BodySynthesizer.v1NotificationType(for: event) else {
                    tally.skipped[pair, default: 0] += 1
                    #expect(appleSent.isEmpty, "\(step): Apple's V1 sent \(appleSent) for \(pair)")
                    #expect(
                        V1BodySynthesizer.body(
                            for: event,
                            history: history,
                            latestReceipt: nil,
                            password: marker,
                            bundleVersion: "1"
                        ) == nil
                    )
                    continue
                }
                // What Apple's V1 sent for the same step (the simulator's model of it): the shim sends one of those
                // types — but a resubscription to the same product, which Apple's V1 reported as
                // DID_CHANGE_RENEWAL_STATUS and the shim as INTERACTIVE_RENEWAL (V1BodySynthesizer's reverse mapping).
                if pair == "SUBSCRIBED/RESUBSCRIBE" {
                    #expect(appleSent == ["DID_CHANGE_RENEWAL_STATUS"] && v1Type == "INTERACTIVE_RENEWAL", "\(step)")
                } else if pair == "CONSUMPTION_REQUEST", appleSent.isEmpty {
                    // Apple's V1 has a CONSUMPTION_REQUEST for consumables only; the shim sends one for a
                    // subscription's refund request too.
                    #expect(v1Type == "CONSUMPTION_REQUEST" && event.productType == .autoRenewable, "\(step)")
                } else {
                    #expect(
                        appleSent.contains(v1Type),
                        "\(step): the shim sends \(v1Type), Apple's V1 sent \(appleSent)"
                    )
                }

                let body = try #require(
                    V1BodySynthesizer.body(
                        for: event,
                        history: history,
                        latestReceipt: e.subscription.receiptToken,
                        password: marker,
                        bundleVersion: "1"
                    ),
                    "\(step): \(pair) has a V1 counterpart, so a body"
                )
                tally.sent[v1Type, default: 0] += 1
                try checkShape(body, autoRenewable: event.expiresDate != nil, step)

                let delivered = try #require(
                    V1Adapter.restore(redactedBody: body, secrets: [secret]),
                    "\(step): the marker is restored"
                )
                let read = try v1.authenticate(body: delivered)
                #expect(read.redactedBody == body && read.body.notificationType == v1Type, "\(step)")
                let facts = V1EventBuilder.facts(fromBody: read.body, subscription: read.body.subscriptionID)
                let back = V1EventBuilder().event(
                    for: read.body,
                    id: read.eventID,
                    facts: facts,
                    arrival: event.eventDate
                )
                #expect(
                    back.kind == event.kind && back.reason == event.reason,
                    "\(step): V1 reads \(back.kind)[\(back.reason?.rawValue ?? "-")], V2 said \(event.kind)[\(event.reason?.rawValue ?? "-")]"
                )
                #expect(back.entitlement == event.entitlement, "\(step): entitlement and until")
                #expect(back.expiresDate == event.expiresDate, "\(step)")
                #expect(
                    back.originalTransactionID == subscription && back.transactionID == event.transactionID,
                    "\(step)"
                )
                #expect(back.bundleID == Sim.bundleID && back.environment == .sandbox, "\(step)")
            }
        }
        return tally
    }

    /// The members Apple's modern V1 bodies always carry.
    static func checkShape(_ body: [UInt8], autoRenewable: Bool, _ step: String) throws {
        let top = try #require(try JSONParser.parse(body).objectValue)
        var members: Set<String> = [
            "notification_type", "password", "environment", "bid", "bvrs", "original_transaction_id", "unified_receipt",
        ]
        if autoRenewable { members.formUnion(["auto_renew_status", "auto_renew_product_id"]) }
        #expect(members.isSubset(of: top.keys), "\(step): \(members.subtracting(top.keys)) missing")
        let receipt = try #require(top["unified_receipt"]?.objectValue)
        let receiptMembers: Set<String> = [
            "status", "environment", "latest_receipt", "latest_receipt_info", "pending_renewal_info",
        ]
        #expect(receiptMembers.isSubset(of: receipt.keys), "\(step)")
        #expect(receipt["latest_receipt"]?.stringValue?.isEmpty == false, "\(step): the stored receipt is passed on")
        #expect((receipt["pending_renewal_info"]?.arrayValue?.count ?? 0) == (autoRenewable ? 1 : 0), "\(step)")
        for entry in (receipt["latest_receipt_info"]?.arrayValue ?? []).compactMap(\.objectValue) where autoRenewable {
            #expect(
                membersOfEveryRealEntry.isSubset(of: entry.keys),
                "\(step): \(membersOfEveryRealEntry.subtracting(entry.keys)) missing"
            )
        }
    }

    @Test(arguments: Lifecycles.all.map(\.name))
    func v2StepsReadBackThroughTheirV1Shape(name: String) throws {
        try Sim.withPKI { pki throws in
            let tally = try Self.roundTrip(name, pki: pki)
            let steps = try Sim.plan(name, pki: pki).emissions.filter { $0.v2SignedPayload != nil }.count
            #expect(
                tally.sent.values.reduce(0, +) + tally.skipped.values.reduce(0, +) == steps,
                "every V2 step is sent or counted"
            )
        }
    }

    /// The whole catalogue: bodies per V1 type, and the V2 types V1 has no notification for.
    @Test func theCatalogueSynthesizesTheseBodiesAndSkipsTheseTypes() throws {
        #expect(Self.membersOfEveryRealEntry.count >= 15, "\(Self.membersOfEveryRealEntry.sorted())")
        let total = try Sim.withPKI { pki throws in
            try Lifecycles.all.reduce(into: Tally()) { total, lifecycle in
                total.add(try Self.roundTrip(lifecycle.name, pki: pki))
            }
        }
        #expect(
            total.sent == [
                "INITIAL_BUY": 31, "DID_RENEW": 11, "DID_CHANGE_RENEWAL_STATUS": 6, "DID_FAIL_TO_RENEW": 3,
                "INTERACTIVE_RENEWAL": 2,
                "DID_RECOVER": 2, "DID_CHANGE_RENEWAL_PREF": 2, "CANCEL": 4, "PRICE_INCREASE_CONSENT": 2, "REVOKE": 2,
                "CONSUMPTION_REQUEST": 2,
            ]
        )
        // Group subscriptions' seats (and a group's transaction refunded while another of its period stands) have no
        // V1 counterpart.
        #expect(
            total.skipped == [
                "EXPIRED/VOLUNTARY": 2, "EXPIRED/PRODUCT_NOT_FOR_SALE": 1, "GRACE_PERIOD_EXPIRED": 1,
                "PRICE_INCREASE/ACCEPTED": 1,
                "REFUND_DECLINED": 1, "REFUND_REVERSED": 1, "RENEWAL_EXTENDED": 1, "ONE_TIME_CHARGE": 1,
                "DID_CHANGE_RENEWAL_PREF/INCREASE_QUANTITY": 2, "DID_CHANGE_RENEWAL_PREF/DECREASE_QUANTITY": 1,
                "REFUND/SEATS": 2, "REFUND": 1, "UNCLAIM_SEATS": 1,
            ]
        )
    }
}
