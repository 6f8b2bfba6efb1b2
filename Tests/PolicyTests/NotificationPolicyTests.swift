import Canonical
import Policy
import Testing

/// The rule, with no database: every kind of notification a lifecycle produces × the bundle's authority × the version
/// Apple sends (V1 only, V2 only, or both during the switch's transition window) gives exactly one authoritative event,
/// delivered once to the app's downstream, whatever the order the two versions arrive in.
@Suite struct NotificationPolicyTests {
    /// A V2 notification as a lifecycle produces it, and its V1 counterpart (nil: V1 has none, Apple sends no V1 body).
    struct Kind: Sendable, CustomStringConvertible {
        var type: String
        var subtype: String?
        var kind: EventKind
        var v1Type: String?
        var description: String { [type, subtype].compactMap { $0 }.joined(separator: "/") }
    }

    static let kinds: [Kind] = [
        Kind(type: "SUBSCRIBED", subtype: "INITIAL_BUY", kind: .purchase, v1Type: "INITIAL_BUY"),
        Kind(type: "SUBSCRIBED", subtype: "RESUBSCRIBE", kind: .purchase, v1Type: "INTERACTIVE_RENEWAL"),
        Kind(type: "OFFER_REDEEMED", subtype: "INITIAL_BUY", kind: .purchase, v1Type: "INITIAL_BUY"),
        Kind(type: "DID_RENEW", subtype: nil, kind: .renewal, v1Type: "DID_RENEW"),
        Kind(type: "DID_RENEW", subtype: "BILLING_RECOVERY", kind: .renewal, v1Type: "DID_RECOVER"),
        Kind(type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", kind: .renewalFailure, v1Type: "DID_FAIL_TO_RENEW"),
        Kind(type: "DID_FAIL_TO_RENEW", subtype: nil, kind: .renewalFailure, v1Type: "DID_FAIL_TO_RENEW"),
        Kind(type: "GRACE_PERIOD_EXPIRED", subtype: nil, kind: .gracePeriodExpired, v1Type: nil),
        Kind(
            type: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_DISABLED",
            kind: .autoRenewChanged,
            v1Type: "DID_CHANGE_RENEWAL_STATUS"
        ),
        Kind(
            type: "DID_CHANGE_RENEWAL_STATUS",
            subtype: "AUTO_RENEW_ENABLED",
            kind: .autoRenewChanged,
            v1Type: "DID_CHANGE_RENEWAL_STATUS"
        ),
        Kind(type: "DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", kind: .planChange, v1Type: "INTERACTIVE_RENEWAL"),
        Kind(
            type: "DID_CHANGE_RENEWAL_PREF",
            subtype: "DOWNGRADE",
            kind: .planChange,
            v1Type: "DID_CHANGE_RENEWAL_PREF"
        ),
        Kind(type: "EXPIRED", subtype: "VOLUNTARY", kind: .expiration, v1Type: nil),
        Kind(type: "EXPIRED", subtype: "BILLING_RETRY", kind: .expiration, v1Type: "DID_CHANGE_RENEWAL_STATUS"),
        Kind(type: "PRICE_INCREASE", subtype: "PENDING", kind: .priceIncrease, v1Type: "PRICE_INCREASE_CONSENT"),
        Kind(type: "PRICE_INCREASE", subtype: "ACCEPTED", kind: .priceIncrease, v1Type: nil),
        Kind(type: "REFUND", subtype: nil, kind: .refund, v1Type: "CANCEL"),
        Kind(type: "REFUND_DECLINED", subtype: nil, kind: .refundDeclined, v1Type: nil),
        Kind(type: "REFUND_REVERSED", subtype: nil, kind: .refundReversed, v1Type: nil),
        Kind(type: "REVOKE", subtype: nil, kind: .revocation, v1Type: "REVOKE"),
        Kind(type: "RENEWAL_EXTENDED", subtype: nil, kind: .renewalExtended, v1Type: nil),
        Kind(type: "CONSUMPTION_REQUEST", subtype: nil, kind: .consumptionRequest, v1Type: "CONSUMPTION_REQUEST"),
    ]

    /// What Apple sends for one event.
    enum AppleSends: CaseIterable, Sendable {
        case v1Only, v2Only, both
        var v1: Bool { self != .v2Only }
        var v2: Bool { self != .v1Only }
    }

    static let bundle = "com.example.app"

    static func routing(compared: Bool) -> Routing {
        Routing(
            downstreams: [
                .init(name: "main", kind: .webhook, environments: [.production], shadow: false),
                .init(name: "shadow", kind: .database, environments: [.production], shadow: true),
                .init(name: "legacy", kind: .v1Passthrough, environments: [.production], shadow: false),
            ],
            apps: [.init(bundleID: bundle, downstreams: [], compares: compared, hasV1Path: true)]
        )
    }

    static func event(_ kind: Kind, source: EventSource, id: String) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: id,
            source: source,
            kind: kind.kind,
            rawType: kind.type,
            rawSubtype: kind.subtype,
            eventDate: 1_700_000_000_000,
            eventDateSource: .signedDate,
            verified: true
        )
        (e.bundleID, e.environment, e.originalTransactionID) = (bundle, .production, "1000")
        (e.productType, e.expiresDate) = (.autoRenewable, 1_702_000_000_000)
        return e
    }

    /// One event's outcome: every event the pipeline stores for it, and what is delivered where.
    struct Outcome {
        var events: [(event: CanonicalEvent, authoritative: Bool, targets: [String])] = []
        var bodies: [String] = []
        var authoritative: [CanonicalEvent] { events.filter(\.authoritative).map(\.event) }
    }

    /// Plays the pipeline's steps through the rule alone: each plan's writes, with the receipt job and the fetch it
    /// asks for carried out as the workers do (the receipt job of a V1 body: the V1 event from verifyReceipt, then
    /// ``NotificationPolicy/afterV1Event(_:bundleID:v1Snapshot:authority:routing:)``; of a V2 notification: the V1
    /// path's view of it; a fetch naming a V1 event: the App Store Server API's event standing in for it).
    static func play(_ kind: Kind, apple: AppleSends, authority: Generation, compared: Bool, v1First: Bool) -> Outcome {
        let routing = routing(compared: compared)
        var outcome = Outcome()
        func carryOut(_ writes: [PlannedWrite], version: Generation) {
            for write in writes {
                switch write {
                case .event(let e, _, let authoritative, let targets, _):
                    outcome.events.append((e, authoritative, targets))
                case .bodyDelivery(let downstream):
                    outcome.bodies.append(downstream)
                case .receiptJob where version == .v1:
                    let v1 = event(kind, source: .v1, id: "v1:\(kind)")
                    carryOut(NotificationPolicy.events([v1], authority: authority, routing: routing), version: .v1)
                    let snapshot = OutcomeSnapshot(event: v1, source: .v1Receipt, observedAt: v1.eventDate)
                    let after = NotificationPolicy.afterV1Event(
                        v1,
                        bundleID: bundle,
                        v1Snapshot: snapshot,
                        authority: authority,
                        routing: routing
                    )
                    carryOut(after.writes(alone: !apple.v2), version: .v1)
                case .receiptJob:
                    let view = event(kind, source: .v1, id: "v1-view:\(kind)")
                    carryOut(NotificationPolicy.events([view], authority: authority, routing: routing), version: .v1)
                case .fetch(let request) where request.v1EventID != nil:
                    let standIn = event(kind, source: .v2API, id: "v2-api:\(kind)")
                    carryOut(NotificationPolicy.events([standIn], authority: authority, routing: routing), version: .v2)
                case .fetch, .snapshot, .bodyFilteredOut, .consumptionJob, .refundDecision:
                    break
                }
            }
        }
        var arrivals: [Generation] = []
        if apple.v1 { arrivals.append(.v1) }
        if apple.v2 { arrivals.append(.v2) }
        if !v1First { arrivals.reverse() }
        for version in arrivals {
            let n =
                version == .v1
                ? NotificationPolicy.Notification(
                    version: .v1,
                    bundleID: bundle,
                    environment: .production,
                    events: [],
                    needsReceipt: true,
                    v1NotificationType: nil
                )
                : NotificationPolicy.Notification(
                    version: .v2,
                    bundleID: bundle,
                    environment: .production,
                    events: [event(kind, source: .v2, id: "v2:\(kind)")],
                    needsReceipt: false,
                    v1NotificationType: kind.v1Type
                )
            let plan = NotificationPolicy.journal(n, authority: authority, routing: routing)
            // The store answers from the journal and the Apple switch: alone when Apple sends no other version.
            let alone = version == .v1 ? !apple.v2 : !apple.v1
            if let question = plan.question { #expect(question.version == version) }
            carryOut(plan.writes(alone: alone), version: version)
        }
        return outcome
    }

    @Test(arguments: kinds)
    func everyNotificationGivesExactlyOneAuthoritativeEvent(_ kind: Kind) {
        for apple in AppleSends.allCases where kind.v1Type != nil || apple == .v2Only {
            for authority in Generation.allCases {
                for compared in [false, true] {
                    for v1First in [true, false] {
                        let o = Self.play(
                            kind,
                            apple: apple,
                            authority: authority,
                            compared: compared,
                            v1First: v1First
                        )
                        let context = "\(apple) authority \(authority) compared \(compared) v1First \(v1First)"
                        #expect(o.authoritative.count == 1, "\(context): \(o.authoritative.map(\.id))")
                        #expect(o.authoritative.allSatisfy { $0.source.generation == authority }, "\(context)")
                        let delivered = o.events.filter { $0.targets.contains("main") }
                        #expect(delivered.count == 1, "\(context): main gets \(delivered.map(\.event.id))")
                        // The shadow downstream takes every event stored, authoritative or not.
                        #expect(o.events.allSatisfy { $0.targets.contains("shadow") }, "\(context)")
                    }
                }
            }
        }
    }

    @Test(arguments: kinds)
    func theV1BackendReceivesOneBodyPerEvent(_ kind: Kind) {
        for apple in AppleSends.allCases where kind.v1Type != nil || apple == .v2Only {
            for authority in Generation.allCases {
                let o = Self.play(kind, apple: apple, authority: authority, compared: false, v1First: true)
                // Apple's own V1 body when it sends one, else the V2 notification's V1 shape when V1 has a counterpart.
                let expected = kind.v1Type == nil ? 0 : 1
                #expect(o.bodies == Array(repeating: "legacy", count: expected), "\(apple) authority \(authority)")
            }
        }
    }

    @Test func aComparedV2NotificationSnapshotsItsPathAndFetchesTheOther() {
        let n = NotificationPolicy.Notification(
            version: .v2,
            bundleID: Self.bundle,
            environment: .production,
            events: [Self.event(Self.kinds[3], source: .v2, id: "v2:renew")],
            needsReceipt: false,
            v1NotificationType: "DID_RENEW"
        )
        let plan = NotificationPolicy.journal(n, authority: .v2, routing: Self.routing(compared: true))
        let key = SubscriptionKey(bundleID: Self.bundle, environment: .production, originalTransactionID: "1000")
        #expect(plan.writes.contains(.fetch(FetchRequest(subscription: key, fetch: .v1, compare: true))))
        #expect(plan.writes.contains { if case .snapshot(_, .v2) = $0 { true } else { false } })
        // Not compared: neither.
        let plain = NotificationPolicy.journal(n, authority: .v2, routing: Self.routing(compared: false))
        #expect(!plain.writes.contains { if case .fetch = $0 { true } else { false } })
    }

    @Test func underV2AuthorityAV1EventThatIsNotAloneIsOnlyComparedWhenTheBundleIs() {
        let v1 = Self.event(Self.kinds[3], source: .v1, id: "v1:renew")
        let plain = NotificationPolicy.afterV1Event(
            v1,
            bundleID: Self.bundle,
            v1Snapshot: nil,
            authority: .v2,
            routing: Self.routing(compared: false)
        )
        #expect(plain.writes(alone: false).isEmpty)
        #expect(plain.writes(alone: true).count == 1)
        let compared = NotificationPolicy.afterV1Event(
            v1,
            bundleID: Self.bundle,
            v1Snapshot: nil,
            authority: .v2,
            routing: Self.routing(compared: true)
        )
        guard case .fetch(let request) = compared.writes(alone: false).first else {
            Issue.record("no fetch")
            return
        }
        #expect(request.v1EventID == nil && request.compare)
    }

    @Test func aV2NotificationV1CannotShapeIsCountedUnsentOnlyWithAPassthroughDownstream() {
        let kind = Self.kinds.first { $0.v1Type == nil }!
        let n = NotificationPolicy.Notification(
            version: .v2,
            bundleID: Self.bundle,
            environment: .production,
            events: [Self.event(kind, source: .v2, id: "v2:x")],
            needsReceipt: false,
            v1NotificationType: nil
        )
        #expect(NotificationPolicy.v1ShapeUnsent(n, routing: Self.routing(compared: false)))
        let noPassthrough = Routing(
            downstreams: [.init(name: "main", kind: .webhook, environments: [.production], shadow: false)],
            apps: [.init(bundleID: Self.bundle, downstreams: [], compares: false, hasV1Path: true)]
        )
        #expect(!NotificationPolicy.v1ShapeUnsent(n, routing: noPassthrough))
        #expect(NotificationPolicy.passthroughBody(of: .v1) == .asJournaled)
        #expect(NotificationPolicy.passthroughBody(of: .v2) == .v1Shape)
    }
}
