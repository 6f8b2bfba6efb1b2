public import Canonical

/// Which events a downstream takes (docs/configuration.md, `downstreams[].filter`), judged once per event when its
/// deliveries are queued: every field that is set must match; an empty filter takes every event.
public struct EventFilter: Sendable, Hashable {
    /// Canonical kinds (`renewal`, `refund`, …); empty: any.
    public var kinds: Set<EventKind>
    /// Apple's notification types as the event carries them (`raw_type`): `DID_RENEW`, or with a subtype
    /// `DID_RENEW/BILLING_RECOVERY`; a type alone takes every subtype of it. Empty: any.
    public var types: Set<String>
    /// Bundle ids; empty: any.
    public var bundles: Set<String>
    /// `true`: authoritative events only; `false`: the other generation's (shadow) only; nil: both.
    public var authoritative: Bool?

    public init(
        kinds: Set<EventKind> = [],
        types: Set<String> = [],
        bundles: Set<String> = [],
        authoritative: Bool? = nil
    ) {
        (self.kinds, self.types, self.bundles, self.authoritative) = (kinds, types, bundles, authoritative)
    }

    /// Takes every event.
    public var takesEverything: Bool { kinds.isEmpty && types.isEmpty && bundles.isEmpty && authoritative == nil }

    public func matches(_ event: CanonicalEvent, authoritative isAuthoritative: Bool) -> Bool {
        if let authoritative, authoritative != isAuthoritative { return false }
        if !kinds.isEmpty, !kinds.contains(event.kind) { return false }
        if !bundles.isEmpty, !(event.bundleID.map(bundles.contains) ?? false) { return false }
        if !types.isEmpty {
            let withSubtype = event.rawSubtype.map { event.rawType + "/" + $0 }
            guard types.contains(event.rawType) || withSubtype.map(types.contains) == true else { return false }
        }
        return true
    }
}
