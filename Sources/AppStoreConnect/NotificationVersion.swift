public import Canonical

/// The version of App Store Server Notifications Apple sends an app in one environment: App Store Connect's
/// `subscriptionStatusUrlVersion` (production) and `subscriptionStatusUrlVersionForSandbox` (sandbox), type
/// `SubscriptionStatusUrlVersion`. A struct, not an enum: a value Apple adds later survives as its
/// ``rawValue``.
public struct NotificationVersion: WireString {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// App Store Server Notifications V1 (JSON with a shared secret).
    public static let v1 = Self(rawValue: "V1")
    /// App Store Server Notifications V2 (signed JWS).
    public static let v2 = Self(rawValue: "V2")

    /// The version Apple sends a generation's notifications in.
    public init(_ generation: Generation) {
        self = generation == .v1 ? .v1 : .v2
    }

    /// The generation of the notifications Apple sends in this version; nil for a value this gateway does not know.
    public var generation: Generation? {
        switch self {
        case .v1: .v1
        case .v2: .v2
        default: nil
        }
    }
}

extension Generation {
    /// The generation of `version`; nil for a version this gateway does not know.
    public init?(_ version: NotificationVersion) {
        guard let g = version.generation else { return nil }
        self = g
    }
}
