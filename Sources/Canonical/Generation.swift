/// Which generation of App Store Server Notifications a body, an event or a path belongs to: the legacy V1 JSON
/// (with verifyReceipt) or V2 (signed JWS, with the App Store Server API). A bundle's authority is one of these.
/// A closed set: a third generation would change the product, so a `switch` over it should break then.
public enum Generation: String, Sendable, Hashable, Codable, CaseIterable {
    case v1, v2

    /// The other one.
    public var other: Generation { self == .v1 ? .v2 : .v1 }
}

extension EventSource {
    /// The path an event belongs to: V1 notifications and verifyReceipt answers are the V1 path; V2 notifications
    /// and the App Store Server API the V2 path.
    public var generation: Generation { self == .v1 || self == .v1Receipt ? .v1 : .v2 }
}
