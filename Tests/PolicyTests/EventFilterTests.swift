import Canonical
import Policy
import Testing

/// Per-downstream filters (docs/configuration.md, `downstreams[].filter`): each field alone, combined, an event that
/// matches none, and the `v2_passthrough` body judged by the notification's events.
@Suite struct EventFilterTests {
    static func event(
        kind: EventKind = .renewal,
        type: String = "DID_RENEW",
        subtype: String? = nil,
        bundle: String = "a"
    ) -> CanonicalEvent {
        var e = CanonicalEvent(
            id: "e",
            source: .v2,
            kind: kind,
            rawType: type,
            rawSubtype: subtype,
            eventDate: 1,
            eventDateSource: .signedDate,
            verified: true
        )
        (e.bundleID, e.environment) = (bundle, .production)
        return e
    }

    @Test func anEmptyFilterTakesEverything() {
        #expect(EventFilter().takesEverything)
        #expect(EventFilter().matches(Self.event(), authoritative: false))
    }

    @Test func eachFieldAlone() {
        let refunds = EventFilter(kinds: [.refund, .revocation])
        #expect(refunds.matches(Self.event(kind: .refund, type: "REFUND"), authoritative: true))
        #expect(!refunds.matches(Self.event(), authoritative: true))

        let types = EventFilter(types: ["DID_RENEW/BILLING_RECOVERY", "REFUND"])
        #expect(types.matches(Self.event(subtype: "BILLING_RECOVERY"), authoritative: true))
        #expect(!types.matches(Self.event(), authoritative: true), "DID_RENEW without the subtype")
        #expect(types.matches(Self.event(kind: .refund, type: "REFUND", subtype: "X"), authoritative: true))
        #expect(EventFilter(types: ["DID_RENEW"]).matches(Self.event(subtype: "BILLING_RECOVERY"), authoritative: true))

        let bundles = EventFilter(bundles: ["b"])
        #expect(bundles.matches(Self.event(bundle: "b"), authoritative: true))
        #expect(!bundles.matches(Self.event(bundle: "a"), authoritative: true))
        var noBundle = Self.event()
        noBundle.bundleID = nil
        #expect(!bundles.matches(noBundle, authoritative: true))

        #expect(EventFilter(authoritative: true).matches(Self.event(), authoritative: true))
        #expect(!EventFilter(authoritative: true).matches(Self.event(), authoritative: false))
        #expect(EventFilter(authoritative: false).matches(Self.event(), authoritative: false))
        #expect(!EventFilter(authoritative: false).matches(Self.event(), authoritative: true))
    }

    @Test func everyFieldSetMustMatch() {
        let f = EventFilter(kinds: [.refund], types: ["REFUND"], bundles: ["a"], authoritative: true)
        #expect(f.matches(Self.event(kind: .refund, type: "REFUND"), authoritative: true))
        #expect(!f.matches(Self.event(kind: .refund, type: "REFUND", bundle: "b"), authoritative: true))
        #expect(!f.matches(Self.event(kind: .refund, type: "REFUND"), authoritative: false))
        #expect(!f.matches(Self.event(kind: .refund, type: "REVOKE"), authoritative: true))
        #expect(!f.matches(Self.event(kind: .revocation, type: "REFUND"), authoritative: true))
    }

    static let routing = Routing(
        downstreams: [
            .init(name: "all", kind: .webhook, environments: [.production], shadow: true),
            .init(
                name: "refunds",
                kind: .webhook,
                environments: [.production],
                shadow: true,
                filter: EventFilter(kinds: [.refund])
            ),
            .init(
                name: "raw",
                kind: .v2Passthrough,
                environments: [.production],
                shadow: false,
                filter: EventFilter(types: ["REFUND"])
            ),
            .init(name: "raw-all", kind: .v2Passthrough, environments: [.production], shadow: false),
        ],
        apps: [.init(bundleID: "a", downstreams: [], compares: false, hasV1Path: false)]
    )

    @Test func anEventMatchingNoFilterIsNotQueuedAndIsCounted() {
        let renewal = Self.routing.eventDelivery(Self.event(), authoritative: true)
        #expect(renewal.targets == ["all"] && renewal.filteredOut == ["refunds"])
        let refund = Self.routing.eventDelivery(Self.event(kind: .refund, type: "REFUND"), authoritative: true)
        #expect(refund.targets == ["all", "refunds"] && refund.filteredOut.isEmpty)
        let writes = NotificationPolicy.events([Self.event()], authority: .v2, routing: Self.routing)
        #expect(
            writes == [.event(Self.event(), path: .v2, authoritative: true, targets: ["all"], filteredOut: ["refunds"])]
        )
    }

    @Test func aV2NotificationsBodyGoesToV2PassthroughDownstreamsOnce() {
        func plan(_ e: CanonicalEvent, version: Generation = .v2) -> [PlannedWrite] {
            NotificationPolicy.journal(
                .init(
                    version: version,
                    bundleID: "a",
                    environment: .production,
                    events: version == .v2 ? [e] : [],
                    needsReceipt: version == .v1,
                    v1NotificationType: nil
                ),
                authority: .v1,
                routing: Self.routing
            )
            .writes(alone: true)
        }
        let renewal = plan(Self.event())
        #expect(
            renewal.filter { if case .bodyDelivery = $0 { true } else { false } } == [
                .bodyDelivery(downstream: "raw-all")
            ]
        )
        #expect(renewal.contains(.bodyFilteredOut(downstream: "raw")))
        let refund = plan(Self.event(kind: .refund, type: "REFUND"))
        #expect(
            refund.contains(.bodyDelivery(downstream: "raw")) && refund.contains(.bodyDelivery(downstream: "raw-all"))
        )
        // A V1 body never reaches a v2_passthrough downstream.
        #expect(!plan(Self.event(), version: .v1).contains { if case .bodyDelivery = $0 { true } else { false } })
    }
}
