/// What a downstream receives (docs/configuration.md, `downstreams`).
public enum DeliveryKind: String, Sendable, Hashable, CaseIterable {
    /// Canonical events in a signed envelope.
    case webhook
    /// The V1 body as Apple sent it — or a V2 notification's V1 shape — for an old backend.
    case v1Passthrough = "v1_passthrough"
    /// Canonical events as rows in the team's own database (docs/database-downstream.md).
    case database
    /// A V2 notification's body exactly as Apple sent it, once the gateway verified it, for the team's own V2 code.
    case v2Passthrough = "v2_passthrough"

    /// Whether it takes canonical events (rather than notification bodies).
    public var takesEvents: Bool { self == .webhook || self == .database }

    /// Whether it takes notification bodies (V1 bodies and V1 shapes, or V2 bodies).
    public var takesBodies: Bool { self == .v1Passthrough || self == .v2Passthrough }
}
